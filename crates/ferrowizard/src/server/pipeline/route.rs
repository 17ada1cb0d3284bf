//! Stage 4, **route**: which route a request took: the template its timer is kept under
//! (`ferrowizard.routes`) and the `routed` DEBUG event names.
//!
//! The pipeline looks each request's path up in a [`RouteTable`] of the application's
//! templates (matchit, the matcher axum uses, on the same templates, so the same route wins):
//! nothing wraps the routes. [`Routes`] learns the templates as routes are added
//! ([`Routes::route`]) or read from a whole router ([`Routes::merge`]).
//!
//! Should a router's templates not be readable, its routes get [`RouteLayer`] instead, which
//! reads axum's `MatchedPath` and hands it on with the response ([`Matched`], which wins
//! over the table's: it is the route axum called). The admin routes on the simple server's
//! one connector are timed that way too. A layered route costs more: axum wraps it in a
//! second boxed service, which it clones and whose future it boxes on every request
//! (BENCHMARKS.md, "Server overhead").

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::extract::MatchedPath;
use axum::routing::MethodRouter;
use ferrowizard_metrics::Timer;
use http::Method;

/// An application's routes, as [`Server::start`](crate::server::Server::start) serves them: an axum
/// [`Router`], the templates ferrowizard knows (see the module docs), and the layers to apply
/// to them all.
#[derive(Default)]
pub struct Routes {
    router: Router,
    /// The templates of the routes added, each once.
    templates: Vec<Arc<str>>,
    /// Layers for every route, applied in order once all routes are in.
    layers: Vec<Box<dyn FnOnce(Router) -> Router + Send>>,
}

impl std::fmt::Debug for Routes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Routes")
            .field("templates", &self.templates)
            .field("layers", &self.layers.len())
            .finish()
    }
}

impl Routes {
    /// No routes yet.
    pub fn new() -> Routes {
        Routes::default()
    }

    /// Adds `method_router` at `path`, as axum's [`Router::route`] does (and panics where it
    /// panics: a path not starting with `/`, a route added twice for one method). Its
    /// requests are timed under `path` without a layer around the route.
    #[must_use]
    pub fn route(mut self, path: &str, method_router: MethodRouter) -> Routes {
        self.router = self.router.route(path, method_router);
        if !self.templates.iter().any(|t| &**t == path) {
            self.templates.push(path.into());
        }
        self
    }

    /// Adds every route of `router` (axum's [`Router::merge`]), each timed under its
    /// template, as [`route`](Self::route)'s are.
    #[must_use]
    pub fn merge(mut self, router: Router) -> Routes {
        match templates_of(&router) {
            Some(templates) => {
                for template in templates {
                    if !self.templates.iter().any(|t| **t == *template) {
                        self.templates.push(template.into());
                    }
                }
                self.router = self.router.merge(router);
            }
            None => self.router = self.router.merge(layered(router)),
        }
        self
    }

    /// Applies `layer` to every route (whenever added) and to the 404s, as axum's
    /// [`Router::layer`] does, once all routes are in; a later layer wraps an earlier one.
    #[must_use]
    pub fn layer<L>(mut self, layer: L) -> Routes
    where
        L: tower::Layer<axum::routing::Route> + Clone + Send + Sync + 'static,
        L::Service: tower::Service<axum::extract::Request> + Clone + Send + Sync + 'static,
        <L::Service as tower::Service<axum::extract::Request>>::Response:
            axum::response::IntoResponse + 'static,
        <L::Service as tower::Service<axum::extract::Request>>::Error:
            Into<std::convert::Infallible> + 'static,
        <L::Service as tower::Service<axum::extract::Request>>::Future: Send + 'static,
    {
        self.layers
            .push(Box::new(move |router: Router| router.layer(layer)));
        self
    }

    /// The router to serve under the context path `prefix` (`""` or `/`: none), its layers
    /// applied, and the table of its known templates as requests will name them.
    pub(crate) fn under(self, prefix: &str) -> (Router, RouteTable) {
        let prefix = prefix.trim_end_matches('/');
        let table = RouteTable::new(self.templates.iter().map(|t| nested(prefix, t)));
        let router = self
            .layers
            .into_iter()
            .fold(self.router, |router, layer| layer(router));
        let router = if prefix.is_empty() {
            router
        } else {
            Router::new().nest(prefix, router)
        };
        (router, table)
    }
}

impl From<Router> for Routes {
    /// The routes of `router`, each timed under its template ([`Routes::merge`]).
    fn from(router: Router) -> Routes {
        Routes::new().merge(router)
    }
}

/// The route templates of `router` (nested routers' included, under their prefixes), or
/// `None` when it has routes none of which could be read.
///
/// axum offers no API that lists a router's routes, but its `Debug` output does (the matcher's
/// `paths`, each `RouteId(n): "template"`, before the fallback router's): read from there, so
/// that a merged router's routes are timed from the route table like `route`'s, without a
/// layer on each (which axum boxes and clones on every request). Should that output change,
/// nothing is read and the caller falls back to [`RouteLayer`]; the tests below pin it.
fn templates_of(router: &Router) -> Option<Vec<String>> {
    if !router.has_routes() {
        return Some(Vec::new());
    }
    let text = format!("{router:?}");
    let text = text.split(", fallback_router:").next()?;
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("): \"") {
        let before = &rest[..at];
        let route_id = before.rfind("RouteId(").is_some_and(|i| {
            before[i + "RouteId(".len()..]
                .bytes()
                .all(|b| b.is_ascii_digit())
        });
        rest = &rest[at + "): \"".len()..];
        if !route_id {
            continue;
        }
        let end = rest.find('"')?;
        let template = &rest[..end];
        rest = &rest[end + 1..];
        if template.contains('\\') {
            // Escaped by `Debug`: not read back.
            return None;
        }
        // axum's own catch-alls (a nested service's tail, the fallback's) are not routes.
        if !template.contains("__private__axum") {
            found.push(template.to_owned());
        }
    }
    (!found.is_empty()).then_some(found)
}

/// `router` with [`RouteLayer`] on each of its routes.
pub(crate) fn layered(router: Router) -> Router {
    // axum refuses a route layer on a router without routes (a fallback alone).
    if router.has_routes() {
        router.route_layer(RouteLayer)
    } else {
        router
    }
}

/// The path axum serves `template` at once nested under `prefix` (which does not end with
/// `/`; empty: not nested), as axum's `nest` makes it.
fn nested(prefix: &str, template: &str) -> String {
    match (prefix, template) {
        ("", t) => t.to_owned(),
        (p, "/") => p.to_owned(),
        (p, t) => format!("{p}{t}"),
    }
}

/// The templates of a server's known routes, looked up by request path, each with its
/// timers.
///
/// One table per server (shared by its application connectors, as its [`RequestMetrics`]
/// is): the timers it holds are that server's. A request of a known route and a standard
/// method finds its timer here, with no lookup beyond the path's; see [`Route`].
///
/// [`RequestMetrics`]: crate::server::pipeline::metrics::RequestMetrics
pub(crate) struct RouteTable {
    matcher: matchit::Router<usize>,
    known: Vec<Known>,
}

/// A known template and its timers, one per standard method, registered by the first
/// request of that method.
pub(crate) struct Known {
    template: Arc<str>,
    timers: [OnceLock<Timer>; STANDARD_METHODS.len()],
}

impl Known {
    pub(crate) fn template(&self) -> &str {
        &self.template
    }
}

/// The methods whose timers a [`Known`] template holds: RFC 9110's and PATCH.
static STANDARD_METHODS: [Method; 9] = [
    Method::GET,
    Method::POST,
    Method::PUT,
    Method::DELETE,
    Method::HEAD,
    Method::OPTIONS,
    Method::PATCH,
    Method::CONNECT,
    Method::TRACE,
];

impl RouteTable {
    /// No known templates.
    pub(crate) fn none() -> RouteTable {
        RouteTable::new(std::iter::empty())
    }

    fn new(templates: impl IntoIterator<Item = String>) -> RouteTable {
        let mut matcher = matchit::Router::new();
        let mut known = Vec::new();
        for template in templates {
            let text: Arc<str> = template.into();
            // axum accepted the template, and matchit is its matcher: an insertion can only
            // fail for a template axum refused too (it panicked first) or one already in.
            if matcher.insert(&*text, known.len()).is_ok() {
                known.push(Known {
                    template: text,
                    timers: Default::default(),
                });
            }
        }
        RouteTable { matcher, known }
    }

    /// Why a router nested at `prefix` beside these routes (axum's `nest_service`: `prefix`,
    /// `prefix/` and every path below) would conflict with one of them, if it would: axum
    /// panics on such a merge, and matchit, its matcher, tells ahead.
    pub(crate) fn conflict_under(&self, prefix: &str) -> Option<String> {
        let mut matcher = self.matcher.clone();
        [
            prefix.to_owned(),
            format!("{prefix}/"),
            format!("{prefix}/{{*rest}}"),
        ]
        .into_iter()
        .find_map(|path| matcher.insert(path, usize::MAX).err())
        .map(|e| e.to_string())
    }

    /// The route of a request for `path` with `method`, if `path` matches a known template;
    /// with the template, for the `routed` event.
    #[inline]
    pub(crate) fn find(&self, method: &Method, path: &str) -> Option<(Route, &str)> {
        if self.known.is_empty() {
            return None;
        }
        let index = *self.matcher.at(path).ok()?.value;
        let known = &self.known[index];
        let route = match STANDARD_METHODS.iter().position(|m| m == method) {
            Some(slot) => Route::Known { index, slot },
            None => Route::Other {
                index,
                method: method.clone(),
            },
        };
        Some((route, known.template()))
    }

    /// The template of a [`Route`] of this table.
    pub(crate) fn template(&self, index: usize) -> Option<&str> {
        self.known.get(index).map(Known::template)
    }

    /// The timer cell of a [`Route::Known`]: `None` for indices not of this table.
    pub(crate) fn timer(&self, index: usize, slot: usize) -> Option<(&OnceLock<Timer>, &str)> {
        let known = self.known.get(index)?;
        Some((known.timers.get(slot)?, known.template()))
    }
}

/// The route a request took, for its timer.
#[derive(Debug)]
pub(crate) enum Route {
    /// A template of the server's [`RouteTable`] (its index) with a standard method (its
    /// index in [`STANDARD_METHODS`]): the timer is in the table.
    Known { index: usize, slot: usize },
    /// A template of the table with a method of its own: the timer is found by the
    /// template's text (`RequestMetrics::record_route`).
    Other { index: usize, method: Method },
}

impl Route {
    /// The method of a standard-method route.
    pub(crate) fn standard_method(slot: usize) -> &'static Method {
        &STANDARD_METHODS[slot]
    }
}

/// The route axum matched for a request of a merged router, as its [`RouteLayer`] found it:
/// carried to the pipeline in the response's extensions.
#[derive(Clone, Debug)]
pub(crate) struct Matched {
    method: Method,
    path: MatchedPath,
}

impl Matched {
    /// The request's method.
    pub(crate) fn method(&self) -> &Method {
        &self.method
    }

    /// The route template.
    pub(crate) fn template(&self) -> &str {
        self.path.as_str()
    }
}

/// Added to a merged router as a route layer: the `routed` DEBUG event with the route
/// template, and the template handed on with the response ([`Matched`], in its extensions),
/// for the pipeline to time the request under its route.
#[derive(Clone, Copy, Debug, Default)]
pub struct RouteLayer;

impl<S> tower::Layer<S> for RouteLayer {
    type Service = Routed<S>;

    fn layer(&self, inner: S) -> Routed<S> {
        Routed { inner }
    }
}

/// See [`RouteLayer`].
#[derive(Clone, Debug)]
pub struct Routed<S> {
    inner: S,
}

impl<S, B, RB> tower::Service<http::Request<B>> for Routed<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<RB>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = RoutedFuture<S::Future>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let matched = req.extensions().get::<MatchedPath>().map(|path| {
            tracing::debug!(
                target: "ferrowizard::server::routing",
                method = req.method().as_str(),
                route = path.as_str(),
                "routed"
            );
            Matched {
                method: req.method().clone(),
                path: path.clone(),
            }
        });
        RoutedFuture {
            inner: self.inner.call(req),
            matched,
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of [`Routed`]: the route's, with [`Matched`] added to the response.
    pub struct RoutedFuture<F> {
        #[pin]
        inner: F,
        matched: Option<Matched>,
    }
}

impl<F, RB, E> Future for RoutedFuture<F>
where
    F: Future<Output = Result<http::Response<RB>, E>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<F::Output> {
        let this = self.project();
        let mut result = std::task::ready!(this.inner.poll(cx));
        if let (Ok(response), Some(matched)) = (&mut result, this.matched.take()) {
            response.extensions_mut().insert(matched);
        }
        std::task::Poll::Ready(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use tower::ServiceExt;

    #[test]
    fn the_table_holds_a_timer_per_template_and_standard_method() {
        let table = RouteTable::new(["/quotes/{symbol}".to_owned(), "/events".to_owned()]);
        let Some((Route::Known { index, slot }, template)) =
            table.find(&Method::POST, "/quotes/ACME")
        else {
            panic!("a known template with a standard method");
        };
        assert_eq!(template, "/quotes/{symbol}");
        assert_eq!(Route::standard_method(slot), Method::POST);
        let (cell, named) = table.timer(index, slot).unwrap();
        assert_eq!(named, "/quotes/{symbol}");
        // Another method of the same template: another timer.
        let Some((
            Route::Known {
                index: i2,
                slot: s2,
            },
            _,
        )) = table.find(&Method::GET, "/quotes/ACME")
        else {
            panic!("GET is standard");
        };
        assert_eq!(i2, index);
        assert!(!std::ptr::eq(cell, table.timer(i2, s2).unwrap().0));
        // A method of its own: the template, for a timer found by its text.
        let purge = Method::from_bytes(b"PURGE").unwrap();
        match table.find(&purge, "/events") {
            Some((Route::Other { index, method }, "/events")) => {
                assert_eq!(method, purge);
                assert_eq!(table.template(index), Some("/events"));
            }
            other => panic!("{other:?}"),
        }
        assert!(table.find(&Method::GET, "/nowhere").is_none());
        assert!(table.timer(7, 0).is_none());
        assert!(RouteTable::none().find(&Method::GET, "/events").is_none());
    }

    /// Catches: a change in axum's `Debug` output that reads wrong templates (then merged
    /// routers are timed under them) or none (then every merged route is layered).
    #[test]
    fn a_routers_templates_are_read_with_its_nested_routers() {
        let api = axum::Router::new()
            .route("/items/{id}", get(|| async {}).post(|| async {}))
            .route("/items", get(|| async {}));
        let router = axum::Router::new()
            .route("/", get(|| async {}))
            .route("/files/{*rest}", get(|| async {}))
            .nest("/api", api)
            .nest_service(
                "/static",
                tower::service_fn(|_: http::Request<axum::body::Body>| async {
                    Ok::<_, std::convert::Infallible>(
                        http::Response::new(axum::body::Body::empty()),
                    )
                }),
            )
            .fallback(|| async {});
        let mut templates = templates_of(&router).expect("templates");
        templates.sort();
        assert_eq!(
            templates,
            [
                "/",
                "/api/items",
                "/api/items/{id}",
                "/files/{*rest}",
                "/static",
                "/static/"
            ]
        );
        assert_eq!(
            templates_of(&axum::Router::new().fallback(|| async {})),
            Some(vec![])
        );
        // A template `Debug` escapes is not read back: the router is layered instead.
        let odd = axum::Router::new().route("/say/\"hi\"", get(|| async {}));
        assert_eq!(templates_of(&odd), None);
    }

    /// Catches: the matched template not handed on with the response (a merged router's
    /// requests would go untimed), or handed on for a request axum did not route (its
    /// fallback).
    #[tokio::test]
    async fn a_merged_route_hands_its_template_on_with_the_response() {
        let router = layered(
            axum::Router::new()
                .route("/items/{id}", get(|| async { "item" }))
                .fallback(|| async { "fallback" }),
        );
        let request = |path: &str| {
            http::Request::get(path)
                .body(axum::body::Body::empty())
                .unwrap()
        };
        let response = router.clone().oneshot(request("/items/7")).await.unwrap();
        let matched = response.extensions().get::<Matched>().expect("matched");
        assert_eq!(matched.template(), "/items/{id}");
        assert_eq!(matched.method(), Method::GET);
        let response = router.oneshot(request("/elsewhere")).await.unwrap();
        assert!(response.extensions().get::<Matched>().is_none());
    }
}
