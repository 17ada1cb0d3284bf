//! Where the results go when `--out` is not given: `experiment/` in the workspace's target
//! directory, wherever that is (`CARGO_TARGET_DIR`, a cargo config's `build.target-dir`, or
//! `target/` beside the workspace's manifest), whatever directory the command ran in.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The default output directory: `<target directory>/experiment`.
///
/// The target directory is `CARGO_TARGET_DIR` when set; else, run by cargo, the
/// `target_directory` of `cargo metadata`; else the cargo target directory this program was
/// built into; else none is known and the results go to `experiment-output/` in the current
/// directory.
pub fn default_out() -> PathBuf {
    target_dir()
        .map(|t| t.join("experiment"))
        .unwrap_or_else(|| PathBuf::from("experiment-output"))
}

fn target_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    if let Some(cargo) = std::env::var_os("CARGO")
        && let Some(dir) = metadata_target_dir(&cargo, &crate::services::manifest())
    {
        return Some(dir);
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| enclosing_target_dir(&exe))
}

/// `target_directory` of `cargo metadata --format-version 1 --no-deps` for the workspace of
/// `manifest`; `None` when cargo cannot say.
pub fn metadata_target_dir(cargo: &OsStr, manifest: &Path) -> Option<PathBuf> {
    let output = crate::services::cargo_command(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--manifest-path",
        ])
        .arg(manifest)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).ok()?;
    metadata["target_directory"].as_str().map(PathBuf::from)
}

/// The cargo target directory `exe` sits in (`<target>/<profile>/exe`, or
/// `<target>/<triple>/<profile>/exe`): the nearest folder above it that holds the
/// `CACHEDIR.TAG` cargo writes at a target directory's root.
pub fn enclosing_target_dir(exe: &Path) -> Option<PathBuf> {
    exe.ancestors()
        .skip(1)
        .take(3)
        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cargo's own answer for this workspace is its target directory: `CARGO_TARGET_DIR`
    /// when this test runs under one, else `target/` at the workspace's root.
    ///
    /// Catches: the package's folder taken for the workspace's (`examples/experiment/target`).
    #[test]
    fn cargo_metadata_names_the_workspaces_target_directory() {
        let cargo = std::env::var_os("CARGO").expect("run by cargo");
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
        let dir = metadata_target_dir(&cargo, &manifest).expect("cargo metadata answers");
        let expected = match std::env::var_os("CARGO_TARGET_DIR") {
            Some(t) => std::path::absolute(t).unwrap(),
            None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        };
        assert_eq!(
            dir.canonicalize().unwrap(),
            expected.canonicalize().unwrap()
        );
    }

    /// A binary in `<target>/<profile>/` finds `<target>`; one elsewhere finds none.
    #[test]
    fn a_binary_finds_the_target_directory_it_was_built_into() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("release")).unwrap();
        std::fs::write(
            t.path().join("CACHEDIR.TAG"),
            "Signature: 8a477f597d28d172789f06886806bc55",
        )
        .unwrap();
        let exe = t.path().join("release/experiment");
        assert_eq!(enclosing_target_dir(&exe).as_deref(), Some(t.path()));
        assert_eq!(
            enclosing_target_dir(Path::new("/usr/local/bin/experiment")),
            None
        );
    }
}
