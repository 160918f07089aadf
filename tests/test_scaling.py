#!/usr/bin/env python3
"""test_scaling.py: unit tests of runner/analysis/scaling.py (TAP): which server CPU counts a
host can give with the load generator's CPUs disjoint (and the skip messages for the rest),
CPU list parsing, the topology sentence of each server, and the scaling table in index.json
and summary.md built from a batch written the way runner.sh records runs
(tests/test_analysis.py's Batch), with the scaling runs kept out of the verdict.
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

from analysis import cpuplan, result, scaling  # noqa: E402
from analysis.__main__ import main as analysis_main  # noqa: E402
import tap_unittest  # noqa: E402
from test_analysis import Batch  # noqa: E402


VM2 = os.path.join(ROOT, "tests", "fixtures", "topology", "vm2", "cpu")


class TestPlan(unittest.TestCase):
    """scaling.plan is the CPU planner's (test_cpuplan.py tests its placement on topologies);
    here: its tuples, the skips and the command line."""

    def setUp(self):
        self.nowhere = tempfile.mkdtemp(prefix="test_scaling.topo.")  # no topology: every CPU a core

    def tearDown(self):
        shutil.rmtree(self.nowhere)

    def test_two_cpus_run_one_and_skip_the_rest_saying_why(self):
        p = scaling.plan([1, 2, 4, 8], cpuplan.parse_list("0,1"), VM2)
        self.assertEqual(p[0], ("run", 1, "0", "1"))
        self.assertEqual([x[:2] for x in p[1:]], [("skip", 2), ("skip", 4), ("skip", 8)])
        self.assertIn("need 5 cores", p[2][2])
        self.assertIn("the mask gives 2 cores (0-1)", p[2][2])

    def test_sixteen_cpus_give_the_loadgen_its_share_disjoint(self):
        cpus = cpuplan.parse_list("0-15")
        plans = scaling.plan([8, 1, 4, 2, 2], cpus, self.nowhere)
        self.assertEqual([x[1] for x in plans], [1, 2, 4, 8])
        for what, n, srv, lg in plans:
            self.assertEqual(what, "run")
            s, g = set(cpuplan.parse_list(srv)), set(cpuplan.parse_list(lg))
            self.assertEqual(len(s), n)
            self.assertFalse(s & g)
            # 1.6 cores per server core, rounded up, as far as the mask allows
            self.assertEqual(len(g), min(-(-8 * n // 5), 16 - n), (n, srv, lg))
            self.assertTrue((s | g) <= set(cpus))

    def test_counts_sorted_and_unique(self):
        self.assertEqual([x[1] for x in scaling.plan([4, 1, 4], range(10), self.nowhere)], [1, 4])

    def test_exactly_n_plus_one_cpus_is_enough(self):
        self.assertEqual(scaling.plan([4], [0, 2, 4, 6, 8], self.nowhere)[0], ("run", 4, "0,2,4,6", "8"))
        self.assertEqual(scaling.plan([4], [0, 1, 2, 3], self.nowhere)[0][0], "skip")

    def test_one_cpu_gives_nothing(self):
        self.assertTrue(all(x[0] == "skip" for x in scaling.plan([1, 2], [0], self.nowhere)))

    def test_bad_input(self):
        for bad in ("", "0", "1,,2", "x", "-1", "1.5", "2000"):
            with self.assertRaises(ValueError):
                scaling.parse_counts(bad)
        # (CPU lists: cpuplan.parse_list, tests/test_cpuplan.py)

    def test_cli_prints_one_line_per_count_and_fails_on_bad_input(self):
        import io
        from contextlib import redirect_stderr, redirect_stdout
        from unittest import mock
        out = io.StringIO()
        with mock.patch.dict(os.environ, {"CPU_TOPOLOGY_ROOT": VM2, "SMT": ""}), redirect_stdout(out):
            self.assertEqual(analysis_main(["analysis", "scaling-plan", "1,2", "0-1"]), 0)
        lines = out.getvalue().splitlines()
        self.assertEqual(lines[0], "run 1 0 1")
        self.assertTrue(lines[1].startswith("skip 2 "))
        with redirect_stderr(io.StringIO()):
            self.assertEqual(analysis_main(["analysis", "scaling-plan", "1,x", "0-1"]), 1)
        with mock.patch.dict(os.environ, {"SMT": "sometimes"}), redirect_stderr(io.StringIO()):
            self.assertEqual(analysis_main(["analysis", "scaling-plan", "1", "0-1"]), 2)


class TestTopology(unittest.TestCase):
    def test_sentences(self):
        self.assertIn("4 event loops, the store behind one mutex",
                      scaling.topology({"server_threads": 4}, "async-server"))
        t = scaling.topology({"server_threads": 4, "actor_workers": 0}, "actor-server")
        self.assertIn("4 I/O loops", t)
        self.assertIn("store actor on loop 0 (loops 1-3 hop to it)", t)
        t = scaling.topology({"server_threads": 4, "actor_workers": 2}, "actor-server")
        self.assertIn("+ 2 workers", t)
        self.assertIn("store actor on worker 0", t)
        self.assertIn("?", scaling.topology({}, "actor-server"))

    def test_side_of(self):
        self.assertEqual(scaling.side_of("actor-mem"), "actor-server")
        self.assertEqual(scaling.side_of("async-sqlite"), "async-server")
        self.assertIsNone(scaling.side_of("nginx"))


def add_scaling_run(batch, server, sc, n, rps, server_cpu=95.0, lg_cpu=50.0):
    """A closed-loop probe at N server CPUs named <server>-<sc>-cpusN, as run_all.sh --scaling
    writes it (runner.sh with PROBE_ONLY=1 RUN_SUFFIX=-cpusN SERVER_CPUS=...)."""
    batch.run(server, sc, "probe", 90 + n, probe={"rps": rps, "server_cpu": server_cpu * n, "lg_cpu": lg_cpu})
    old = os.path.join(batch.dir, f"{server}-{sc}-probe{90 + n}")
    new = os.path.join(batch.dir, f"{server}-{sc}-cpus{n}")
    os.rename(old, new)
    with open(os.path.join(new, "facts.json"), encoding="utf-8") as fh:
        facts = json.load(fh)
    facts["run"] = os.path.basename(new)
    facts["repeat"] = 1
    facts["config"].update({"server_threads": n, "server_cpu_count": n,
                            "server_cpus": "0-%d" % (n - 1), "loadgen_cpus": str(n)})
    with open(os.path.join(new, "facts.json"), "w", encoding="utf-8") as fh:
        json.dump(facts, fh)
    os.remove(os.path.join(new, "result.json"))
    return result.write(new)


class TestTable(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="test_scaling.")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def batch(self, name, with_scaling):
        b = Batch(self.tmp, name)
        b.scenario("s1", [1000, 1100, 1050], [2000, 2100, 2050])
        if with_scaling:
            add_scaling_run(b, "actor-mem", "s1", 2, 1800)
            add_scaling_run(b, "async-mem", "s1", 2, 3000)
            b.matrix["scaling"] = {"counts": [1, 2, 8],
                                   "ran": [{"count": 1, "server_cpus": "0", "loadgen_cpus": "1-2"},
                                           {"count": 2, "server_cpus": "0-1", "loadgen_cpus": "2"}],
                                   "skipped": [{"count": 8, "reason": "8 server CPUs need 9 CPUs"}]}
        return b

    def test_table_rows_and_summary_section(self):
        b = self.batch("B", True)
        index = b.summarize()
        rows = index["scaling"]["table"]
        got = {(r["server"], r["server_cpus"]): r["rps"] for r in rows}
        self.assertEqual(got[("actor-mem", 1)], 1000)  # the matrix's first probe
        self.assertEqual(got[("async-mem", 1)], 2000)
        self.assertEqual(got[("actor-mem", 2)], 1800)
        self.assertEqual(got[("async-mem", 2)], 3000)
        self.assertTrue(all(r["req_per_cpu_sec"] is not None for r in rows))
        with open(os.path.join(b.dir, "summary.md"), encoding="utf-8") as fh:
            md = fh.read()
        self.assertIn("## Scaling (server CPUs)", md)
        self.assertIn("| s1 | actor-mem / async-mem | 1 | 1,000 | 2,000 | 0.50 |", md)
        self.assertIn("| s1 | actor-mem / async-mem | 2 | 1,800 | 3,000 | 0.60 |", md)
        self.assertIn("- 8 server CPUs: skipped: 8 server CPUs need 9 CPUs.", md)
        self.assertIn("Topology: actor-server: 1 I/O loop", md)

    @unittest.skipUnless(shutil.which(os.environ.get("GNUPLOT", "gnuplot")), "gnuplot not installed")
    def test_report_has_the_table_the_skips_and_a_plot(self):
        b = self.batch("R", True)
        b.summarize()
        work = os.path.join(self.tmp, "work")
        os.makedirs(work)
        out = os.path.join(self.tmp, "report.html")
        self.assertEqual(analysis_main(["analysis", "report", b.dir, work, out]), 0)
        with open(out, encoding="utf-8") as fh:
            page = fh.read()
        self.assertIn('<h2 id="scaling">', page)
        self.assertIn('data-key="scaling/table/1/rps">1,800<', page)
        self.assertIn("8 server CPUs: skipped: 8 server CPUs need 9 CPUs", page)
        self.assertIn('data-plot="scaling-s1-0"', page)

    def test_scaling_runs_stay_out_of_the_verdict(self):
        with_sc = self.batch("W", True).summarize()
        without = self.batch("O", False).summarize()
        self.assertEqual(with_sc["verdict"], without["verdict"])
        self.assertFalse([r for r in with_sc["probe_runs"] if "-cpus" in r.get("run", "")])
        self.assertIsNone(without["scaling"])

    def test_unsaturated_scaling_run_is_flagged(self):
        b = self.batch("U", True)
        add_scaling_run(b, "async-mem", "s1", 4, 2500, server_cpu=20.0, lg_cpu=30.0)
        b.matrix["scaling"]["ran"].append({"count": 4, "server_cpus": "0-3", "loadgen_cpus": "4"})
        index = b.summarize()
        r4 = next(r for r in index["scaling"]["table"] if r["server_cpus"] == 4)
        self.assertFalse(r4["valid"])
        with open(os.path.join(b.dir, "summary.md"), encoding="utf-8") as fh:
            self.assertIn("| s1 | actor-mem / async-mem | 4 | - | 2,500 | - (not valid", fh.read())

    def test_loadgen_bound_scaling_run_is_flagged(self):
        b = self.batch("L", True)
        add_scaling_run(b, "actor-mem", "s1", 4, 2500, server_cpu=10.0, lg_cpu=100.0)
        rows = scaling.table(b.summarize()["runs"] + [json.load(open(os.path.join(b.dir, "actor-mem-s1-cpus4",
                                                                              "result.json")))])
        r4 = next(r for r in rows if r["server_cpus"] == 4)
        self.assertFalse(r4["valid"])


if __name__ == "__main__":
    tap_unittest.main(__name__)
