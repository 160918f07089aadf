#!/usr/bin/env python3
"""test_verdict.py: unit tests of the comparison decision and the overall verdict (SPEC.md
section 9) on fixture batches built from raw facts the way runner.sh records them
(test_analysis.Batch): the interval of the ratio and PASS / FAIL / INCONCLUSIVE by where it
lies, too few valid pairs, the equal-load fallback, grouped reasons, the one-line headline,
failed runs, any pair and a league table, and the names summary.md gives each figure.
Runs no benchmark; writes only to a temporary folder.
"""
import io
import json
import os
import shutil
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "runner"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from analysis import stats, summary, verdict  # noqa: E402
from analysis.__main__ import main as analysis_main  # noqa: E402
from analysis.fmt import LOADGEN_MARK  # noqa: E402
import tap_unittest  # noqa: E402
from test_analysis import Batch, scen  # noqa: E402

SLOW = {i: {"server_cpu": 70.0, "lg_cpu": 97.0} for i in range(8)}  # loadgen-bound probes


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def batch(self, name="b", **kw):
        return Batch(self.tmp, name, **kw)

    def md(self, b):
        with open(os.path.join(b.dir, "summary.md"), encoding="utf-8") as fh:
            return fh.read()


class TestInterval(Base):
    def test_t_quantiles_match_the_tables(self):
        for df, want in ((1, 12.706), (2, 4.303), (5, 2.571), (30, 2.042)):
            self.assertAlmostEqual(stats.t_quantile(0.975, df), want, places=3)

    def test_whole_interval_above_the_target_passes(self):
        b = self.batch()
        b.scenario("s1", [60000, 62000, 61000], [100000] * 3, eq=(1e5, 1e5))
        b.scenario("s2", [90000, 99000, 95000], [100000] * 3, eq=(1e5, 1e5))
        idx = b.summarize()
        s1 = scen(idx, "s1")
        # known values, not the formula again: the geometric mean of 0.6, 0.62, 0.61 and the 95%
        # t interval of the logs (2 degrees of freedom), as R gives them:
        # exp(mean(log(x))) = 0.60995, exp(t.test(log(x))$conf.int) = 0.58560, 0.63530
        self.assertEqual(s1["basis"], "saturation_rps")
        self.assertEqual(s1["pair_ratios"], [0.6, 0.62, 0.61])
        self.assertEqual((s1["ratio"], s1["ci_low"], s1["ci_high"]), (0.61, 0.586, 0.635))
        self.assertEqual((s1["ci_level"], s1["pairs_used"]), (0.95, 3))
        self.assertEqual(s1["verdict"], "PASS")
        self.assertEqual(idx["verdict"]["overall"], "PASS")

    def test_whole_interval_below_the_target_fails(self):
        b = self.batch()
        b.scenario("s1", [40000, 41000, 42000], [100000] * 3, eq=(1e5, 1e5))
        b.scenario("s2", [90000] * 3, [100000] * 3, eq=(1e5, 1e5))
        idx = b.summarize()
        self.assertEqual(scen(idx, "s1")["verdict"], "FAIL")
        self.assertLess(scen(idx, "s1")["ci_high"], 0.5)
        self.assertEqual(idx["verdict"]["overall"], "FAIL")

    def test_an_interval_that_crosses_the_target_is_inconclusive(self):
        b = self.batch()
        b.scenario("s1", [46000, 60000, 71000], [100000] * 3, eq=(1e5, 1e5))
        b.scenario("s2", [90000] * 3, [100000] * 3, eq=(1e5, 1e5))
        idx = b.summarize()
        s1 = scen(idx, "s1")
        self.assertEqual(s1["verdict"], "INCONCLUSIVE")
        self.assertLess(s1["ci_low"], 0.5)
        self.assertGreater(s1["ci_high"], 0.5)
        self.assertRegex(s1["reasons"][0], r"^the interval \(0\.\d\d-\d\.\d\d\) crosses the target 0\.5$")
        self.assertIn("run more pairs", s1["remedies"][0])
        self.assertEqual(idx["verdict"]["overall"], "INCONCLUSIVE")
        self.assertIn("crosses 0.5", idx["verdict"]["headline"])

    def test_a_bound_next_to_the_target_is_never_printed_as_the_target(self):
        # pairs 0.523, 0.55, 0.5605: the interval's lower bound is 0.498, which 2 decimals
        # would print as 0.50, the target itself, beside "crosses 0.5"
        b = self.batch()
        b.scenario("s1", [52300, 55000, 56050], [100000] * 3, eq=(1e5, 1e5))
        b.scenario("s2", [90000] * 3, [100000] * 3, eq=(1e5, 1e5))
        idx = b.summarize()
        s1 = scen(idx, "s1")
        self.assertEqual(s1["verdict"], "INCONCLUSIVE")
        self.assertRegex(s1["reasons"][0], r"^the interval \(0\.498-0\.59\) crosses the target 0\.5$")
        self.assertIn("(95% CI 0.498-0.59) on s1 crosses 0.5", idx["verdict"]["headline"])

    def test_the_target_itself_passes_and_just_below_fails(self):
        b = self.batch()
        b.scenario("s1", [50000, 50000], [100000, 100000], eq=(1e5, 1e5))
        b.scenario("s2", [49990, 49990], [100000, 100000], eq=(1e5, 1e5))
        idx = b.summarize()
        self.assertEqual(scen(idx, "s1")["verdict"], "PASS")
        self.assertEqual(scen(idx, "s2")["verdict"], "FAIL")

    def test_one_valid_pair_gives_no_interval(self):
        b = self.batch()
        b.scenario("s1", [60000, 60000, 60000], [100000] * 3, eq=(1e5, 1e5),
                   actor_probe={1: {"other": 54.0}, 2: {"other": 60.0}})
        b.scenario("s2", [90000] * 3, [100000] * 3, eq=(1e5, 1e5))
        s1 = scen(b.summarize(), "s1")
        self.assertEqual(s1["verdict"], "INCONCLUSIVE")
        self.assertIsNone(s1["ratio"])
        self.assertEqual(s1["reasons"][0], "1 of 3 probe pairs valid (an interval needs 2)")
        self.assertIn("2 of 6 probes other load (others 54-60% of the server CPUs)", s1["reasons"])


class TestPairsAndReasons(Base):
    def test_an_invalid_pair_is_left_out_and_named_by_round(self):
        b = self.batch()
        b.scenario("s1", [60000, 10000, 70000, 65000], [100000] * 4, eq=(1e5, 1e5),
                   actor_probe={1: {"other": 54.0}})
        b.scenario("s2", [90000] * 3, [100000] * 3, eq=(1e5, 1e5))
        s1 = scen(b.summarize(), "s1")
        self.assertEqual(s1["basis"], "saturation_rps")
        self.assertEqual((s1["pairs_used"], s1["pairs_total"]), (3, 4))
        self.assertEqual(s1["pair_ratios"], [0.6, 0.7, 0.65])
        self.assertEqual(s1["pair_rounds"], [1, 3, 4])
        self.assertEqual(s1["excluded_pairs"][0]["round"], 2)
        self.assertIn("1 of 8 probes other load", s1["basis_reason"])

    def test_loadgen_bound_probes_fall_back_to_equal_load_pairs(self):
        b = self.batch()
        for sc in ("s1", "s2"):
            b.scenario(sc, [60000] * 3, [90000] * 3, eq=[(95000, 100000), (96000, 100000)],
                       actor_probe=SLOW, async_probe=SLOW)
        idx = b.summarize()
        s1 = scen(idx, "s1")
        self.assertEqual(s1["basis"], "req_per_cpu_sec")
        self.assertEqual(s1["basis_source"], "equal-load pairs")
        self.assertEqual(s1["pair_ratios"], [0.95, 0.96])
        self.assertIsNotNone(s1["ci_low"])
        self.assertIn("6 of 6 probes loadgen-bound (loadgen 97% CPU, server 70%)", s1["basis_reason"])
        self.assertEqual(idx["verdict"]["overall"], "PASS")
        self.assertIn("(req/CPU-s at equal load)", idx["verdict"]["headline"])

    def test_reasons_are_grouped_and_counted_never_repeated(self):
        b = self.batch()
        for sc in ("s1", "s2"):
            b.scenario(sc, [60000] * 3, [90000] * 3, eq=(95000, 100000), actor_probe=SLOW, async_probe=SLOW)
        idx = b.summarize()
        s1 = scen(idx, "s1")
        self.assertEqual(s1["verdict"], "INCONCLUSIVE")
        text = "; ".join(s1["reasons"])
        self.assertEqual(text.count("loadgen-bound"), 1, text)
        self.assertIn("6 of 6 probes loadgen-bound (loadgen 97% CPU, server 70%)", s1["reasons"])
        self.assertEqual(s1["remedies"].count(s1["remedies"][0]), 1)
        self.assertTrue(any("LOADGEN_CPUS" in r for r in s1["remedies"]))
        md = self.md(b)
        self.assertLess(len(idx["verdict"]["headline"]), 201)
        # once in each scenario's row and once for each in the full verdict's line (s1, s2)
        self.assertEqual(md.count("loadgen 97% CPU, server 70%"), 4)

    def _equal_problem(self, eq_override, want_reason, want_remedy):
        b = self.batch()
        for sc in ("s1", "s2"):
            b.scenario(sc, [60000] * 3, [90000] * 3, eq=(95000, 100000), eq_rounds=2, actor_probe=SLOW,
                       async_probe=SLOW, eq_actor=eq_override)
        idx = b.summarize()
        s1 = scen(idx, "s1")
        self.assertEqual(s1["verdict"], "INCONCLUSIVE")
        self.assertIsNone(s1["ratio"])
        self.assertIn("0 of 2 equal-load pairs valid", s1["reasons"])
        self.assertTrue(any(r.startswith(want_reason) for r in s1["reasons"]), s1["reasons"])
        self.assertTrue(any(want_remedy in r for r in s1["remedies"]), s1["remedies"])
        self.assertEqual(idx["verdict"]["overall"], "INCONCLUSIVE")

    def test_other_load_on_equal_load_runs(self):
        self._equal_problem({"other": 54.0}, "2 of 4 equal-load runs other load (others 54% of", "quiet host")

    def test_rate_not_held_on_equal_load_runs(self):
        self._equal_problem({"rps": 20000}, "2 of 4 equal-load runs rate not held (achieved 48% of", "SAT_RATIO")

    def test_loadgen_bound_equal_load_runs(self):
        self._equal_problem({"lg_cpu": 97.6}, "2 of 4 equal-load runs loadgen-bound (loadgen 98% CPU",
                            "LOADGEN_HOSTS")

    def test_errors_in_equal_load_runs(self):
        self._equal_problem({"errors": 5}, "2 of 4 equal-load runs errors (10 errors)", "errors by class")


class TestOverall(Base):
    def test_failed_probe_is_error_and_overall_incomplete(self):
        b = self.batch()
        b.scenario("s1", [60000] * 3, [90000] * 3, eq=(1e5, 1e5))
        b.scenario("s2", [60000] * 3, [90000] * 3, eq=(1e5, 1e5))
        shutil.rmtree(os.path.join(b.dir, "actor-mem-s2-probe3"))
        b.run("actor-mem", "s2", "probe", 3, failure="server exited")
        idx = b.summarize()
        self.assertEqual(scen(idx, "s2")["verdict"], "ERROR")
        self.assertIn("actor-mem-s2-probe3: server exited", scen(idx, "s2")["errors"])
        self.assertEqual(idx["verdict"]["overall"], "INCOMPLETE")

    def test_fail_beats_inconclusive(self):
        b = self.batch()
        b.scenario("s1", [40000, 41000, 40500], [100000] * 3, eq=(1e5, 1e5))
        b.scenario("s2", [60000] * 3, [90000] * 3, eq=(1e5, 1e5), actor_probe=SLOW, eq_actor={"other": 50.0})
        idx = b.summarize()
        self.assertEqual(scen(idx, "s2")["verdict"], "INCONCLUSIVE")
        self.assertEqual(idx["verdict"]["overall"], "FAIL")

    def test_informational_scenarios_do_not_decide(self):
        b = self.batch()
        b.scenario("s1", [90000, 91000, 92000], [100000] * 3, eq=(1e5, 1e5))
        b.scenario("s2", [90000, 91000, 92000], [100000] * 3, eq=(1e5, 1e5))
        b.scenario("s4", [10000, 11000, 10500], [100000] * 3, eq=(1e5, 1e5))
        idx = b.summarize()
        self.assertEqual(scen(idx, "s4")["verdict"], "FAIL")
        self.assertFalse(scen(idx, "s4")["decides"])
        self.assertEqual(idx["verdict"]["overall"], "PASS")
        self.assertEqual([d["scenario"] for d in idx["verdict"]["decided_by"]], ["s1", "s2"])

    def test_the_headline_is_one_line_of_at_most_200_characters(self):
        b = self.batch()
        b.scenario("s1", [98000, 99000, 97000], [100000] * 3, eq=(1e5, 1e5))
        b.scenario("s2", [101000, 100000, 102000], [100000] * 3, eq=(1e5, 1e5))
        h = b.summarize()["verdict"]["headline"]
        self.assertRegex(h, r"^PASS: actor-mem/async-mem 0\.98 \(95% CI 0\.9\d-\d\.\d\d\) on s1, 1\.01 \(95% CI "
                            r"\d\.\d\d-\d\.\d\d\) on s2; target 0\.5$")
        self.assertNotIn("\n", h)
        self.assertIn(f"**{h}**", self.md(b))

    def test_smoke_batches_say_they_are_not_results(self):
        b = self.batch(mode="smoke", repeats=2)
        b.scenario("s1", [90000, 91000], [100000] * 2, eq=(1e5, 1e5))
        b.scenario("s2", [90000, 91000], [100000] * 2, eq=(1e5, 1e5))
        idx = b.summarize()
        self.assertTrue(idx["smoke"])
        self.assertTrue(idx["verdict"]["headline"].startswith("smoke run, not a result: PASS: "))
        self.assertLessEqual(len(idx["verdict"]["headline"]), 200)
        self.assertIn("Smoke run: checks the pipeline, too short to mean anything", self.md(b))

    def test_group_commit_is_named_as_the_actor_servers_only(self):
        for gc, words in ((1, "POST commits: each alone (group commit off)"),
                          (16, "POST commits: up to 16 per transaction in actor-server (group commit), each alone "
                               "in async-server")):
            b = self.batch(name=f"gc{gc}", group_commit=gc)
            b.scenario("s1", [90000] * 3, [100000] * 3, eq=(1e5, 1e5))
            b.scenario("s2", [90000] * 3, [100000] * 3, eq=(1e5, 1e5))
            idx = b.summarize()
            self.assertEqual(idx["config"]["group_commit"], gc)
            self.assertIn(words, self.md(b))


class TestSaturatedBy(Base):
    def test_a_serial_bottleneck_is_named_in_the_comparison(self):
        b = self.batch()
        b.scenario("s1", [60000, 62000, 61000], [100000] * 3, eq=(1e5, 1e5))
        b.scenario("s2", [90000] * 3, [100000] * 3, eq=(1e5, 1e5))
        path = os.path.join(b.dir, "actor-mem-s1-probe2", "result.json")
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
        doc["probe"]["saturated_by"] = "thread"
        doc["probe"]["saturation_reason"] = "io-0 at 99.0% of a CPU (I/O loop 0, which also runs the store actor)"
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(doc, fh)
        idx = b.summarize()
        sb = scen(idx, "s1")["saturated_by"]
        self.assertEqual((sb["cpu"], sb["thread"], sb["plateau"]), (5, 1, 0))
        self.assertIn("1 probe saturated by thread (io-0 at 99.0% of a CPU", self.md(b))


class TestNames(Base):
    def test_one_name_per_figure_in_summary(self):
        b = self.batch()
        b.scenario("s1", [60000, 10000, 70000, 65000], [100000] * 4, eq=(1e5, 1e5), actor_probe={1: {"other": 54.0}})
        b.scenario("s2", [90000] * 3, [100000] * 3, eq=(1e5, 1e5))
        idx = b.summarize()
        md = self.md(b)
        s1 = scen(idx, "s1")
        self.assertEqual(s1["all_pairs_median_ratio"], 0.625)  # 0.6, 0.1, 0.7, 0.65: every pair
        self.assertNotEqual(s1["all_pairs_median_ratio"], s1["ratio"])
        self.assertIn("ratio of valid pairs (verdict's)", md)
        self.assertIn("median ratio of all pairs, valid or not", md)
        self.assertNotIn("(median of pairs)", md)
        self.assertIn("## Each server at SAT_RATIO (0.7) x its own saturation", md)
        self.assertIn("for actor-server it includes every mailbox hop", md)

    def test_equal_load_p99_ratio_is_in_the_table(self):
        b = self.batch()
        b.scenario("s1", [90000] * 3, [100000] * 3, eq=(1e5, 1e5), eq_actor={"p99": 2.0}, eq_async={"p99": 1.0})
        b.scenario("s2", [90000] * 3, [100000] * 3, eq=(1e5, 1e5))
        idx = b.summarize()
        self.assertEqual(scen(idx, "s1")["equal_load"]["p99_ratio"], 2.0)
        row = next(line for line in self.md(b).splitlines() if line.startswith("| s1 | actor-mem / async-mem | 2.000 |"))
        self.assertIn("| 1.000 |", row)

    def test_nan_or_missing_saturation_figure_is_no_figure_never_a_verdict(self):
        b = self.batch()
        b.scenario("s1", [60000] * 3, [100000] * 3, eq=(95000, 100000))
        b.scenario("s2", [90000] * 3, [100000] * 3, eq=(1e5, 1e5))
        for name, value in (("actor-mem-s1", float("nan")), ("actor-mem-s1-probe2", float("inf")),
                            ("actor-mem-s1-probe3", None)):
            path = os.path.join(b.dir, name, "result.json")
            with open(path, encoding="utf-8") as fh:
                doc = json.load(fh)
            doc["saturation_rps"] = value
            doc["probe"]["rps"] = value
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(doc, fh)
        b.summarize()

        def no_constant(name):
            raise ValueError("index.json holds " + name)
        with open(os.path.join(b.dir, "index.json"), encoding="utf-8") as fh:
            idx = json.load(fh, parse_constant=no_constant)
        s1 = scen(idx, "s1")
        self.assertEqual(s1["pairs_used"], 0)
        self.assertEqual(s1["verdict"], "INCONCLUSIVE")
        self.assertEqual({r["server"] for e in s1["excluded_pairs"] for r in e["reasons"]}, {"actor-mem"})
        self.assertNotRegex(self.md(b), r"\bNone\b|\bnan\b|\binf\b")

    def test_loadgen_limited_latency_is_marked(self):
        b = self.batch()
        b.scenario("s1", [90000] * 3, [100000] * 3, eq=(1e5, 1e5), eq_actor={"lg_cpu": 97.0})
        b.scenario("s2", [90000] * 3, [100000] * 3, eq=(1e5, 1e5))
        idx = b.summarize()
        self.assertTrue(scen(idx, "s1")["equal_load"]["candidate"]["latency_by_loadgen"])
        self.assertFalse(scen(idx, "s1")["equal_load"]["baseline"]["latency_by_loadgen"])
        eq = self.md(b).split("## Equal load")[1].splitlines()
        row_a = next(line for line in eq if line.startswith("| s1 | actor-mem |"))
        row_b = next(line for line in eq if line.startswith("| s1 | async-mem |"))
        self.assertTrue(row_a.split("|")[4].strip().endswith(LOADGEN_MARK), row_a)
        self.assertFalse(row_b.split("|")[4].strip().endswith(LOADGEN_MARK), row_b)


class TestAnyPair(Base):
    def groups(self, b, groups, selection="pairs", baseline=None):
        b.matrix.update({"groups": groups, "selection": selection, "baseline": baseline})

    def test_a_pair_of_two_other_servers(self):
        b = self.batch()
        b.scenario("s1", [50000, 51000, 52000], [100000] * 3, servers=("urus-mem", "fast-mem"), eq=(1e5, 1e5))
        self.groups(b, [{"scenario": "s1", "servers": ["urus-mem", "fast-mem"],
                         "comparisons": [{"candidate": "urus-mem", "baseline": "fast-mem", "decides": True}]}])
        idx = b.summarize()
        c = idx["comparisons"][0]
        self.assertEqual((c["candidate"], c["baseline"], c["verdict"]), ("urus-mem", "fast-mem", "INCONCLUSIVE"))
        self.assertTrue(idx["verdict"]["headline"].startswith("INCONCLUSIVE: urus-mem/fast-mem 0.51"))
        self.assertIsNone(idx["league"])

    def test_a_league_table_against_one_baseline(self):
        b = self.batch()
        b.scenario("s1", [90000, 91000, 92000], [100000] * 3, servers=("a-srv", "base-srv"), eq=(9e4, 1e5))
        for i, rps in enumerate((30000, 31000, 32000)):
            b.run("c-srv", "s1", "saturation" if i == 0 else "probe", i + 1, probe={"rps": rps},
                  sustain={"rps": 21000, "target": 21000, "server_cpu": 70.0, "lag_p99": 0.05} if i == 0 else None)
        b.run("c-srv", "s1", "equal-load", 1, sustain={"rps": 63000, "target": 63000, "server_cpu": 90.0,
                                                      "lag_p99": 0.05})
        self.groups(b, [{"scenario": "s1", "servers": ["a-srv", "base-srv", "c-srv"],
                         "comparisons": [{"candidate": "a-srv", "baseline": "base-srv", "decides": True},
                                         {"candidate": "c-srv", "baseline": "base-srv", "decides": True}]}],
                    "league", "base-srv")
        idx = b.summarize()
        lg = idx["league"][0]
        self.assertEqual((lg["scenario"], lg["baseline"]), ("s1", "base-srv"))
        rows = {r["server"]: r for r in lg["rows"]}
        self.assertEqual(list(rows), ["base-srv", "a-srv", "c-srv"])
        self.assertEqual(rows["base-srv"]["ratio"], 1.0)
        self.assertEqual(rows["a-srv"]["verdict"], "PASS")
        self.assertEqual(rows["c-srv"]["verdict"], "FAIL")
        self.assertEqual(rows["c-srv"]["saturation_rps"], 31000)
        self.assertEqual(idx["verdict"]["overall"], "FAIL")
        self.assertIn("## League: s1, against base-srv", self.md(b))

    def test_rounds_status_says_which_rounds_to_run_again(self):
        b = self.batch()
        b.scenario("s1", [60000, 60000, 60000], [100000] * 3, eq=(1e5, 1e5), actor_probe={1: {"other": 54.0}})
        b.summarize()
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(analysis_main(["analysis", "rounds-status", b.dir, "s1"]), 0)
        doc = json.loads(out.getvalue())
        c = doc["comparisons"][0]
        self.assertEqual((c["candidate"], c["baseline"], c["valid_pairs"]), ("actor-mem", "async-mem", 2))
        self.assertEqual([(r["round"], r["valid"]) for r in c["rounds"]], [(1, True), (2, False), (3, True)])
        self.assertEqual(c["rounds"][1]["why"], "actor-mem other load")
        self.assertEqual(doc["equal"][0]["valid_pairs"], 1)


class TestEqualRate(Base):
    def test_refuses_a_probe_without_a_figure(self):
        from analysis import __main__ as cli
        b = self.batch()
        b.scenario("s1", [60000] * 2, [100000] * 2)
        self.assertEqual(cli._equal_rate(b.dir, "s1", 0.7), 42000)
        path = os.path.join(b.dir, "actor-mem-s1-probe2", "result.json")
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
        doc["saturation_rps"] = None
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(doc, fh)
        with self.assertRaisesRegex(ValueError, "actor-mem probe of s1 has no saturation figure"):
            cli._equal_rate(b.dir, "s1", 0.7)

    def test_uses_the_slowest_median(self):
        from analysis.__main__ import _equal_rate
        b = self.batch()
        b.scenario("s1", [60000, 50000, 70000], [100000, 90000, 95000])
        b.summarize()
        self.assertEqual(_equal_rate(b.dir, "s1", 0.7), 42000)

    def test_rounds_half_up(self):
        # 10,015 x 0.7 = 7,010.5: half up, as the runner's jq and the reader do (Python's
        # round() gives the even 7,010); 10,005 x 0.7 = 7,003.5 -> 7,004 either way.
        from analysis.__main__ import _equal_rate
        for sat, want in ((10015, 7011), (10005, 7004)):
            b = self.batch("b%d" % sat)
            b.scenario("s1", [sat, sat, sat], [20000, 20000, 20000])
            b.summarize()
            self.assertEqual(_equal_rate(b.dir, "s1", 0.7), want)


if __name__ == "__main__":
    tap_unittest.main(__name__)
