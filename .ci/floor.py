#!/usr/bin/env python3
"""Holds every test binary to the number of tests it ran when its floor was written.

A test binary, a crate's tests or a filter that quietly stops running tests still gives a green
run; this check does not. `.ci/test-floor` has one line per test binary:

    PACKAGE/KIND/TARGET COUNT      e.g. ferrowizard/test/server 41, ferrowizard/doc 12

and the line `loom COUNT` for the model-checked run, `python COUNT` for the Python tests of
the bench scripts' verdicts and of this check. A binary that runs fewer tests than its line
fails the check, and so does one that runs more: adding tests raises the floor in the same
commit, so that the next removal is seen. A binary without a line, or a line whose binary did not run, fails too.

    floor.py check FLOOR ARTIFACTS LOG [LOG...]    (exit 1 on any difference)
    floor.py write FLOOR ARTIFACTS LOG [LOG...]    (writes FLOOR from the logs)

ARTIFACTS is `cargo test --no-run --message-format=json`'s output: it names the package and
target of each test executable, which cargo's `Running` line leaves out (several crates have
a `tests/server.rs`). A log is cargo test's output (a `Running`/`Doc-tests` line, then its
`test result:` line), or a log whose first line is `# NAME` for a run counted as a whole
(loom's, unittest's `Ran N tests`).
"""

import json
import os
import re
import sys

RUNNING = re.compile(r"^\s*Running .* \((?P<path>[^)]+)\)\s*$")
DOC = re.compile(r"^\s*Doc-tests (?P<crate>\S+)\s*$")
RESULT = re.compile(r"^test result: \w+\. (?P<passed>\d+) passed; (?P<failed>\d+) failed")
UNITTEST = re.compile(r"^Ran (?P<n>\d+) tests? in ")


def executables(artifacts_path):
    """The file name of each test executable mapped to PACKAGE/KIND/TARGET."""
    names = {}
    with open(artifacts_path) as f:
        for line in f:
            if not line.startswith("{"):
                continue
            msg = json.loads(line)
            if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
                continue
            if not msg.get("profile", {}).get("test"):
                continue
            # package_id: "path+file:///work/main/crates/volley#0.1.0" or "...#name@0.1.0"
            pid = msg["package_id"]
            package = pid.rsplit("#", 1)[1].split("@")[0] if "@" in pid else pid.rsplit("#", 1)[0].rsplit("/", 1)[1]
            target = msg["target"]
            kind = target["kind"][0]
            names[os.path.basename(msg["executable"])] = f"{package}/{kind}/{target['name']}"
    return names


def counts(names, logs):
    """Tests run per binary, from the logs."""
    found = {}
    for log in logs:
        with open(log, errors="replace") as f:
            lines = f.read().splitlines()
        if lines and lines[0].startswith("# "):
            name = lines[0][2:].strip()
            total = 0
            for line in lines[1:]:
                m = RESULT.match(line) or UNITTEST.match(line)
                if m:
                    total += int(m.group("passed") if "passed" in m.groupdict() else m.group("n"))
            found[name] = found.get(name, 0) + total
            continue
        current = None
        for line in lines:
            m = RUNNING.match(line)
            if m:
                base = os.path.basename(m.group("path"))
                current = names.get(base, f"unknown executable {base}")
                continue
            m = DOC.match(line)
            if m:
                current = f"{m.group('crate')}/doc"
                continue
            m = RESULT.match(line)
            if m and current is not None:
                found[current] = found.get(current, 0) + int(m.group("passed"))
                current = None
    return found


def read_floor(path):
    floor = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            try:
                name, count = line.rsplit(None, 1)
                floor[name] = int(count)
            except ValueError:
                sys.exit(f"{path}:{n}: expected 'NAME COUNT', got {line!r}")
    return floor


def main(argv):
    if len(argv) < 5 or argv[1] not in ("check", "write"):
        print(__doc__, file=sys.stderr)
        return 2
    command, floor_path, artifacts, logs = argv[1], argv[2], argv[3], argv[4:]
    found = counts(executables(artifacts), logs)
    if command == "write":
        with open(floor_path, "w") as f:
            f.write("# Tests each binary runs in CI: .ci/floor.py checks them; raise a line with the tests you add.\n")
            for name in sorted(found):
                f.write(f"{name} {found[name]}\n")
        print(f"{floor_path}: {len(found)} binaries, {sum(found.values())} tests")
        return 0
    floor = read_floor(floor_path)
    problems = []
    for name in sorted(set(floor) | set(found)):
        want, got = floor.get(name), found.get(name)
        if want is None:
            problems.append(f"{name}: ran {got} tests and has no line in {floor_path} (add '{name} {got}')")
        elif got is None:
            problems.append(f"{name}: ran no test (its floor is {want})")
        elif got < want:
            problems.append(f"{name}: ran {got} tests, fewer than its floor of {want}")
        elif got > want:
            problems.append(f"{name}: ran {got} tests, more than its floor of {want}: raise the floor to {got}")
    for p in problems:
        print(f"test floor: {p}")
    if problems:
        return 1
    print(f"test floor: {len(found)} binaries, {sum(found.values())} tests, each at its floor")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
