#!/usr/bin/env bash
# it_reruns.sh: self-correcting re-runs in a real `./run_all.sh --smoke` (TAP): a CPU hog
# pinned to the server's CPU during the batch's first round (started before the batch, ended
# by pid once round 1's two runs are done) makes that round invalid ("other load"); with 2
# planned rounds and MIN_VALID_PAIRS=2, run_all.sh must run a new round of both servers
# (probe-only, fresh processes), record it and why in matrix.json and index.json, count it
# in its last line, and end with the 2 valid pairs (of the probes, or of the equal-load
# runs) that the verdict's interval needs (skipped with the reasons when other work on the
# host kept disturbing the rounds after the hog until the budget ran out). s4 (sqlite): its
# smoke probes saturate the server (94-97% CPU alone), where s1's and s2's are
# loadgen-bound or short of saturation on idle CPUs about one time in three on a 2-CPU
# host, a setup reason that earns no re-run. Needs the binaries in build/; results go to a
# temporary folder, removed at the end.
# test-timeout: 400
# shellcheck disable=SC2016  # jq filters bind their own $vars
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KEEP_RESULTS="${KEEP_RESULTS:-0}"     # 1: keep the temporary results folder
HOG_MAX_SEC="${HOG_MAX_SEC:-90}"      # the hog ends after this long even if round 1 never ends

usage() {
    cat <<USAGE
usage: tests/it_reruns.sh [--help]
Environment: BUILD (build), KEEP_RESULTS (0), HOG_MAX_SEC (90).
USAGE
}
# shellcheck source=tests/lib/it.sh
. "$ROOT/tests/lib/it.sh"
it_args "$@"
# shellcheck source=runner/lib.sh
. "$ROOT/runner/lib.sh"
hog="" batch_pid=""
# shellcheck disable=SC2317  # invoked by it.sh's EXIT trap
it_on_exit() {
    if [[ -n "$hog" ]]; then kill "$hog" 2>/dev/null || true; fi
    if [[ -n "$batch_pid" ]]; then kill "$batch_pid" 2>/dev/null || true; fi
}
it_tmpdir it_reruns
export RESULTS_DIR="$TMP/results"
unset BUDGET SEED REPEATS

# ---- the batch, with a hog on the server CPU during round 1 ----------------------------------
# the server's CPU as runner.sh will pick it: the first of the CPU plan's server CPUs
srv_cpu=$(cpu_plan_sides "$(affinity_cpus)" | sed -n 1p | cut -d, -f1)
taskset -c "$srv_cpu" bash -c 'while :; do :; done' &
hog=$!
rc=0
MIN_VALID_PAIRS=2 "$ROOT/run_all.sh" --smoke --scenarios=s4 --repeats=2 --budget=3m --batch=it-reruns \
    >"$TMP/out" 2>"$TMP/err" &
batch_pid=$!
# round 1 is done when both of its runs printed their outcome ("[2/N] ...: ..."); then the hog ends
t0=$(clock_s)
while kill -0 "$batch_pid" 2>/dev/null && ! grep -Eq '^\[run_all\] \[2/[0-9]+\] [^ ]+ s4: ' "$TMP/err" &&
      awk -v t="$(clock_s)" -v t0="$t0" -v m="$HOG_MAX_SEC" 'BEGIN { exit !(t - t0 < m) }'; do
    sleep 0.2
done
kill "$hog" 2>/dev/null || true
wait "$hog" 2>/dev/null || true
hog=""
hog_s=$(calc "$(clock_s) - $t0")
wait "$batch_pid" || rc=$?
batch_pid=""
batch="$RESULTS_DIR/it-reruns"
is "run_all.sh exits 0" "$rc" 0
if [[ $rc -ne 0 ]]; then grep -E '^\[run_all\]' "$TMP/err" | sed 's/^/# /' | tail -n 30; fi
echo "# the hog ran ${hog_s} s"
[[ -f "$batch/matrix.json" ]] || echo '{}' >"$batch/matrix.json"

# ---- round 1 was disturbed, and answered by a re-run round ----------------------------------
round1=$(jq -r '[.rounds[] | select(.round == 1 and .kind == "probe") | .order[]] | map("\(.)-s4") | join(" ")' "$batch/matrix.json")
n_other=0
for run in $round1; do
    jq -e '.problems | any(.phase == "probe" and .flag == "other load")' "$batch/$run/result.json" >/dev/null 2>&1 &&
        n_other=$((n_other + 1))
done
is "the hog made both probes of round 1 flag other load" "$n_other" 2
res="$batch/matrix.json"
jqok "matrix.json: a re-run round of both servers, probe-only, numbered after the planned rounds" \
    '([.reruns[] | select(.scenario == "s4" and .kind == "probe")] | length) >= 1
     and all(.reruns[]; .round > (if .kind == "probe" then 2 else 1 end) and (.servers | sort) == ["actor-sqlite", "async-sqlite"])'
jqok "matrix.json: the first re-run answers round 1, with both runs' other-load flags" \
    '.reruns[0].answers[0].round == 1 and (.reruns[0].answers[0].why | test("actor-sqlite other load") and test("async-sqlite other load"))
     and (.reruns[0].why | test("round 1 of actor-sqlite/async-sqlite .*other load"))'
jqok "matrix.json: the re-run round is in the rounds, marked, in a random order of both servers" \
    '[.rounds[] | select(.rerun)] | length >= 1 and all(.[]; (.order | sort) == ["actor-sqlite", "async-sqlite"])'
jqok "matrix.json: MIN_VALID_PAIRS, the budget and the seed are recorded" \
    '.min_valid_pairs == 2 and .budget_s == 180 and .budget_default == false and (.seed | type) == "number"'
first_rerun=$(jq -r '.reruns[0].round // 0' "$batch/matrix.json")
n_fresh=0
for sv in actor-sqlite async-sqlite; do
    jq -e --argjson r "$first_rerun" '.kind == "probe" and .repeat == $r and .config.round == $r and .failure == null' \
        "$batch/$sv-s4-probe$first_rerun/result.json" >/dev/null 2>&1 && n_fresh=$((n_fresh + 1))
done
is "the re-run round's runs are probe-only runs of their own (-probe$first_rerun), round recorded" "$n_fresh" 2

# ---- enough valid pairs for an interval -------------------------------------------------------
analysis rounds-status "$batch" s4 >"$TMP/status.json" 2>"$TMP/status.err" || echo '{}' >"$TMP/status.json"
res="$TMP/status.json"
# (the probes' pairs, or when the host kept disturbing them, the equal-load pairs run instead)
jqok "rounds-status: round 1 invalid for other load and disturbed" \
    '.comparisons[0].rounds[0].round == 1 and .comparisons[0].rounds[0].valid == false
     and (.comparisons[0].rounds[0].why | test("other load")) and .comparisons[0].rounds[0].disturbed'
jq -c '(.comparisons[0].rounds[] | {probe_round: .round, valid, disturbed, why}), (.equal[0].rounds[] | {equal_round: .round, valid, disturbed, why})' \
    "$TMP/status.json" 2>/dev/null | sed 's/^/# /' || true
# The interval needs the host quiet after the hog. When other work on the shared host kept
# disturbing the later rounds until the budget stopped the re-runs, the product did what it
# should, but the checks below are this test's purpose: they fail (a skip on a condition the
# product computed would let them never run); the rounds' reasons are printed first.
busy=$(jq -r --slurpfile m "$batch/matrix.json" '
    if (.comparisons[0].valid_pairs // 0) < 2 and (.equal[0].valid_pairs // 0) < 2
       and ($m[0].budget_stops | length) > 0
       and ([(.comparisons[0].rounds // [])[1:][], (.equal[0].rounds // [])[1:][] | select(.disturbed)] | length) > 0
    then "the host disturbed \([(.comparisons[0].rounds // [])[1:][], (.equal[0].rounds // [])[1:][] | select(.disturbed)] | length) later round(s) until the budget stopped the re-runs (run it on a quiet host)"
    else "" end' "$TMP/status.json" 2>/dev/null || true)
[[ -z "$busy" ]] || echo "# $busy"
jqok "rounds-status: 2 valid probe or equal-load pairs (an interval)" \
    '.comparisons[0].valid_pairs >= 2 or .equal[0].valid_pairs >= 2'
jqfile "index.json: s4 decided on an interval of at least 2 valid pairs (never INCONCLUSIVE for want of pairs)" \
    "$batch/index.json" '[.comparisons[] | select(.scenario == "s4")] | length == 1 and all(.[];
        .basis != null and .pairs_used >= 2 and (.ci_low | type) == "number" and (.ci_high | type) == "number"
        and .ci_low <= .ratio and .ratio <= .ci_high
        and (if .verdict == "PASS" then .ci_low >= .target_ratio elif .verdict == "FAIL" then .ci_high < .target_ratio
            elif .verdict == "INCONCLUSIVE" then (.reasons | length) > 0 else false end))'
jq -r '.comparisons[] | "# s4: \(.verdict) on \(.basis), \(.ratio) (\(.ci_low)-\(.ci_high)), \(.pairs_used) of \(.pairs_total) pairs"' \
    "$batch/index.json" 2>/dev/null || true
jqfile "index.json: the re-run probes are among the batch's probes, the re-run listed with why" "$batch/index.json" \
    '([.probe_runs[] | select(.repeat == $r)] | length) == 2 and (.reruns | length) >= 1
     and (.reruns[0].why | test("other load"))' --argjson r "$first_rerun"

# ---- run_all's last lines ---------------------------------------------------------------------
ok "run_all's next-to-last line is the verdict" bash -c "tail -n 2 '$TMP/err' | head -n 1 | grep -q '^\[run_all\] verdict: '"
ok "run_all's last line counts the re-runs and says why" \
    bash -c "tail -n 1 '$TMP/err' | grep -Eq '^\[run_all\] re-runs: [1-9][0-9]* round\(s\), [0-9]+ run\(s\): s4 probe round [0-9]+ for round 1 of actor-sqlite/async-sqlite \(.*other load'"

tap_finish
