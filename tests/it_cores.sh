#!/usr/bin/env bash
# it_cores.sh: the many-thread paths on a small host (TAP, issue 27): one smoke batch of s1
# and s3 with 4-thread servers (SERVER_THREADS=4: oversubscribed on this host's one server
# CPU, and said so) and --scaling=1,2, whose result.json files, index.json and summary.md
# are checked: the CPU plan in config, the per-thread CPU of both sides and its sum against
# the server's total, the saturation rule and its reason, the plateau probe when one ran,
# the topology sentence and the scaling table; then --cpu-plan of both scripts on a
# fixture topology. Needs build/{async,actor}-server and build/loadgen (fails without).
# Run it under `flock /tmp/cpu.lock` (it puts servers under load). Results go to a
# temporary folder, removed at the end.
# shellcheck disable=SC2016  # single-quoted jq filters bind their own variables
# test-timeout: 420
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KEEP_RESULTS="${KEEP_RESULTS:-0}"     # 1: keep the temporary results folder
THREADS="${THREADS:-4}"               # the servers' --threads (SERVER_THREADS)

usage() {
    cat <<USAGE
usage: tests/it_cores.sh [--help]
Environment: BUILD (build), KEEP_RESULTS (0), THREADS (4: the servers' threads).
USAGE
}
# shellcheck source=tests/lib/it.sh
. "$ROOT/tests/lib/it.sh"
it_args "$@"
it_tmpdir it_cores
export RESULTS_DIR="$TMP/results"
VM2="$ROOT/tests/fixtures/topology/vm2/cpu"

# ---- the process tree sampler (runner/proc.sh) ---------------------------------------------
# shellcheck source=runner/lib.sh
. "$ROOT/runner/lib.sh"
# shellcheck source=runner/proc.sh
. "$ROOT/runner/proc.sh"
tree_pid=""
# shellcheck disable=SC2317  # invoked by it.sh's EXIT trap
it_on_exit() {
    if [[ -n "$tree_pid" ]]; then pkill -TERM -P "$tree_pid" 2>/dev/null || true; kill "$tree_pid" 2>/dev/null || true; fi
}
# a wrapper shell whose child spins for 0.3 s and whose grandchild sleeps under an odd name
odd="$TMP/my (odd) sl"
cp "$(command -v sleep)" "$odd"
bash -c '"$1" 30 & sh -c "i=0; end=\$((\$(date +%s%N) + 300000000)); while [ \$(date +%s%N) -lt \$end ]; do i=\$((i+1)); done; exec sleep 30" & wait' _ "$odd" &
tree_pid=$!
sleep 0.2
proc_tree_sample "$tree_pid" >"$TMP/tree0"
sleep 0.5
proc_tree_sample "$tree_pid" >"$TMP/tree1"
read -r _ ticks0 _ <"$TMP/tree0"
read -r _ ticks1 procs1 _ <"$TMP/tree1"
is "proc tree: the wrapper, its spinning child and the odd-named sleeper are 3 processes" "$procs1" 3
ok "proc tree: the tree's CPU grew while the child spun" test "$ticks1" -gt "$ticks0"
ok "proc tree: a thread line per process, the odd name kept whole" grep -q "^[0-9]* [0-9]* [0-9]* my (odd) sl\$" "$TMP/tree1"
is "proc tree: 'self' samples only the root" "$(proc_tree_sample "$tree_pid" self | sed -n 1p | cut -d' ' -f3)" 1
ok "proc tree: a gone pid fails" bash -c ". '$ROOT/runner/proc.sh'; ! proc_tree_sample 999999999 >/dev/null"
ok "proc tree: peak RSS summed over the tree exceeds the root's own" \
    test "$(proc_tree_hwm_kb "$tree_pid")" -gt "$(proc_hwm_kb "$tree_pid")"
it_on_exit
wait "$tree_pid" 2>/dev/null || true
tree_pid=""
# a session whose leader (a wrapper) has ended and left its child behind, reparented away:
# the stop's "live" walk must still find the child by its session (under set -u, as runner.sh)
setsid sh -c "'$odd' 30 & echo \$! >'$TMP/orphan'" </dev/null >/dev/null 2>&1 &
lead=$!
wait "$lead" 2>/dev/null || true
orphan=$(cat "$TMP/orphan")
is "proc tree live: a gone leader's session still gives its child" \
    "$(bash -c "set -u; . '$ROOT/runner/proc.sh'; proc_tree_pids $lead live; echo \"\${PROC_TREE_PIDS[*]}\"" 2>&1)" "$orphan"
kill "$orphan" 2>/dev/null || true
is "proc tree live: a gone leader with nothing left gives no pid and no error" \
    "$(bash -c "set -u; . '$ROOT/runner/proc.sh'; proc_tree_pids 999999999 live; echo \"[\${PROC_TREE_PIDS[*]}]\"" 2>&1)" "[]"

# ---- --cpu-plan: the plan alone, on a fixture machine ------------------------------------
gen_dir="$TMP/topo"
python3 "$ROOT/tests/fixtures/topology/gen.py" epyc32 "$gen_dir/epyc32" >/dev/null
plan_out=$(CPU_TOPOLOGY_ROOT="$gen_dir/epyc32/cpu" CPU_MASK=0-63 "$ROOT/run_all.sh" --cpu-plan --scaling=1,8,64)
is "run_all.sh --cpu-plan: the matrix's lists first" "$(sed -n '2,4p' <<<"$plan_out" | paste -sd' ' -)" \
    "server_cpus=0-11 loadgen_cpus=12-31,44-63 idle_cpus=32-43"
ok "run_all.sh --cpu-plan: 8 server CPUs are one L3 domain, the load in others" \
    grep -qx '  server_cpus=0-7' <<<"$(sed -n '/^--scaling 8 /,/^--scaling 64/p' <<<"$plan_out")"
ok "run_all.sh --cpu-plan: 64 server CPUs skipped with the reason" grep -q '^--scaling 64 server CPUs: skipped: .*need 65 cores' <<<"$plan_out"
ok "run_all.sh --cpu-plan made no batch folder" test ! -e "$RESULTS_DIR"
rc=0
SMT=sometimes "$ROOT/runner.sh" --cpu-plan >/dev/null 2>&1 || rc=$?
is "runner.sh --cpu-plan with a bad SMT exits 2" "$rc" 2

# ---- one smoke batch with 4-thread servers ------------------------------------------------
mask=$(taskset -pc $$ | sed 's/.*: //')
echo "# oversubscribed on purpose: $THREADS server threads on the plan's server CPUs of mask $mask:"
echo "# the figures exercise the many-thread paths and are not a $THREADS-CPU result"
rc=0
SERVER_THREADS=$THREADS EQUAL_LOAD=0 "$ROOT/run_all.sh" --smoke --scenarios=s1,s3 --repeats=1 --scaling=1,2 \
    --batch=it-cores >"$TMP/batch.out" 2>"$TMP/batch.err" || rc=$?
is "run_all.sh --smoke with SERVER_THREADS=$THREADS exits 0" "$rc" 0
[[ "$rc" == 0 ]] || sed 's/^/# /' "$TMP/batch.err" | tail -n 20
B="$RESULTS_DIR/it-cores"
ok "the runner warned about oversubscription" grep -q "warning: oversubscribed: $THREADS server threads" "$TMP/batch.err"

# What the batch ran comes from its matrix.json: the four planned runs, and the re-run probes
# of any round the host disturbed (a re-run is the product doing its job, not a failure).
runs=()
for d in "$B"/*/; do [[ -f "$d/result.json" ]] && runs+=("${d%/}"); done
n_rerun=$(jq '[.reruns[].servers | length] | add // 0' "$B/matrix.json" 2>/dev/null || echo 0)
is "runs: four (actor-mem, async-mem x s1, s3) and the $n_rerun re-run probe(s) of matrix.json" "${#runs[@]}" $((4 + n_rerun))
n_sat=0
for d in "${runs[@]}"; do
    res="$d/result.json"
    name=$(basename "$d")
    kind=$(jq -r '.kind' "$res" 2>/dev/null || echo "?")
    jqok "$name: no failure" '.failure == null'
    jqfile "$name: config: $THREADS threads on the plan's server CPUs, oversubscribed, connections per thread" \
        "$res" '.config as $c | $c.server_threads == $t and $c.server_threads_given and
         $c.oversubscribed == ($t > $c.server_cpu_count) and $c.cpu_plan.server_cpus == $c.server_cpus and
         $c.cpu_plan.loadgen_cpus == $c.loadgen_cpus and ($c.cpu_plan.reasons | length) > 2 and
         $c.wrk_conns == ([32, 8 * $t] | max) and ($c.wrk_conns_given | not)' --argjson t "$THREADS"
    # the loops are named io-N by a server that names them, else they carry the binary's name
    jqfile "$name: probe: the main thread and $THREADS loop threads, each with its CPU" "$res" '
        .probe.server_threads as $ts | ($ts | length) >= $t + 1 and
        ([$ts[] | select(.tid != .pid)] | length) >= $t and
        all($ts[]; (.tid | type) == "number" and (.name | length) > 0 and .cpu_pct >= 0 and .cpu_pct <= 101)' \
        --argjson t "$THREADS"
    # each thread's ticks are read to one tick (1/CLK_TCK s) at each edge
    jqok "$name: probe: the threads' CPU sums to the server's within a tick a thread and 5%" '
        (.probe.server_threads | map(.cpu_pct) | add) as $sum | .probe.server_cpu_pct as $tot
        | (.probe.server_threads | length) as $k
        | (($sum - $tot) | fabs) <= ($k * 100 / 100 / (.config.probe_sec // 2)) + 0.05 * $tot + 1'
    if [[ "$kind" == saturation ]]; then
        # a planned run has a sustain phase; a re-run probe (kind probe) has none
        n_sat=$((n_sat + 1))
        jqok "$name: sustain: threads of both sides, sums within a tick a thread and 5%" '
            (.server_threads | map(.cpu_pct) | add) as $sum | (.server_threads | length) as $k
            | (($sum - .server_cpu_pct) | fabs) <= ($k * 100 / 100 / (.config.measure_sec // 2)) + 0.05 * .server_cpu_pct + 1
              and (.loadgen_threads | length) >= 1 and (.loadgen_threads | map(.cpu_pct) | add) > 0'
        jqok "$name: one server process" '.probe.server_processes == 1 and .server_processes == 1'
    else
        jqok "$name: a re-run probe (kind probe, no sustain), one server process" \
            '.kind == "probe" and .sustained_rps == null and .probe.server_processes == 1'
    fi
    jqok "$name: saturated_by names the rule, validity agrees, and a reason is given" '
        .probe.saturated_by as $by
        | ($by == null or $by == "cpu" or $by == "thread" or $by == "plateau")
          and .saturated_by == $by and (.validity.saturated == ($by != null))
          and (.probe.saturation_reason | type) == "string" and (.probe.saturation_reason | length) > 10'
    jqok "$name: a probe that is not saturated says why in its problems, with the busiest thread" '
        .probe.saturated_by != null or .validity.probe_loadgen_bound == true
        or any(.problems[]; .flag == "not saturated" and (.reason | test("busiest thread")))'
    jqok "$name: a plateau probe has twice the connections and its gains" '
        .probe.plateau == null or (.probe.plateau.connections == 2 * .probe.connections
          and (.probe.plateau.server_threads | length) >= 1)'
done
is "the four planned runs have their sustain phase (kind saturation)" "$n_sat" 4

res="$B/index.json"
jqok "index.json: the scaling table has both servers at 1 server CPU (the matrix's own runs)" '
    [.scaling.table[] | select(.server_cpus == 1) | .server] | sort == ["actor-mem", "actor-mem", "async-mem", "async-mem"]'
jqok "index.json: 2 server CPUs skipped with the planner's reason" '
    any(.scaling.skipped[]; .count == 2 and (.reason | test("need 3 cores")))'
md="$B/summary.md"
ok "summary.md: the topology sentence names $THREADS loops of each server" \
    grep -Eq "^Topology: actor-server: $THREADS I/O loops .*async-server: $THREADS event loops" "$md"
ok "summary.md: the scaling table" grep -Eq '^\| s1 \| actor-mem / async-mem \| 1 \| [0-9,]+ \| [0-9,]+ \|' "$md"
ok "summary.md: the skipped count" grep -q '^- 2 server CPUs: skipped: ' "$md"
# threads.py's lines (summary.md shows them once summary.py calls threads.markdown_lines)
lines=$(PYTHONPATH="$ROOT/runner" python3 -c '
import json, sys
from analysis import threads
print("\n".join(threads.markdown_lines(json.load(open(sys.argv[1])))))' "$B/index.json")
ok "threads.markdown_lines: the CPU plan line" grep -q '^CPU plan (plan, SMT policy one): server CPUs ' <<<"$lines"
ok "threads.markdown_lines: the oversubscription line (every run, re-runs included)" \
    grep -q '^\*\*Oversubscribed:\*\* '"$((4 + n_rerun))"' runs with '"$THREADS"' server threads' <<<"$lines"
ok "threads.markdown_lines: a busiest-thread row per planned run" test "$(grep -c '^| [a-z]*-mem-s[13] | probe | ' <<<"$lines")" -eq 4
thr_out=$(PYTHONPATH="$ROOT/runner" python3 -m analysis threads "${runs[0]}")
ok "analysis threads: one line per thread and phase" grep -Eq '^probe server [0-9]+ .+ [0-9.]+%' <<<"$thr_out"

# ---- on a fixture 2-CPU VM the runner's own plan is server 0, loadgen 1 ---------------------
is "runner.sh --cpu-plan on the 2-CPU fixture" \
    "$(CPU_TOPOLOGY_ROOT=$VM2 CPU_MASK=0,1 "$ROOT/runner.sh" --cpu-plan | head -n 2 | paste -sd' ' -)" \
    "server_cpus=0 loadgen_cpus=1"
tap_finish
