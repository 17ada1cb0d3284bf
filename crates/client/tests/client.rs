//! The client against a real service on a real socket: each key of `httpClient` at work, the
//! metrics, the pool's lifecycle.

mod support;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::Bytes;
use ferrowizard::Managed;
use ferrowizard_client::ClientError;
use support::{client, metric, start};

const CLIENT: &str = "org.apache.hc.client5.http.classic.HttpClient.quotes";
const POOL: &str = "org.apache.hc.client5.http.io.HttpClientConnectionManager.quotes";

async fn ok(client: &ferrowizard_client::HttpClient, url: &str) -> String {
    client
        .get(url)
        .await
        .unwrap()
        .into_body()
        .text()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_call_is_timed_by_method_and_its_connection_kept() {
    let upstream = start().await;
    let (quotes, env) = client("keepAlive: 10s\n");
    for _ in 0..3 {
        assert_eq!(ok(&quotes, &upstream.url("/")).await, "ok");
    }
    assert_eq!(metric(&env, &format!("{CLIENT}.get-requests"))["count"], 3);
    assert_eq!(upstream.connections(), 1, "one connection, kept");
    assert_eq!(
        metric(&env, &format!("{POOL}.opened-connections"))["count"],
        1
    );
    assert_eq!(
        metric(&env, &format!("{POOL}.leased-connections"))["value"],
        0.0
    );
    assert_eq!(
        metric(&env, &format!("{POOL}.available-connections"))["value"],
        1.0
    );
    assert_eq!(
        metric(&env, &format!("{POOL}.max-connections"))["value"],
        1024.0
    );
}

#[tokio::test]
async fn keep_alive_zero_opens_a_connection_per_call_and_bounds_idle_time_otherwise() {
    let upstream = start().await;
    let (quotes, _env) = client("");
    for _ in 0..3 {
        ok(&quotes, &upstream.url("/")).await;
    }
    assert_eq!(
        upstream.connections(),
        3,
        "keepAlive 0ms: no connection reused"
    );

    let upstream = start().await;
    let (quotes, _env) = client("keepAlive: 150ms\n");
    ok(&quotes, &upstream.url("/")).await;
    ok(&quotes, &upstream.url("/")).await;
    assert_eq!(upstream.connections(), 1);
    tokio::time::sleep(Duration::from_millis(600)).await;
    ok(&quotes, &upstream.url("/")).await;
    assert_eq!(upstream.connections(), 2, "idle past keepAlive: closed");
}

#[tokio::test]
async fn time_to_live_retires_a_connection_once_it_is_older() {
    let upstream = start().await;
    let (quotes, env) = client("keepAlive: 10s\ntimeToLive: 200ms\n");
    ok(&quotes, &upstream.url("/")).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Its response comes on the old connection, which is then retired.
    ok(&quotes, &upstream.url("/")).await;
    ok(&quotes, &upstream.url("/")).await;
    assert_eq!(upstream.connections(), 2);
    assert_eq!(
        metric(&env, &format!("{POOL}.expired-connections"))["count"],
        1
    );

    let upstream = start().await;
    let (quotes, _env) = client("keepAlive: 10s\n");
    ok(&quotes, &upstream.url("/")).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    ok(&quotes, &upstream.url("/")).await;
    ok(&quotes, &upstream.url("/")).await;
    assert_eq!(upstream.connections(), 1, "the default hour");
}

#[tokio::test]
async fn timeout_bounds_the_wait_for_the_head_and_for_each_piece_of_the_body() {
    let upstream = start().await;
    let (quotes, env) = client("timeout: 150ms\n");
    let started = Instant::now();
    let err = quotes
        .get(&upstream.url("/slow-head?ms=2000"))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Timeout { .. }), "{err}");
    assert!(err.is_timeout());
    assert!(started.elapsed() < Duration::from_millis(1500));
    assert!(err.to_string().contains("quotes"), "{err}");

    let response = quotes.get(&upstream.url("/stall-body")).await.unwrap();
    let err = response.into_body().text().await.unwrap_err();
    assert!(matches!(err, ClientError::Timeout { .. }), "{err}");
    assert_eq!(
        metric(&env, &format!("{CLIENT}.SocketTimeoutException"))["count"],
        2
    );

    let (patient, _env) = client("timeout: 3s\n");
    assert_eq!(ok(&patient, &upstream.url("/slow-head?ms=300")).await, "ok");
}

#[tokio::test]
async fn connection_timeout_bounds_the_tcp_connection_and_the_tls_handshake() {
    // A server that accepts and never says a word: the TLS handshake never ends.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = silent.local_addr().unwrap();
    let held = tokio::spawn(async move {
        let mut kept = Vec::new();
        while let Ok((tcp, _)) = silent.accept().await {
            kept.push(tcp);
        }
    });
    let (quotes, env) = client("connectionTimeout: 200ms\ntimeout: 5s\n");
    let started = Instant::now();
    let err = quotes.get(&format!("https://{addr}/")).await.unwrap_err();
    assert!(
        matches!(
            err,
            ClientError::Connect {
                timed_out: true,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.is_timeout());
    assert!(started.elapsed() < Duration::from_millis(2000));
    assert_eq!(
        metric(&env, &format!("{CLIENT}.ConnectTimeoutException"))["count"],
        1
    );

    // A port nobody listens on: refused at once, not a timeout.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let err = quotes
        .get(&format!("http://127.0.0.1:{port}/"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ClientError::Connect {
                timed_out: false,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        metric(&env, &format!("{CLIENT}.HttpHostConnectException"))["count"],
        1
    );
    held.abort();
}

#[tokio::test]
async fn max_connections_and_connection_request_timeout_bound_the_calls_in_flight() {
    let upstream = start().await;
    let (quotes, env) = client(
        "maxConnections: 1\nmaxConnectionsPerRoute: 1\nconnectionRequestTimeout: 100ms\ntimeout: 5s\n",
    );
    let holding = {
        let quotes = quotes.clone();
        let url = upstream.url("/hold?ms=600");
        tokio::spawn(async move { quotes.get(&url).await.unwrap().into_body().text().await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        metric(&env, &format!("{POOL}.leased-connections"))["value"],
        1.0
    );
    let err = quotes.get(&upstream.url("/")).await.unwrap_err();
    assert!(matches!(err, ClientError::PoolTimeout { .. }), "{err}");
    assert_eq!(
        metric(&env, &format!("{CLIENT}.ConnectionRequestTimeoutException"))["count"],
        1
    );
    holding.await.unwrap().unwrap();

    // With a longer wait the second call waits its turn, counted as pending meanwhile.
    let (patient, env) = client(
        "maxConnections: 1\nmaxConnectionsPerRoute: 1\nconnectionRequestTimeout: 3s\ntimeout: 5s\n",
    );
    let first = {
        let patient = patient.clone();
        let url = upstream.url("/hold?ms=400");
        tokio::spawn(async move { patient.get(&url).await.unwrap().into_body().text().await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = {
        let patient = patient.clone();
        let url = upstream.url("/");
        tokio::spawn(async move { patient.get(&url).await.unwrap().into_body().text().await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        metric(&env, &format!("{POOL}.pending-connections"))["value"],
        1.0
    );
    first.await.unwrap().unwrap();
    assert_eq!(second.await.unwrap().unwrap(), "ok");
}

#[tokio::test]
async fn max_connections_per_route_bounds_one_host_and_leaves_the_others_free() {
    let one = start().await;
    let other = start().await;
    let (quotes, _env) = client(
        "maxConnections: 4\nmaxConnectionsPerRoute: 1\nconnectionRequestTimeout: 100ms\ntimeout: 5s\n",
    );
    let holding = {
        let quotes = quotes.clone();
        let url = one.url("/hold?ms=500");
        tokio::spawn(async move { quotes.get(&url).await.unwrap().into_body().text().await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        ok(&quotes, &other.url("/")).await,
        "ok",
        "another route is free"
    );
    let err = quotes.get(&one.url("/")).await.unwrap_err();
    assert!(matches!(err, ClientError::PoolTimeout { .. }), "{err}");
    holding.await.unwrap().unwrap();
}

#[tokio::test]
async fn retries_send_an_idempotent_call_again_when_its_connection_fails() {
    let upstream = start().await;
    let (quotes, env) = client("retries: 1\n");
    assert_eq!(ok(&quotes, &upstream.url("/close-first")).await, "ok");
    assert_eq!(upstream.seen.dropped_first.load(Ordering::SeqCst), 1);
    assert_eq!(metric(&env, &format!("{CLIENT}.retries"))["count"], 1);

    // A POST is not sent twice.
    let upstream = start().await;
    let post = http::Request::post(upstream.url("/close-first"))
        .body(Bytes::from_static(b"{}"))
        .unwrap();
    let err = quotes.send(post).await.unwrap_err();
    assert!(matches!(err, ClientError::Io { .. }), "{err}");

    // Without retries, the failure is the caller's.
    let upstream = start().await;
    let (once, env) = client("");
    let err = once.get(&upstream.url("/close-first")).await.unwrap_err();
    assert!(matches!(err, ClientError::Io { .. }), "{err}");
    assert_eq!(
        metric(&env, &format!("{CLIENT}.SocketException"))["count"],
        1
    );
    assert_eq!(metric(&env, &format!("{CLIENT}.retries"))["count"], 0);
}

#[tokio::test]
async fn user_agent_names_the_service_and_the_client_unless_set() {
    let upstream = start().await;
    let (quotes, _env) = client("");
    assert_eq!(
        ok(&quotes, &upstream.url("/user-agent")).await,
        "orders (quotes)"
    );
    let (named, _env) = client("userAgent: orders-bot/2\n");
    assert_eq!(
        ok(&named, &upstream.url("/user-agent")).await,
        "orders-bot/2"
    );
}

#[tokio::test]
async fn stopping_closes_the_idle_connections_and_refuses_later_calls() {
    let upstream = start().await;
    let (quotes, _env) = client("keepAlive: 10s\n");
    ok(&quotes, &upstream.url("/")).await;
    quotes.stop().await.unwrap();
    let err = quotes.get(&upstream.url("/")).await.unwrap_err();
    assert!(matches!(err, ClientError::Request { .. }), "{err}");
    assert!(err.to_string().contains("stopped"), "{err}");
    assert_eq!(upstream.seen.requests.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_relative_url_is_refused_with_the_client_named() {
    let (quotes, _env) = client("");
    let err = quotes.get("/quotes/ACME").await.unwrap_err();
    assert!(matches!(err, ClientError::Request { .. }));
    assert!(err.to_string().contains("http client quotes"), "{err}");
}

#[tokio::test]
async fn the_timers_follow_the_naming_strategy() {
    let upstream = start().await;
    let mut env = ferrowizard::Environment::named("orders");
    let quotes = support::section("")
        .build_with(
            "quotes",
            ferrowizard_client::MetricNameStrategy::HostAndMethod,
            &mut env,
        )
        .unwrap();
    ok(&quotes, &upstream.url("/")).await;
    assert_eq!(
        metric(&env, &format!("{CLIENT}.127.0.0.1.get-requests"))["count"],
        1
    );

    let mut env = ferrowizard::Environment::named("orders");
    let quotes = support::section("")
        .build_with(
            "quotes",
            ferrowizard_client::MetricNameStrategy::QuerylessUrlAndMethod,
            &mut env,
        )
        .unwrap();
    ok(&quotes, &upstream.url("/hold?ms=1")).await;
    let name = format!("{CLIENT}.http://{}/hold.get-requests", upstream.addr);
    assert_eq!(metric(&env, &name)["count"], 1);
}

#[test]
fn two_clients_of_one_name_are_refused() {
    let mut env = ferrowizard::Environment::named("orders");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let _guard = runtime.enter();
    support::section("").build("quotes", &mut env).unwrap();
    let err = support::section("").build("quotes", &mut env);
    assert!(err.is_err());
}

#[tokio::test]
async fn several_named_clients_keep_their_own_pools_and_metrics() {
    let quotes_service = start().await;
    let payments_service = start().await;
    let mut env = ferrowizard::Environment::named("orders");
    let quotes = support::section("keepAlive: 10s\n")
        .build("quotes", &mut env)
        .unwrap();
    let payments = support::section("keepAlive: 10s\nuserAgent: orders-payments\n")
        .build("payments", &mut env)
        .unwrap();
    assert_eq!(ok(&quotes, &quotes_service.url("/")).await, "ok");
    for _ in 0..2 {
        assert_eq!(
            ok(&payments, &payments_service.url("/user-agent")).await,
            "orders-payments"
        );
    }
    assert_eq!(metric(&env, &format!("{CLIENT}.get-requests"))["count"], 1);
    let payments_requests = "org.apache.hc.client5.http.classic.HttpClient.payments.get-requests";
    assert_eq!(metric(&env, payments_requests)["count"], 2);
    let payments_pool = "org.apache.hc.client5.http.io.HttpClientConnectionManager.payments";
    assert_eq!(
        metric(&env, &format!("{payments_pool}.opened-connections"))["count"],
        1
    );
    assert_eq!(
        metric(&env, &format!("{POOL}.opened-connections"))["count"],
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_calls_at_once_never_exceed_max_connections_and_all_get_their_turn() {
    let upstream = start().await;
    let (quotes, env) = client(
        "maxConnections: 2\nmaxConnectionsPerRoute: 2\nconnectionRequestTimeout: 10s\n\
         timeout: 5s\nkeepAlive: 10s\n",
    );
    let calls: Vec<_> = (0..24)
        .map(|_| {
            let quotes = quotes.clone();
            let url = upstream.url("/hold?ms=20");
            tokio::spawn(async move { quotes.get(&url).await?.into_body().text().await })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap(), "ok");
    }
    assert_eq!(upstream.seen.most_held.load(Ordering::SeqCst), 2);
    assert_eq!(
        metric(&env, &format!("{POOL}.leased-connections"))["value"],
        0.0
    );
    assert_eq!(
        metric(&env, &format!("{POOL}.pending-connections"))["value"],
        0.0
    );
}
