#!/usr/bin/env python3
"""test_cpuplan.py: unit tests of runner/analysis/cpuplan.py (TAP): the CPU plan on fixture
topologies (tests/fixtures/topology: a 2-vCPU VM without SMT information, 8 cores x 2
threads, 2 sockets x 16 cores x 2 threads, an EPYC-like part with 4 L3 domains, a 64-core
ARM host, a mask with holes), each test stating the plan it expects and why; overrides and
their warnings; the command line (`analysis cpu-plan`). Builds the fixture trees in a
temporary folder (tests/fixtures/topology/gen.py) and removes it; runs nothing else.
"""
import io
import json
import os
import shutil
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "runner"))
sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures", "topology"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from analysis import cpuplan  # noqa: E402
from analysis.__main__ import main as analysis_main  # noqa: E402
import gen  # noqa: E402
import tap_unittest  # noqa: E402

TMP = tempfile.mkdtemp(prefix="test_cpuplan.")
TREES = {name: gen.build(name, os.path.join(TMP, name)) for name in gen.SPECS}


def topo(name, mask):
    return cpuplan.Topology(TREES[name], cpuplan.parse_list(mask))


def sides(p):
    return p["server_cpus"], p["loadgen_cpus"], p["idle_cpus"]


def cores_on_both_sides(t, p):
    """The cores of topology T with a CPU on each side of plan P (must be none)."""
    s, g = set(cpuplan.parse_list(p["server_cpus"])), set(cpuplan.parse_list(p["loadgen_cpus"]))
    return [k.siblings for k in t.cores if set(k.siblings) & s and set(k.siblings) & g]


class TestLists(unittest.TestCase):
    def test_parse_and_format(self):
        self.assertEqual(cpuplan.parse_list("0-3,8,10-11"), [0, 1, 2, 3, 8, 10, 11])
        self.assertEqual(cpuplan.parse_list("3,1,1"), [1, 3])
        self.assertEqual(cpuplan.format_list([0, 1, 2, 5, 7, 8]), "0-2,5,7-8")
        self.assertEqual(cpuplan.format_list([]), "")
        for bad in ("", "a", "3-1", "1-", "1,,2", "-1"):
            with self.assertRaises(cpuplan.PlanError, msg=bad):
                cpuplan.parse_list(bad)


class TestVm2(unittest.TestCase):
    """A 2-vCPU VM whose hypervisor says nothing of SMT, caches or NUMA: each CPU a core.
    The plan this host has always had: server CPU 0, load generator CPU 1, nothing idle; the
    load generator gets 1 core where its cost asks 2, and the plan says so (not a warning:
    nothing is unfair, there is no more to give)."""

    def test_server_0_loadgen_1(self):
        t = topo("vm2", "0-1")
        p = cpuplan.plan(t)
        self.assertEqual(sides(p), ("0", "1", ""))
        self.assertEqual(p["warnings"], [])
        self.assertEqual((p["server_cores"], p["loadgen_cores"], p["loadgen_cores_wanted"]), (1, 1, 2))
        text = "\n".join(p["reasons"])
        self.assertEqual(text.count("no SMT information"), 1, text)  # said once
        self.assertIn("fewer than the 2 its measured cost asks", text)
        self.assertIn("idle: none", text)

    def test_this_host_when_it_has_two_cpus(self):
        # the suite's reference host: whatever its /sys says, 2 CPUs plan as server 0, loadgen 1
        mask = sorted(os.sched_getaffinity(0))
        if mask != [0, 1]:
            self.skipTest(f"this host's mask is {cpuplan.format_list(mask)}, not 0-1")
        p = cpuplan.plan(cpuplan.Topology(cpuplan.DEFAULT_ROOT, mask))
        self.assertEqual(sides(p)[:2], ("0", "1"))

    def test_scaling_runs_1_and_skips_2(self):
        out = cpuplan.scaling(topo("vm2", "0-1"), [1, 2])
        self.assertEqual((out[0][0], out[0][2]["server_cpus"], out[0][2]["loadgen_cpus"]), ("run", "0", "1"))
        self.assertEqual(out[1][:2], ("skip", 2))
        self.assertIn("2 server CPUs need 3 cores", out[1][2])

    def test_one_cpu_is_shared_and_said_unfair(self):
        p = cpuplan.plan(topo("vm2", "1"))
        self.assertEqual(sides(p), ("1", "1", ""))
        self.assertTrue(any("not fair" in w for w in p["warnings"]), p["warnings"])
        self.assertEqual(cpuplan.scaling(topo("vm2", "1"), [1])[0][0], "skip")


class TestSmt8x2(unittest.TestCase):
    """8 cores, 16 threads, CPU k and k+8 siblings. The old split (0-7 / 8-15) put the load
    generator on the sibling of every server CPU; the plan never shares a core."""

    def test_default_one_thread_per_server_core(self):
        # 8 cores / 2.6 = 3 server cores, one thread each (0-2; siblings 8-10 idle); the
        # load generator 1.6 x 3 -> 5 whole cores (3-7 and their siblings 11-15)
        t = topo("smt8x2", "0-15")
        p = cpuplan.plan(t)
        self.assertEqual(sides(p), ("0-2", "3-7,11-15", "8-10"))
        self.assertEqual(cores_on_both_sides(t, p), [])
        self.assertEqual(p["warnings"], [])
        self.assertIn("SMT siblings of the server's cores", "\n".join(p["reasons"]))

    def test_smt_both_and_off(self):
        t = topo("smt8x2", "0-15")
        # both: the server's 3 cores with both threads each
        self.assertEqual(sides(cpuplan.plan(t, "both")), ("0-2,8-10", "3-7,11-15", ""))
        # off: one thread per core on both sides, every sibling idle
        self.assertEqual(sides(cpuplan.plan(t, "off")), ("0-2", "3-7", "8-15"))
        # both with 3 server CPUs: 2 cores, the last one half used, its sibling idle (never the loadgen's)
        p = cpuplan.plan(t, "both", count=3)
        self.assertEqual(p["server_cpus"], "0-1,8")
        self.assertNotIn("9", p["loadgen_cpus"].split(","))
        self.assertEqual(cores_on_both_sides(t, p), [])

    def test_scaling(self):
        # 4 server cores leave 4 of the 7 cores the load generator wants: run, and say so;
        # 8 leave none: skipped
        out = {n: x for _, n, x in cpuplan.scaling(topo("smt8x2", "0-15"), [1, 4, 8])}
        self.assertEqual(sides(out[1]), ("0", "1-2,9-10", "3-8,11-15"))
        self.assertEqual(sides(out[4])[:2], ("0-3", "4-7,12-15"))
        self.assertIn("fewer than the 7", "\n".join(out[4]["reasons"]))
        self.assertIn("8 server CPUs need 9 cores", out[8])

    def test_the_seed_split_is_warned_about(self):
        t = topo("smt8x2", "0-15")
        p = cpuplan.plan(t, server_cpus=list(range(8)), loadgen_cpus=list(range(8, 16)))
        self.assertEqual(p["source"], "override")
        self.assertEqual(sides(p), ("0-7", "8-15", ""))
        w = "\n".join(p["warnings"])
        self.assertIn("SMT siblings on both sides", w)
        self.assertIn("0 (server) and 8 (load generator)", w)

    def test_one_side_given_the_other_planned_on_the_cores_left(self):
        t = topo("smt8x2", "0-15")
        p = cpuplan.plan(t, server_cpus=[0, 1, 2, 3])
        self.assertEqual(p["source"], "partial override")
        self.assertEqual(sides(p), ("0-3", "4-7,12-15", "8-11"))
        self.assertEqual(p["warnings"], [])
        p = cpuplan.plan(t, loadgen_cpus=[12, 13, 14, 15])
        # the server gets one thread of every core the load generator does not touch
        self.assertEqual(sides(p)[:2], ("0-3", "12-15"))
        self.assertEqual(p["warnings"], [])

    def test_a_one_core_mask_shares_it_with_a_warning(self):
        p = cpuplan.plan(topo("smt8x2", "0,8"))
        self.assertEqual(sides(p), ("0", "8", ""))
        self.assertTrue(any("one core" in w and "not fair" in w for w in p["warnings"]))

    def test_bad_policy(self):
        with self.assertRaises(cpuplan.PlanError):
            cpuplan.plan(topo("smt8x2", "0-15"), "sometimes")


class TestTwoSockets(unittest.TestCase):
    """2 sockets x 16 cores x 2 threads, siblings k and k+32, an L3 and a NUMA node per socket."""

    def test_scaling_puts_the_server_on_one_node_and_the_load_on_the_other(self):
        out = {n: x for _, n, x in cpuplan.scaling(topo("2s16c2t", "0-63"), [1, 8, 16, 32])}
        # 8 server cores fit node 0; the load generator's 13 cores go to node 1 (another L3)
        self.assertEqual(sides(out[8])[:2], ("0-7", "16-28,48-60"))
        self.assertIn("in L3 domains the server does not use", "\n".join(out[8]["reasons"]))
        # 16: all of node 0; node 1's 16 cores for the load generator (26 wanted, said)
        self.assertEqual(sides(out[16]), ("0-15", "16-31,48-63", "32-47"))
        self.assertIn("fewer than the 26", "\n".join(out[16]["reasons"]))
        self.assertIn("need 33 cores", out[32])

    def test_default_fills_node_0_first(self):
        # 32 cores / 2.6 = 12 server cores, all on node 0; the load generator's 20: node 1's
        # 16, then the 4 cores left on node 0 (said: they share the server's L3)
        t = topo("2s16c2t", "0-63")
        p = cpuplan.plan(t)
        self.assertEqual(sides(p), ("0-11", "12-31,44-63", "32-43"))
        self.assertIn("4 cores of them in the server's L3 domain", "\n".join(p["reasons"]))
        self.assertEqual(cores_on_both_sides(t, p), [])

    def test_a_mask_on_node_1_only(self):
        p = cpuplan.plan(topo("2s16c2t", "16-31,48-63"), count=4)
        self.assertEqual(sides(p)[:2], ("16-19", "20-26,52-58"))


class TestEpyc(unittest.TestCase):
    """32 cores with SMT (siblings k and k+32), 4 L3 domains (CCDs) of 8 cores, one node."""

    def test_server_in_one_l3_loadgen_in_the_others(self):
        out = {n: x for _, n, x in cpuplan.scaling(topo("epyc32", "0-63"), [1, 8, 16])}
        # 1 core: CCD 0; the load generator's 2 cores in CCD 1
        self.assertEqual(sides(out[1])[:2], ("0", "8-9,40-41"))
        # 8 cores: exactly CCD 0; 13 for the load: CCD 1 whole and 5 cores of CCD 2
        self.assertEqual(sides(out[8])[:2], ("0-7", "8-20,40-52"))
        self.assertIn("in L3 domains the server does not use", "\n".join(out[8]["reasons"]))
        # 16 cores: two whole CCDs (no single one holds them, said), the load on the other two
        self.assertEqual(sides(out[16])[:2], ("0-15", "16-31,48-63"))
        self.assertIn("more than one L3 domain holds them", "\n".join(out[16]["reasons"]))

    def test_best_fit_keeps_whole_domains_for_the_load(self):
        # CCD 0 cut to 4 cores by the mask: 4 server cores go there (the smallest domain that
        # holds them), leaving CCDs 1-3 whole
        p = cpuplan.plan(topo("epyc32", "0-3,8-31,32-35,40-63"), count=4)
        self.assertEqual(sides(p)[:2], ("0-3", "8-14,40-46"))


class TestArm64(unittest.TestCase):
    """64 cores without SMT, no L3 in the cache tree (a mesh with a system cache): one
    domain, said once."""

    def test_default_and_scaling(self):
        t = topo("arm64", "0-63")
        p = cpuplan.plan(t)
        # 64 / 2.6 = 24 server cores, 39 for the load generator (1.6 x 24 = 38.4), 1 spare
        self.assertEqual(sides(p), ("0-23", "24-62", "63"))
        self.assertEqual("\n".join(p["reasons"]).count("no L3 cache information"), 1)
        out = {n: x for _, n, x in cpuplan.scaling(t, [16, 32])}
        self.assertEqual(sides(out[16])[:2], ("0-15", "16-41"))
        self.assertEqual(sides(out[32])[:2], ("0-31", "32-63"))


class TestHoles(unittest.TestCase):
    """4 cores x 2 threads (siblings k and k+4) with the mask 0,2,4-7: core 0 has 0 and 4,
    core 1 only 5, core 2 has 2 and 6, core 3 only 7."""

    def test_mask_with_holes(self):
        # 4 cores / 2.6 = 1 server core: CPU 0 (its sibling 4 idle); the load generator's 2
        # cores: core 2 (2, 6) and core 1 (5); core 3 (7) spare
        t = topo("holes", "0,2,4-7")
        p = cpuplan.plan(t)
        self.assertEqual(sides(p), ("0", "2,5-6", "4,7"))
        self.assertEqual(cores_on_both_sides(t, p), [])
        self.assertEqual(p["mask"], "0,2,4-7")


class TestCommandLine(unittest.TestCase):
    def run_cli(self, env, *args):
        out, err = io.StringIO(), io.StringIO()
        with mock.patch.dict(os.environ, env), redirect_stdout(out), redirect_stderr(err):
            rc = analysis_main(["analysis", "cpu-plan", *args])
        return rc, out.getvalue(), err.getvalue()

    def test_text_lines_then_reasons(self):
        rc, out, _ = self.run_cli({"CPU_TOPOLOGY_ROOT": TREES["smt8x2"], "CPU_MASK": "0-15", "SMT": "",
                                   "SERVER_CPUS": "", "LOADGEN_CPUS": ""})
        lines = out.splitlines()
        self.assertEqual(rc, 0)
        self.assertEqual(lines[:3], ["server_cpus=0-2", "loadgen_cpus=3-7,11-15", "idle_cpus=8-10"])
        self.assertTrue(any("SMT policy one (the default)" in x for x in lines[3:]))

    def test_json_and_scaling(self):
        env = {"CPU_TOPOLOGY_ROOT": TREES["epyc32"], "CPU_MASK": "0-63", "SMT": "off",
               "SERVER_CPUS": "", "LOADGEN_CPUS": ""}
        rc, out, _ = self.run_cli(env, "--json", "--count=8")
        self.assertEqual(rc, 0)
        p = json.loads(out)
        self.assertEqual((p["smt_policy"], p["server_cpus"], p["loadgen_cpus"]), ("off", "0-7", "8-20"))
        rc, out, _ = self.run_cli(env, "--scaling=1,64")
        self.assertEqual(rc, 0)
        self.assertIn("--scaling 1 server CPU: run", out)
        self.assertIn("  server_cpus=0", out)
        self.assertIn("--scaling 64 server CPUs: skipped:", out)

    def test_load_from_other_hosts_leaves_the_runner_one_core(self):
        # LOADGEN_HOSTS: the load generator runs elsewhere; locally only the runner and its
        # ssh clients need a core, so the server gets every other one
        env = {"CPU_TOPOLOGY_ROOT": TREES["smt8x2"], "CPU_MASK": "0-15", "SMT": "", "SERVER_CPUS": "",
               "LOADGEN_CPUS": ""}
        rc, out, _ = self.run_cli(env, "--remote")
        self.assertEqual(rc, 0)
        self.assertEqual(out.splitlines()[:3], ["server_cpus=0-6", "loadgen_cpus=7,15", "idle_cpus=8-14"])
        self.assertIn("the load comes from other hosts", out)
        self.assertNotIn("fewer than", out)

    def test_overrides_and_bad_values(self):
        env = {"CPU_TOPOLOGY_ROOT": TREES["smt8x2"], "CPU_MASK": "0-15", "SMT": "",
               "SERVER_CPUS": "0-7", "LOADGEN_CPUS": "8-15"}
        rc, out, _ = self.run_cli(env)
        self.assertEqual(rc, 0)
        self.assertIn("warning: SMT siblings on both sides", out)
        for bad in ({"SMT": "maybe"}, {"SERVER_CPUS": "x"}, {"CPU_MASK": "3-1"},
                    {"CPU_TOPOLOGY_ROOT": os.path.join(TMP, "nowhere")}):
            rc, _, err = self.run_cli(dict(env, **bad))
            self.assertEqual(rc, 2, bad)
            self.assertIn("analysis cpu-plan:", err)
        rc, _, err = self.run_cli(dict(env, SERVER_CPUS="", LOADGEN_CPUS=""), "--count=9")
        self.assertEqual(rc, 2)
        self.assertIn("need 10 cores", err)


if __name__ == "__main__":
    try:
        tap_unittest.main(__name__)
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
