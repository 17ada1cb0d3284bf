//! `GET /realtime/`: a page that shows the quotes, the way a browser uses the service: it
//! loads its style sheet, reads the quotes, places a trade after a moment, and reads the
//! traded symbol's quote again. What `volley import` is tested with, recorded from a real
//! browser.

use axum::http::header;
use axum::response::{Html, IntoResponse};

const PAGE: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Realtime quotes</title>
<link rel="stylesheet" href="/realtime/app.css">
</head>
<body>
<h1>Quotes</h1>
<table id="quotes"></table>
<p id="status">loading</p>
<script>
(async () => {
  const show = (quotes) => {
    document.getElementById("quotes").innerHTML = quotes
      .map((q) => `<tr><td>${q.symbol}</td><td>${q.price}</td><td>${q.volume}</td></tr>`)
      .join("");
  };
  const all = await (await fetch("/realtime/quotes", { headers: { Accept: "application/json" } })).json();
  show(all);
  // The user reads, then trades the first symbol.
  await new Promise((done) => setTimeout(done, 400));
  const first = all[0];
  await fetch("/realtime/events", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ symbol: first.symbol, kind: "trade", quantity: 10, price: first.price }),
  });
  const traded = await (await fetch("/realtime/quotes/" + first.symbol)).json();
  show([traded]);
  document.getElementById("status").textContent = "traded";
  document.title = "done";
})();
</script>
</body>
</html>
"#;

const STYLE: &str = "body { font-family: sans-serif; }\ntd { padding: 0 1em; }\n";

/// The page.
pub async fn page() -> Html<&'static str> {
    Html(PAGE)
}

/// Its style sheet.
pub async fn style() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/css")], STYLE)
}
