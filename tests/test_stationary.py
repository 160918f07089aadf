#!/usr/bin/env python3
"""test_stationary.py: unit tests of the stationarity rule (runner/analysis/rules.py, SPEC.md
section 8) (TAP): a 60 s constant-rate window with issue 29's 12-second p99 episode is
flagged "not stationary" with the seconds it spans, in result.json's problems, and counts as
invalid for the verdict; a real valid window with isolated slow seconds is not; a probe whose
throughput halves for seconds is flagged; the edges: short windows, intervals without responses, the
1 ms floor, missing figures, a partial last interval; summary.md never quotes such a window's
latency without its mark and episode. Writes only to a temporary folder.
"""
import json
import os
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "runner"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from analysis import fmt, result, rules, verdict  # noqa: E402
import tap_unittest  # noqa: E402
from test_analysis import Batch  # noqa: E402

FIX = os.path.join(ROOT, "tests", "fixtures", "stationarity")


def load(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as fh:
        return json.load(fh)


def window(p99, rps=None, step=1.0):
    """A phase document with per-interval figures as result.json holds them."""
    doc = {"latency_p99_intervals": {"interval_s": step, "p99_ms": list(p99)}}
    if rps is not None:
        doc["throughput_intervals"] = {"interval_s": step, "rps": list(rps)}
    return doc


class TestRule(unittest.TestCase):
    def test_three_seconds_above_ten_times_the_median_are_an_episode(self):
        p99 = [2.0] * 20
        p99[5:8] = [25.0, 30.0, 21.0]
        st = rules.stationarity(window(p99))
        self.assertIs(st["stationary"], False)
        self.assertEqual(len(st["episodes"]), 1)
        e = st["episodes"][0]
        self.assertEqual((e["rule"], e["from_s"], e["to_s"], e["seconds"], e["low"], e["high"], e["empty"]),
                         ("p99", 5.0, 8.0, 3.0, 21.0, 30.0, 0))
        self.assertEqual(e["median"], 2.0)

    def test_two_seconds_or_ten_times_exactly_are_not(self):
        p99 = [2.0] * 20
        p99[5:7] = [25.0, 30.0]
        p99[10:14] = [20.0] * 4  # 10 x the median, not above it
        self.assertIs(rules.stationarity(window(p99))["stationary"], True)

    def test_two_separate_episodes_are_both_named_in_time_order(self):
        p99 = [1.5] * 30
        p99[3:6] = [40.0] * 3
        p99[20:25] = [90.0] * 5
        st = rules.stationarity(window(p99))
        self.assertEqual([(e["from_s"], e["to_s"]) for e in st["episodes"]], [(3.0, 6.0), (20.0, 25.0)])
        why = rules.stationarity_reason(st)
        self.assertIn("for 3 s, 3-6 s into the window", why)
        self.assertIn("for 5 s, 20-25 s into the window", why)

    def test_throughput_below_half_the_median_second(self):
        rps = [100_000.0] * 10
        rps[4:8] = [40_000.0, 10_000.0, 0.0, 45_000.0]
        st = rules.stationarity(window([3.0] * 10, rps))
        self.assertIs(st["stationary"], False)
        e = st["episodes"][0]
        self.assertEqual((e["rule"], e["from_s"], e["to_s"], e["low"], e["high"]), ("rate", 4.0, 8.0, 0.0, 45_000.0))
        self.assertIn("throughput below 0.5 x the median second's 100,000 req/s for 4 s, 4-8 s into the window",
                      rules.stationarity_reason(st))
        rps[4:8] = [60_000.0] * 4  # a dip to 60%: not an episode
        self.assertIs(rules.stationarity(window([3.0] * 10, rps))["stationary"], True)

    def test_seconds_without_any_response_count_against_the_window(self):
        p99 = [2.0] * 12
        p99[4:7] = [None, None, None]
        st = rules.stationarity(window(p99))
        self.assertIs(st["stationary"], False)
        e = st["episodes"][0]
        self.assertEqual((e["low"], e["high"], e["empty"]), (None, None, 3))
        self.assertIn("3 s without any response", rules.stationarity_reason(st))
        p99[4:7] = [None, 2.0, None]
        self.assertIs(rules.stationarity(window(p99))["stationary"], True)

    def test_short_windows_are_not_judged(self):
        # 6 intervals: a 3-second episode would be half of the window, and the median with it
        self.assertIsNone(rules.stationarity(window([1.0, 1.0, 1.0, 90.0, 90.0, 90.0]))["stationary"])
        # 7 intervals are
        self.assertIs(rules.stationarity(window([1.0] * 4 + [90.0] * 3))["stationary"], False)
        self.assertIs(rules.stationarity(window([1.0] * 7))["stationary"], True)

    def test_below_the_floor_a_tenfold_rise_is_not_an_episode(self):
        p99 = [0.05] * 20
        p99[5:10] = [0.9] * 5  # 18 x the median, but under 1 ms
        self.assertIs(rules.stationarity(window(p99))["stationary"], True)
        p99[5:10] = [1.2] * 5
        st = rules.stationarity(window(p99))
        self.assertIs(st["stationary"], False)
        self.assertIn("(and 1 ms)", rules.stationarity_reason(st))

    def test_no_figures_is_unknown(self):
        self.assertIsNone(rules.stationarity({})["stationary"])
        self.assertIsNone(rules.stationarity({"latency_p99_intervals": None})["stationary"])
        self.assertIsNone(rules.stationarity(window([None] * 10))["stationary"])  # nothing to take a median of
        self.assertIsNone(rules.stationarity(None)["stationary"])


class TestFixtures(unittest.TestCase):
    """Whole runs from the load generator's JSON, through result.json and the verdict."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="test_stationary.")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_dir(self, name, lg, phase="sustain", kind="equal-load", server="actor-mem"):
        d = os.path.join(self.tmp, name)
        os.makedirs(d)
        fname = "loadgen.json" if phase == "sustain" else "probe.json"
        with open(os.path.join(d, fname), "w", encoding="utf-8") as fh:
            json.dump(lg, fh)
        el = lg.get("elapsed_s") or 10.0
        facts = {"server": server, "scenario": "s3", "kind": kind, "batch": "t", "run": name, "repeat": None,
                 "config": {"mode": "full", "server_cpu_count": 1, "loadgen_cpu_count": 1},
                 "clk_tck": 100, "failure": None, "stop": {"rss_kb": 1024, "code": 0, "killed": False},
                 "phases": {phase: {"loadgen_json": fname, "cpu": [[0.0, 0], [el, int(60 * el)]],
                                    "cpustat": [[0, 0, 0], [int(62 * el), int(100 * el), 0]], "wall_s": el,
                                    "target_rps": lg.get("target_rps") if phase == "sustain" else None}}}
        if phase == "probe":
            facts["phases"]["probe"]["cpu"] = [[0.0, 0], [el, int(95 * el)]]
            facts["phases"]["probe"]["cpustat"] = [[0, 0, 0], [int(96 * el), int(100 * el), 0]]
        with open(os.path.join(d, "facts.json"), "w", encoding="utf-8") as fh:
            json.dump(facts, fh)
        return result.write(d)

    def test_the_twelve_second_episode_is_flagged_with_its_seconds(self):
        # issue 29's episode (actor-mem s3, 45,936 req/s): seconds 37-48 at 80, 266, ... 750 ms
        # over a median second of 9.1 ms; its first second (80 ms) is 8.8 x the median, under the
        # bound, so the flagged span is 38-49 s into the window
        res = self.run_dir("actor-mem-s3-equal", load("episode-12s.json"))
        st = res["stationarity"]
        self.assertIs(st["stationary"], False)
        self.assertIs(res["validity"]["stationary"], False)
        self.assertEqual([(e["rule"], e["from_s"], e["to_s"], e["seconds"]) for e in st["episodes"]],
                         [("p99", 38.0, 49.0, 11.0)])
        self.assertEqual((st["episodes"][0]["low"], st["episodes"][0]["high"]), (266.0, 1136.0))
        self.assertAlmostEqual(st["episodes"][0]["median"], 9.1155, delta=1e-9)
        probs = [p for p in res["problems"] if p["flag"] == "not stationary"]
        self.assertEqual(len(probs), 1)
        self.assertEqual(probs[0]["phase"], "sustain")
        self.assertIn("p99 above 10 x the median second's 9.116 ms for 11 s, 38-49 s into the window "
                      "(266.000-1,136.000 ms)", probs[0]["reason"])
        self.assertIn("not stationary", res["flags"])
        # the rate held all along: only the latency rule speaks
        self.assertEqual(res["throughput_intervals"]["intervals"], 60)
        self.assertIs(res["validity"]["rate_held"], True)

    def test_a_flagged_equal_load_run_is_invalid_for_the_verdict(self):
        bad = self.run_dir("actor-mem-s3-equal", load("episode-12s.json"))
        good = self.run_dir("async-mem-s3-equal", load("spikes-15s.json"), server="async-mem")
        fig = verdict.equal_figure({1: bad}, {1: good})
        self.assertEqual((fig["pairs_used"], fig["pairs_total"]), (0, 1))
        self.assertEqual([r["flag"] for e in fig["excluded"] for r in e["reasons"]], ["not stationary"])

    def test_a_real_window_with_isolated_slow_seconds_is_stationary(self):
        # readme-7 actor-mem s3, 15 s at 62,359 req/s, valid: seconds 0 and 3 above 10 x the
        # median second (69.6 and 34.0 ms over 2.9 ms), 2 and 4 just under (28.8 and 26.6 ms)
        res = self.run_dir("actor-mem-s3", load("spikes-15s.json"), kind="saturation")
        self.assertIs(res["stationarity"]["stationary"], True)
        self.assertEqual(res["flags"], [])

    def test_a_probe_whose_throughput_collapses_is_flagged(self):
        lg = load("spikes-15s.json")
        lg = dict(lg, target_rps=0, elapsed_s=10.0)
        iv = dict(lg["latency_intervals"])
        iv["count"] = [100_000, 101_000, 30_000, 20_000, 25_000, 99_000, 100_500, 100_000, 99_500, 100_000]
        iv["p99_ms"] = [4.0] * 10  # a closed loop: the rate falls, the latency hardly moves
        lg["latency_intervals"] = iv
        res = self.run_dir("actor-mem-s3-probe2", lg, phase="probe", kind="probe")
        self.assertIs(res["probe"]["validity"]["stationary"], False)
        flags = [f for f, _ in rules.probe_problems(res)]
        self.assertIn("not stationary", flags)
        self.assertEqual(res["probe"]["stationarity"]["episodes"][0]["rule"], "rate")

    def test_a_partial_last_interval_is_taken_at_its_length(self):
        lg = {"elapsed_s": 9.5, "latency_intervals": {"interval_s": 1.0, "count": [1000] * 9 + [500],
                                                      "p99_ms": [1.0] * 10}}
        ti = result.rps_intervals(lg)
        self.assertEqual(ti["rps"], [1000.0] * 10)
        self.assertEqual((ti["median_rps"], ti["min_rps"], ti["max_rps"]), (1000.0, 1000.0, 1000.0))
        self.assertIsNone(result.rps_intervals({"latency_intervals": None}))



class TestSummary(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="test_stationary.")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_the_latency_of_a_window_with_an_episode_carries_its_mark_and_seconds(self):
        b = Batch(self.tmp, "st")
        episode = [1.0] * 60
        episode[37:49] = [50.0] * 12
        b.scenario("s1", [100000] * 3, [100000] * 3, eq=(100000, 100000), eq_actor={"intervals": episode, "p99": 50.0},
                   eq_async={"intervals": [1.0] * 60})
        index = b.summarize()
        c = next(c for c in index["comparisons"] if c["scenario"] == "s1")
        cand, base = c["equal_load"]["candidate"], c["equal_load"]["baseline"]
        self.assertIn("for 12 s, 37-49 s into the window", cand["latency_not_stationary"])
        self.assertIsNone(base["latency_not_stationary"])
        self.assertIn("not stationary", cand["flags"])
        self.assertEqual(index["thresholds"]["stationary_p99_factor"], rules.STATIONARY_P99_FACTOR)
        with open(os.path.join(b.dir, "summary.md"), encoding="utf-8") as fh:
            md = fh.read()
        row = next(line for line in md.split("## Equal load")[1].splitlines() if line.startswith("| s1 | actor-mem |"))
        self.assertIn("50.000 ms" + fmt.STATIONARY_MARK, row)
        other = next(line for line in md.split("## Equal load")[1].splitlines() if line.startswith("| s1 | async-mem |"))
        self.assertNotIn(fmt.STATIONARY_MARK, other)
        self.assertIn(f"{fmt.STATIONARY_MARK} not stationary, not the server's steady tail: actor-mem-s1-equal: "
                      "p99 above 10 x the median second's 1.000 ms for 12 s, 37-49 s into the window", md)


if __name__ == "__main__":
    tap_unittest.main(__name__)
