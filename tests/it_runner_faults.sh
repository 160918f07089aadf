#!/usr/bin/env bash
# it_runner_faults.sh: the runner under faults (TAP), each injected into a real
# `runner.sh actor-mem s1 --smoke --probe-only` on 127.0.0.1 in its measured window: the
# server killed -9, the load generator killed -9, the load generator stopped (SIGSTOP: it
# hangs), the server stopped (SIGSTOP: it stops answering), the results folder on a full disk
# (a 40 KB tmpfs; skipped, counted, when not root); then a `run_all.sh --smoke` batch
# interrupted by SIGINT in its second run. Each must end in bounded time, exit non-zero, say
# its cause in one line and leave no result, index.json or summary.md passed off as whole.
# test-timeout: 600
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KEEP_RESULTS="${KEEP_RESULTS:-0}"     # 1: keep the temporary results folder
RUN_LIMIT_S="${RUN_LIMIT_S:-90}"      # a run still going after this long hangs: a failure

usage() {
    cat <<USAGE
usage: tests/it_runner_faults.sh [--help]
Environment: BUILD (build), KEEP_RESULTS (0), RUN_LIMIT_S ($RUN_LIMIT_S).
USAGE
}
# shellcheck source=tests/lib/it.sh
. "$ROOT/tests/lib/it.sh"
it_args "$@"
mnt="" rpid="" stopped=""
# shellcheck disable=SC2317  # invoked by it.sh's EXIT trap
it_on_exit() {
    if [[ -n "$stopped" ]]; then kill -CONT "$stopped" 2>/dev/null || true; fi
    if [[ -n "$rpid" ]] && kill -0 "$rpid" 2>/dev/null; then
        kill -TERM "$rpid" 2>/dev/null || true
        wait "$rpid" 2>/dev/null || true
    fi
    if [[ -n "$mnt" ]]; then umount "$mnt" 2>/dev/null || true; fi
}
it_tmpdir it_runner_faults
export RESULTS_DIR="$TMP/results"
for b in actor-server loadgen; do
    [[ -x "$ROOT/${BUILD:-build}/$b" ]] || { echo "not ok 1 - ${BUILD:-build}/$b is not built (make)"; echo "1..1"; exit 1; }
done

# start_run BATCH [ENV=VALUE...]: runner.sh actor-mem s1 --smoke --probe-only in the
# background into RESULTS_DIR/BATCH; sets rpid, rdir (the run folder) and rbatch.
start_run() {
    rbatch=$1
    shift
    env RUNNER_BUILD=0 "$@" "$ROOT/runner.sh" actor-mem s1 --smoke --probe-only --batch="$rbatch" \
        >"$TMP/$rbatch.out" 2>"$TMP/$rbatch.err" &
    rpid=$!
    rdir="$RESULTS_DIR/$rbatch/actor-mem-s1"
}

# in_window: waits (up to 30 s) until the probe's measured window began (the sampler's start
# edge file exists), then 0.3 s more; returns 1 when it never did.
in_window() {
    local end=$((SECONDS + 30))
    until [[ -e "$rdir/.probe.edge" ]]; do
        (( SECONDS < end )) && kill -0 "$rpid" 2>/dev/null || return 1
        sleep 0.05
    done
    sleep 0.3
}

# server_pid, loadgen_pid: the pids of the run's server (its log line) and load generator
# (the process writing this run's probe.json).
server_pid() { sed -n 's/.* start: .* pid \([0-9]*\),.*/\1/p' "$rdir/runner.log" | head -n 1; }
loadgen_pid() { pgrep -f -- "--json $rdir/probe.json" | head -n 1; }

# finish: waits for the run (RUN_LIMIT_S at most; then TERM, and it counts as a hang); sets
# rc, secs and last (the last line of its stdout).
finish() {
    local t0=$SECONDS
    while kill -0 "$rpid" 2>/dev/null && (( SECONDS - t0 < RUN_LIMIT_S )); do sleep 0.2; done
    if kill -0 "$rpid" 2>/dev/null; then
        kill -TERM "$rpid" 2>/dev/null || true
        secs=hung
    else
        secs=$((SECONDS - t0))
    fi
    rc=0
    wait "$rpid" || rc=$?
    rpid=""
    last=$(tail -n 1 "$TMP/$rbatch.out")
}

# check_failed CASE CAUSE_RE: the run ended in time, exit 1, its stdout's last line a FAILED
# line matching CAUSE_RE, and result.json (when there is one) records a failure.
check_failed() {
    is "$1: runner.sh exits 1 within ${RUN_LIMIT_S} s" "$rc/$( [[ $secs == hung ]] && echo hung || echo ended)" "1/ended"
    ok "$1: one FAILED line with the cause (got: $last)" grep -qE "^actor-mem s1: FAILED: .*$2" <<<"$last"
    if [[ -f "$rdir/result.json" ]]; then
        jqfile "$1: result.json records the failure" "$rdir/result.json" '.failure != null and .saturation_rps == null'
    else
        ok "$1: no result.json at all (none passed off as whole)" true
    fi
    ok "$1: no half-written result.json.tmp" test ! -e "$rdir/result.json.tmp"
}

# ---- the server killed -9 in the measured window ------------------------------------------
start_run kill-server
if in_window; then kill -KILL "$(server_pid)"; fi
finish
check_failed "server killed -9" "server exited during the probe \(killed by signal 9"

# ---- the load generator killed -9 in the measured window ----------------------------------
start_run kill-loadgen
if in_window; then kill -KILL "$(loadgen_pid)"; fi
finish
check_failed "loadgen killed -9" "loadgen exited 137 in the probe"

# ---- the load generator stopped (it hangs) -------------------------------------------------
start_run stop-loadgen REQ_TIMEOUT_SEC=1 LOADGEN_GRACE_SEC=2
if in_window; then stopped=$(loadgen_pid); kill -STOP "$stopped"; fi
finish
stopped=""
check_failed "loadgen stopped (SIGSTOP)" "loadgen hung in the probe: still running 3 s after its window's end, killed"

# ---- the server stopped (it stops answering) ----------------------------------------------
start_run stop-server REQ_TIMEOUT_SEC=1
if in_window; then stopped=$(server_pid); kill -STOP "$stopped"; fi
finish
stopped=""
check_failed "server stopped (SIGSTOP)" "server stopped answering during the probe: /ping got no answer within 1 s \\(its leader: state T, stopped by a signal\\)"

# ---- the results folder on a full disk -----------------------------------------------------
if [[ $(id -u) -ne 0 ]]; then
    n=$((n + 1)); echo "ok $n - full results disk # SKIP not root: cannot mount a 40 KB tmpfs"
elif ! { mkdir -p "$TMP/full" && mount -t tmpfs -o size=40k it-runner-faults "$TMP/full"; }; then
    n=$((n + 1)); echo "ok $n - full results disk # SKIP mounting a tmpfs failed (no mount namespace rights)"
else
    mnt="$TMP/full"
    start_run full-disk RESULTS_DIR="$mnt"
    rdir="$mnt/full-disk/actor-mem-s1"
    finish
    check_failed "full results disk" "the file system of .* is full"
    ok "full results disk: the cause is said once" test "$(grep -c 'FAILED' "$TMP/full-disk.err")" -eq 1
    umount "$mnt"
    mnt=""
fi

# ---- a batch interrupted by SIGINT in its second run ----------------------------------------
# run_all in a session of its own, interrupted as a terminal's ^C would: the whole group.
# (env --default-signal: a background job of a script starts with SIGINT ignored, which
# bash cannot trap again.)
EQUAL_LOAD=0 setsid env --default-signal=INT "$ROOT/run_all.sh" --smoke --scenarios=s1 --repeats=1 --batch=int --budget=1 \
    >"$TMP/int.out" 2>"$TMP/int.err" &
rpid=$!
t0=$SECONDS
until grep -q '\[2/2\] .* \.\.\.$' "$TMP/int.err" 2>/dev/null || (( SECONDS - t0 > 120 )); do sleep 0.1; done
sleep 2
kill -INT -- "-$rpid" 2>/dev/null || true
rbatch=int
finish
bdir="$RESULTS_DIR/int"
is "batch ^C: run_all.sh exits 130 in time" "$rc/$( [[ $secs == hung ]] && echo hung || echo ended)" "130/ended"
is "batch ^C: its one stdout line says so" "$last" "$bdir: INTERRUPTED (no summary)"
ok "batch ^C: no index.json, summary.md or report.html" \
    test ! -e "$bdir/index.json" -a ! -e "$bdir/summary.md" -a ! -e "$bdir/report.html" -a ! -e "$bdir/index.json.tmp"
first=$(grep -l '"failure": null' "$bdir"/*/result.json 2>/dev/null | head -n 1 || true)
ok "batch ^C: the finished first run is kept, whole" test -n "$first"
second=$(grep -L '"failure": null' "$bdir"/*/result.json 2>/dev/null | head -n 1 || true)
if [[ -n "$second" ]]; then
    jqfile "batch ^C: the interrupted run says so" "$second" '.failure | test("interrupted by a signal")'
else
    ok "batch ^C: the interrupted run left no result.json" test "$(find "$bdir" -name result.json | wc -l)" -eq 1
fi
# summarized afterwards, the interrupted run is a failure, and no comparison counts it
"$ROOT/runner/summarize.sh" "$bdir" >/dev/null 2>&1 || true
jqfile "batch ^C, summarized later: the interrupted run is among the failures, the comparison has no ratio" \
    "$bdir/index.json" '(.failures | length) == 1 and all(.comparisons[]; .ratio == null)'

tap_finish
