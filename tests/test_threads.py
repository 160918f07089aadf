#!/usr/bin/env python3
"""test_threads.py: unit tests (TAP) of per-thread CPU and of the saturation rules past one
CPU (issue 27): runner/proc.sh's samples turned into server_threads / loadgen_threads
(runner/analysis/threads.py), what a thread runs from its name, the rules of SPEC.md section
8 on fixture result.json files (tests/fixtures/saturation: a) total CPU, b) one thread,
c) plateau, the load generator's busiest thread), result.json built from facts with the
samples and a plateau probe, and the summary.md / report.html lines of threads.py.
Runs no benchmark; writes only to a temporary folder.
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

from analysis import result, rules, summary, threads  # noqa: E402
from analysis.__main__ import main as analysis_main  # noqa: E402
import tap_unittest  # noqa: E402
from test_analysis import Batch  # noqa: E402

FIX = os.path.join(ROOT, "tests", "fixtures", "saturation")
TCK = 100


def fixture(name):
    with open(os.path.join(FIX, name + ".json"), encoding="utf-8") as fh:
        return json.load(fh)


def sample(clock, tasks, procs=1):
    """A proc_tree_sample text: TASKS [(pid, tid, ticks, name)]; the total is their sum."""
    total = sum(t[2] for t in tasks)
    return "\n".join([f"{clock} {total} {procs}"] + [f"{p} {t} {k} {n}" for p, t, k, n in tasks]) + "\n"


class TestFigures(unittest.TestCase):
    def test_per_thread_percent_and_the_sum(self):
        s0 = sample(100.0, [(10, 10, 5, "actor-server"), (10, 11, 100, "io-0"), (10, 12, 100, "io-1")])
        s1 = sample(110.0, [(10, 10, 5, "actor-server"), (10, 11, 1090, "io-0"), (10, 12, 400, "io-1")])
        ts, procs = threads.figures([s0, s1], TCK)
        self.assertEqual([(t["tid"], t["name"], t["cpu_pct"]) for t in ts],
                         [(10, "actor-server", 0.0), (11, "io-0", 99.0), (12, "io-1", 30.0)])
        self.assertEqual(procs, 1)
        # the threads' sum is the tree's CPU when no thread ended in the window
        total = 100.0 * (1495 - 205) / TCK / 10.0
        self.assertAlmostEqual(sum(t["cpu_pct"] for t in ts), total, places=6)

    def test_names_with_spaces_new_and_gone_threads_and_a_process_tree(self):
        s0 = sample(0.0, [(10, 10, 0, "sh"), (10, 13, 50, "gone soon")])
        s1 = sample(2.0, [(10, 10, 0, "sh"), (20, 20, 100, "my (odd) name"), (20, 21, 40, "io-0")], procs=2)
        ts, procs = threads.figures([s0, s1], TCK)
        by = {t["tid"]: t for t in ts}
        self.assertEqual(by[20]["name"], "my (odd) name")
        self.assertEqual(by[20]["cpu_pct"], 50.0)    # born in the window: counted from 0
        self.assertNotIn(13, by)                     # ended in the window: left out
        self.assertEqual((by[21]["pid"], procs), (20, 2))

    def test_bad_or_missing_samples(self):
        good = sample(1.0, [(1, 1, 1, "x")])
        for bad in (None, [], [good], [good, "garbage"], [sample(2.0, []), sample(1.0, [])]):
            self.assertEqual(threads.figures(bad, TCK), (None, None), bad)


class TestRole(unittest.TestCase):
    def test_roles_from_names_and_topology(self):
        cfg = {"actor_workers": 0, "binary": "actor-server"}
        self.assertIn("store actor", threads.role({"name": "io-0"}, cfg, "actor-mem"))
        self.assertIn("hops to loop 0", threads.role({"name": "io-3"}, cfg, "actor-mem"))
        self.assertIn("mutex", threads.role({"name": "io-2"}, {"binary": "async-server"}, "async-mem"))
        w = {"actor_workers": 2, "binary": "actor-server"}
        self.assertEqual(threads.role({"name": "actor-0"}, w, "actor-mem"), "actor worker 0, which runs the store actor")
        self.assertEqual(threads.role({"name": "actor-w1"}, w, "actor-mem"), "actor worker 1")
        self.assertIn("on the workers", threads.role({"name": "io-1"}, w, "actor-mem"))
        self.assertEqual(threads.role({"name": "lg-3"}, {}, None), "load generator thread 3")
        self.assertEqual(threads.role({"name": "async-server", "tid": 7}, {}, "async-mem", 7), "the main thread")
        self.assertIsNone(threads.role({"name": "async-server", "tid": 8}, {}, "async-mem", 7))
        # a server from elsewhere that names its threads io-N or actor-N is not described
        # with our topology, whatever its name says
        foreign = {"binary": "serve", "server_definition": {"name": "actor-like", "ours": False}}
        self.assertIsNone(threads.role({"name": "io-0"}, foreign, "actor-like"))
        self.assertIsNone(threads.role({"name": "actor-0"}, foreign, "actor-like"))
        ours = {"binary": "actor-server", "actor_workers": 0, "server_definition": {"ours": True}}
        self.assertIn("store actor", threads.role({"name": "io-0"}, ours, "mine"))


class TestSaturationRules(unittest.TestCase):
    """Each fixture states its case in _about; these assert the rule's verdict and reason."""

    def judge(self, name):
        run = fixture(name)
        cfg = run["config"]
        by, why = rules.saturation(run["probe"], cfg["server_cpu_count"],
                                   lambda t: threads.role(t, cfg, run["server"], t.get("pid")))
        return run, by, why

    def test_a_total_cpu(self):
        _, by, why = self.judge("cpu")
        self.assertEqual(by, "cpu")
        self.assertIn("372.0% of 4 CPU(s)", why)

    def test_b_one_thread_names_it_and_what_it_runs(self):
        run, by, why = self.judge("thread")
        self.assertEqual(by, "thread")
        self.assertIn("io-0", why)
        self.assertIn("store actor", why)
        self.assertIn("99.0% of a CPU", why)
        self.assertTrue(rules.saturated(run["probe"], 4))
        # the old rule alone would have called it not saturated: 160% of 4 CPUs
        self.assertLess(run["probe"]["server_cpu_pct"], rules.SATURATED_CPU_PCT * 4)

    def test_b_needs_95_percent(self):
        run = fixture("thread")
        run["probe"]["server_threads"][1]["cpu_pct"] = 94.9
        self.assertEqual(rules.saturation(run["probe"], 4)[0], None)
        self.assertIn("busiest thread io-0", rules.saturation(run["probe"], 4)[1])

    def test_c_plateau(self):
        _, by, why = self.judge("plateau")
        self.assertEqual(by, "plateau")
        self.assertIn("512 connections gave +2.0% req/s and +1.0% server CPU", why)

    def test_c_not_when_it_still_rises_or_burns_cpu_or_cannot_judge(self):
        _, by, why = self.judge("rising")
        self.assertIsNone(by)
        self.assertIn("still rising", why)
        _, by, why = self.judge("burning")
        self.assertIsNone(by)
        self.assertIn("+23.8% server CPU", why)
        _, by, why = self.judge("plateau-loadgen")
        self.assertIsNone(by)
        self.assertIn("cannot judge: the load generator limited it", why)
        # a crowded plateau probe loses req/s and CPU alike: no plateau
        run = fixture("plateau")
        run["probe"]["plateau"].update({"rps": 120000, "server_cpu_pct": 120.0, "quiet": False,
                                        "server_cpus_other_pct": 160.0})
        by, why = rules.saturation(run["probe"], 4)
        self.assertIsNone(by)
        self.assertIn("others used the server CPUs (160.0% not the server)", why)

    def test_not_saturated_problem_gives_the_reason(self):
        run = fixture("rising")
        run["probe"]["validity"]["saturated"] = False
        probs = dict(rules.probe_problems(run))
        self.assertIn("still rising", probs["not saturated"])

    def test_loadgen_bound_by_one_thread(self):
        run = fixture("loadgen-thread")
        p = run["probe"]
        sat = rules.saturated(p, 4)
        self.assertFalse(sat)
        # total 110% of 2 CPUs is below 180%, but lg-0 is at 97% of one
        self.assertLess(p["loadgen_cpu_pct"], rules.LOADGEN_CPU_PCT * 2)
        self.assertTrue(rules.loadgen_bound(p, 2, closed_loop=True, server_saturated=sat))
        self.assertTrue(rules.loadgen_bound(dict(p, send_lag_p99_ms=0.1), 2, closed_loop=False))
        p["validity"]["loadgen_bound"] = True
        why = dict(rules.probe_problems(run))["loadgen-bound"]
        self.assertIn("its thread lg-0 at 97.0% of a CPU", why)
        # below 90% the thread rule does not fire
        p["loadgen_threads"][1]["cpu_pct"] = 89.0
        self.assertFalse(rules.loadgen_bound(p, 2, closed_loop=True, server_saturated=False))

    def test_one_cpu_results_do_not_change(self):
        # one server CPU: the thread rule cannot fire below the total rule (a thread is at
        # most the total), so a 1-CPU probe is judged as before; it calls for the plateau probe
        run = fixture("one-cpu")
        self.assertEqual(rules.saturation(run["probe"], 1)[0], None)
        self.assertTrue(rules.plateau_needed(run["probe"], 1))
        run["probe"]["server_cpu_pct"] = 91.0
        self.assertEqual(rules.saturation(run["probe"], 1)[0], "cpu")
        self.assertFalse(rules.plateau_needed(run["probe"], 1))

    def test_plateau_needed(self):
        p = fixture("one-cpu")["probe"]
        self.assertFalse(rules.plateau_needed(dict(p, validity={"loadgen_bound": True, "clean": True}), 1))
        self.assertFalse(rules.plateau_needed(dict(p, validity={"loadgen_bound": False, "clean": False}), 1))
        self.assertFalse(rules.plateau_needed(dict(p, plateau={"rps": 1}), 1))
        self.assertFalse(rules.plateau_needed(dict(p, validity={"loadgen_bound": False, "clean": True,
                                                                "quiet": False}), 1))
        self.assertFalse(rules.plateau_needed(dict(p, rps=0), 1))
        self.assertFalse(rules.plateau_needed(fixture("thread")["probe"], 4))
        self.assertFalse(rules.plateau_needed(None, 1))


class TestResultFromFacts(unittest.TestCase):
    """result.json from facts.json with the runner's samples (tasks) and a plateau probe."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="test_threads.")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def write_run(self, plateau_rps, plateau_cpu_ticks, io0_ticks=600, lg_thread_ticks=500):
        b = Batch(self.tmp, "B")
        doc = b.run("async-mem", "s1", "probe", 2, probe={"rps": 100000, "server_cpu": 210.0, "lg_cpu": 150.0})
        d = os.path.join(b.dir, doc["run"])
        with open(os.path.join(d, "facts.json"), encoding="utf-8") as fh:
            facts = json.load(fh)
        facts["config"].update({"server_cpu_count": 4, "server_threads": 4, "loadgen_cpu_count": 5,
                                "binary": "async-server"})
        srv0 = sample(100.0, [(50, 50, 0, "async-server")] + [(50, 51 + i, 0, f"io-{i}") for i in range(4)])
        srv1 = sample(110.0, [(50, 50, 0, "async-server"), (50, 51, io0_ticks, "io-0")]
                      + [(50, 52 + i, 500, f"io-{i + 1}") for i in range(3)])
        lg0 = sample(100.2, [(60, 60, 0, "loadgen")] + [(60, 61 + i, 0, f"lg-{i}") for i in range(3)])
        lg1 = sample(109.8, [(60, 60, 1, "loadgen")] + [(60, 61 + i, lg_thread_ticks, f"lg-{i}") for i in range(3)])
        ph = facts["phases"]["probe"]
        # /proc/stat of the 4 server CPUs over 10 s: busy exactly the server's own ticks (quiet)
        ph.update({"tasks": {"server": [srv0, srv1], "loadgen": [lg0, lg1]}, "connections": 256,
                   "cpu": [[100.0, 0], [110.0, io0_ticks + 1500]],
                   "cpustat": [[0, 0, 0], [io0_ticks + 1500, 4 * 10 * TCK, 0]]})
        if plateau_rps is not None:
            with open(os.path.join(d, "plateau.json"), "w", encoding="utf-8") as fh:
                lg = json.load(open(os.path.join(d, ph["loadgen_json"]), encoding="utf-8"))
                lg.update({"achieved_rps": plateau_rps, "requests_completed": plateau_rps * 10})
                json.dump(lg, fh)
            facts["phases"]["plateau"] = dict(ph, loadgen_json="plateau.json", connections=512,
                                              cpu=[[200.0, 0], [210.0, plateau_cpu_ticks]],
                                              cpustat=[[0, 0, 0], [plateau_cpu_ticks, 4 * 10 * TCK, 0]],
                                              tasks={"server": [srv0.replace("100.0", "200.0", 1),
                                                                srv1.replace("110.0", "210.0", 1)],
                                                     "loadgen": [lg0, lg1]})
        with open(os.path.join(d, "facts.json"), "w", encoding="utf-8") as fh:
            json.dump(facts, fh)
        return d, result.write(d)

    def test_threads_and_plateau_in_result_json(self):
        d, r = self.write_run(101000, 2110)
        p = r["probe"]
        names = [t["name"] for t in p["server_threads"]]
        self.assertEqual(names, ["async-server", "io-0", "io-1", "io-2", "io-3"])
        self.assertAlmostEqual(sum(t["cpu_pct"] for t in p["server_threads"]), p["server_cpu_pct"], delta=1.0)
        self.assertEqual([t["cpu_pct"] for t in p["loadgen_threads"]][1:], [52.1, 52.1, 52.1])
        self.assertEqual(p["server_processes"], 1)
        self.assertEqual(p["plateau"]["connections"], 512)
        self.assertEqual((p["plateau"]["gain"], p["plateau"]["cpu_gain"]), (0.01, 0.0048))
        self.assertEqual((p["saturated_by"], r["saturated_by"]), ("plateau", "plateau"))
        self.assertTrue(r["validity"]["saturated"])
        self.assertNotIn("not saturated", r["flags"])
        for k in ("server_threads", "loadgen_threads", "server_processes", "saturated_by"):
            self.assertIn(k, r)
        # the progress line of the plateau probe, and `analysis threads`
        import io
        from contextlib import redirect_stdout
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(analysis_main(["analysis", "line", d, "plateau"]), 0)
            self.assertEqual(analysis_main(["analysis", "threads", d]), 0)
        text = out.getvalue()
        self.assertIn("101,000 req/s with 512 connections (1.0% against the probe)", text)
        self.assertIn("saturated by plateau", text)
        self.assertIn("probe server 51 io-0 60.0% event loop 0", text)

    def test_a_thread_saturates_before_any_plateau(self):
        _, r = self.write_run(None, None, io0_ticks=990)
        self.assertEqual(r["probe"]["saturated_by"], "thread")
        self.assertIn("io-0", r["probe"]["saturation_reason"])
        self.assertIsNone(r["probe"]["plateau"])

    def test_rising_plateau_leaves_it_not_saturated(self):
        _, r = self.write_run(130000, 2600)
        self.assertIsNone(r["probe"]["saturated_by"])
        self.assertIn("not saturated", r["flags"])
        reason = next(p["reason"] for p in r["problems"] if p["flag"] == "not saturated")
        self.assertIn("still rising", reason)


class TestSummaryLines(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="test_threads.")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_markdown_and_html_from_index(self):
        b = Batch(self.tmp, "S")
        b.scenario("s1", [1000, 1100], [2000, 2100])
        plan = {"smt_policy": "one", "source": "override", "server_cpus": "0-3", "loadgen_cpus": "4-7",
                "idle_cpus": "", "reasons": [], "warnings": ["SMT siblings on both sides: 0 (server) and 4 (load generator)"]}
        for name in os.listdir(b.dir):
            rp = os.path.join(b.dir, name, "result.json")
            if not os.path.exists(rp):
                continue
            with open(rp, encoding="utf-8") as fh:
                r = json.load(fh)
            r["config"]["cpu_plan"] = plan
            r["config"].update({"oversubscribed": True, "server_threads": 4, "server_cpu_count": 1})
            if r.get("probe"):
                r["probe"]["server_threads"] = [{"tid": 1, "pid": 1, "name": "async-server", "cpu_pct": 0.5},
                                                {"tid": 2, "pid": 1, "name": "io-0", "cpu_pct": 97.5},
                                                {"tid": 3, "pid": 1, "name": "io-1", "cpu_pct": 2.0}]
                r["probe"]["saturated_by"] = "thread"
            with open(rp, "w", encoding="utf-8") as fh:
                json.dump(r, fh)
        index = summary.build_index(b.dir)
        md = "\n".join(threads.markdown_lines(index))
        self.assertIn("CPU plan (override, SMT policy one): server CPUs 0-3, loadgen CPUs 4-7, idle CPUs none", md)
        self.assertIn("**Warning (CPU plan): SMT siblings on both sides", md)
        self.assertIn("**Oversubscribed:**", md)
        self.assertIn("## Busiest threads", md)
        self.assertIn("| async-mem-s1 | probe | 3 | io-0 at 97.5% (event loop 0", md)
        self.assertIn("| thread |", md)
        page = threads.report_html(index, None)
        self.assertIn('<h2 id="threads">', page)
        self.assertIn("io-0 at 97.5%", page)
        self.assertNotIn("**", page)

    def test_nothing_without_figures(self):
        b = Batch(self.tmp, "E")
        b.scenario("s1", [1000], [2000])
        index = summary.build_index(b.dir)
        self.assertEqual(threads.markdown_lines(index), [])
        self.assertEqual(threads.report_html(index), "")


if __name__ == "__main__":
    tap_unittest.main(__name__)
