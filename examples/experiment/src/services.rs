//! Finding the service binaries the experiment starts: `realtime` (the ferrowizard service)
//! and `realtime-bare` (the same handlers on plain axum, for `naive-rust`).
//!
//! Run by cargo (`cargo run --release -p experiment`, which sets `CARGO`), the experiment
//! has cargo build them with the profile it was built with, and takes their paths from
//! cargo's `compiler-artifact` messages: they are then always as fresh as the sources, and
//! wherever the target directory is. Run on its own, it looks beside its own executable,
//! where `cargo build -p experiment -p realtime` puts them.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The ferrowizard service's binary.
pub const REALTIME: &str = "realtime";
/// The plain-axum binary.
pub const BARE: &str = "realtime-bare";

/// The service binaries, and how they were found.
#[derive(Clone, Debug)]
pub struct Services {
    /// `realtime`.
    pub realtime: PathBuf,
    /// `realtime-bare`.
    pub bare: PathBuf,
    /// How they were found, for the console.
    pub found: String,
}

/// Why the service binaries were not found.
#[derive(Debug, thiserror::Error)]
pub enum LocateError {
    /// The experiment's own path is unknown.
    #[error("cannot tell where this program is ({0}), so cannot look for the services beside it")]
    OwnPath(std::io::Error),
    /// Not beside the experiment's executable.
    #[error(
        "{} not found beside this program (looked for {}); build {} with `cargo build --release -p realtime` (beside a release build of the experiment), or run the experiment with `cargo run --release -p experiment`, which builds them",
        missing.join(" and "),
        looked.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" and "),
        if missing.len() == 1 { "it" } else { "them" }
    )]
    Missing {
        /// The binaries missing.
        missing: Vec<&'static str>,
        /// Where they were looked for.
        looked: Vec<PathBuf>,
    },
    /// Cargo could not be run.
    #[error("cannot run `{command}`: {source}")]
    Spawn {
        /// The command.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// Cargo failed.
    #[error("`{command}` failed ({status}); cargo's messages are above")]
    Build {
        /// The command.
        command: String,
        /// Its exit status.
        status: std::process::ExitStatus,
    },
    /// Cargo built, but named no executable of that name.
    #[error("`{command}` reported no executable for {}", missing.join(" and "))]
    NotBuilt {
        /// The command.
        command: String,
        /// The binaries missing from its messages.
        missing: Vec<&'static str>,
    },
}

/// Finds the service binaries: built by cargo when run by cargo, else beside this program.
pub fn locate() -> Result<Services, LocateError> {
    let exe = std::env::current_exe().map_err(LocateError::OwnPath)?;
    match std::env::var_os("CARGO") {
        Some(cargo) => build(&cargo, &exe),
        None => beside(&exe),
    }
}

/// The binaries in the folder of `exe`.
pub fn beside(exe: &Path) -> Result<Services, LocateError> {
    let dir = exe.parent().unwrap_or(Path::new("."));
    let path = |name: &str| dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let (realtime, bare) = (path(REALTIME), path(BARE));
    let missing: Vec<&'static str> = [(REALTIME, &realtime), (BARE, &bare)]
        .into_iter()
        .filter(|(_, p)| !p.is_file())
        .map(|(name, _)| name)
        .collect();
    if !missing.is_empty() {
        let looked = missing.iter().map(|name| path(name)).collect();
        return Err(LocateError::Missing { missing, looked });
    }
    Ok(Services {
        realtime,
        bare,
        found: format!("beside {}", exe.display()),
    })
}

/// The cargo profile `exe` was built with, from the folder cargo put it in
/// (`target/release/experiment`: `release`; `target/debug`: `dev`; a custom profile's folder
/// is its name).
pub fn profile_of(exe: &Path) -> String {
    let mut dir = exe.parent();
    // A test binary sits one folder lower, in `deps`.
    if dir.and_then(Path::file_name).is_some_and(|n| n == "deps") {
        dir = dir.and_then(Path::parent);
    }
    match dir.and_then(Path::file_name).and_then(|n| n.to_str()) {
        Some("debug") => "dev".to_owned(),
        Some(name) => name.to_owned(),
        None => "release".to_owned(),
    }
}

/// The workspace's manifest: the experiment's own package's, which cargo names at run time
/// (and this build remembers, for a binary cargo did not start itself).
pub(crate) fn manifest() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
        .join("Cargo.toml")
}

/// Has `cargo` build the realtime package's binaries with `exe`'s profile; their paths are
/// the `executable`s of cargo's `compiler-artifact` messages. Cargo's own messages (what it
/// compiles, any error) go to stderr as usual.
fn build(cargo: &OsString, exe: &Path) -> Result<Services, LocateError> {
    let profile = profile_of(exe);
    let manifest = manifest();
    let args: Vec<OsString> = vec![
        "build".into(),
        "--profile".into(),
        profile.clone().into(),
        "--manifest-path".into(),
        manifest.clone().into(),
        "-p".into(),
        "realtime".into(),
        "--bins".into(),
        "--message-format=json-render-diagnostics".into(),
    ];
    let command = format!(
        "{} {}",
        Path::new(cargo).display(),
        args.iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let output = cargo_command(cargo)
        .args(&args)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|source| LocateError::Spawn {
            command: command.clone(),
            source,
        })?;
    if !output.status.success() {
        return Err(LocateError::Build {
            command,
            status: output.status,
        });
    }
    let built = executables(&String::from_utf8_lossy(&output.stdout));
    let find = |name: &str| {
        built
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p.clone())
    };
    match (find(REALTIME), find(BARE)) {
        (Some(realtime), Some(bare)) => Ok(Services {
            realtime,
            bare,
            found: format!("built by cargo, profile {profile}"),
        }),
        (realtime, bare) => Err(LocateError::NotBuilt {
            command,
            missing: [(REALTIME, realtime.is_none()), (BARE, bare.is_none())]
                .into_iter()
                .filter(|(_, missing)| *missing)
                .map(|(name, _)| name)
                .collect(),
        }),
    }
}

/// A command running `cargo` without the variables cargo sets for the program it runs
/// (`CARGO_MANIFEST_DIR`, `CARGO_PKG_NAME`, ...): some build scripts watch them (ring's
/// watches `CARGO_MANIFEST_DIR`), and a value that differs from a plain `cargo build`'s would
/// have cargo rebuild them and all that depends on them, here and again at the next plain
/// build.
pub fn cargo_command(cargo: &OsStr) -> Command {
    let mut command = Command::new(cargo);
    for (name, _) in std::env::vars_os() {
        let set_by_cargo = name.to_str().is_some_and(|n| {
            n.starts_with("CARGO_PKG_")
                || [
                    "CARGO_MANIFEST_DIR",
                    "CARGO_MANIFEST_PATH",
                    "CARGO_CRATE_NAME",
                    "CARGO_BIN_NAME",
                    "CARGO_PRIMARY_PACKAGE",
                    "CARGO_TARGET_TMPDIR",
                    "CARGO_RUSTC_CURRENT_DIR",
                    "OUT_DIR",
                ]
                .contains(&n)
        });
        if set_by_cargo {
            command.env_remove(name);
        }
    }
    command
}

/// The binaries named in cargo's JSON messages (`--message-format=json`): each
/// `compiler-artifact` of kind `bin` with an `executable`, as (name, path).
pub fn executables(messages: &str) -> Vec<(String, PathBuf)> {
    messages
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact")
        .filter(|m| {
            m["target"]["kind"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|k| k == "bin"))
        })
        .filter_map(|m| {
            let name = m["target"]["name"].as_str()?.to_owned();
            let path = PathBuf::from(m["executable"].as_str()?);
            Some((name, path))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The profile is read from the folder cargo builds into.
    ///
    /// Catches: `debug` passed to `--profile` (cargo has no such profile: it is `dev`).
    #[test]
    fn the_profile_is_the_folder_cargos_profile_builds_into() {
        assert_eq!(
            profile_of(Path::new("/w/target/release/experiment")),
            "release"
        );
        assert_eq!(profile_of(Path::new("/w/target/debug/experiment")), "dev");
        assert_eq!(
            profile_of(Path::new("/w/target/debug/deps/run-1a2b")),
            "dev"
        );
        assert_eq!(profile_of(Path::new("/w/target/bench/experiment")), "bench");
    }

    /// Only binaries' artifacts count, with their executables; other messages and lines that
    /// are not JSON are passed over.
    #[test]
    fn executables_are_read_from_compiler_artifacts() {
        let messages = r#"{"reason":"compiler-artifact","target":{"kind":["lib"],"name":"realtime"},"executable":null}
not json
{"reason":"compiler-artifact","target":{"kind":["bin"],"name":"realtime"},"executable":"/t/release/realtime"}
{"reason":"compiler-artifact","target":{"kind":["bin"],"name":"realtime-bare"},"executable":"/t/release/realtime-bare"}
{"reason":"build-finished","success":true}"#;
        assert_eq!(
            executables(messages),
            [
                ("realtime".to_owned(), PathBuf::from("/t/release/realtime")),
                (
                    "realtime-bare".to_owned(),
                    PathBuf::from("/t/release/realtime-bare")
                ),
            ]
        );
    }
}
