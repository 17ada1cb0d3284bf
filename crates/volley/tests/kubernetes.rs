//! `deploy/kubernetes/`: the manifests are Kubernetes objects of the shape an Indexed Job of
//! generators needs, and the commands their containers run are ones volley carries out. The
//! test does what the cluster would: it mounts the ConfigMap's files as a folder, runs the
//! generators' command once per index with `JOB_COMPLETION_INDEX` set and `$(...)` expanded,
//! side by side against the real `realtime` service, then the merge Job's shell command.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use support::realtime::{Realtime, histogram_count, results};

fn manifest(name: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/kubernetes")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The one object of `kind` among `objects`.
fn object<'a>(objects: &'a [Value], kind: &str) -> &'a Value {
    let found: Vec<&Value> = objects.iter().filter(|o| o["kind"] == kind).collect();
    assert_eq!(found.len(), 1, "one {kind}");
    found[0]
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("a string, not {v}"))
}

/// A Job's one container, and the pod's volumes.
fn container(job: &Value) -> (&Value, &Vec<Value>) {
    assert_eq!(job["apiVersion"], "batch/v1");
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never", "a Job's pods end");
    let containers = pod["containers"].as_array().expect("containers");
    assert_eq!(containers.len(), 1);
    (&containers[0], pod["volumes"].as_array().expect("volumes"))
}

/// Where the container mounts the volume that `source` (`configMap`, `persistentVolumeClaim`)
/// with this name provides.
fn mount_of(container: &Value, volumes: &[Value], source: &str, key: &str, name: &str) -> String {
    let volume = volumes
        .iter()
        .find(|v| v[source][key] == name)
        .unwrap_or_else(|| panic!("a volume from {source} {name}"));
    let mount = container["volumeMounts"]
        .as_array()
        .expect("volumeMounts")
        .iter()
        .find(|m| m["name"] == volume["name"])
        .unwrap_or_else(|| panic!("{source} {name} is mounted"));
    text(&mount["mountPath"]).to_owned()
}

/// `$(NAME)` in a container's command or args, expanded from its variables as Kubernetes does.
fn expand(arg: &str, vars: &[(String, String)]) -> String {
    let mut out = arg.to_owned();
    for (name, value) in vars {
        out = out.replace(&format!("$({name})"), value);
    }
    assert!(
        !out.contains("$("),
        "{arg}: a variable the container does not have"
    );
    out
}

/// `arg` (a path, or a shell command of words) with the container's mount points put where
/// the test keeps their files: a word that is a mount point or under one.
fn local(arg: &str, mounts: &[(String, PathBuf)]) -> String {
    let word = |w: &str| {
        for (mount, dir) in mounts {
            if let Some(rest) = w.strip_prefix(mount.as_str())
                && (rest.is_empty() || rest.starts_with('/'))
            {
                return format!("{}{rest}", dir.display());
            }
        }
        w.to_owned()
    };
    arg.split(' ').map(word).collect::<Vec<_>>().join(" ")
}

/// Runs `args` (a program and its arguments) with only `vars` and a `PATH` that finds volley,
/// as a container would: its output, or a panic past a minute.
fn contained(args: &[String], vars: &[(String, String)]) -> std::process::Output {
    let volley_dir = Path::new(env!("CARGO_BIN_EXE_volley")).parent().unwrap();
    let path = std::env::join_paths(std::iter::once(volley_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    assert_cmd::Command::new(&args[0])
        .args(&args[1..])
        .env_clear()
        .env("PATH", path)
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap()
}

/// The generators' Indexed Job and the merge Job, run as a cluster would run them, against
/// `realtime`: every index's results land on the shared folder and merge into the plan's
/// users and requests.
///
/// Catches: a manifest that does not parse, a Job that is not Indexed or whose `--shard` is
/// not its completions, a command volley refuses, mounts that do not meet (the scenario not
/// where the command reads it, results not where the merge globs them).
#[test]
fn the_manifests_run_n_generators_and_merge_them() {
    let generators = manifest("generators.yaml");
    let merge = manifest("merge.yaml");

    let config_map = object(&generators, "ConfigMap");
    assert_eq!(config_map["apiVersion"], "v1");
    let claim = object(&generators, "PersistentVolumeClaim");
    assert_eq!(claim["apiVersion"], "v1");
    let access = claim["spec"]["accessModes"]
        .as_array()
        .expect("accessModes");
    assert!(
        access.iter().any(|m| m == "ReadWriteMany"),
        "generators on several nodes write to the volume"
    );
    let job = object(&generators, "Job");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let n = spec["completions"].as_u64().expect("completions");
    assert_eq!(spec["parallelism"], n, "every generator at once");
    let (generator, volumes) = container(job);
    let command: Vec<&str> = generator["command"]
        .as_array()
        .and_then(|c| {
            c.iter()
                .chain(generator["args"].as_array()?)
                .map(Value::as_str)
                .collect()
        })
        .expect("command and args, strings");
    let shard = command
        .iter()
        .position(|a| *a == "--shard")
        .expect("--shard");
    assert_eq!(
        command[shard + 1],
        n.to_string(),
        "--shard N is the Job's completions"
    );
    assert_eq!(command[..2], ["volley", "run"]);

    // The folders the cluster would mount, here.
    let dir = tempfile::tempdir().unwrap();
    let (scenario_dir, results_dir) = (dir.path().join("scenario"), dir.path().join("results"));
    std::fs::create_dir_all(&scenario_dir).unwrap();
    std::fs::create_dir_all(&results_dir).unwrap();
    let scenario_mount = mount_of(
        generator,
        volumes,
        "configMap",
        "name",
        text(&config_map["metadata"]["name"]),
    );
    let claim_name = text(&claim["metadata"]["name"]);
    let results_mount = mount_of(
        generator,
        volumes,
        "persistentVolumeClaim",
        "claimName",
        claim_name,
    );
    let mounts = [
        (scenario_mount, scenario_dir.clone()),
        (results_mount, results_dir.clone()),
    ];
    for (name, content) in config_map["data"].as_object().expect("data") {
        std::fs::write(scenario_dir.join(name), text(content)).unwrap();
    }
    let symbols: Vec<String> = std::fs::read_to_string(scenario_dir.join("symbols.csv"))
        .expect("the ConfigMap's feeder")
        .lines()
        .skip(1)
        .map(str::to_owned)
        .collect();
    let service = Realtime::start(dir.path(), &symbols);
    let target = format!("http://{}", service.addr);

    // The container's variables, the target pointed at the service here.
    let mut env: Vec<(String, String)> = generator["env"]
        .as_array()
        .expect("env")
        .iter()
        .map(|v| (text(&v["name"]).to_owned(), text(&v["value"]).to_owned()))
        .collect();
    assert!(
        env.iter().any(|(name, _)| name == "TARGET"),
        "the scenario's target"
    );
    env.retain(|(name, _)| name != "TARGET");
    env.push(("TARGET".to_owned(), target));

    // The scenario as shipped, shortened (its steps of minutes, here of half a second), and
    // the users its plan has.
    let overrides: Vec<String> = (0..2)
        .map(|i| format!("scenarios[0].injection[{i}].during=500ms"))
        .collect();
    let simulation = volley::scenario::load(&scenario_dir.join("scenario.yaml"), &overrides)
        .unwrap_or_else(|r| panic!("the ConfigMap's scenario: {r}"));
    let planned = volley::schedule::open_users(&simulation.scenarios[0].injection);
    assert!(planned > 100, "{planned} users");

    let outputs: Vec<std::process::Output> = std::thread::scope(|s| {
        let runs: Vec<_> = (0..n)
            .map(|index| {
                let mut vars = env.clone();
                vars.push((volley::shard::JOB_INDEX_VAR.to_owned(), index.to_string()));
                let args: Vec<String> = command
                    .iter()
                    .map(|a| local(&expand(a, &vars), &mounts))
                    .chain(
                        overrides
                            .iter()
                            .flat_map(|o| ["--set".to_owned(), o.clone()]),
                    )
                    .collect();
                s.spawn(move || contained(&args, &vars))
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    for (index, output) in outputs.iter().enumerate() {
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "generator {index}: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            stdout.contains(&format!("(shard {index}/{n}) started")),
            "{stdout}"
        );
        let r = results(&results_dir.join(index.to_string()).join("results.json"));
        assert_eq!(r["shard"]["index"], index);
    }

    // The merge Job, on the same volume.
    let job = object(&merge, "Job");
    let (merger, volumes) = container(job);
    let merge_mount = mount_of(
        merger,
        volumes,
        "persistentVolumeClaim",
        "claimName",
        claim_name,
    );
    assert_eq!(
        merge_mount, mounts[1].0,
        "the merge reads where the generators wrote"
    );
    let merge_command: Vec<String> = merger["command"]
        .as_array()
        .and_then(|c| {
            c.iter()
                .chain(merger["args"].as_array()?)
                .map(|a| Some(local(a.as_str()?, &mounts)))
                .collect()
        })
        .expect("command and args, strings");
    assert!(merge_command.iter().any(|a| a.contains("volley merge")));
    let output = contained(&merge_command, &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(stderr.is_empty(), "every shard, once: {stderr}");
    assert!(
        stdout.starts_with(&format!("Merged {n} runs into ")),
        "{stdout}"
    );
    assert!(results_dir.join("index.html").is_file(), "the report");

    let merged = results(&results_dir.join("merged.json"));
    let users = merged["users"].as_object().expect("users");
    assert_eq!(users.len(), 1);
    let (_, counts) = users.iter().next().unwrap();
    assert_eq!(counts["started"], planned, "the plan's users, once each");
    assert_eq!(counts["done"], planned);
    assert_eq!(
        merged["global"]["total"]["count"], planned,
        "a request each"
    );
    assert_eq!(merged["global"]["ko"]["count"], 0, "{:?}", merged["errors"]);
    assert_eq!(histogram_count(&merged["global"]["histogram"]), planned);
}
