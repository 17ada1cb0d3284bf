//! The logging cost curve's server (`bench/logcurve.sh`): `GET /work` writes `--lines` INFO
//! lines, each with three fields, through one logger set up as its users set it up to write a
//! file, then answers `ok`. On SIGTERM it stops serving, flushes the logger and prints the
//! lines it emitted (`emitted N`), for the script to set beside the lines the file holds: a
//! lossy logger's drops show there.
//!
//!     logcurve --logger fmt --lines 20 --file /tmp/fmt.log [--lossless] [--listen ADDR]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use anyhow::Context as _;
use clap::{Parser, ValueEnum};

/// The loggers the curve compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Logger {
    /// No logging: the curve's 1.0.
    Bare,
    /// ferrowizard-logging's file appender (lossy: its default `discardingThreshold`;
    /// lossless: `discardingThreshold: 0`).
    Ferrowizard,
    /// tracing-subscriber's `fmt` layer writing the file itself (blocking: lossless only).
    Fmt,
    /// tracing-subscriber's `fmt` layer through tracing-appender's `non_blocking` (lossy by
    /// default, `lossy(false)` lossless).
    NonBlocking,
    /// log4rs's file appender (blocking: lossless only).
    Log4rs,
    /// slog with slog-async (lossy: `OverflowStrategy::Drop`; lossless: `Block`).
    Slog,
    /// fern to a file (blocking: lossless only).
    Fern,
}

impl Logger {
    /// Whether it has a mode that drops.
    fn has_lossy(self) -> bool {
        matches!(
            self,
            Logger::Ferrowizard | Logger::NonBlocking | Logger::Slog
        )
    }
}

#[derive(Parser)]
struct Args {
    /// The logger.
    #[arg(long, value_enum)]
    logger: Logger,
    /// Never drop a line (a logger with both modes; the others are lossless anyway).
    #[arg(long)]
    lossless: bool,
    /// Lines a request.
    #[arg(long, default_value_t = 5)]
    lines: u32,
    /// The file the lines go to.
    #[arg(long)]
    file: PathBuf,
    /// Where to listen.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Tokio worker threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// ferrowizard's `queueSize` (its default when unset).
    #[arg(long)]
    queue_size: Option<usize>,
}

static EMITTED: AtomicU64 = AtomicU64::new(0);
static REQUESTS: AtomicU64 = AtomicU64::new(0);
static SLOG: OnceLock<slog::Logger> = OnceLock::new();

/// What keeps a logger's writer alive until the lines are out.
enum Flush {
    None,
    Ferrowizard(ferrowizard_logging::LoggingGuard),
    NonBlocking(tracing_appender::non_blocking::WorkerGuard),
    Slog(slog_async::AsyncGuard),
    Log,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.lossless && !args.logger.has_lossy() {
        anyhow::bail!(
            "--lossless: {:?} has one mode, which never drops; leave the flag out",
            args.logger
        );
    }
    let flush = install(&args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()?;
    let lines = args.lines;
    let logger = args.logger;
    runtime.block_on(async move {
        let app = axum::Router::new().route(
            "/work",
            axum::routing::get(move || async move {
                emit(logger, lines);
                "ok"
            }),
        );
        let listener = tokio::net::TcpListener::bind(args.listen).await?;
        println!("listening on {}", listener.local_addr()?);
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                term.recv().await;
            })
            .await?;
        anyhow::Ok(())
    })?;
    match flush {
        Flush::None => {}
        Flush::Ferrowizard(guard) => drop(guard),
        Flush::NonBlocking(guard) => drop(guard),
        Flush::Slog(guard) => drop(guard),
        Flush::Log => log::logger().flush(),
    }
    println!(
        "emitted {} lines for {} requests",
        EMITTED.load(Relaxed),
        REQUESTS.load(Relaxed)
    );
    Ok(())
}

/// One request's lines.
fn emit(logger: Logger, lines: u32) {
    let request = REQUESTS.fetch_add(1, Relaxed);
    if logger == Logger::Bare {
        return;
    }
    for line in 0..lines {
        match logger {
            Logger::Bare => {}
            Logger::Ferrowizard | Logger::Fmt | Logger::NonBlocking => {
                tracing::info!(target: "bench", request, line, user = "ada", "handled a step");
            }
            Logger::Log4rs | Logger::Fern => {
                log::info!(target: "bench", "handled a step request={request} line={line} user=ada");
            }
            Logger::Slog => {
                if let Some(l) = SLOG.get() {
                    slog::info!(l, "handled a step"; "request" => request, "line" => line, "user" => "ada");
                }
            }
        }
    }
    EMITTED.fetch_add(u64::from(lines), Relaxed);
}

fn open(file: &Path) -> anyhow::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .with_context(|| format!("cannot open {}", file.display()))
}

/// Sets the logger up as its documentation does for a file.
fn install(args: &Args) -> anyhow::Result<Flush> {
    let file = &args.file;
    match args.logger {
        Logger::Bare => Ok(Flush::None),
        Logger::Ferrowizard => {
            let threshold = if args.lossless { "0" } else { "-1" };
            let queue = args
                .queue_size
                .map(|n| format!("    queueSize: {n}\n"))
                .unwrap_or_default();
            let yaml = format!(
                "level: INFO\nappenders:\n  - type: file\n    currentLogFilename: {}\n    \
                 archive: false\n    discardingThreshold: {threshold}\n{queue}",
                file.display()
            );
            let factory: ferrowizard_logging::LoggingFactory = ferrowizard_config::Loader::new()
                .load_str("logging.yaml", &yaml)
                .map_err(|r| anyhow::anyhow!("{r}"))?;
            let (logging, subscriber) = factory.build("logcurve")?;
            let guard = logging.install(subscriber, std::time::Duration::from_secs(30))?;
            Ok(Flush::Ferrowizard(guard))
        }
        Logger::Fmt => {
            fmt_to(std::sync::Mutex::new(open(file)?))?;
            Ok(Flush::None)
        }
        Logger::NonBlocking => {
            let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
                .lossy(!args.lossless)
                .finish(open(file)?);
            fmt_to(writer)?;
            Ok(Flush::NonBlocking(guard))
        }
        Logger::Log4rs => {
            use log4rs::append::file::FileAppender;
            use log4rs::config::{Appender, Config, Root};
            use log4rs::encode::pattern::PatternEncoder;
            let appender = FileAppender::builder()
                .encoder(Box::new(PatternEncoder::new("{d} {l} {t} - {m}{n}")))
                .build(file)?;
            let config = Config::builder()
                .appender(Appender::builder().build("file", Box::new(appender)))
                .build(
                    Root::builder()
                        .appender("file")
                        .build(log::LevelFilter::Info),
                )?;
            log4rs::init_config(config)?;
            Ok(Flush::Log)
        }
        Logger::Fern => {
            fern::Dispatch::new()
                .format(|out, message, record| {
                    out.finish(format_args!(
                        "{:?} {} {} - {}",
                        std::time::SystemTime::now(),
                        record.level(),
                        record.target(),
                        message
                    ))
                })
                .level(log::LevelFilter::Info)
                .chain(open(file)?)
                .apply()?;
            Ok(Flush::Log)
        }
        Logger::Slog => {
            use slog::Drain;
            let decorator = slog_term::PlainDecorator::new(open(file)?);
            let drain = slog_term::FullFormat::new(decorator).build().fuse();
            let strategy = if args.lossless {
                slog_async::OverflowStrategy::Block
            } else {
                slog_async::OverflowStrategy::Drop
            };
            let (drain, guard) = slog_async::Async::new(drain)
                .overflow_strategy(strategy)
                .build_with_guard();
            let _ = SLOG.set(slog::Logger::root(drain.fuse(), slog::o!()));
            Ok(Flush::Slog(guard))
        }
    }
}

/// tracing-subscriber's `fmt` layer at INFO, without colours, writing to `writer`.
fn fmt_to<W>(writer: W) -> anyhow::Result<()>
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .try_init()
        .map_err(|e| anyhow::anyhow!("{e}"))
}
