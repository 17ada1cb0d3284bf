#!/usr/bin/env python3
"""The verdicts of the scripts under bench/: each script's goals, and whether a run meets them.

Every bench script measures, prints its figures, then asks this module for a verdict: exit 0
when every goal is met, 1 when one is missed or when the run is too short to judge. The goals
live here, once, so that a script and its test read the same numbers.

    goals.py overload-round RESULTS_JSON CAPACITY SECONDS ROUND RATE STEAL ROUNDS_FILE
    goals.py overload ROUNDS_FILE
    goals.py soak SAMPLES_FILE CLK_TCK
    goals.py ratios ROUNDS NAME=FILE...        (server.sh: each setting's ratios to bare)
    goals.py volley ROUNDS RATIO_FILE H2_RATIO_FILE PEAK_RSS_MB
    goals.py pair ROUNDS_FILE BASE OTHER GOAL  (auth.sh, client.sh: OTHER / BASE, round by round)
    goals.py curve ROWS_FILE                   (logcurve.sh: each logger's ratio to bare by lines)
    goals.py enough ROUNDS SECONDS             (exit 1 below the shortest run judged)
    goals.py enough-soak MINUTES

Tested by bench/test_goals.py (`python3 -m unittest discover -s bench`).
"""

import json
import statistics
import sys

# A median of fewer rounds, or rounds shorter than this, is not a figure to judge by on a
# shared 2-core machine: one stolen second moves it.
MIN_ROUNDS = 3
MIN_SECONDS = 5

# overload.sh: the flood at twice capacity.
OVERLOAD = {
    "goodput": 0.9,  # goodput / capacity, at least
    "ko_p99_ms": 10.0,  # the 503s' 99th percentile, at most
    "timeouts": 0,  # client timeouts, at most
    "other_ko": 0,  # KOs that are not 503s, at most
}

# soak.sh: minutes 1-5 are the warm-up; the CPU drift compares the first 5 minutes after it
# with the last 5, which must not overlap.
SOAK_WARM_UP = 5
SOAK_WINDOW = 5
SOAK_MIN_MINUTES = SOAK_WARM_UP + 2 * SOAK_WINDOW
SOAK_FLAT = 0.10  # RSS and open files within 10% of minute 5's; CPU drift within 10%

# server.sh: each setting's median ratio to bare (a setting not named has no goal).
SERVER = {"production": 0.92, "chatty": 0.85}

# volley.sh: volley against wrk (HTTP/1.1) and h2load (HTTP/2), peak memory with 10,000 users.
VOLLEY = {"wrk": 1.0, "h2load": 0.9, "rss_mb": 200}


# logcurve.sh: lossless ferrowizard logging at 20 and 70 lines a request, over bare.
CURVE = {20: 0.75, 70: 0.45}


def curve_base(config):
    """The bare server `config`'s ratio is taken to: its own stack's (`jvm-bare` for the JVM's
    configs, `bare` for the Rust ones, an `other-` build's included)."""
    return "jvm-bare" if config.startswith("jvm-") else "bare"


def curve(rows):
    """The logging curve of `rows` ((round, lines, config, req/s, emitted, written) tuples; each
    stack's bare config, `bare` or `jvm-bare`, is each round's base for that stack): per
    (config, lines), the median of the rounds' ratios to its bare and the lines dropped in all;
    and the misses of the goals. At every N, lossless ferrowizard must be ahead of every other
    lossless config, and of every lossy one that dropped nothing; at 20 and 70 lines, at least
    CURVE's ratio. ferrowizard's own configs (its lossy mode, an `other-` build) are no rivals."""
    bases = ("bare", "jvm-bare")
    base = {(r, n, c): rps for r, n, c, rps, _, _ in rows if c in bases}
    ratios, dropped = {}, {}
    for r, n, c, rps, emitted, written in rows:
        key = (r, n, curve_base(c))
        if c in bases or key not in base:
            continue
        ratios.setdefault((c, n), []).append(rps / base[key])
        dropped[(c, n)] = dropped.get((c, n), 0) + max(0, emitted - written)
    table = {k: (statistics.median(v), dropped[k]) for k, v in ratios.items()}
    misses = []
    ours = "ferrowizard-lossless"
    for n in sorted({n for _, n in table}):
        mine = table.get((ours, n))
        if mine is None:
            misses.append(f"{n} lines: no {ours} figure")
            continue
        for (c, m), (ratio, lost) in table.items():
            if m != n or c.startswith(("ferrowizard", "other-")):
                continue
            rival = c.endswith("-lossless") or not c.endswith("-lossy") or lost == 0
            if rival and ratio >= mine[0]:
                misses.append(f"{n} lines: {c} {ratio:.3f}x is not behind {ours} {mine[0]:.3f}x")
        goal = CURVE.get(n)
        if goal is not None and mine[0] < goal:
            misses.append(f"{n} lines: {ours} {mine[0]:.3f}x < {goal}x")
    return table, misses


def verdict(misses):
    """Prints each missed goal and returns the exit code."""
    for miss in misses:
        print(f"GOAL MISSED: {miss}")
    if not misses:
        print("every goal met")
    return 1 if misses else 0


def enough(rounds, seconds):
    """The misses of a run too short to judge."""
    misses = []
    if rounds < MIN_ROUNDS:
        misses.append(f"{rounds} rounds: too few to judge (at least {MIN_ROUNDS})")
    if seconds < MIN_SECONDS:
        misses.append(f"{seconds} s a round: too short to judge (at least {MIN_SECONDS} s)")
    return misses


def overload_round(results, capacity, seconds):
    """One flood's figures from volley's results.json."""
    g = results["global"]
    errors = results["errors"]
    # Over the run's own length: a flood the generator cannot keep up with lasts longer.
    goodput = g["ok"]["count"] / max(results["durationSeconds"], seconds)
    ko = g["ko"]["count"]
    return {
        "ratio": goodput / capacity,
        "goodput": goodput,
        "ko": ko,
        "ko_p99": g["ko"]["p99"] if ko else 0.0,
        "ok_p99": g["ok"]["p99"],
        "timeouts": sum(n for e, n in errors.items() if "timeout" in e.lower()),
        # The KO column's p99 is the 503s' only when every KO is a 503: the errors say so.
        "other_ko": sum(n for e, n in errors.items() if "503" not in e),
    }


def overload(rounds):
    """The misses of overload.sh's rounds (dicts from overload_round)."""
    if len(rounds) < MIN_ROUNDS:
        return [f"{len(rounds)} rounds: too few to judge (at least {MIN_ROUNDS})"]
    med = {k: statistics.median(r[k] for r in rounds) for k in ("ratio", "ko_p99", "timeouts", "other_ko")}
    print(
        f"median of {len(rounds)} rounds: goodput / capacity {med['ratio']:.3f} (goal >= {OVERLOAD['goodput']}), "
        f"503 p99 {med['ko_p99']:.1f} ms (goal <= {OVERLOAD['ko_p99_ms']}), timeouts {med['timeouts']:g} "
        f"(goal {OVERLOAD['timeouts']}), KOs not 503 {med['other_ko']:g} (goal {OVERLOAD['other_ko']})"
    )
    misses = []
    if med["ratio"] < OVERLOAD["goodput"]:
        misses.append(f"goodput / capacity {med['ratio']:.3f} < {OVERLOAD['goodput']}")
    if med["ko_p99"] > OVERLOAD["ko_p99_ms"]:
        misses.append(f"503 p99 {med['ko_p99']:.1f} ms > {OVERLOAD['ko_p99_ms']} ms")
    # Timeouts and other KOs: none in any round, not only in the median one.
    timeouts = sum(r["timeouts"] for r in rounds)
    if timeouts > OVERLOAD["timeouts"]:
        misses.append(f"{timeouts} client timeouts over the rounds (goal {OVERLOAD['timeouts']})")
    other = sum(r["other_ko"] for r in rounds)
    if other > OVERLOAD["other_ko"]:
        misses.append(f"{other} KOs that are not 503s over the rounds (goal {OVERLOAD['other_ko']})")
    return misses


def soak(rows, hz):
    """The misses of soak.sh's samples: rows of (minute, RSS kB, open files, CPU ticks, requests)."""
    minutes = rows[-1][0] if rows else 0
    if minutes < SOAK_MIN_MINUTES:
        return [
            f"{minutes} minutes sampled: too short to judge (at least {SOAK_MIN_MINUTES}: "
            f"{SOAK_WARM_UP} of warm-up, then two {SOAK_WINDOW}-minute windows)"
        ]
    print("minute  RSS (MB)  open files  CPU us/request (that minute)  requests")
    per = []
    misses = []
    for prev, row in zip(rows, rows[1:]):
        served = row[4] - prev[4]
        if served <= 0:
            misses.append(f"minute {row[0]}: no request served")
            continue
        cpu = (row[3] - prev[3]) / hz * 1e6 / served
        per.append((row[0], row[1] / 1024, row[2], cpu))
        print(f"{row[0]:6d}  {row[1] / 1024:8.1f}  {row[2]:10d}  {cpu:28.2f}  {served:8d}")
    base = next((p for p in per if p[0] == SOAK_WARM_UP), None)
    warm = [p for p in per if p[0] > SOAK_WARM_UP]
    if base is None or len(warm) < 2 * SOAK_WINDOW:
        return misses + [f"minute {SOAK_WARM_UP} and {2 * SOAK_WINDOW} minutes after it are needed to judge"]
    for name, i in (("RSS", 1), ("open files", 2)):
        worst = max(abs(p[i] / base[i] - 1) for p in warm)
        print(f"{name}: after minute {SOAK_WARM_UP}, at most {worst * 100:.1f}% from minute {SOAK_WARM_UP}'s")
        if worst > SOAK_FLAT:
            misses.append(f"{name} moved {worst * 100:.1f}% from minute {SOAK_WARM_UP}'s (goal <= {SOAK_FLAT * 100:.0f}%)")
    cpu = [p[3] for p in warm]
    first = statistics.mean(cpu[:SOAK_WINDOW])
    last = statistics.mean(cpu[-SOAK_WINDOW:])
    drift = last / first - 1
    print(
        f"CPU per request: {min(cpu):.2f}-{max(cpu):.2f} us after minute {SOAK_WARM_UP}; drift, last "
        f"{SOAK_WINDOW} minutes against the first {SOAK_WINDOW}: {drift * 100:+.1f}%"
    )
    if abs(drift) > SOAK_FLAT:
        misses.append(f"CPU per request drifted {drift * 100:+.1f}% (goal within {SOAK_FLAT * 100:.0f}%)")
    return misses


def ratios(rounds, settings):
    """The misses of server.sh: settings maps a setting's name to its rounds' ratios to bare."""
    misses = []
    for name, values in settings.items():
        if len(values) != rounds:
            misses.append(f"{name}: {len(values)} ratios for {rounds} rounds")
            continue
        goal = SERVER.get(name)
        if goal is not None and statistics.median(values) < goal:
            misses.append(f"{name} {statistics.median(values):.3f}x of bare < {goal}x")
    return misses


def volley(rounds, wrk, h2load, rss_mb):
    """The misses of volley.sh: its ratios to wrk and h2load, and its peak RSS."""
    misses = []
    for name, values in (("wrk", wrk), ("h2load", h2load)):
        if len(values) != rounds:
            misses.append(f"volley / {name}: {len(values)} ratios for {rounds} rounds")
        elif statistics.median(values) < VOLLEY[name]:
            misses.append(f"volley / {name} {statistics.median(values):.3f} < {VOLLEY[name]}")
    if rss_mb > VOLLEY["rss_mb"]:
        misses.append(f"peak RSS {rss_mb} MB with 10,000 users > {VOLLEY['rss_mb']} MB")
    return misses


def pair_ratio(rows, base, other, goal):
    """The median of OTHER / BASE over the rounds of `rows` ((round, setting, req/s) triples),
    each setting's median, and the misses against `goal`."""
    by = {}
    for r, name, rps in rows:
        by.setdefault(r, {})[name] = rps
    whole = [v for v in by.values() if base in v and other in v]
    misses = [] if len(whole) == len(by) else [f"{len(by) - len(whole)} rounds without both settings"]
    if not whole:
        return {}, None, misses + ["no round to judge"]
    medians = {name: statistics.median(v[name] for v in whole) for name in (base, other)}
    ratio = statistics.median(v[other] / v[base] for v in whole)
    if ratio < goal:
        misses.append(f"{other} / {base} {ratio:.3f}x < {goal}x")
    return medians, ratio, misses


def numbers(path):
    with open(path) as f:
        return [float(line) for line in f if line.strip()]


def main(argv):
    command, args = argv[1], argv[2:]
    if command == "enough":
        misses = enough(int(args[0]), float(args[1]))
        return verdict(misses) if misses else 0
    if command == "enough-soak":
        minutes = int(args[0])
        if minutes >= SOAK_MIN_MINUTES:
            return 0
        return verdict([f"{minutes} minutes: too short to judge (at least {SOAK_MIN_MINUTES})"])
    if command == "overload-round":
        path, capacity, seconds, r, rate, steal, rounds = args
        with open(path) as f:
            d = overload_round(json.load(f), float(capacity), float(seconds))
        print(
            f"round {r}: capacity {float(capacity):.0f} req/s, offered {rate}/s for {float(seconds):.0f} s: "
            f"goodput {d['goodput']:.0f} req/s ({d['ratio']:.3f}x), {d['ko']} KO ({d['other_ko']} not 503), "
            f"503 p99 {d['ko_p99']:.1f} ms, OK p99 {d['ok_p99']:.1f} ms, {d['timeouts']} timeouts, "
            f"CPU stolen {steal}%"
        )
        # One JSON line a round, appended to ROUNDS_FILE for the verdict.
        with open(rounds, "a") as f:
            f.write(json.dumps(d) + "\n")
        return 0
    if command == "overload":
        with open(args[0]) as f:
            rounds = [json.loads(line) for line in f if line.strip()]
        return verdict(overload(rounds))
    if command == "soak":
        with open(args[0]) as f:
            rows = [list(map(int, line.split())) for line in f if line.strip()]
        return verdict(soak(rows, int(args[1])))
    if command == "ratios":
        settings = {}
        for pair in args[1:]:
            name, path = pair.split("=", 1)
            settings[name] = numbers(path)
        return verdict(ratios(int(args[0]), settings))
    if command == "pair":
        path, base, other, goal = args
        with open(path) as f:
            rows = [(p[0], p[1], float(p[2])) for p in (line.split() for line in f) if len(p) == 3]
        medians, ratio, misses = pair_ratio(rows, base, other, float(goal))
        for name, median in medians.items():
            print(f"{name:8} median {median:10.0f} req/s")
        if ratio is not None:
            print(f"{other} / {base}  {ratio:.3f}x (goal >= {goal}x)")
        return verdict(misses)
    if command == "curve":
        with open(args[0]) as f:
            rows = [
                (p[0], int(p[1]), p[2], float(p[3]), int(p[4]), int(p[5]))
                for p in (line.split() for line in f)
                if len(p) == 6
            ]
        table, misses = curve(rows)
        print(f"{'config':24} {'lines':>5} {'ratio':>7} {'dropped':>9}")
        for (c, n), (ratio, lost) in sorted(table.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            print(f"{c:24} {n:5} {ratio:7.3f} {lost:9}")
        return verdict(misses)
    if command == "volley":
        return verdict(volley(int(args[0]), numbers(args[1]), numbers(args[2]), float(args[3])))
    print(f"unknown command {command!r}; see the docstring", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
