#!/usr/bin/env python3
"""test_rounds.py: unit tests of runner/analysis/rounds.py (TAP), on batches written the way
runner.sh and run_all.sh write them (tests/test_analysis.py's Batch, matrix.json with groups):
which rounds of a comparison gave a valid pair and why not, which rounds earn a re-run (those
the host disturbed; for the equal-load runs also the valid ones while the probes gave too few
pairs) and which do not (setup reasons), league re-runs that do not count for the other
comparisons, the equal-load rate, and the command line. Runs no benchmark; writes only to a
temporary folder.
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

from analysis import rounds  # noqa: E402
from analysis.__main__ import main as analysis_main  # noqa: E402
import tap_unittest  # noqa: E402
from test_analysis import Batch  # noqa: E402

OTHER = {"other": 30.0, "server_cpu": 60.0}        # a hog on the server CPU: other load, not saturated
LG_BOUND = {"server_cpu": 70.0, "lg_cpu": 97.0}     # the load generator saturated first


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="test_rounds.")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def batch(self, groups, repeats=3, name="b"):
        b = Batch(self.tmp, name, repeats=repeats)
        b.matrix["groups"] = groups
        return b

    def probe(self, b, server, rnd, rps=100000, **over):
        p = dict({"rps": rps}, **over)
        if rnd == 1:
            b.run(server, "s1", "saturation", 1, probe=p,
                  sustain={"rps": round(rps * 0.7), "target": round(rps * 0.7), "server_cpu": 70.0, "lag_p99": 0.05})
        else:
            b.run(server, "s1", "probe", rnd, probe=p)

    def equal(self, b, server, rnd, rpc=100000, **over):
        spec = dict({"rps": 50000, "target": 50000, "server_cpu": 100.0 * 50000 / rpc, "lag_p99": 0.05}, **over)
        first, aside = os.path.join(b.dir, f"{server}-s1-equal"), os.path.join(self.tmp, "aside")
        if rnd > 1:  # Batch writes -equal: round 1 steps aside while round RND is written
            os.rename(first, aside)
        b.run(server, "s1", "equal-load", sustain=spec)
        if rnd > 1:
            os.rename(first, os.path.join(b.dir, f"{server}-s1-equal{rnd}"))
            os.rename(aside, first)

    def status(self, b):
        b.summarize()
        return rounds.status(b.dir, "s1")


PAIR = [{"scenario": "s1", "servers": ["actor-mem", "async-mem"],
         "comparisons": [{"candidate": "actor-mem", "baseline": "async-mem", "decides": True}]}]


class TestStatus(Base):
    def test_rounds_valid_or_not_with_why_and_ratio(self):
        b = self.batch(PAIR)
        for r in (1, 2, 3):
            self.probe(b, "actor-mem", r, 60000, **(OTHER if r == 2 else {}))
            self.probe(b, "async-mem", r, 100000)
        st = self.status(b)
        c = st["comparisons"][0]
        self.assertEqual((c["candidate"], c["baseline"], c["valid_pairs"]), ("actor-mem", "async-mem", 2))
        self.assertEqual([(r["round"], r["valid"], r["disturbed"]) for r in c["rounds"]],
                         [(1, True, False), (2, False, True), (3, True, False)])
        self.assertAlmostEqual(c["rounds"][0]["ratio"], 0.6, delta=1e-9)
        self.assertIsNone(c["rounds"][1]["ratio"])
        why = c["rounds"][1]["why"]
        self.assertEqual({(w["server"], w["run"]) for w in why}, {("actor-mem", "actor-mem-s1-probe2")})
        self.assertIn("other load", [w["flag"] for w in why])
        self.assertEqual(st["equal"][0]["rounds"], [])

    def test_a_missing_planned_run_counts_against_its_round(self):
        b = self.batch(PAIR, repeats=2)
        self.probe(b, "actor-mem", 1)
        self.probe(b, "async-mem", 1)
        self.probe(b, "async-mem", 2)
        c = self.status(b)["comparisons"][0]
        self.assertEqual(c["valid_pairs"], 1)
        self.assertEqual(c["rounds"][1]["why"][0]["flag"], "no result")
        self.assertFalse(c["rounds"][1]["disturbed"])

    def test_no_groups_is_a_clear_error(self):
        b = Batch(self.tmp, "old")
        b.summarize()
        with self.assertRaisesRegex(ValueError, "no groups"):
            rounds.status(b.dir, "s1")


class TestNextRound(Base):
    def test_a_disturbed_round_earns_one_rerun_and_its_answer_ends_it(self):
        b = self.batch(PAIR)
        for r in (1, 2, 3):
            self.probe(b, "actor-mem", r, **(OTHER if r == 2 else {}))
            self.probe(b, "async-mem", r)
        nxt = rounds.next_round(self.status(b), "probe", 3, 3)
        self.assertEqual((nxt["kind"], nxt["round"], nxt["servers"]), ("probe", 4, ["actor-mem", "async-mem"]))
        self.assertEqual(nxt["comparisons"], [{"candidate": "actor-mem", "baseline": "async-mem", "valid_pairs": 2}])
        self.assertEqual(nxt["answers"][0]["round"], 2)
        self.assertIn("other load", [w["flag"] for w in nxt["answers"][0]["why"]])
        # the re-run is disturbed again: it earns another
        self.probe(b, "actor-mem", 4, **OTHER)
        self.probe(b, "async-mem", 4)
        nxt = rounds.next_round(self.status(b), "probe", 3, 3)
        self.assertEqual((nxt["round"], nxt["answers"][0]["round"]), (5, 4))
        # a clean one: 3 valid pairs, done
        self.probe(b, "actor-mem", 5)
        self.probe(b, "async-mem", 5)
        st = self.status(b)
        self.assertEqual(st["comparisons"][0]["valid_pairs"], 3)
        self.assertIsNone(rounds.next_round(st, "probe", 3, 3))

    def test_rounds_invalid_for_the_setup_earn_nothing(self):
        b = self.batch(PAIR)
        for r in (1, 2, 3):
            self.probe(b, "actor-mem", r, **LG_BOUND)
            self.probe(b, "async-mem", r)
        st = self.status(b)
        self.assertEqual(st["comparisons"][0]["valid_pairs"], 0)
        self.assertEqual({w["flag"] for r in st["comparisons"][0]["rounds"] for w in r["why"]}, {"loadgen-bound"})
        self.assertIsNone(rounds.next_round(st, "probe", 3, 3))

    def test_enough_valid_pairs_need_no_rerun_even_after_a_disturbance(self):
        b = self.batch(PAIR, repeats=3)
        for r in (1, 2, 3):
            self.probe(b, "actor-mem", r, **(OTHER if r == 1 else {}))
            self.probe(b, "async-mem", r)
        self.assertIsNone(rounds.next_round(self.status(b), "probe", 2, 3))
        self.assertIsNotNone(rounds.next_round(self.status(b), "probe", 3, 3))

    def test_equal_load_pairs_repeat_while_the_probes_gave_too_few(self):
        b = self.batch(PAIR)
        for r in (1, 2, 3):
            self.probe(b, "actor-mem", r, **LG_BOUND)
            self.probe(b, "async-mem", r)
        self.equal(b, "actor-mem", 1, 90000)
        self.equal(b, "async-mem", 1, 100000)
        st = self.status(b)
        self.assertEqual(st["equal"][0]["valid_pairs"], 1)
        self.assertAlmostEqual(st["equal"][0]["rounds"][0]["ratio"], 0.9, delta=0.01)
        nxt = rounds.next_round(st, "equal", 3, 1)
        self.assertEqual((nxt["kind"], nxt["round"], nxt["answers"][0]["valid"]), ("equal", 2, True))
        # a second pair invalid for the setup: no third
        self.equal(b, "actor-mem", 2, 90000, lg_cpu=97.0)
        self.equal(b, "async-mem", 2, 100000)
        st = self.status(b)
        self.assertEqual([r["valid"] for r in st["equal"][0]["rounds"]], [True, False])
        self.assertIsNone(rounds.next_round(st, "equal", 3, 1))

    def test_no_equal_rerun_when_the_probes_suffice_or_none_ran(self):
        b = self.batch(PAIR)
        for r in (1, 2, 3):
            self.probe(b, "actor-mem", r)
            self.probe(b, "async-mem", r)
        self.assertIsNone(rounds.next_round(self.status(b), "equal", 3, 1))  # no equal-load round at all
        self.equal(b, "actor-mem", 1)
        self.equal(b, "async-mem", 1)
        self.assertIsNone(rounds.next_round(self.status(b), "equal", 3, 1))  # 3 valid probe pairs

    def test_a_status_without_disturbed_marks_is_read_from_the_flags(self):
        st = {"comparisons": [{"candidate": "a", "baseline": "b", "valid_pairs": 0, "rounds": [
            {"round": 1, "valid": False, "why": [{"server": "a", "flag": "not stationary"}]},
            {"round": 2, "valid": False, "why": [{"server": "b", "flag": "errors"}]}]}], "equal": []}
        nxt = rounds.next_round(st, "probe", 3, 2)
        self.assertEqual((nxt["round"], nxt["servers"], nxt["answers"][0]["round"]), (3, ["a", "b"], 1))

    def test_league_rerun_rounds_do_not_count_for_the_other_comparisons(self):
        league = [{"scenario": "s1", "servers": ["actor-mem", "actor-sqlite", "async-mem"],
                   "comparisons": [{"candidate": "actor-mem", "baseline": "async-mem", "decides": True},
                                   {"candidate": "actor-sqlite", "baseline": "async-mem", "decides": True}]}]
        b = self.batch(league, repeats=2)
        for r in (1, 2):
            self.probe(b, "actor-mem", r, **(OTHER if r == 2 else {}))
            self.probe(b, "actor-sqlite", r)
            self.probe(b, "async-mem", r)
        nxt = rounds.next_round(self.status(b), "probe", 2, 2)
        self.assertEqual((nxt["round"], nxt["servers"]), (3, ["actor-mem", "async-mem"]))
        self.assertEqual([c["candidate"] for c in nxt["comparisons"]], ["actor-mem"])
        self.probe(b, "actor-mem", 3)
        self.probe(b, "async-mem", 3)
        st = self.status(b)
        self.assertEqual([r["round"] for r in st["comparisons"][1]["rounds"]], [1, 2])  # actor-sqlite: not in round 3
        self.assertEqual([c["valid_pairs"] for c in st["comparisons"]], [2, 2])
        self.assertIsNone(rounds.next_round(st, "probe", 2, 2))


class TestEqualRate(Base):
    def test_slowest_median_with_disturbed_probes_left_out(self):
        b = self.batch(PAIR)
        for r, rps in ((1, 60000), (2, 20000), (3, 62000), (4, 64000)):
            self.probe(b, "actor-mem", r, rps, **(OTHER if r == 2 else {}))
        for r in (1, 2, 3, 4):
            self.probe(b, "async-mem", r, 100000)
        b.summarize()
        # actor-mem: median of 60000, 62000, 64000 (20000 was the hog's) = 62000 x 0.7
        self.assertEqual(rounds.equal_rate(b.dir, "s1", ["actor-mem", "async-mem"], 0.7), 43400)

    def test_a_failed_probe_or_a_server_without_probes_is_an_error(self):
        b = self.batch(PAIR)
        self.probe(b, "actor-mem", 1)
        b.run("async-mem", "s1", "saturation", 1, probe={"rps": 1000}, failure="server exited")
        b.summarize()
        with self.assertRaisesRegex(ValueError, "a async-mem probe run failed"):
            rounds.equal_rate(b.dir, "s1", ["actor-mem", "async-mem"], 0.7)
        with self.assertRaisesRegex(ValueError, "nginx has no probe"):
            rounds.equal_rate(b.dir, "s1", ["actor-mem", "nginx"], 0.7)


class TestCommandLine(Base):
    def test_rounds_status_and_next_and_equal_rate(self):
        b = self.batch(PAIR, repeats=2)
        for r in (1, 2):
            self.probe(b, "actor-mem", r, 50000, **(OTHER if r == 2 else {}))
            self.probe(b, "async-mem", r, 100000)
        b.summarize()
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(analysis_main(["analysis", "rounds-status", b.dir, "s1"]), 0)
        st = json.loads(out.getvalue())
        self.assertEqual(st["comparisons"][0]["valid_pairs"], 1)
        out = io.StringIO()
        old_stdin = sys.stdin
        try:
            sys.stdin = io.StringIO(json.dumps(st))
            with redirect_stdout(out):
                self.assertEqual(analysis_main(["analysis", "rounds-next", "probe", "3", "2"]), 0)
        finally:
            sys.stdin = old_stdin
        self.assertEqual(json.loads(out.getvalue())["round"], 3)
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(analysis_main(["analysis", "equal-rate", b.dir, "s1", "0.7", "actor-mem,async-mem"]), 0)
        self.assertEqual(out.getvalue().strip(), "35000")


if __name__ == "__main__":
    tap_unittest.main(__name__)
