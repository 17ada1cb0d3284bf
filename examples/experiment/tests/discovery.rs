//! Finding the service binaries when the experiment runs on its own (not started by cargo):
//! beside its own executable, or a message that names what is missing and how to build it.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

mod common;

/// `exe` in `dir` under the same name: hard-linked (the test binaries are large), copied
/// where a link cannot be made.
fn place(exe: &Path, dir: &Path) -> PathBuf {
    let to = dir.join(exe.file_name().unwrap());
    if std::fs::hard_link(exe, &to).is_err() {
        std::fs::copy(exe, &to).unwrap();
    }
    to
}

/// Alone in a folder, the experiment fails at once (exit 1), naming each missing binary,
/// where it looked, and the commands that build them; nothing is written. With `realtime`
/// beside it, only `realtime-bare` is named.
///
/// Catches: the experiment starting its own executable as the service, a failure found only
/// when the first config starts, a message without the cure.
#[test]
fn alone_it_names_the_missing_services_and_how_to_build_them() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let exe = place(Path::new(env!("CARGO_BIN_EXE_experiment")), dir.path());
    let out = dir.path().join("out");
    let run = || {
        let output = Command::new(&exe)
            .env_remove("CARGO")
            .args(["--duration", "1s", "--rounds", "1", "--out"])
            .arg(&out)
            .assert()
            .code(1)
            .get_output()
            .clone();
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let stderr = run();
    for s in [
        "experiment: realtime and realtime-bare not found beside this program",
        &format!("looked for {}", dir.path().join("realtime").display()),
        &format!("and {}", dir.path().join("realtime-bare").display()),
        "build them with `cargo build --release -p realtime`",
        "`cargo run --release -p experiment`, which builds them",
    ] {
        assert!(stderr.contains(s), "should say {s:?}: {stderr}");
    }
    assert!(
        !out.exists(),
        "nothing written before the services are found"
    );

    place(&common::services().0, dir.path());
    let stderr = run();
    assert!(
        stderr.contains("experiment: realtime-bare not found beside this program"),
        "{stderr}"
    );
    assert!(stderr.contains("build it with"), "{stderr}");
}
