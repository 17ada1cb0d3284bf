//! Any valid configuration, dumped (`check --dump`) and loaded again, is the same value.

use std::collections::BTreeMap;

use ferrowizard::config::{
    ConnectorCommon, ConnectorFactory, DefaultServerFactory, HttpConnectorFactory,
    HttpsConnectorFactory, RequestLogFactory, ServerCommon, SimpleServerFactory, TlsProtocol,
};
use ferrowizard::config::{
    Duration, FrameworkConfiguration, Level, ServerFactory, Size, dump, load_str,
};
use ferrowizard_logging::config::{
    AppenderCommon, AppenderFactory, ConsoleAppenderFactory, ConsoleTarget, FileAppenderFactory,
    JsonLayoutFactory, LayoutFactory, LoggerConfig, LoggingFactory, SyslogAppenderFactory,
    TcpAppenderFactory, TcpTarget, UdpAppenderFactory,
};
use garde::Validate;
use proptest::prelude::*;

fn level() -> impl Strategy<Value = Level> {
    prop::sample::select(vec![
        Level::All,
        Level::Trace,
        Level::Debug,
        Level::Info,
        Level::Warn,
        Level::Error,
        Level::Off,
    ])
}

fn duration() -> impl Strategy<Value = Duration> {
    (0u64..=u64::from(u32::MAX) * 1000)
        .prop_map(|n| std::time::Duration::from_nanos(n * 1000).into())
}

fn size() -> impl Strategy<Value = Size> {
    (0u64..=1 << 40).prop_map(Size::bytes)
}

fn name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_]{0,8}(::[a-z]{1,6}|\\.[a-z]{1,6}){0,3}"
}

fn text() -> impl Strategy<Value = String> {
    // Printable text, including characters YAML must quote.
    "[ -~]{0,20}"
}

fn connector() -> impl Strategy<Value = ConnectorFactory> {
    let host = prop::option::of("[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}");
    (
        any::<u16>(),
        host,
        duration(),
        size(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(port, bind_host, idle_timeout, header, https, v13)| {
            if https {
                ConnectorFactory::Https(HttpsConnectorFactory {
                    common: ConnectorCommon {
                        port,
                        bind_host,
                        idle_timeout,
                        max_request_header_size: header,
                        ..Default::default()
                    },
                    cert_path: Some("cert.pem".into()),
                    key_path: Some("key.pem".into()),
                    supported_protocols: if v13 {
                        vec![TlsProtocol::TlsV13]
                    } else {
                        vec![TlsProtocol::TlsV12]
                    },
                })
            } else {
                ConnectorFactory::Http(HttpConnectorFactory {
                    common: ConnectorCommon {
                        port,
                        bind_host,
                        idle_timeout,
                        max_request_header_size: header,
                        ..Default::default()
                    },
                })
            }
        })
}

fn appender() -> impl Strategy<Value = AppenderFactory> {
    (
        0..5u8,
        level(),
        prop::option::of(text()),
        1usize..100_000,
        -1i64..1000,
        any::<bool>(),
        text(),
        any::<u16>(),
        size(),
    )
        .prop_map(
            |(
                kind,
                threshold,
                log_format,
                queue_size,
                discarding_threshold,
                flag,
                host,
                port,
                size,
            )| match kind {
                0 => AppenderFactory::Console(ConsoleAppenderFactory {
                    common: AppenderCommon {
                        threshold,
                        log_format,
                        queue_size,
                        discarding_threshold,
                        never_block: flag,
                        layout: flag.then(|| {
                            LayoutFactory::Json(JsonLayoutFactory {
                                additional_fields: BTreeMap::from([(
                                    "service".into(),
                                    host.clone(),
                                )]),
                                ..Default::default()
                            })
                        }),
                        ..Default::default()
                    },
                    target: if flag {
                        ConsoleTarget::Stderr
                    } else {
                        ConsoleTarget::Stdout
                    },
                }),
                1 => AppenderFactory::File(FileAppenderFactory {
                    common: AppenderCommon {
                        threshold,
                        ..Default::default()
                    },
                    current_log_filename: Some(format!("/var/log/{port}.log")),
                    archive: flag,
                    archived_log_filename_pattern: Some(format!("/var/log/{port}-%d-%i.log.gz")),
                    max_file_size: flag.then_some(size),
                    buffer_size: size,
                    ..Default::default()
                }),
                2 => AppenderFactory::Syslog(SyslogAppenderFactory {
                    host,
                    port,
                    ..Default::default()
                }),
                3 => AppenderFactory::Tcp(TcpAppenderFactory {
                    target: TcpTarget {
                        host,
                        port,
                        ..Default::default()
                    },
                    ..Default::default()
                }),
                _ => AppenderFactory::Udp(UdpAppenderFactory {
                    host,
                    port,
                    ..Default::default()
                }),
            },
        )
}

fn logger() -> impl Strategy<Value = LoggerConfig> {
    (
        level(),
        any::<bool>(),
        prop::collection::vec(appender(), 0..2),
    )
        .prop_map(|(level, additive, appenders)| LoggerConfig {
            level,
            additive,
            appenders,
        })
}

type Limits = (usize, usize, Duration, Size);

/// An appender as the request log takes it: without the keys it refuses (`threshold`,
/// `logFormat`, `includeCallerData`), which a dump leaves out.
fn for_request_log(mut a: AppenderFactory) -> AppenderFactory {
    let common = a.common_mut();
    common.threshold = Level::All;
    common.log_format = None;
    common.include_caller_data = false;
    a
}

fn configuration() -> impl Strategy<Value = FrameworkConfiguration> {
    (
        any::<bool>(),
        (1usize..5000, 1usize..5000, duration(), size()),
        prop::collection::vec(connector(), 1..3),
        prop::collection::vec(connector(), 0..2),
        level(),
        prop::collection::btree_map(name(), logger(), 0..4),
        prop::collection::vec(appender(), 0..3),
        prop::collection::vec(appender().prop_map(for_request_log), 0..2),
        prop::collection::vec("/[a-z]{1,8}\\*?", 0..3),
    )
        .prop_map(
            |(simple, limits, app, admin, root, loggers, appenders, request, excluded)| {
                let (a, b, grace, body): Limits = limits;
                let request_log = RequestLogFactory {
                    appenders: request,
                    excluded_paths: excluded,
                };
                // The keys both server types have.
                let common = ServerCommon {
                    max_queued_requests: a,
                    max_threads: b,
                    shutdown_grace_period: grace,
                    max_request_body_size: body,
                    request_log,
                    ..Default::default()
                };
                let server = if simple {
                    let connector = app[0].clone();
                    ServerFactory::Simple(SimpleServerFactory {
                        common,
                        connector,
                        ..Default::default()
                    })
                } else {
                    ServerFactory::Default(DefaultServerFactory {
                        common,
                        application_connectors: app,
                        admin_connectors: admin,
                        ..Default::default()
                    })
                };
                let logging = LoggingFactory {
                    level: root,
                    loggers,
                    appenders,
                    ..Default::default()
                };
                FrameworkConfiguration {
                    server,
                    logging,
                    ..Default::default()
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn dumped_then_loaded_is_equal(config in configuration()) {
        prop_assume!(config.validate().is_ok());
        let yaml = dump(&config).expect("dump");
        let loaded: FrameworkConfiguration = load_str("dump.yaml", &yaml, &[])
            .unwrap_or_else(|report| panic!("{report}\n--- dumped:\n{yaml}"));
        prop_assert_eq!(loaded, config);
    }
}

#[test]
fn a_dollar_brace_in_a_value_survives_the_dump() {
    // Found by the proptest: a value that looks like `${VAR}` must not be substituted when the
    // dump is loaded again.
    let mut config = FrameworkConfiguration::default();
    config.logging.appenders = vec![AppenderFactory::Udp(UdpAppenderFactory {
        host: "a${W*e8Ud}b".into(),
        ..Default::default()
    })];
    let yaml = dump(&config).unwrap();
    let loaded: FrameworkConfiguration =
        load_str("dump.yaml", &yaml, &[]).unwrap_or_else(|r| panic!("{r}\n{yaml}"));
    assert_eq!(loaded, config);
}
