//! A small tmpfs for tests of full disks: mounted on a fresh directory, filled, unmounted when
//! dropped. Shared by `ferrowizard-logging`'s tests and `realtime`'s (`#[path]`-included).
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted on a fresh directory, unmounted when dropped (after the service that
/// writes to it: declare it first).
pub struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs with `options` (`size=512k`, `size=64k,ro`); `None`, and a line on
    /// stderr saying why the test is skipped, when this process may not (it needs root).
    /// With `FERROWIZARD_TMPFS_REQUIRED` set (`.ci/run` sets it: CI runs as root) a mount that
    /// fails fails the test instead, so that CI never passes these tests without running them.
    pub fn mount(options: &str) -> Option<Tmpfs> {
        let required = std::env::var_os("FERROWIZARD_TMPFS_REQUIRED").is_some_and(|v| v != "0");
        let dir = tempfile::tempdir().expect("a directory to mount on");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(dir.path())
            .output();
        match mounted {
            Ok(out) if out.status.success() => Some(Tmpfs { dir }),
            Ok(out) => {
                let why = format!(
                    "mount -t tmpfs failed (it needs root): {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                assert!(!required, "{why} (FERROWIZARD_TMPFS_REQUIRED is set)");
                eprintln!("skipped: {why}");
                None
            }
            Err(e) => {
                assert!(
                    !required,
                    "cannot run mount: {e} (FERROWIZARD_TMPFS_REQUIRED is set)"
                );
                eprintln!("skipped: cannot run mount: {e}");
                None
            }
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let done = Command::new("umount").arg(self.dir.path()).status();
        if !done.is_ok_and(|s| s.success()) {
            // Busy (a file still open): detached now, freed once closed.
            let _ = Command::new("umount")
                .arg("-l")
                .arg(self.dir.path())
                .status();
        }
    }
}

/// Fills the filesystem of `dir` with a file `filler` until a write fails for lack of room;
/// returns its path. Removing it gives the room back.
pub fn fill(dir: &Path) -> PathBuf {
    let path = dir.join("filler");
    let mut file = std::fs::File::create(&path).expect("the filler");
    let block = [b'f'; 4096];
    loop {
        match file.write(&block) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::StorageFull => break,
            Err(e) => panic!("filling {}: {e}", path.display()),
        }
    }
    path
}
