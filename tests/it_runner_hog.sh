#!/usr/bin/env bash
# it_runner_hog.sh: a real `./run_all.sh --smoke` (s1, s2, two interleaved probes per server)
# with a CPU hog pinned to the server's CPU (TAP): every run must flag the other load, both
# scenarios must be INCONCLUSIVE with a reason and a remedy, and nothing may print PASS or
# FAIL. Needs the binaries in build/; results go to a temporary folder, removed at the end.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KEEP_RESULTS="${KEEP_RESULTS:-0}"     # 1: keep the temporary results folder

usage() {
    cat <<USAGE
usage: tests/it_runner_hog.sh [--help]
Environment: BUILD (build), KEEP_RESULTS (0).
USAGE
}
# shellcheck source=tests/lib/it.sh
. "$ROOT/tests/lib/it.sh"
it_args "$@"
# shellcheck source=runner/lib.sh
. "$ROOT/runner/lib.sh"
hog=""
# shellcheck disable=SC2317  # invoked by it.sh's EXIT trap
it_on_exit() {
    if [[ -n "$hog" ]]; then kill "$hog" 2>/dev/null || true; fi
}
it_tmpdir it_runner_hog
export RESULTS_DIR="$TMP/results"

# ---- a CPU hog on the server CPU: never PASS or FAIL ----------------------------------------
# the server's CPU as runner.sh will pick it: the first of the CPU plan's server CPUs
srv_cpu=$(cpu_plan_sides "$(affinity_cpus)" | sed -n 1p | cut -d, -f1)
taskset -c "$srv_cpu" bash -c 'while :; do :; done' &
hog=$!
rc=0
# --budget=1: the disturbed rounds ask for re-runs, which the budget refuses (re-runs after a
# hog that stops: tests/it_reruns.sh). EQUAL_LOAD=0: the probes alone (8 runs, not 16, for
# the suite's time): an equal-load run is flagged by the same window analysis as a probe,
# and tests/test_verdict.py has what the verdict makes of flagged equal-load runs
EQUAL_LOAD=0 "$ROOT/run_all.sh" --smoke --scenarios=s1,s2 --repeats=2 --batch=it-hog --fail-on-verdict --budget=1 \
    >"$TMP/hog.out" 2>"$TMP/hog.err" || rc=$?
kill "$hog" 2>/dev/null || true
wait "$hog" 2>/dev/null || true
hog=""
res="$RESULTS_DIR/it-hog/index.json"
is "run_all.sh with a CPU hog on the server CPU exits 4 (INCONCLUSIVE) with --fail-on-verdict" "$rc" 4
jqok "hog: probe-only runs for the second repeat, interleaved" \
    '(.probe_runs | length) == 4 and all(.probe_runs[]; .kind == "probe" and .repeat == 2 and .sustained_rps == null)'
jqok "hog: every run flags other load on the server CPUs" \
    '(.equal_load_runs | length) == 0 and all(.runs[], .probe_runs[]; .flags | index("other load") != null)'
jqok "hog: s1 and s2 INCONCLUSIVE with a reason and a remedy" \
    'all(.comparisons[]; .verdict == "INCONCLUSIVE" and (.reasons | length) > 0 and (.remedies | any(test("quiet host"))))'
ok "hog: summary.md never says PASS or FAIL" bash -c "! grep -Eq 'Verdict: (PASS|FAIL)' '$RESULTS_DIR/it-hog/summary.md'"
ok "hog: run_all's verdict line is INCONCLUSIVE" grep -q 'verdict: .*INCONCLUSIVE' "$TMP/hog.err"
jqfile "hog: the disturbed rounds asked for re-runs of s1 and s2, all refused by the budget" \
    "$RESULTS_DIR/it-hog/matrix.json" '(.reruns | length) == 0 and ([.budget_stops[].scenario] | unique) == ["s1", "s2"]'
ok "hog: run_all's last line counts the re-runs" bash -c "tail -n 1 '$TMP/hog.err' | grep -q 're-runs: none ([0-9]* not run: over the budget of 1 s)'"

tap_finish
