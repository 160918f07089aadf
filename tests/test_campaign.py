#!/usr/bin/env python3
"""test_campaign.py: unit tests of runner/analysis/campaign.py (TAP), the many-core campaign's
plan (scripts/campaign.sh --dry-run) on the fixture topologies of tests/fixtures/topology/gen.py:
its counts (1, 2, 4 and the plan's largest size, what cannot run skipped with a reason), the
duration tier and optional work chosen to fit the target, the estimate's model, the refusal of
a host below --min-cpus, the options, and the headline. The estimate against a measured run:
tests/it_campaign.sh. Runs no benchmark (run_all.sh --help and --cpu-plan only).
"""
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import unittest.mock
from contextlib import redirect_stdout, redirect_stderr

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "runner"))
sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures", "topology"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from analysis import campaign, cpuplan  # noqa: E402
import gen  # noqa: E402
import tap_unittest  # noqa: E402

TMP = tempfile.mkdtemp(prefix="test_campaign.")
TREES = {name: gen.build(name, os.path.join(TMP, name)) for name in ("vm2", "smt8x2", "epyc32", "arm64")}
ENV0 = {"SMT": "", "SERVER_CPUS": "", "LOADGEN_CPUS": ""}


def env_of(tree, mask, **kw):
    return dict(os.environ, **ENV0, CPU_TOPOLOGY_ROOT=TREES[tree], CPU_MASK=mask, **kw)


def opts(*argv):
    return campaign.parse_args(list(argv) + ["--dry-run"])


class TestCounts(unittest.TestCase):
    def test_16_cores_no_smt_runs_1_2_4_and_the_largest_6(self):
        topo = cpuplan.Topology(TREES["arm64"], cpuplan.parse_list("0-15"))
        largest, req, extra, skipped = campaign.counts_plan(topo, "one")
        self.assertEqual((largest, req, extra, skipped), (6, [1, 2, 4, 6], [], []))

    def test_epyc32_adds_8_as_optional_below_the_largest_12(self):
        topo = cpuplan.Topology(TREES["epyc32"], cpuplan.parse_list("0-63"))
        largest, req, extra, skipped = campaign.counts_plan(topo, "one")
        self.assertEqual((largest, req, extra, skipped), (12, [1, 2, 4, 12], [8], []))

    def test_two_cpus_skip_2_and_4_saying_why(self):
        topo = cpuplan.Topology(TREES["vm2"], cpuplan.parse_list("0,1"))
        largest, req, extra, skipped = campaign.counts_plan(topo, "one")
        self.assertEqual((largest, req), (1, [1]))
        self.assertEqual([n for n, _ in skipped], [2, 4])
        self.assertTrue(all(why for _, why in skipped))


class TestEstimate(unittest.TestCase):
    def test_model_parts_for_the_smoke_tier(self):
        env = {"CAMPAIGN_RUN_OVERHEAD_S": "4", "CAMPAIGN_PLATEAU_SHARE": "0.25"}
        e = campaign.estimate(campaign.SMOKE, 0, env)
        # 6 runs of probe 1+2 and sustain 1+2, 6 second-round probes, 6 equal-load runs of 1+1,
        # 4 s each on top; a plateau probe for a quarter of the 12 probes; 20 s fixed
        self.assertEqual(e["matrix"], 6 * (6 + 4) + 6 * (3 + 4) + 6 * (2 + 4))
        self.assertEqual(e["scaling"], 0)
        self.assertEqual(e["plateau"], 3 * 3)
        self.assertEqual(e["total"], e["matrix"] + e["plateau"] + 20)

    def test_ladder_part_per_server_for_the_smoke_tier(self):
        env = {"CAMPAIGN_RUN_OVERHEAD_S": "4", "CAMPAIGN_PLATEAU_SHARE": "0.25"}
        # 15 s fixed, then per server: a probe 1+2 and sustain 1+2, a second-round probe, 4 s
        # each on top, and a plateau probe (a quarter of 2 probes, rounded up): 20 s a server
        self.assertEqual(campaign.estimate(campaign.SMOKE, 0, env, ladder=True, ladder_servers=3)["ladder"], 15 + 3 * 20)
        self.assertEqual(campaign.estimate(campaign.SMOKE, 0, env, ladder=True)["ladder"], 15 + 9 * 20)

    def test_more_counts_cost_more(self):
        env = {}
        t = campaign.TIERS[0]
        self.assertLess(campaign.estimate(t, 1, env)["total"], campaign.estimate(t, 3, env)["total"])


class TestPlan(unittest.TestCase):
    def test_16_cpus_fit_the_7_minute_target_and_the_9_minute_budget(self):
        p = campaign.plan(opts(), env_of("arm64", "0-15"), ROOT)
        self.assertEqual(p["counts"], [1, 2, 4, 6])
        self.assertLessEqual(p["estimate"]["total"], 420)
        self.assertIn("--scaling=1,2,4,6", p["main_args"])
        self.assertIn("--pair=actor-mem,async-mem", p["main_args"])

    def test_a_shorter_target_takes_a_shorter_tier(self):
        long = campaign.plan(opts("--target=20m", "--budget=20m"), env_of("arm64", "0-15"), ROOT)
        short = campaign.plan(opts("--target=4m"), env_of("arm64", "0-15"), ROOT)
        self.assertEqual(long["tier"]["name"], "long")
        self.assertGreater(long["tier"]["probe"], short["tier"]["probe"])
        self.assertLessEqual(short["estimate"]["total"], long["estimate"]["total"])

    def test_optional_count_taken_only_when_it_fits(self):
        roomy = campaign.plan(opts("--target=30m", "--budget=30m"), env_of("epyc32", "0-63"), ROOT)
        tight = campaign.plan(opts("--target=5m"), env_of("epyc32", "0-63"), ROOT)
        self.assertIn(8, roomy["counts"])
        self.assertNotIn(8, tight["counts"])
        self.assertTrue(any(x.startswith("8 server CPUs") for x in tight["left"]))

    def test_a_host_below_min_cpus_is_refused(self):
        with self.assertRaises(campaign.CampaignError) as cm:
            campaign.plan(opts(), env_of("vm2", "0,1"), ROOT)
        self.assertIn("needs 8 or more", str(cm.exception))
        p = campaign.plan(opts("--min-cpus=1", "--smoke"), env_of("vm2", "0,1"), ROOT)
        self.assertEqual((p["counts"], p["tier"]["name"]), ([1], "smoke"))

    def test_placement_rungs_planned_at_7m_left_out_at_9m(self):
        # run_all.sh takes --ladder=RUNG,...: the second batch is the placement rungs alone (3
        # servers). At the default 7 minutes the minimal tier leaves room for them (403 s of 420
        # with the cost account at 10 s a row); at 9 minutes the longer 'short' tier is taken
        # (494 s) and the rungs (102 s more: 596 s) would pass it, so they are left out, said.
        env = env_of("arm64", "0-15", CAMPAIGN_COST_S="10")
        self.assertTrue(campaign.run_all_features(ROOT)["ladder_rungs"])
        p7 = campaign.plan(opts(), env, ROOT)
        self.assertEqual((p7["tier"]["name"], p7["ladder"], p7["ladder_opt"]), ("minimal", True, "--ladder=default,spread"))
        self.assertEqual((p7["estimate"]["ladder"], p7["estimate"]["total"]), (63, 403))
        self.assertIn("campaign: cost account: yes; the ladder (--ladder=default,spread) at 6 CPUs: yes", campaign.plan_text(p7))
        p9 = campaign.plan(opts("--target=9m"), env, ROOT)
        self.assertEqual((p9["tier"]["name"], p9["ladder"], p9["estimate"]["total"]), ("short", False, 494))
        self.assertIn("the ladder (--ladder=default,spread: 3 servers on s2 at 6 server CPUs: over the target)", p9["left"])
        self.assertEqual(campaign.estimate(p9["tier"], 3, env, cost=True, ladder=True, ladder_servers=3)["ladder"], 102)

    def test_whole_ladder_where_run_all_takes_no_rungs(self):
        self.assertEqual(campaign.ladder_batch({"ladder": True, "ladder_rungs": False}), ("--ladder", 9))
        self.assertEqual(campaign.ladder_batch({"ladder": True, "ladder_rungs": True}), ("--ladder=default,spread", 3))

    def test_features_absent_are_said_and_no_flag_is_passed(self):
        p = campaign.plan(opts(), env_of("arm64", "0-15"), ROOT)
        feats = campaign.run_all_features(ROOT)
        if not feats["cost"]:
            self.assertTrue(any("cost account" in x for x in p["left"]))
            self.assertNotIn("--no-cost", p["main_args"])
        if not feats["ladder"]:
            self.assertTrue(any("ladder" in x for x in p["left"]))


class TestOptions(unittest.TestCase):
    def test_durations(self):
        self.assertEqual([campaign.duration_s(x) for x in ("9m", "540", "540s", "1h30m")], [540, 540, 540, 5400])
        for bad in ("", "0", "9x", "m"):
            with self.assertRaises(campaign.CampaignError):
                campaign.duration_s(bad)

    def test_out_is_required_unless_dry_run(self):
        with self.assertRaises(campaign.CampaignError):
            campaign.parse_args([])
        self.assertEqual(campaign.parse_args(["o"])["out"], "o")
        with self.assertRaises(campaign.CampaignError):
            campaign.parse_args(["a", "b"])
        with self.assertRaises(campaign.CampaignError):
            campaign.parse_args(["--counts=1,x", "o"])

    def test_target_never_above_budget(self):
        o = campaign.parse_args(["--budget=5m", "o"])
        self.assertEqual((o["budget"], o["target"]), (300, 300))

    def test_cli_dry_run_on_a_fixture_and_refusal_exit_2(self):
        out = subprocess.run([os.path.join(ROOT, "scripts", "campaign.sh"), "--dry-run"], capture_output=True,
                             text=True, env=env_of("smt8x2", "0-15"), timeout=60, check=False)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("server CPUs", out.stdout)
        self.assertIn("--scaling 1 server CPU: run", out.stdout)
        est = [line for line in out.stdout.splitlines() if line.startswith("campaign: estimate_s=")]
        self.assertEqual(len(est), 1)
        self.assertLessEqual(int(est[0].split("=")[1]), 540)
        bad = subprocess.run([os.path.join(ROOT, "scripts", "campaign.sh"), "--dry-run"], capture_output=True,
                             text=True, env=env_of("vm2", "0,1"), timeout=60, check=False)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("needs 8 or more", bad.stderr)


STUB_RUN_ALL = r"""#!/usr/bin/env bash
# a stand-in for run_all.sh: --help, --cpu-plan, and a batch that writes its three files
set -euo pipefail
case "$1" in
    --help) echo "usage: run_all.sh [--scaling=LIST] [--no-cost]"; exit 0 ;;
    --cpu-plan) echo "server_cpus=0-5"; exit 0 ;;
esac
echo "args: $*" >>"$RESULTS_DIR/calls"
echo "env: PROBE_SEC=$PROBE_SEC MIN_VALID_PAIRS=$MIN_VALID_PAIRS" >>"$RESULTS_DIR/calls"
for a in "$@"; do case "$a" in --batch=*) b=${a#--batch=} ;; esac; done
mkdir -p "$RESULTS_DIR/$b/actor-mem-s1"
echo '{}' >"$RESULTS_DIR/$b/actor-mem-s1/result.json"
echo "# summary" >"$RESULTS_DIR/$b/summary.md"
echo "<html></html>" >"$RESULTS_DIR/$b/report.html"
cat >"$RESULTS_DIR/$b/index.json" <<'J'
{"verdict": {"overall": "PASS", "headline": "stub"}, "scaling": {"table": []}}
J
echo "[run_all] done"
if [[ -n "${STUB_SLEEP:-}" ]]; then
    trap 'kill "$!" 2>/dev/null; exit 143' TERM
    sleep "$STUB_SLEEP" & wait "$!"
fi
"""


class TestRun(unittest.TestCase):
    """run() against a stand-in run_all.sh: the batch's arguments and environment, the files
    under OUT (at most 8), the headline last."""

    def test_stub_batch_files_and_headline_last(self):
        root = tempfile.mkdtemp(prefix="test_campaign.root.")
        try:
            with open(os.path.join(root, "run_all.sh"), "w", encoding="utf-8") as fh:
                fh.write(STUB_RUN_ALL)
            os.chmod(os.path.join(root, "run_all.sh"), 0o755)
            results, out = os.path.join(root, "results"), os.path.join(root, "out")
            os.makedirs(results)
            # the cost stage's seconds a row pinned (its own estimate follows the cost module):
            # 25 s a row, 8 rows, does not fit the 7-minute target with the "short" tier
            env = env_of("arm64", "0-15", RESULTS_DIR=results, CAMPAIGN_COST_S="25")
            buf = io.StringIO()
            with redirect_stdout(buf), unittest.mock.patch.dict(os.environ, env, clear=True):
                rc = campaign.main([out], root)
            self.assertEqual(rc, 0, buf.getvalue())
            lines = buf.getvalue().splitlines()
            self.assertEqual(lines[-1], "campaign: PASS: stub")
            self.assertEqual(sorted(os.listdir(out)), ["campaign.log", "index.json", "plan.txt", "report.html",
                                                       "runs.tar.gz", "summary.md"])
            with open(os.path.join(results, "calls"), encoding="utf-8") as fh:
                calls = fh.read()
            self.assertIn("--scaling=1,2,4,6", calls)
            self.assertIn("--no-cost", calls)   # the stub has a cost stage; it does not fit 7 minutes
            self.assertIn("env: PROBE_SEC=4 MIN_VALID_PAIRS=2", calls)
            est = next(int(x.split()[2]) for x in lines if x.startswith("campaign: estimate "))
            budget = int(re.search(r"--budget=(\d+)", calls).group(1))
            self.assertLessEqual(budget, 420)   # re-runs only up to the 7-minute target
            self.assertGreater(budget, est - 30)
        finally:
            shutil.rmtree(root, ignore_errors=True)


    def test_a_batch_past_the_budget_is_ended_and_what_ran_is_packed(self):
        root = tempfile.mkdtemp(prefix="test_campaign.root.")
        try:
            with open(os.path.join(root, "run_all.sh"), "w", encoding="utf-8") as fh:
                fh.write(STUB_RUN_ALL)
            os.chmod(os.path.join(root, "run_all.sh"), 0o755)
            results, out = os.path.join(root, "results"), os.path.join(root, "out")
            os.makedirs(results)
            env = env_of("arm64", "0-15", RESULTS_DIR=results, STUB_SLEEP="120")
            buf = io.StringIO()
            t0 = time.monotonic()
            with redirect_stdout(buf), unittest.mock.patch.dict(os.environ, env, clear=True):
                rc = campaign.main(["--budget=40s", out], root)
            took = time.monotonic() - t0
            self.assertEqual(rc, 1, buf.getvalue())
            self.assertLess(took, 40)   # ended at budget - END_S (10 s), not after the stub's 120 s
            self.assertIn("campaign: stopped (budget)", buf.getvalue())
            self.assertEqual(buf.getvalue().splitlines()[-1], "campaign: PASS: stub")
            self.assertIn("runs.tar.gz", os.listdir(out))
        finally:
            shutil.rmtree(root, ignore_errors=True)


class TestHeadline(unittest.TestCase):
    def test_verdict_then_ratios_per_count_invalid_marked(self):
        index = {"verdict": {"overall": "PASS", "headline": "actor-mem at 0.91 of async-mem"},
                 "scaling": {"table": [
                     {"scenario": "s1", "server": "actor-mem", "server_cpus": 1, "rps": 90.0, "valid": True},
                     {"scenario": "s1", "server": "async-mem", "server_cpus": 1, "rps": 100.0, "valid": True},
                     {"scenario": "s1", "server": "actor-mem", "server_cpus": 4, "rps": 300.0, "valid": False},
                     {"scenario": "s1", "server": "async-mem", "server_cpus": 4, "rps": 200.0, "valid": True}]}}
        line = campaign.headline(index)
        self.assertTrue(line.startswith("campaign: PASS: actor-mem at 0.91 of async-mem"))
        self.assertIn("s1 1:0.90 4:1.50?", line)


if __name__ == "__main__":
    try:
        tap_unittest.main(__name__)
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
