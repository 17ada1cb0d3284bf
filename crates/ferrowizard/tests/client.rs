//! The `Client` extractor on real sockets: what a handler learns of who sent a request, with
//! and without a trusted proxy's headers.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use axum::Router;
use axum::extract::ConnectInfo;
use axum::routing::get;
use ferrowizard::config::ServerFactory;
use ferrowizard::config::{
    ConnectorCommon, ConnectorFactory, DefaultServerFactory, HttpConnectorFactory,
};
use ferrowizard::server::{Client, Server};

async fn whoami(client: Client, ConnectInfo(addr): ConnectInfo<SocketAddr>) -> String {
    format!(
        "{} {} {:?} {} {}",
        client.addr.ip(),
        client.scheme,
        client.host,
        client.proxy.map_or("-".to_owned(), |p| p.ip().to_string()),
        addr.ip()
    )
}

async fn serve(forwarded: bool, trusted: &[&str]) -> (Server, SocketAddr) {
    let connector = |port| {
        ConnectorFactory::Http(HttpConnectorFactory {
            common: ConnectorCommon {
                port,
                bind_host: Some("127.0.0.1".into()),
                use_forwarded_headers: forwarded,
                trusted_proxies: trusted.iter().map(|t| (*t).to_owned()).collect(),
                ..Default::default()
            },
        })
    };
    let mut f = DefaultServerFactory {
        application_connectors: vec![connector(0)],
        admin_connectors: Vec::new(),
        ..Default::default()
    };
    f.common.request_log.appenders = Vec::new();
    let app = Router::new().route("/whoami", get(whoami));
    common::serve(&ServerFactory::Default(f), app).await
}

fn ask(addr: SocketAddr, headers: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET /whoami HTTP/1.1\r\nHost: test\r\nConnection: close\r\n{headers}\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_sees_the_client_a_trusted_proxy_names() {
    let proxy_headers = "X-Forwarded-For: 203.0.113.7\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: shop.example\r\n";
    let cases = [
        // Off: the peer, and the connector's own scheme.
        (false, &[][..], "127.0.0.1 http None - 127.0.0.1"),
        // On: the client, the scheme and host the proxy names; ConnectInfo is the client too.
        (
            true,
            &[][..],
            "203.0.113.7 https Some(\"shop.example\") 127.0.0.1 203.0.113.7",
        ),
        (
            true,
            &["127.0.0.0/8"][..],
            "203.0.113.7 https Some(\"shop.example\") 127.0.0.1 203.0.113.7",
        ),
        // On, but the peer is not a trusted proxy: spoofing changes nothing.
        (true, &["10.0.0.0/8"][..], "127.0.0.1 http None - 127.0.0.1"),
    ];
    for (forwarded, trusted, want) in cases {
        let (server, addr) = serve(forwarded, trusted).await;
        let got = tokio::task::spawn_blocking(move || ask(addr, proxy_headers))
            .await
            .unwrap();
        assert_eq!(got, want, "forwarded {forwarded}, trusted {trusted:?}");
        // Without proxy headers, the peer whatever the settings.
        let plain = tokio::task::spawn_blocking(move || ask(addr, ""))
            .await
            .unwrap();
        assert_eq!(plain, "127.0.0.1 http None - 127.0.0.1");
        server.shutdown().await;
    }
}
