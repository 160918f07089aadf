#!/usr/bin/env python3
"""test_rounds.py: unit tests of run_all.sh's re-run rule, runner/analysis/rounds.py (TAP), on
the rounds-status of batches written the way runner.sh and run_all.sh write them
(tests/test_analysis.py's Batch, matrix.json with groups): which runs the host disturbed (a
disturbing flag, or a probe short of saturation on full CPUs) and which rounds earn a re-run
(the disturbed ones; for the equal-load runs also the valid ones while the probes gave too
few pairs) and which do not (setup reasons), league re-runs that do not count for the other
comparisons, and the command line. Runs no benchmark; writes only to a temporary folder.
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

from analysis import batch, result, rounds, verdict  # noqa: E402
from analysis.__main__ import _rounds_status, main as analysis_main  # noqa: E402
import tap_unittest  # noqa: E402
from test_analysis import Batch  # noqa: E402

OTHER = {"other": 30.0, "server_cpu": 60.0}        # a hog on the server CPU: other load, not saturated
LG_BOUND = {"server_cpu": 70.0, "lg_cpu": 97.0}     # the load generator saturated first
CROWDED = {"server_cpu": 85.0, "other": 8.0}        # CPUs full, others under the threshold: not saturated
IDLE = {"server_cpu": 70.0, "lg_cpu": 50.0}         # CPUs partly idle: not saturated, the setup's


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
        if rnd > 1:  # the folder and the run's name, as runner.sh writes them with RUN_SUFFIX=-equalN
            d = os.path.join(b.dir, f"{server}-s1-equal{rnd}")
            os.rename(first, d)
            os.rename(aside, first)
            with open(os.path.join(d, "facts.json"), encoding="utf-8") as fh:
                facts = json.load(fh)
            facts["run"] = os.path.basename(d)
            with open(os.path.join(d, "facts.json"), "w", encoding="utf-8") as fh:
                json.dump(facts, fh)
            result.write(d)

    def status(self, b):
        b.summarize()
        return _rounds_status(b.dir, "s1")


PAIR = [{"scenario": "s1", "servers": ["actor-mem", "async-mem"],
         "comparisons": [{"candidate": "actor-mem", "baseline": "async-mem", "decides": True}]}]


class TestStatus(Base):
    def test_the_status_names_the_disturbed_round_by_its_flags(self):
        b = self.batch(PAIR)
        for r in (1, 2, 3):
            self.probe(b, "actor-mem", r, 60000, **(OTHER if r == 2 else {}))
            self.probe(b, "async-mem", r, 100000)
        c = self.status(b)["comparisons"][0]
        self.assertEqual((c["candidate"], c["baseline"], c["valid_pairs"]), ("actor-mem", "async-mem", 2))
        self.assertEqual([(r["round"], r["valid"], rounds.disturbed(r)) for r in c["rounds"]],
                         [(1, True, False), (2, False, True), (3, True, False)])
        self.assertIn("other load", rounds.flags_of(c["rounds"][1]))
        self.assertIn("actor-mem other load", rounds.why_text(c["rounds"][1]))

    def test_a_probe_short_of_saturation_on_full_cpus_was_disturbed_on_idle_ones_not(self):
        b = self.batch(PAIR)
        for r, spec in ((1, CROWDED), (2, IDLE), (3, OTHER)):
            self.probe(b, "actor-mem", r, **spec)
            self.probe(b, "async-mem", r)
        st = self.status(b)
        c = st["comparisons"][0]
        self.assertEqual([rounds.flags_of(r) for r in c["rounds"]], [["not saturated"], ["not saturated"],
                                                                      ["not saturated", "other load"]])
        self.assertEqual([r["disturbed"] for r in c["rounds"]], [True, False, True])
        nxt = rounds.next_round(st, "probe", 3, 3)
        self.assertEqual([a["round"] for a in nxt["answers"]], [1])
        runs = batch.Batch(b.dir).probes("actor-mem", "s1")
        self.assertEqual([rounds.disturbed_run(runs[r], "probe") for r in (1, 2, 3)], [True, False, True])
        self.assertFalse(rounds.disturbed_run(None, "probe"))
        self.assertFalse(rounds.disturbed_run(dict(runs[3], failure="crashed"), "probe"))

    def test_flags_from_either_form_of_why(self):
        self.assertEqual(rounds.flags_of({"why": "actor-mem other load; async-mem not stationary"}),
                         ["other load", "not stationary"])
        self.assertEqual(rounds.flags_of({"why": [{"server": "a", "flag": "errors"}]}), ["errors"])
        self.assertEqual(rounds.flags_of({"why": ""}), [])
        self.assertFalse(rounds.disturbed({"valid": True, "why": "a other load"}))
        self.assertTrue(rounds.disturbed({"valid": False, "why": "a loadgen-bound; b not stationary"}))
        self.assertFalse(rounds.disturbed({"valid": False, "why": "a loadgen-bound; b not saturated"}))


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
        self.assertIn("actor-mem other load", nxt["answers"][0]["why"])
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
        self.assertEqual({f for r in st["comparisons"][0]["rounds"] for f in rounds.flags_of(r)}, {"loadgen-bound"})
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
            self.probe(b, "actor-mem", r, **(LG_BOUND if r > 1 else {}))
            self.probe(b, "async-mem", r)
        self.equal(b, "actor-mem", 1, 90000)
        self.equal(b, "async-mem", 1, 100000)
        st = self.status(b)
        self.assertEqual((st["comparisons"][0]["valid_pairs"], st["equal"][0]["valid_pairs"]), (1, 1))
        nxt = rounds.next_round(st, "equal", 3, 1, figure_min=verdict.MIN_PAIRS)
        self.assertEqual((nxt["kind"], nxt["round"], nxt["answers"][0]["valid"]), ("equal", 2, True))
        # a second pair invalid for the setup: no third
        self.equal(b, "actor-mem", 2, 90000, lg_cpu=97.0)
        self.equal(b, "async-mem", 2, 100000)
        st = self.status(b)
        self.assertEqual([r["valid"] for r in st["equal"][0]["rounds"]], [True, False])
        self.assertIsNone(rounds.next_round(st, "equal", 3, 1, figure_min=verdict.MIN_PAIRS))

    def test_no_equal_rerun_once_the_probes_give_the_figure(self):
        b = self.batch(PAIR)
        for r in (1, 2, 3):
            self.probe(b, "actor-mem", r, **(LG_BOUND if r == 3 else {}))
            self.probe(b, "async-mem", r)
        self.equal(b, "actor-mem", 1)
        self.equal(b, "async-mem", 1)
        st = self.status(b)
        self.assertEqual(st["comparisons"][0]["valid_pairs"], 2)  # fewer than 3, enough for the verdict's figure
        self.assertIsNone(rounds.next_round(st, "equal", 3, 1, figure_min=2))
        self.assertIsNotNone(rounds.next_round(st, "equal", 3, 1, figure_min=3))

    def test_no_equal_rerun_when_the_probes_suffice_or_none_ran(self):
        b = self.batch(PAIR)
        for r in (1, 2, 3):
            self.probe(b, "actor-mem", r)
            self.probe(b, "async-mem", r)
        self.assertIsNone(rounds.next_round(self.status(b), "equal", 3, 1))  # no equal-load round at all
        self.equal(b, "actor-mem", 1)
        self.equal(b, "async-mem", 1)
        self.assertIsNone(rounds.next_round(self.status(b), "equal", 3, 1))  # 3 valid probe pairs

    def test_a_status_with_a_list_of_why_or_a_disturbed_mark(self):
        st = {"comparisons": [{"candidate": "a", "baseline": "b", "valid_pairs": 0, "rounds": [
            {"round": 1, "valid": False, "why": [{"server": "a", "flag": "not stationary"}]},
            {"round": 2, "valid": False, "disturbed": False, "why": "b other load"}]}], "equal": []}
        nxt = rounds.next_round(st, "probe", 3, 2)
        self.assertEqual((nxt["round"], nxt["servers"], nxt["answers"][0]["round"]), (3, ["a", "b"], 1))
        self.assertEqual(nxt["answers"][0]["why"], "a not stationary")

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
        self.assertEqual([c["valid_pairs"] for c in st["comparisons"]], [2, 2])
        self.assertIsNone(rounds.next_round(st, "probe", 2, 2))
        # round 3 was not actor-sqlite's: it neither counts as its re-run nor earns one
        st["comparisons"][1]["valid_pairs"] = 1
        st["comparisons"][1]["rounds"][0].update(valid=False, disturbed=True, why="actor-sqlite other load")
        nxt = rounds.next_round(st, "probe", 2, 2)
        self.assertEqual((nxt["round"], nxt["servers"]), (4, ["actor-sqlite", "async-mem"]))


class TestCommandLine(Base):
    def test_rounds_status_piped_into_rounds_next(self):
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


if __name__ == "__main__":
    tap_unittest.main(__name__)
