//! The command line, through the real binary: clap's errors for what it cannot take, and
//! `--help` documenting every option. No service is started: arguments are checked first.

use assert_cmd::Command;

fn experiment(args: &[&str]) -> assert_cmd::assert::Assert {
    let cwd = tempfile::tempdir().unwrap();
    let assert = Command::cargo_bin("experiment")
        .unwrap()
        .env_remove("CARGO")
        .current_dir(cwd.path())
        .args(args)
        .assert();
    assert!(
        std::fs::read_dir(cwd.path()).unwrap().next().is_none(),
        "nothing written for {args:?}"
    );
    assert
}

/// Each bad argument is refused by clap (exit code 2, a pointer to `--help` on stderr) with the option
/// named and what it takes, before anything runs.
///
/// Catches: a zero accepted for `--rounds` or `--users` (a run that divides by zero or serves
/// nothing), a duration shorter than a second a round accepted, an unknown `--keep-logs`
/// value taken for `none`.
#[test]
fn bad_arguments_are_refused_with_the_option_named() {
    let cases: &[(&[&str], &[&str])] = &[
        (&["--rounds", "0"], &["--rounds <N>", "0 is not in 1.."]),
        (&["--users", "many"], &["--users <N>", "invalid digit"]),
        (&["--volley-threads", "0"], &["--volley-threads <N>"]),
        (&["--duration", "soon"], &["--duration <DURATION>"]),
        (&["--duration", "0s"], &["longer than zero"]),
        (
            &["--duration", "1s", "--rounds", "2"],
            &["less than a second per round (2 rounds)"],
        ),
        (
            &["--keep-logs", "sometimes"],
            &["--keep-logs <WHICH>", "[possible values: none, last, all]"],
        ),
        (&["--frobnicate"], &["unexpected argument '--frobnicate'"]),
        (&["experiment"], &["unexpected argument 'experiment'"]),
    ];
    for (args, says) in cases {
        let out = experiment(args).code(2).get_output().clone();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.starts_with("error:"), "{args:?}: {stderr}");
        assert!(stderr.contains("try '--help'"), "{args:?}: {stderr}");
        for s in *says {
            assert!(stderr.contains(s), "{args:?} should say {s:?}: {stderr}");
        }
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// `--help` documents every option, its default, and the choices of `--keep-logs`.
///
/// Catches: an option without its doc comment, a default that the help does not show.
#[test]
fn help_documents_every_option() {
    let out = experiment(&["--help"]).success().get_output().clone();
    let help = String::from_utf8_lossy(&out.stdout);
    for s in [
        "--duration <DURATION>",
        "[default: 30s]",
        "--users <N>",
        "[default: 100]",
        "--rounds <N>",
        "[default: 3]",
        "--volley-threads <N>",
        "--out <DIR>",
        "CARGO_TARGET_DIR",
        "--keep-logs <WHICH>",
        "[default: none]",
        "none: Count each run's output, then delete it",
        "last: Keep the last round's output",
        "all:  Keep every round's output",
        "the report's `before` and `after` configs",
    ] {
        assert!(help.contains(s), "--help should say {s:?}:\n{help}");
    }
}
