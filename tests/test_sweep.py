#!/usr/bin/env python3
"""test_sweep.py: unit tests of runner/analysis/sweep.py (TAP): the default rates and the sweep's
base, every per-step field of index.json, and the knee rule of SPEC.md section 14 on sweeps
built from raw facts the way runner.sh records them (tests/test_analysis.py's Batch): the
low-load p99 from the lowest valid step, the strict p99 bound, the first break ending the
search, steps limited by the load generator or crowded skipped, errors and failed steps
breaking, knees that are lower bounds and the knee ratio's kinds, and summary.md's section.
Runs no benchmark; writes only to a temporary folder.
"""
import io
import os
import shutil
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "runner"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from analysis import result, summary, sweep  # noqa: E402
from analysis.__main__ import main as analysis_main  # noqa: E402
import tap_unittest  # noqa: E402
from test_analysis import Batch  # noqa: E402

BASE = 10000


def add_sweep(batch, sc, server, steps, base=BASE):
    """One sweep of SERVER on SC: STEPS is a list of (offered req/s, overrides of the sustain
    spec: rps, p99, server_cpu, lg_cpu, other, errors, failure); a valid step by default
    (rate held, 50% server CPU, loadgen on schedule, p99 1 ms)."""
    for i, (rate, over) in enumerate(steps, 1):
        over = dict(over)
        failure = over.pop("failure", None)
        spec = dict({"rps": rate, "target": rate, "server_cpu": 50.0, "lag_p99": 0.05, "waited": 0, "p99": 1.0},
                    **over)
        batch.run(server, sc, "sweep", failure=failure, sustain=None if failure else spec,
                  sweep={"step": i, "steps": len(steps), "offered_rps": rate, "base_rps": base,
                         "fraction_of_base": round(rate / base, 4), "rates_given": False})


def flat(n, p99=1.0, start=1000, step=1000, **over):
    """N valid steps at START, START + STEP, ... with p99 P99."""
    return [(start + k * step, dict({"p99": p99}, **over)) for k in range(n)]


class SweepCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.b = Batch(self.tmp, "sw")
        self.b.scenario("s1", [BASE] * 3, [2 * BASE] * 3)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def sweep_of(self, actor_steps=None, async_steps=None, sc="s1"):
        """The index's sweep entry of SC after adding the given sweeps."""
        if actor_steps is not None:
            add_sweep(self.b, sc, "actor-mem", actor_steps)
        if async_steps is not None:
            add_sweep(self.b, sc, "async-mem", async_steps)
        self.index = self.b.summarize()
        return next(s for s in self.index["sweep"]["scenarios"] if s["scenario"] == sc)

    def knee_of(self, steps, who="candidate"):
        s = self.sweep_of(**{("actor_steps" if who == "candidate" else "async_steps"): steps})
        return s["servers"][who]["knee"], s["servers"][who]["steps"]


class TestRates(SweepCase):
    def test_default_rates_are_10_to_120_percent_of_the_base(self):
        self.assertEqual(sweep.default_rates(20000), [2000 * k for k in range(1, 13)])
        self.assertEqual(sweep.DEFAULT_FRACTIONS, (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2))

    def test_default_rates_of_a_tiny_base_are_whole_distinct_and_at_least_one(self):
        self.assertEqual(sweep.default_rates(7), [1, 2, 3, 4, 5, 6, 7, 8])
        self.assertEqual(sweep.default_rates(1), [1])

    def test_a_base_that_is_not_a_positive_rate_is_refused(self):
        for bad in (0, -5, None, "100"):
            with self.assertRaises(ValueError):
                sweep.default_rates(bad)

    def test_base_is_the_slower_servers_median_saturation(self):
        b = Batch(self.tmp, "base")
        b.scenario("s2", [60000, 50000, 70000], [100000, 90000, 95000])
        b.summarize()
        self.assertEqual(sweep.base_rps(b.dir, "s2"), 60000)
        with self.assertRaises(ValueError):
            sweep.base_rps(b.dir, "s3")

    def test_base_leaves_out_failed_probes_and_refuses_a_server_without_any(self):
        b = Batch(self.tmp, "failed", repeats=2)
        b.scenario("s2", [60000, 50000], [100000, 90000])
        shutil.rmtree(os.path.join(b.dir, "actor-mem-s2-probe2"))
        b.run("actor-mem", "s2", "probe", 2, failure="server exited")
        b.summarize()
        self.assertEqual(sweep.base_rps(b.dir, "s2"), 60000)
        shutil.rmtree(os.path.join(b.dir, "actor-mem-s2"))
        b.run("actor-mem", "s2", "saturation", 1, failure="server exited")
        with self.assertRaises(ValueError):
            sweep.base_rps(b.dir, "s2")

    def test_the_command_line_prints_the_rates(self):
        out = io.StringIO()
        with redirect_stdout(out):
            rc = analysis_main(["analysis", "sweep-rates", "20000"])
        self.assertEqual(rc, 0)
        self.assertEqual(out.getvalue().strip(), ",".join(str(2000 * k) for k in range(1, 13)))


class TestSteps(SweepCase):
    def test_result_json_carries_the_step(self):
        add_sweep(self.b, "s1", "async-mem", flat(1))
        with open(os.path.join(self.b.dir, "async-mem-s1-sweep-01", "result.json"), encoding="utf-8") as fh:
            import json
            res = json.load(fh)
        self.assertEqual(list(res), result.FIELDS)
        self.assertEqual((res["kind"], res["repeat"]), ("sweep", None))
        self.assertEqual(res["sweep"]["step"], 1)
        self.assertEqual(res["sweep"]["offered_rps"], 1000)
        self.assertEqual(res["target_rps"], 1000)

    def test_every_step_field_is_in_the_index(self):
        s = self.sweep_of(async_steps=[(2000, {"p99": 0.8, "server_cpu": 40.0, "lg_cpu": 30.0, "lag_p99": 0.2,
                                               "waited": 3})])
        st = s["servers"]["baseline"]["steps"][0]
        want = {"step": 1, "run": "async-mem-s1-sweep-01", "offered_rps": 2000, "fraction_of_base": 0.2,
                "achieved_rps": 2000, "latency_p50_ms": 0.2, "latency_p90_ms": 0.4, "latency_p99_ms": 0.8,
                "latency_p99_9_ms": 0.8 * 1.5, "latency_max_ms": 0.8 * 3, "server_cpu_pct": 40.0,
                "req_per_cpu_sec": 5000, "errors_total": 0, "loadgen_cpu_pct": 30.0, "send_lag_p99_ms": 0.2,
                "requests_waited_for_connection": 3, "server_cpus_other_pct": 0.0, "failure": None,
                "latency_by_loadgen": False, "flags": [], "p99_vs_base": 1.0}
        for key, value in want.items():
            self.assertAlmostEqual(st[key], value, msg=key) if isinstance(value, float) else \
                self.assertEqual(st[key], value, msg=key)
        for key in sweep.STEP_FIELDS + ("validity", "problems", "knee_rule", "path"):
            self.assertIn(key, st)
        self.assertIn("handler_p99_us", st)
        self.assertEqual(set(st["validity"]), set(result.VALIDITY))
        self.assertEqual((st["validity"]["rate_held"], st["validity"]["clean"], st["validity"]["quiet"],
                          st["validity"]["sustain_loadgen_bound"]), (True, True, True, False))
        self.assertEqual(s["base_rps"], BASE)
        self.assertEqual(s["rates_rps"], [2000])
        self.assertIsNone(s["servers"]["candidate"])
        self.assertIsNone(self.index["sweep"]["scenarios"][0]["knee_ratio"])

    def test_steps_are_ordered_by_offered_rate(self):
        s = self.sweep_of(actor_steps=[(3000, {}), (1000, {}), (2000, {})])
        self.assertEqual([st["offered_rps"] for st in s["servers"]["candidate"]["steps"]], [1000, 2000, 3000])

    def test_a_batch_without_sweep_has_no_section(self):
        idx = self.b.summarize()
        self.assertIsNone(idx["sweep"])
        with open(os.path.join(self.b.dir, "summary.md"), encoding="utf-8") as fh:
            self.assertNotIn("rate sweeps", fh.read())


class TestKnee(SweepCase):
    def test_highest_step_before_the_rate_is_not_held(self):
        k, steps = self.knee_of(flat(5) + [(6000, {"rps": 5000})])
        self.assertEqual((k["rate_rps"], k["step"], k["lower_bound"]), (5000, 5, False))
        self.assertEqual((k["broke_at_rps"], k["broke_at_step"]), (6000, 6))
        self.assertIn("achieved", k["broke_reason"])
        self.assertEqual([st["knee_rule"]["class"] for st in steps], ["ok"] * 5 + ["break"])

    def test_the_p99_bound_is_strict_at_the_multiple(self):
        self.assertEqual(sweep.KNEE_P99_MULTIPLE, 5.0)
        k, _ = self.knee_of([(1000, {"p99": 0.25}), (2000, {"p99": 1.2499}), (3000, {"p99": 1.25}),
                             (4000, {"p99": 0.3})])
        self.assertEqual((k["base_p99_ms"], k["p99_bound_ms"]), (0.25, 1.25))
        self.assertEqual((k["rate_rps"], k["broke_at_rps"]), (2000, 3000))
        self.assertIn("p99 1.250 ms >= 1.250 ms", k["broke_reason"])

    def test_low_load_p99_is_the_lowest_valid_steps(self):
        k, steps = self.knee_of([(1000, {"p99": 0.05, "other": 50.0}), (2000, {"p99": 0.4}),
                                 (3000, {"p99": 1.9}), (4000, {"p99": 2.1})])
        self.assertEqual((k["base_step"], k["base_rate_rps"], k["base_p99_ms"]), (2, 2000, 0.4))
        self.assertEqual((k["rate_rps"], k["broke_at_step"]), (3000, 4))
        self.assertEqual(k["skipped_steps"], [1])
        self.assertEqual(steps[0]["knee_rule"]["class"], "unknown")
        self.assertIn("other load", steps[0]["knee_rule"]["reason"])

    def test_the_low_load_p99_comes_only_from_a_step_at_low_load(self):
        self.assertEqual(sweep.LOW_LOAD_MAX_FRACTION, 0.3)
        k, steps = self.knee_of(flat(3, other=40.0) + [(4000, {"p99": 50.0}), (5000, {"p99": 60.0}),
                                                      (6000, {"rps": 5000})])
        self.assertIsNone(k["rate_rps"])
        self.assertIsNone(k["base_p99_ms"])
        self.assertIn("no valid step at low load", k["reason"])
        self.assertIn("step 4 at 4,000 req/s", k["reason"])
        self.assertEqual([st["knee_rule"]["class"] for st in steps], ["unknown"] * 5 + ["break"])

    def test_a_valid_step_at_the_low_load_limit_gives_the_low_load_p99(self):
        k, _ = self.knee_of(flat(2, other=40.0) + [(3000, {"p99": 2.0}), (4000, {"p99": 9.9}), (5000, {"p99": 10.0})])
        self.assertEqual((k["base_step"], k["base_p99_ms"], k["rate_rps"], k["broke_at_rps"]), (3, 2.0, 4000, 5000))

    def test_a_loadgen_bound_step_is_skipped_not_a_break(self):
        k, steps = self.knee_of(flat(2) + [(3000, {"p99": 50.0, "lg_cpu": 97.0})] + flat(2, start=4000))
        self.assertEqual((k["rate_rps"], k["lower_bound"]), (5000, True))
        self.assertEqual(k["skipped_steps"], [3])
        self.assertTrue(steps[2]["latency_by_loadgen"])
        self.assertEqual(steps[2]["knee_rule"]["class"], "unknown")
        self.assertIn("load generator", steps[2]["knee_rule"]["reason"])
        with open(os.path.join(self.b.dir, "summary.md"), encoding="utf-8") as fh:
            md = fh.read()
        row = next(line for line in md.splitlines() if line.startswith("| actor-mem | 3 |"))
        self.assertIn("50.000 ms" + summary.LOADGEN_MARK, row)
        self.assertIn("unknown", row)

    def test_lag_with_free_connections_is_the_loadgens_with_busy_ones_the_servers(self):
        k, steps = self.knee_of(flat(2) + [(3000, {"lag_p99": 4.0, "waited": 0})] +
                                [(4000, {"lag_p99": 4.0, "waited": 10000, "p99": 30.0})])
        self.assertEqual([st["knee_rule"]["class"] for st in steps], ["ok", "ok", "unknown", "break"])
        self.assertEqual((k["rate_rps"], k["broke_at_rps"]), (2000, 4000))

    def test_nothing_above_the_first_break_counts(self):
        k, steps = self.knee_of(flat(2) + [(3000, {"p99": 9.0})] + flat(3, start=4000))
        self.assertEqual((k["rate_rps"], k["broke_at_rps"], k["lower_bound"]), (2000, 3000, False))
        self.assertEqual(steps[3]["knee_rule"]["class"], "ok")

    def test_errors_break_the_rule(self):
        k, _ = self.knee_of(flat(3) + [(4000, {"errors": 5})])
        self.assertEqual((k["rate_rps"], k["broke_at_rps"]), (3000, 4000))
        self.assertIn("5 errors", k["broke_reason"])

    def test_a_failed_step_breaks_the_rule(self):
        k, steps = self.knee_of(flat(2) + [(3000, {"failure": "server exited (killed by signal 9)"})] + flat(1, start=4000))
        self.assertEqual((k["rate_rps"], k["broke_at_step"]), (2000, 3))
        self.assertIn("killed by signal 9", k["broke_reason"])
        self.assertEqual(steps[2]["offered_rps"], 3000)

    def test_no_valid_step_no_knee(self):
        k, steps = self.knee_of(flat(3, other=40.0))
        self.assertIsNone(k["rate_rps"])
        self.assertIsNone(k["base_p99_ms"])
        self.assertIn("no valid step", k["reason"])
        self.assertEqual({st["knee_rule"]["class"] for st in steps}, {"unknown"})

    def test_a_break_before_any_step_kept_the_rule_gives_no_knee(self):
        k, _ = self.knee_of([(1000, {"rps": 500})] + flat(2, start=2000))
        self.assertIsNone(k["rate_rps"])
        self.assertEqual(k["broke_at_step"], 1)
        self.assertIn("before any step kept it", k["reason"])

    def test_knee_as_a_fraction_of_the_servers_saturation(self):
        k, _ = self.knee_of(flat(4) + [(5000, {"p99": 7.0})])
        self.assertEqual((k["rate_rps"], k["fraction_of_saturation"], k["fraction_of_base"]), (4000, 0.4, 0.4))


class TestKneeRatio(SweepCase):
    def test_exact_ratio_and_the_summary_row(self):
        s = self.sweep_of(actor_steps=flat(4) + [(5000, {"rps": 4000})],
                          async_steps=flat(8) + [(9000, {"p99": 6.0})])
        self.assertEqual((s["knee_ratio"], s["knee_ratio_kind"]), (0.5, "exact"))
        # each true knee lies between its step and the break: actor 4000-5000, async 8000-9000
        self.assertEqual((s["knee_ratio_min"], s["knee_ratio_max"]), (0.444, 0.625))
        self.assertEqual(s["comparison_ratio"], 0.5)
        with open(os.path.join(self.b.dir, "summary.md"), encoding="utf-8") as fh:
            md = fh.read()
        self.assertIn("## Latency under load: rate sweeps", md)
        row = next(line for line in md.splitlines() if line.startswith("| s1 | actor-mem / async-mem | 10,000 req/s |"))
        cells = [c.strip() for c in row.split("|")[1:-1]]
        self.assertEqual(cells[3:7], ["4,000 req/s (40% of its saturation)", "8,000 req/s (40% of its saturation)",
                                      "0.500 (range 0.444-0.625)", "0.500"])

    def test_a_knee_that_is_a_lower_bound_makes_the_ratio_a_bound(self):
        s = self.sweep_of(actor_steps=flat(6), async_steps=flat(3) + [(4000, {"p99": 6.0})])
        self.assertEqual((s["knee_ratio"], s["knee_ratio_kind"]), (2.0, "at least"))
        self.assertEqual((s["knee_ratio_min"], s["knee_ratio_max"]), (1.5, None))
        self.assertTrue(s["servers"]["candidate"]["knee"]["lower_bound"])
        with open(os.path.join(self.b.dir, "summary.md"), encoding="utf-8") as fh:
            self.assertIn("| at least 2.000 (range 1.500-unbounded) |", fh.read())

    def test_the_async_knee_a_lower_bound_gives_at_most(self):
        s = self.sweep_of(actor_steps=flat(2) + [(3000, {"p99": 6.0})], async_steps=flat(6))
        self.assertEqual((s["knee_ratio"], s["knee_ratio_kind"]), (0.333, "at most"))
        self.assertEqual((s["knee_ratio_min"], s["knee_ratio_max"]), (None, 0.5))

    def test_both_lower_bounds_give_no_ratio(self):
        s = self.sweep_of(actor_steps=flat(6), async_steps=flat(6))
        self.assertIsNone(s["knee_ratio"])
        self.assertEqual((s["knee_ratio_min"], s["knee_ratio_max"]), (None, None))
        self.assertIn("both knees are lower bounds", s["knee_ratio_reason"])

    def test_a_missing_knee_gives_no_ratio_and_says_why(self):
        s = self.sweep_of(actor_steps=flat(3, other=40.0), async_steps=flat(3))
        self.assertIsNone(s["knee_ratio"])
        self.assertIn("actor-mem: no valid step", s["knee_ratio_reason"])


if __name__ == "__main__":
    tap_unittest.main(__name__)
