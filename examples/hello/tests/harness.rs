//! The hello service in the test's own process (`ferrowizard::testing`): its route, its health
//! check and its task, over real sockets.

use ferrowizard::testing::TestService;
use tempfile::TempDir;

/// The service reading a greetings file written with `greetings`, in a directory that lives as
/// long as the test keeps it.
fn start(greetings: &str) -> (TempDir, TestService) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("greetings.txt");
    std::fs::write(&file, greetings).unwrap();
    let yaml = format!(
        "server: {{requestLog: {{appenders: []}}}}\nlogging: {{appenders: []}}\n\
         hello: {{greetingsFile: {}}}\n",
        file.display()
    );
    let service = TestService::start(hello::Hello, &yaml).unwrap();
    (dir, service)
}

/// Catches: the greetings not loaded before the first request, the health check not
/// registered, or the reload task not reading the file again.
#[tokio::test]
async fn greets_reports_healthy_and_reloads_its_greetings() {
    let (dir, service) = start("Bonjour\n");
    let file = dir.path().join("greetings.txt");
    let ada = service.get("/hello/Ada").await.unwrap();
    assert_eq!(
        (ada.status.as_u16(), ada.text()),
        (200, "Bonjour, Ada!\n".into())
    );
    assert_eq!(ada.header("access-control-allow-origin"), Some("*"));

    let health = service.admin_get("/healthcheck").await.unwrap();
    assert_eq!(health.status, 200, "{}", health.text());
    let health: serde_json::Value = health.json().unwrap();
    assert_eq!(health["greetings"]["healthy"], true);
    assert_eq!(health["greetings"]["message"], "1 greetings");

    std::fs::write(&file, "Hola\nBonjour\n").unwrap();
    let reload = service.admin_post("/tasks/reload", "").await.unwrap();
    assert_eq!(
        (reload.status.as_u16(), reload.text()),
        (200, "reloaded 2 greetings\n".into())
    );
    let world = service.get("/hello/world").await.unwrap();
    assert_eq!(world.text(), "Hola, world!\n");
}

/// Catches: a health check that says healthy with no greetings.
#[tokio::test]
async fn an_empty_greetings_file_is_unhealthy() {
    let (_dir, service) = start("\n");
    let health = service.admin_get("/healthcheck").await.unwrap();
    assert_eq!(health.status, 500, "{}", health.text());
    let health: serde_json::Value = health.json().unwrap();
    assert_eq!(health["greetings"]["message"], "no greetings");
    assert_eq!(
        service.get("/hello/Ada").await.unwrap().text(),
        "Hello, Ada!\n"
    );
}
