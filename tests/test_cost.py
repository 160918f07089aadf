#!/usr/bin/env python3
"""test_cost.py: unit tests of the cost account (runner/analysis/cost.py) and the ladder's
definitions (runner/analysis/ladder.py), TAP. The counts are checked on a fixture server of
known cost, tests/helpers/cost_server (built by make): K extra getppid() calls a request must
come out as K more "other" system calls a request, H messages a request as H hops, an empty
loop of L turns as more instructions; every row has every key of the agreed index.json `cost`
row, a missing tool gives null with its reason; the extra cost a request and a hop in words;
the ladder's rungs generated from a definition with the flags' [env_args], and refused
without them. Starts only cost_server (seconds, small counts), under 127.0.0.1.
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

from analysis import cost, ladder, servers  # noqa: E402
import tap_unittest  # noqa: E402

BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
FIXTURE = os.path.join(BUILD, "tests", "helpers", "cost_server")
# The agreed keys of an index.json cost row (iface: add, never rename).
ROW_KEYS = ("server", "scenario", "instructions_per_request", "syscalls_per_request",
            "syscalls_by_kind_per_request", "context_switches_per_request",
            "voluntary_context_switches_per_request", "involuntary_context_switches_per_request",
            "hops_per_request", "cross_thread_hops_per_request", "wakeups_per_request", "lock_waits_per_request",
            "server_threads", "flags", "requests", "method", "unmeasured")
SIZES = (200, 400, 1000)   # callgrind, strace, plain N: small, the counts are exact or nearly
SYSCALL_TOL = 0.1          # per request: the closed loop's batching moves epoll_wait, not getppid


def definition(folder, name, args):
    """Writes FOLDER/NAME.toml: cost_server with ARGS."""
    with open(os.path.join(folder, name + ".toml"), "w", encoding="utf-8") as fh:
        fh.write('description = "cost fixture"\nscenarios = ["s1"]\nbuild = ["cost_server"]\n'
                 f"command = {json.dumps([FIXTURE, '--port', '{port}'] + args)}\n")


@unittest.skipUnless(os.access(FIXTURE, os.X_OK), f"{FIXTURE} not built (make binaries)")
class FixtureCounts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="test_cost.")
        definition(cls.dir, "plain", ["--hops", "0"])
        definition(cls.dir, "costly", ["--extra-syscalls", "5", "--hops", "3", "--spin", "1000"])
        defs = servers.load_all(server_defs=cls.dir)
        cls.rows = {n: cost.measure(cost.Setup(defs[n], "s1", sizes=SIZES)) for n in ("plain", "costly")}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_every_key(self):
        for row in self.rows.values():
            for k in ROW_KEYS:
                self.assertIn(k, row)
            for f, reason in row["unmeasured"].items():
                self.assertIsNone(row[f], f)
                self.assertTrue(reason)

    def test_extra_syscalls_counted_as_other(self):
        if not shutil.which("strace"):
            self.skipTest("no strace")
        a, b = self.rows["plain"], self.rows["costly"]
        self.assertIsNotNone(a["syscalls_per_request"], a["unmeasured"])
        self.assertAlmostEqual(b["syscalls_by_kind_per_request"]["other"]
                               - a["syscalls_by_kind_per_request"]["other"], 5.0, delta=SYSCALL_TOL)
        # one read and one write a request (the closed loop: one request in flight a connection)
        for row in (a, b):
            self.assertAlmostEqual(row["syscalls_by_kind_per_request"]["read"], 1.0, delta=SYSCALL_TOL)
            self.assertAlmostEqual(row["syscalls_by_kind_per_request"]["write"], 1.0, delta=SYSCALL_TOL)

    def test_hops_from_metrics(self):
        self.assertEqual(self.rows["plain"]["hops_per_request"], 0.0)
        self.assertAlmostEqual(self.rows["costly"]["hops_per_request"], 3.0, delta=1e-9)
        self.assertEqual(self.rows["costly"]["cross_thread_hops_per_request"], 0.0)

    def test_spin_costs_instructions(self):
        if not shutil.which("valgrind"):
            self.skipTest("no valgrind")
        a, b = self.rows["plain"], self.rows["costly"]
        self.assertIsNotNone(a["instructions_per_request"], a["unmeasured"])
        # 1000 turns of a volatile loop: at least 2 instructions a turn, and far below 20;
        # 5 getppid() calls add a few dozen
        self.assertGreater(b["instructions_per_request"] - a["instructions_per_request"], 2000)
        self.assertLess(b["instructions_per_request"] - a["instructions_per_request"], 20000)
        self.assertGreater(a["instructions_per_request"], 100)

    def test_missing_tool_is_null_with_reason(self):
        defs = servers.load_all(server_defs=self.dir)
        real = shutil.which
        try:
            cost.shutil.which = lambda t: None if t in ("valgrind", "strace") else real(t)
            row = cost.measure(cost.Setup(defs["plain"], "s1", sizes=(50, 50, 200)))
        finally:
            cost.shutil.which = real
        self.assertIsNone(row["instructions_per_request"])
        self.assertIn("valgrind is not installed", row["unmeasured"]["instructions_per_request"])
        self.assertIsNone(row["syscalls_per_request"])
        self.assertIn("strace is not installed", row["unmeasured"]["syscalls_per_request"])
        self.assertIsNotNone(row["context_switches_per_request"])


class Words(unittest.TestCase):
    def test_extra_per_request_and_hop(self):
        cand = {"instructions_per_request": 6651.0, "syscalls_per_request": 2.5,
                "context_switches_per_request": 0.5, "hops_per_request": 6.0}
        base = {"instructions_per_request": 6306.0, "syscalls_per_request": 2.0,
                "context_switches_per_request": 0.5, "hops_per_request": 0.0}
        e = cost.extra(cand, base)
        self.assertEqual(e["instructions_per_request"], 345.0)
        self.assertAlmostEqual(e["instructions_per_hop"], 57.5)
        self.assertTrue(cost.extra_words(e).startswith("+345 instructions a request over 6 hops: 58 a hop"))

    def test_no_hops_no_per_hop(self):
        e = cost.extra({"instructions_per_request": 10.0, "hops_per_request": None},
                       {"instructions_per_request": 4.0})
        self.assertIsNone(e["instructions_per_hop"])
        self.assertNotIn("hop", cost.extra_words(e))

    def test_strace_trace_counted_by_window_and_kind(self):
        text = ("101 100.000100 epoll_wait(3, [], 1024, -1) = 0\n"
                "101 100.500000 read(5, \"GET\", 65536) = 3\n"
                "102 100.600000 futex(0x7f, FUTEX_WAIT, 0, NULL <unfinished ...>\n"
                "101 100.700000 writev(5, [...], 2) = 40\n"
                "102 100.800000 <... futex resumed>) = 0\n"
                "101 100.900000 getppid() = 1\n"
                "101 101.500000 read(5, \"GET\", 65536) = 3\n"
                "101 101.600000 +++ exited with 0 +++\n")
        with tempfile.NamedTemporaryFile("w", suffix=".st", delete=False) as fh:
            fh.write(text)
        try:
            wins = cost.trace_counts(fh.name, [100.0, 100.2, 101.0, 102.0])
        finally:
            os.unlink(fh.name)
        self.assertEqual([cost.by_kind(w) for w in wins],
                         [{"read": 0, "write": 0, "epoll_wait": 1, "futex": 0, "other": 0},
                          {"read": 1, "write": 1, "epoll_wait": 0, "futex": 1, "other": 1},
                          {"read": 1, "write": 0, "epoll_wait": 0, "futex": 0, "other": 0}])


class Ladder(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="test_ladder.")
        self.out = os.path.join(self.dir, "out")
        self.defs_dir = os.path.join(self.dir, "defs")
        os.makedirs(self.defs_dir)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def base(self, env_args):
        with open(os.path.join(self.defs_dir, "actor-mem.toml"), "w", encoding="utf-8") as fh:
            fh.write('scenarios = ["s1", "s2"]\nbuild = ["actor-server"]\n'
                     'command = ["{build}/actor-server", "--port", "{port}"]\n[env_args]\n' + env_args)
        return {"actor-mem": servers.load_file(os.path.join(self.defs_dir, "actor-mem.toml"))}

    def test_rungs(self):
        self.assertEqual([r for r, _ in ladder.RUNGS], ["default", "spread", "malloc", "copy", "ring", "mutex", "all"])
        self.assertEqual(ladder.flags({}), {"placement": "local", "message": "pointer", "mailbox": "vyukov"})
        # every costly setting alone, then all of them
        self.assertTrue(all(len(c) == 1 for r, c in ladder.RUNGS[1:-1]))
        self.assertEqual(len(ladder.RUNGS[-1][1]), 3)

    def test_generated_definitions_carry_the_flags(self):
        defs = self.base('ACTOR_PLACEMENT = ["--placement={value}"]\nACTOR_MESSAGE = ["--message={value}"]\n'
                         'ACTOR_MAILBOX = ["--mailbox", "{value}"]\nACTOR_WORKERS = ["--workers", "{value}"]\n')
        names = ladder.generate(self.out, defs)
        self.assertEqual(names[0], "async-mem")
        self.assertEqual(names[1:], [f"actor-mem-{r}" for r, _ in ladder.RUNGS])
        gen = servers.load_all(server_defs=self.out)
        self.assertEqual(gen["actor-mem-default"].command, ["{build}/actor-server", "--port", "{port}"])
        self.assertEqual(gen["actor-mem-spread"].command[-1], "--placement=spread")
        self.assertEqual(gen["actor-mem-ring"].command[-2:], ["--mailbox", "ring"])
        self.assertEqual(gen["actor-mem-all"].command[3:],
                         ["--placement=spread", "--message=copy", "--mailbox", "mutex"])
        # the other env_args stay; the ladder's own are fixed by the rung
        self.assertEqual(sorted(gen["actor-mem-copy"].env_args), ["ACTOR_WORKERS"])

    def test_chosen_rungs_only(self):
        # --ladder=default,spread: async-mem and exactly those two definitions, in the ladder's order
        defs = self.base('ACTOR_PLACEMENT = ["--placement={value}"]\nACTOR_MESSAGE = ["--message={value}"]\n'
                         'ACTOR_MAILBOX = ["--mailbox={value}"]\n')
        names = ladder.generate(self.out, defs, rungs="spread,default")
        self.assertEqual(names, ["async-mem", "actor-mem-default", "actor-mem-spread"])
        self.assertEqual(sorted(os.listdir(self.out)), ["actor-mem-default.toml", "actor-mem-spread.toml", "ladder.json"])
        with open(os.path.join(self.out, "ladder.json"), encoding="utf-8") as fh:
            self.assertEqual([r["rung"] for r in json.load(fh)["rungs"]], ["default", "spread"])
        self.assertEqual(servers.load_all(server_defs=self.out)["actor-mem-spread"].command[-1], "--placement=spread")

    def test_unknown_rung_refused_creating_nothing(self):
        defs = self.base('ACTOR_PLACEMENT = ["--placement={value}"]\nACTOR_MESSAGE = ["--message={value}"]\n'
                         'ACTOR_MAILBOX = ["--mailbox={value}"]\n')
        with self.assertRaises(ValueError) as e:
            ladder.generate(self.out, defs, rungs="default,fast")
        self.assertEqual(str(e.exception), "unknown rung(s) fast: the rungs are default, spread, malloc, copy, "
                         "ring, mutex, all")
        self.assertFalse(os.path.exists(self.out))
        self.assertEqual(ladder.select(""), ladder.RUNGS)   # plain --ladder: every rung

    def test_refused_without_the_flags(self):
        defs = self.base('ACTOR_WORKERS = ["--workers", "{value}"]\n')
        with self.assertRaises(servers.DefinitionError) as e:
            ladder.generate(self.out, defs)
        self.assertIn("ACTOR_PLACEMENT", str(e.exception))

    def test_section_steps(self):
        bdir = os.path.join(self.dir, "batch")
        defs = self.base('ACTOR_PLACEMENT = ["--placement={value}"]\nACTOR_MESSAGE = ["--message={value}"]\n'
                         'ACTOR_MAILBOX = ["--mailbox={value}"]\n')
        ladder.generate(os.path.join(bdir, "ladder-servers"), defs)
        comps = [{"scenario": "s2", "candidate": f"actor-mem-{r}", "baseline": "async-mem", "ratio": 0.9 - i / 10,
                  "ci_low": 0.8 - i / 10, "ci_high": 1.0 - i / 10, "verdict": "PASS"}
                 for i, (r, _) in enumerate(ladder.RUNGS)]
        rows = [{"server": "async-mem", "scenario": "s2", "instructions_per_request": 6000.0}]
        rows += [{"server": f"actor-mem-{r}", "scenario": "s2", "instructions_per_request": 6300.0 + 100 * i,
                  "contended": False} for i, (r, _) in enumerate(ladder.RUNGS)]
        rows.append({"server": "actor-mem-default", "scenario": "s2", "instructions_per_request": 1.0,
                     "contended": True})
        sec = ladder.section(bdir, comps, rows)
        self.assertEqual([r["rung"] for r in sec], [r for r, _ in ladder.RUNGS])
        self.assertEqual(sec[0]["instructions_per_request"], 6300.0)   # not the contended row
        self.assertIsNone(sec[0]["instructions_step_per_request"])
        self.assertEqual(sec[1]["instructions_step_per_request"], 100.0)
        self.assertEqual(sec[1]["instructions_over_baseline_per_request"], 400.0)
        self.assertEqual(sec[1]["flags"]["placement"], "spread")
        self.assertAlmostEqual(sec[1]["ratio"], 0.8)
        for k in ("rung", "flags", "ratio", "ci_low", "ci_high", "instructions_per_request", "hops_per_request"):
            self.assertIn(k, sec[2])
        self.assertIsNone(ladder.section(self.dir, comps, rows))
        md = "\n".join(ladder.markdown_lines({"ladder": sec}))
        self.assertIn("| s2 | spread | placement=spread message=pointer mailbox=vyukov | 6,400 | +100 | +400 |", md)


if __name__ == "__main__":
    tap_unittest.main(__name__)
