#!/usr/bin/env bash
# it_calibrate.sh: a real A/A batch end to end (TAP): `./run_all.sh --smoke --calibrate` on s1
# (async-mem against its generated twin async-mem-b), then what it left: the twin definition,
# matrix.json's calibrate mark and balanced order, every run's canary (host_speed), index.json's
# host_speed and noise_floor, the calibration file with the batch under mode smoke, and a
# second batch of that mode that finds the file. Smoke figures are not results: nothing here
# asserts a ratio. Needs the binaries in build/; results go to a temporary folder.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KEEP_RESULTS="${KEEP_RESULTS:-0}"     # 1: keep the temporary results folder

usage() {
    cat <<USAGE
usage: tests/it_calibrate.sh [--help]
Environment: BUILD (build), KEEP_RESULTS (0).
USAGE
}
# shellcheck source=tests/lib/it.sh
. "$ROOT/tests/lib/it.sh"
it_args "$@"
it_tmpdir it_calibrate
export RESULTS_DIR="$TMP/results"
unset CALIBRATION

rc=0
EQUAL_LOAD=0 "$ROOT/run_all.sh" --smoke --calibrate --scenarios=s1 --repeats=2 --batch=it-aa --budget=1 \
    >"$TMP/aa.out" 2>"$TMP/aa.err" || rc=$?
res="$RESULTS_DIR/it-aa/index.json"
cal="$RESULTS_DIR/calibration/$(hostname).json"
is "run_all.sh --smoke --calibrate exits 0" "$rc" 0
ok "the twin definition is written" grep -q '^# async-mem-b: async-mem under a second name' \
    "$RESULTS_DIR/calibration/defs/async-mem-b.toml"
jqfile "matrix.json: an A/A batch of async-mem-b against async-mem, rounds in both orders" \
    "$RESULTS_DIR/it-aa/matrix.json" '.calibrate == true
     and .groups == [{scenario: "s1", servers: ["async-mem-b", "async-mem"],
                      comparisons: [{candidate: "async-mem-b", baseline: "async-mem", decides: true}]}]
     and ([.rounds[] | select(.round <= 2) | .order] | .[0] == (.[1] | reverse))'
jqok "every run has its canary before and after (us)" \
    'all(.runs[], .probe_runs[]; (.host_speed.canary_before_us | type) == "number"
                                 and (.host_speed.canary_after_us | type) == "number")'
jqok "index.json: the batch's median canary and the calibrate mark" \
    '(.host_speed.canary_median_us > 0) and .host_speed.slow_share == 0.25 and .calibrate == true'
ok "summary.md says it is a calibration batch" grep -q '^Calibration batch (A/A' "$RESULTS_DIR/it-aa/summary.md"
ok "run_all.sh names the calibration file" grep -q "calibration: the A/A pair ratios added to the host's noise floor, $cal" "$TMP/aa.err"
jqfile "the calibration file holds the batch under mode smoke" "$cal" \
    '.schema == 1 and ([.batches[] | [.batch, .mode, .scenario]] == [["it-aa", "smoke", "s1"]]) and (.floor | has("smoke"))'
# a later batch of the host and mode reads the file (re-summarized as a normal batch)
cp -r "$RESULTS_DIR/it-aa" "$RESULTS_DIR/it-ab"
jq 'del(.calibrate)' "$RESULTS_DIR/it-aa/matrix.json" >"$RESULTS_DIR/it-ab/matrix.json"
"$ROOT/runner/summarize.sh" "$RESULTS_DIR/it-ab" >/dev/null 2>&1
jqfile "a later smoke batch names the file, or says its floor is empty" "$RESULTS_DIR/it-ab/index.json" \
    '(.noise_floor.file == "'"$cal"'") or (.noise_floor.file == null and (.noise_floor.note | test("no A/A calibration")))'

tap_finish
