//! Which route a request took: the template its timer is kept under (`ferrowizard.routes`)
//! and the `routed` DEBUG event names.
//!
//! An application's routes reach the server in two ways ([`Routes`]):
//! - **by template** ([`Routes::route`]): ferrowizard records the template when the route is
//!   added and finds it for each request itself, in a [`RouteTable`] the gate looks the path up
//!   in (matchit, the matcher axum uses, on the same templates): nothing wraps the route;
//! - **as a whole router** ([`Routes::merge`]): its templates are not known until axum matches
//!   them, so each of its routes gets [`RouteLayer`], which reads axum's `MatchedPath` and
//!   notes it for the gate.
//!
//! Why two ways: axum offers no way to learn a router's templates, and a layered route is
//! costly on the request path: axum wraps it in a second boxed service, which it clones and
//! whose future it boxes on every request (BENCHMARKS.md, "Server under load"). The table's
//! lookup is one search of the path, with nothing boxed. Where both know a request's route
//! (a merged router's route more specific than a template added by `route`), the layer's
//! note wins: it is the route axum called.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use axum::Router;
use axum::extract::MatchedPath;
use axum::routing::MethodRouter;
use ferrowizard_metrics::Timer;
use http::Method;
use rustc_hash::FxHashSet;

/// An application's routes, as [`Server::start`](super::Server::start) serves them: an axum
/// [`Router`] and the templates ferrowizard was told (see the module docs).
#[derive(Debug, Default)]
pub struct Routes {
    router: Router,
    /// The templates added by [`route`](Self::route), each once.
    templates: Vec<Arc<str>>,
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

    /// Adds every route of `router` (axum's [`Router::merge`]). Each of its routes is timed
    /// through a layer (see the module docs): prefer [`route`](Self::route) for routes served
    /// under load.
    #[must_use]
    pub fn merge(mut self, router: Router) -> Routes {
        self.router = self.router.merge(layered(router));
        self
    }

    /// The router to serve under the context path `prefix` (`""` or `/`: none), and the table
    /// of its known templates as requests will name them.
    pub(crate) fn under(self, prefix: &str) -> (Router, RouteTable) {
        let prefix = prefix.trim_end_matches('/');
        let table = RouteTable::new(self.templates.iter().map(|t| nested(prefix, t)));
        let router = if prefix.is_empty() {
            self.router
        } else {
            Router::new().nest(prefix, self.router)
        };
        (router, table)
    }
}

impl From<Router> for Routes {
    /// The routes of `router`, learned as axum matches them ([`Routes::merge`]).
    fn from(router: Router) -> Routes {
        Routes::new().merge(router)
    }
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
/// [`RequestMetrics`]: super::metrics::RequestMetrics
pub(crate) struct RouteTable {
    matcher: matchit::Router<usize>,
    known: Vec<Known>,
}

/// A known template and its timers, one per standard method, registered by the first
/// request of that method.
pub(crate) struct Known {
    id: RouteId,
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
                    id: RouteId::own(&text),
                    template: text,
                    timers: Default::default(),
                });
            }
        }
        RouteTable { matcher, known }
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
            None => Route::Noted(method.clone(), known.id),
        };
        Some((route, known.template()))
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
    /// Noted by a [`RouteLayer`], or a known template with a method of its own: the timer
    /// is found by the template's identity (`RequestMetrics::record_route`).
    Noted(Method, RouteId),
}

impl Route {
    /// The method of a standard-method route.
    pub(crate) fn standard_method(slot: usize) -> &'static Method {
        &STANDARD_METHODS[slot]
    }
}

/// A route template, by identity: the address and length of one copy of its text (axum's,
/// from a route layer, or the [`RouteTable`]'s).
///
/// Why not a clone of axum's `MatchedPath`: that is a reference count every worker bumps on
/// the same allocation, as axum does for every request of the route, and each bump moves
/// the count's cache line between the cores (BENCHMARKS.md, "Server under load"). Identity
/// is sound because [`TEMPLATES`] keeps every template seen alive for the life of the
/// process: no other text can take its address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RouteId(usize, usize);

/// Every route template ever matched or added by template (a few per application), kept
/// alive; see [`RouteId`].
static TEMPLATES: Mutex<Vec<Template>> = Mutex::new(Vec::new());

/// A copy of a template's text in [`TEMPLATES`].
enum Template {
    /// axum's, noted by [`RouteLayer`].
    Matched(MatchedPath),
    /// A [`RouteTable`]'s: one copy per text.
    Known(Arc<str>),
}

impl Template {
    fn as_str(&self) -> &str {
        match self {
            Template::Matched(m) => m.as_str(),
            Template::Known(k) => k,
        }
    }
}

/// Copies of one template's text kept in [`TEMPLATES`] at most.
const COPIES_KEPT: usize = 8;

impl RouteId {
    fn at(text: &str) -> RouteId {
        RouteId(text.as_ptr() as usize, text.len())
    }

    /// The identity of the known template `text`: of the copy kept for it (one per text,
    /// however many servers a process starts).
    fn own(text: &Arc<str>) -> RouteId {
        let mut all = TEMPLATES.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(kept) = all
            .iter()
            .find(|t| matches!(t, Template::Known(k) if **k == **text))
        {
            return RouteId::at(kept.as_str());
        }
        all.push(Template::Known(text.clone()));
        RouteId::at(text)
    }

    /// The identity of `route`, which is kept alive from now on (or, past [`COPIES_KEPT`]
    /// copies of its text, of the first copy kept).
    fn of(route: &MatchedPath) -> RouteId {
        let id = RouteId::at(route.as_str());
        thread_local! {
            /// The templates this thread has already made sure are kept.
            static SEEN: RefCell<FxHashSet<RouteId>> = RefCell::default();
        }
        if SEEN.with(|seen| seen.try_borrow().is_ok_and(|s| s.contains(&id))) {
            return id;
        }
        let mut all = TEMPLATES.lock().unwrap_or_else(PoisonError::into_inner);
        if !all.iter().any(|t| id.is(t)) {
            // Each router has its own copy of a template (two servers in one process: two
            // copies), each kept so that its requests take the fast path above. But a
            // `MatchedPath` made afresh for every request (axum does that for a router nested
            // in another at run time) must not add an entry per request: past a few copies of
            // one text, the first copy stands for the rest.
            let mut same = all.iter().filter(|t| t.as_str() == route.as_str());
            if let Some(first) = same.next()
                && same.count() + 1 >= COPIES_KEPT
            {
                return RouteId::at(first.as_str());
            }
            all.push(Template::Matched(route.clone()));
        }
        drop(all);
        SEEN.with(|seen| {
            if let Ok(mut seen) = seen.try_borrow_mut() {
                seen.insert(id);
            }
        });
        id
    }

    fn is(self, template: &Template) -> bool {
        RouteId::at(template.as_str()) == self
    }

    /// The template's text (a lock and a copy: once per route and thread).
    pub(crate) fn template(self) -> Option<String> {
        TEMPLATES
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|t| self.is(t))
            .map(|t| t.as_str().to_owned())
    }
}

thread_local! {
    /// The route the router matched for the request being called on this thread: set by
    /// [`Routed`] inside the router, taken by the gate as soon as the router's `call` returns
    /// (the same synchronous call, so the same thread).
    static MATCHED: RefCell<Option<(Method, RouteId)>> = const { RefCell::new(None) };
}

/// Takes what [`Routed`] noted for the request just handed to the router.
pub(crate) fn take_matched() -> Option<Route> {
    MATCHED
        .with(|m| m.try_borrow_mut().ok().and_then(|mut m| m.take()))
        .map(|(method, id)| Route::Noted(method, id))
}

/// Added to the router as a route layer: the `routed` DEBUG event with the route template,
/// and the template noted for the gate, which times the request under its route (one clock
/// reading at each end serves every timer; see `super::gate`).
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

impl<S, B> tower::Service<http::Request<B>> for Routed<S>
where
    S: tower::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        if let Some(route) = req.extensions().get::<MatchedPath>() {
            tracing::debug!(
                target: "ferrowizard::server::routing",
                method = req.method().as_str(),
                route = route.as_str(),
                "routed"
            );
            let noted = (req.method().clone(), RouteId::of(route));
            MATCHED.with(|m| {
                if let Ok(mut m) = m.try_borrow_mut() {
                    *m = Some(noted);
                }
            });
        }
        self.inner.call(req)
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
        // A method of its own: the template's identity, timed through the per-thread cache.
        let purge = Method::from_bytes(b"PURGE").unwrap();
        match table.find(&purge, "/events") {
            Some((Route::Noted(m, id), "/events")) => {
                assert_eq!(m, purge);
                assert_eq!(id.template().as_deref(), Some("/events"));
            }
            other => panic!("{other:?}"),
        }
        assert!(table.find(&Method::GET, "/nowhere").is_none());
        assert!(table.timer(7, 0).is_none());
        assert!(RouteTable::none().find(&Method::GET, "/events").is_none());
    }

    /// A `MatchedPath` for `path`, as axum makes it in `router`.
    async fn matched(router: &axum::Router, path: &str) -> MatchedPath {
        let (tx, rx) = std::sync::mpsc::channel();
        let probe = router.clone().layer(axum::middleware::from_fn(
            move |req: axum::extract::Request, next: axum::middleware::Next| {
                let tx = tx.clone();
                async move {
                    let _ = tx.send(req.extensions().get::<MatchedPath>().cloned());
                    next.run(req).await
                }
            },
        ));
        let request = http::Request::get(path)
            .body(axum::body::Body::empty())
            .unwrap();
        let _ = probe.oneshot(request).await;
        rx.recv().unwrap().unwrap()
    }

    #[tokio::test]
    async fn a_route_is_known_by_its_copy_and_copies_made_per_request_are_not_kept() {
        // Text no other test uses: `TEMPLATES` is shared by the whole test binary.
        let template = "/route-id-test/{id}";
        let copies = || {
            TEMPLATES
                .lock()
                .unwrap()
                .iter()
                .filter(|t| t.as_str() == template)
                .count()
        };
        let router = axum::Router::new().route(template, get(|| async {}));
        let first = matched(&router, "/route-id-test/1").await;
        let again = matched(&router, "/route-id-test/2").await;
        assert_eq!(
            RouteId::of(&first),
            RouteId::of(&again),
            "one copy per router"
        );
        assert_eq!(RouteId::of(&first).template().unwrap(), template);
        assert_eq!(copies(), 1);
        // Copies at other addresses (other routers, or made afresh per request): a few are
        // kept, then the first stands for them all.
        for i in 0..3 * COPIES_KEPT {
            let other = axum::Router::new().route(template, get(|| async {}));
            let path = format!("/route-id-test/{i}");
            let id = RouteId::of(&matched(&other, &path).await);
            assert_eq!(id.template().unwrap(), template);
        }
        assert_eq!(copies(), COPIES_KEPT);
    }
}
