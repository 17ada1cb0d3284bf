//! What the experiment's tests share: the service binaries, built once.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::OnceLock;

/// `realtime` and `realtime-bare`, built by cargo with the experiment's profile (a no-op
/// when they are fresh), so that they sit beside the experiment's executable, where it
/// looks for them when cargo does not start it.
pub fn services() -> &'static (PathBuf, PathBuf) {
    static BUILT: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BUILT.get_or_init(|| {
        let exe = std::path::Path::new(env!("CARGO_BIN_EXE_experiment"));
        let output = experiment::services::cargo_command(env!("CARGO").as_ref())
            .args(["build", "--profile", &experiment::services::profile_of(exe)])
            .args(["-p", "realtime", "--bins", "--message-format=json"])
            .output()
            .expect("cargo runs");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let built = experiment::services::executables(&String::from_utf8_lossy(&output.stdout));
        let find = |name: &str| {
            let path = built
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, p)| p.clone())
                .unwrap_or_else(|| panic!("cargo built no {name}"));
            assert_eq!(path.parent(), exe.parent(), "{name} beside the experiment");
            path
        };
        (find("realtime"), find("realtime-bare"))
    })
}
