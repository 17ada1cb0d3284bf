"""The bench scripts' verdicts: a run that misses a goal, or is too short to judge, fails.

    python3 -m unittest discover -s bench
"""

import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(__file__))
import goals  # noqa: E402

BENCH = os.path.dirname(os.path.abspath(__file__))


def quiet(f, *args):
    with redirect_stdout(io.StringIO()):
        return f(*args)


def results(ok=20_000, ko=20_000, ko_p99=2.0, errors=None, duration=10.0):
    """A volley results.json of a flood, in the fields overload_round reads."""
    return {
        "durationSeconds": duration,
        "global": {"ok": {"count": ok, "p99": 3.0}, "ko": {"count": ko, "p99": ko_p99}},
        "errors": errors if errors is not None else {"status 503 Service Unavailable": ko},
    }


def flood(**kw):
    return goals.overload_round(results(**kw), capacity=2_000.0, seconds=10.0)


class Overload(unittest.TestCase):
    def test_fast_503s_at_full_goodput_meet_every_goal(self):
        self.assertEqual(quiet(goals.overload, [flood()] * 3), [])

    def test_a_flood_that_times_out_instead_of_503_misses(self):
        timed_out = flood(ko=5_000, errors={"request timeout after 5s": 5_000})
        misses = quiet(goals.overload, [flood(), timed_out, flood()])
        self.assertTrue(any("timeouts" in m for m in misses), misses)
        self.assertTrue(any("not 503" in m for m in misses), misses)

    def test_slow_503s_miss(self):
        misses = quiet(goals.overload, [flood(ko_p99=40.0)] * 3)
        self.assertEqual(len(misses), 1)
        self.assertIn("503 p99", misses[0])

    def test_collapsed_goodput_misses(self):
        misses = quiet(goals.overload, [flood(ok=10_000)] * 3)
        self.assertEqual(len(misses), 1)
        self.assertIn("goodput", misses[0])

    def test_a_flood_longer_than_asked_counts_its_own_length(self):
        self.assertAlmostEqual(flood(duration=20.0)["ratio"], 0.5)

    def test_no_ko_has_no_503_percentile(self):
        self.assertEqual(flood(ko=0, ko_p99=None, errors={})["ko_p99"], 0.0)

    def test_one_round_is_too_few(self):
        misses = quiet(goals.overload, [flood()])
        self.assertIn("too few", misses[0])


def soak_rows(minutes, rss=lambda m: 19_000, cpu_ticks_a_minute=lambda m: 600, per_minute=60_000):
    rows, ticks = [], 0
    for m in range(minutes + 1):
        rows.append([m, rss(m), 84, ticks, m * per_minute])
        ticks += cpu_ticks_a_minute(m + 1)
    return rows


class Soak(unittest.TestCase):
    def test_a_flat_run_meets_every_goal(self):
        self.assertEqual(quiet(goals.soak, soak_rows(30), 100), [])

    def test_a_run_shorter_than_warm_up_and_two_windows_is_not_judged(self):
        for minutes in (0, 5, 6, 14):
            misses = quiet(goals.soak, soak_rows(minutes), 100)
            self.assertEqual(len(misses), 1, minutes)
            self.assertIn("too short", misses[0])
        self.assertEqual(quiet(goals.soak, soak_rows(15), 100), [])

    def test_growing_memory_misses(self):
        misses = quiet(goals.soak, soak_rows(30, rss=lambda m: 19_000 + 400 * m), 100)
        self.assertEqual(len(misses), 1)
        self.assertIn("RSS", misses[0])

    def test_cpu_per_request_drifting_up_misses(self):
        misses = quiet(goals.soak, soak_rows(30, cpu_ticks_a_minute=lambda m: 600 + 10 * m), 100)
        self.assertEqual(len(misses), 1)
        self.assertIn("CPU", misses[0])

    def test_a_minute_with_no_request_misses(self):
        rows = soak_rows(20)
        for row in rows[10:]:
            row[4] -= 60_000
        misses = quiet(goals.soak, rows, 100)
        self.assertTrue(any("minute 10: no request" in m for m in misses), misses)


class Server(unittest.TestCase):
    def test_ratios_at_their_goals_pass_and_below_them_miss(self):
        ok = {"production": [0.93, 0.95, 0.92], "chatty": [0.9, 0.86, 0.85], "quiet": [0.1, 0.1, 0.1]}
        self.assertEqual(goals.ratios(3, ok), [])
        low = dict(ok, production=[0.93, 0.91, 0.90])
        self.assertEqual(len(goals.ratios(3, low)), 1)

    def test_a_missing_round_misses(self):
        self.assertEqual(len(goals.ratios(3, {"production": [0.95, 0.95]})), 1)


class Pair(unittest.TestCase):
    def test_the_median_of_the_rounds_ratios_is_judged(self):
        rows = [("0", "open", 100.0), ("0", "guarded", 95.0), ("1", "guarded", 80.0), ("1", "open", 100.0),
                ("2", "open", 100.0), ("2", "guarded", 91.0)]
        medians, ratio, misses = goals.pair_ratio(rows, "open", "guarded", 0.9)
        self.assertEqual((medians["open"], ratio, misses), (100.0, 0.91, []))
        self.assertEqual(len(goals.pair_ratio(rows, "open", "guarded", 0.95)[2]), 1)

    def test_a_round_missing_a_setting_misses(self):
        rows = [("0", "open", 100.0), ("0", "guarded", 95.0), ("1", "open", 100.0)]
        self.assertEqual(len(goals.pair_ratio(rows, "open", "guarded", 0.9)[2]), 1)


class Volley(unittest.TestCase):
    def test_each_goal_is_judged(self):
        self.assertEqual(goals.volley(3, [1.0, 1.1, 0.9], [0.9, 0.95, 1.0], 199), [])
        self.assertEqual(len(goals.volley(3, [0.9, 0.95, 1.1], [0.9, 0.95, 1.0], 199)), 1)
        self.assertEqual(len(goals.volley(3, [1.0, 1.1, 0.9], [0.8, 0.85, 1.0], 199)), 1)
        self.assertEqual(len(goals.volley(3, [1.0, 1.1, 0.9], [0.9, 0.95, 1.0], 201)), 1)


class Command(unittest.TestCase):
    """The command line the scripts call: the exit code is the verdict."""

    def run_goals(self, *args):
        return subprocess.run(
            [sys.executable, os.path.join(BENCH, "goals.py"), *args], capture_output=True, text=True
        )

    def test_enough_refuses_short_runs(self):
        self.assertEqual(self.run_goals("enough", "3", "10").returncode, 0)
        self.assertEqual(self.run_goals("enough", "1", "10").returncode, 1)
        self.assertEqual(self.run_goals("enough", "3", "2").returncode, 1)

    def test_overload_rounds_through_files(self):
        with tempfile.TemporaryDirectory() as d:
            rounds = os.path.join(d, "rounds")
            for bad in (False, True, False):
                path = os.path.join(d, "results.json")
                body = results(errors={"request timeout after 5s": 1}) if bad else results()
                with open(path, "w") as f:
                    json.dump(body, f)
                out = self.run_goals("overload-round", path, "2000", "10", "1", "4000", "0.1", rounds)
                self.assertEqual(out.returncode, 0, out.stderr)
            out = self.run_goals("overload", rounds)
            self.assertEqual(out.returncode, 1, out.stdout)
            self.assertIn("GOAL MISSED: 1 client timeouts", out.stdout)

    def test_the_scripts_refuse_a_run_too_short_before_building(self):
        for script, args in (
            ("overload.sh", ["1", "10"]),
            ("overload.sh", ["3", "1"]),
            ("soak.sh", ["5"]),
            ("server.sh", ["1", "10"]),
            ("volley.sh", ["3", "2"]),
        ):
            out = subprocess.run(["bash", os.path.join(BENCH, script), *args], capture_output=True, text=True)
            self.assertEqual(out.returncode, 1, (script, args, out.stdout, out.stderr))
            self.assertIn("too", out.stdout + out.stderr, (script, args))


if __name__ == "__main__":
    unittest.main()


class Curve(unittest.TestCase):
    """logcurve.sh's verdict: ratios to each round's bare, drops summed, the goals."""

    def rows(self, ours_20=0.8, fmt_20=0.6, lossy_20=0.9, lossy_lost=10, jvm_20=0.3):
        rows = []
        for r in ("0", "1", "2"):
            for n, bare in ((20, 1000.0), (70, 1000.0)):
                rows.append((r, n, "bare", bare, 0, 0))
                rows.append((r, n, "ferrowizard-lossless", bare * (ours_20 if n == 20 else 0.5), 10, 10))
                rows.append((r, n, "fmt", bare * (fmt_20 if n == 20 else 0.4), 10, 10))
                rows.append((r, n, "slog-lossy", bare * (lossy_20 if n == 20 else 0.45), 10, 10 - lossy_lost))
                rows.append((r, n, "ferrowizard-lossy", bare * 0.99, 10, 10))
                rows.append((r, n, "jvm-bare", bare * 2, 0, 0))
                rows.append((r, n, "jvm-lossless", bare * jvm_20 * 2 if n == 20 else bare * 0.2, 10, 10))
        return rows

    def test_a_lossy_logger_that_drops_is_no_rival(self):
        """Nor is ferrowizard's own lossy mode, however fast."""
        table, misses = goals.curve(self.rows())
        self.assertEqual(misses, [])
        self.assertAlmostEqual(table[("ferrowizard-lossless", 20)][0], 0.8)
        self.assertEqual(table[("slog-lossy", 20)][1], 30)

    def test_a_faster_lossless_rival_or_a_lossy_one_that_drops_nothing_is_a_miss(self):
        _, misses = goals.curve(self.rows(fmt_20=0.85))
        self.assertTrue(any("fmt" in m for m in misses), misses)
        _, misses = goals.curve(self.rows(lossy_lost=0))
        self.assertTrue(any("slog-lossy" in m for m in misses), misses)

    def test_the_jvm_is_judged_against_its_own_bare(self):
        """Twice the Rust bare's req/s, so a ratio to `bare` would put it ahead."""
        table, misses = goals.curve(self.rows())
        self.assertAlmostEqual(table[("jvm-lossless", 20)][0], 0.3)
        self.assertNotIn(("jvm-bare", 20), table)
        self.assertEqual(misses, [])
        _, misses = goals.curve(self.rows(jvm_20=0.81))
        self.assertTrue(any("jvm-lossless 0.810x" in m for m in misses), misses)

    def test_the_goals_at_20_lines(self):
        _, misses = goals.curve(self.rows(ours_20=0.7, fmt_20=0.6))
        self.assertTrue(any("0.700x < 0.75x" in m for m in misses), misses)


class CurveChart(unittest.TestCase):
    """The chart of logcurve.sh: lossy dashed, lossless solid, a cross where lines dropped."""

    def test_modes_and_drops_are_drawn_apart(self):
        import logcurve_chart

        table = {
            ("ferrowizard-lossless", 5): (0.9, 0),
            ("ferrowizard-lossless", 70): (0.5, 0),
            ("slog-lossy", 5): (0.6, 0),
            ("slog-lossy", 70): (0.3, 1234),
            ("fmt", 5): (0.5, 0),
            ("fmt", 70): (0.1, 0),
        }
        svg = logcurve_chart.chart(table)
        lines = [l for l in svg.splitlines() if l.startswith("<polyline")]
        self.assertEqual(len(lines), 3)
        dashed = [l for l in lines if "stroke-dasharray" in l]
        self.assertEqual(len(dashed), 1)
        self.assertIn('stroke="#8c564b"', dashed[0])
        # One cross (slog-lossy at 70, plus the legend's) and five dots (plus the legend's).
        self.assertEqual(svg.count("<path d="), 2)
        self.assertEqual(svg.count("<circle"), 6)
        self.assertIn("slog + slog-async, lossy", svg)
        self.assertIn("tracing-subscriber fmt, blocking", svg)
        self.assertIn("goal 0.45x", svg)

    def test_no_figures_is_an_error(self):
        import logcurve_chart

        with self.assertRaises(ValueError):
            logcurve_chart.chart({})
