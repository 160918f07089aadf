#!/usr/bin/env bash
# it_runner.sh: tests of the runner (TAP): the /proc and CPU-list parsing on fixtures,
# runner.sh's usage errors, then a real `./runner.sh async-mem s1 --smoke` and
# `./run_all.sh --smoke` whose result.json / index.json / summary.md are checked field by field.
# (A smoke batch with a CPU hog on the server CPU: it_runner_hog.sh.)
# (The arithmetic, the /metrics diffs and the verdict rules are tested in test_analysis.py.)
# The end-to-end part needs build/async-server, build/actor-server and build/loadgen and
# fails (never skips) without them. Results go to a temporary folder, removed at the end.
# shellcheck disable=SC2016  # single-quoted jq filters bind $n_srv and $n_lg themselves
# test-timeout: 600
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FIX="$ROOT/tests/fixtures"
KEEP_RESULTS="${KEEP_RESULTS:-0}"     # 1: keep the temporary results folder
IT_RUNNER_E2E="${IT_RUNNER_E2E:-1}"   # 0: only the parsing and usage tests

usage() {
    cat <<USAGE
usage: tests/it_runner.sh [--help]
Environment: BUILD (build), KEEP_RESULTS (0), IT_RUNNER_E2E (1).
USAGE
}
# shellcheck source=tests/lib/it.sh
. "$ROOT/tests/lib/it.sh"
it_args "$@"
# shellcheck source=runner/lib.sh
. "$ROOT/runner/lib.sh"
# shellcheck source=runner/proc.sh
. "$ROOT/runner/proc.sh"
it_tmpdir it_runner

# ---- parsing on fixtures --------------------------------------------------------------
is "stat: utime+stime after the last ')' of a comm with spaces and ')'" \
    "$(proc_stat_ticks_file "$FIX/proc_stat_weird_comm")" 1801
ok "stat: a line without ')' is rejected" bash -c ". '$ROOT/runner/proc.sh'; ! proc_stat_ticks_file <(echo '1 2 3')"
is "stat: this shell's own /proc/\$\$/stat parses to a number" \
    "$(proc_cpu_ticks $$ | grep -Ec '^[0-9]+$')" 1
is "status: VmHWM in kB" "$(proc_hwm_kb_file "$FIX/proc_status")" 12345
is "cpulist: count of 0-3,8,10-11" "$(cpulist_count 0-3,8,10-11)" 7
# the CPU plan (runner/analysis/cpuplan.py; its placement is tested in test_cpuplan.py)
vm2="$FIX/topology/vm2/cpu"
is "cpu plan: a 2-CPU host: server 0, loadgen 1" "$(CPU_TOPOLOGY_ROOT=$vm2 cpu_plan_sides 0,1 | paste -sd/ -)" "0/1"
is "cpu plan: one CPU is shared" "$(CPU_TOPOLOGY_ROOT=$vm2 cpu_plan_sides 1 | paste -sd/ -)" "1/1"
is "cpu plan: runner.sh --cpu-plan prints the three lists first" \
    "$(CPU_TOPOLOGY_ROOT=$vm2 CPU_MASK=0,1 "$ROOT/runner.sh" --cpu-plan | head -n 3 | paste -sd' ' -)" \
    "server_cpus=0 loadgen_cpus=1 idle_cpus="
is "cpu plan: conns_default keeps the pool as the floor" "$(conns_default 256 1) $(conns_default 256 4) $(conns_default 256 8) $(conns_default 32 4)" \
    "256 256 512 32"
ok "cpulist: malformed list rejected" bash -c ". '$ROOT/runner/lib.sh'; ! cpulist_expand 1-x >/dev/null"

# a batch to re-summarize: the report fixture's runs (index.json and summary.md left out)
mkdir -p "$TMP/summ-target"
cp -r "$ROOT/tests/fixtures/report/A/." "$TMP/summ-target/"
rm -f "$TMP/summ-target/index.json" "$TMP/summ-target/summary.md"

# ---- usage ------------------------------------------------------------------------------
# shellcheck disable=SC2317  # called through ok
quiet() { "$@" >/dev/null 2>&1; }
rc_of() { local rc=0; "$@" >/dev/null 2>&1 || rc=$?; echo "$rc"; }
is "runner.sh --help exits 0" "$(rc_of "$ROOT/runner.sh" --help)" 0
is "runner.sh unknown server exits 2" "$(rc_of "$ROOT/runner.sh" nginx s1 --smoke)" 2
is "runner.sh unknown scenario exits 2" "$(rc_of "$ROOT/runner.sh" async-mem s9 --smoke)" 2
is "runner.sh s3 on a sqlite server exits 2" "$(rc_of "$ROOT/runner.sh" async-sqlite s3 --smoke)" 2
is "runner.sh unknown option exits 2" "$(rc_of "$ROOT/runner.sh" async-mem s1 --bogus)" 2
is "runner.sh missing scenario exits 2" "$(rc_of "$ROOT/runner.sh" async-mem)" 2
is "run_all.sh --help exits 0" "$(rc_of "$ROOT/run_all.sh" --help)" 0
is "run_all.sh unknown scenario exits 2" "$(rc_of "$ROOT/run_all.sh" --scenarios=s7 --smoke)" 2
is "summarize.sh without a batch exits 2" "$(rc_of "$ROOT/runner/summarize.sh")" 2
for v in abc nan inf 0 -1; do
    is "summarize.sh with TARGET_RATIO=$v exits 2" \
        "$(TARGET_RATIO=$v rc_of "$ROOT/runner/summarize.sh" "$TMP/summ-target")" 2
done
is "summarize.sh TARGET_RATIO=nan wrote no index.json" "$(find "$TMP/summ-target" -name index.json | wc -l)" 0
is "runner.sh --probe-only with TARGET_RPS exits 2" "$(TARGET_RPS=100 rc_of "$ROOT/runner.sh" async-mem s1 --smoke --probe-only)" 2
is "run_all.sh --repeats=0 exits 2" "$(rc_of "$ROOT/run_all.sh" --smoke --repeats=0)" 2
# Bad input that must stop before anything runs or any batch folder is made (in a results
# folder of its own, which must stay empty).
usage_res="$TMP/usage-results"
mkdir -p "$usage_res"
is "run_all.sh --quick --smoke exits 2 (they exclude each other)" \
    "$(RESULTS_DIR="$usage_res" rc_of "$ROOT/run_all.sh" --quick --smoke --scenarios=s1)" 2
is "runner.sh --smoke --quick exits 2 (they exclude each other)" \
    "$(RESULTS_DIR="$usage_res" rc_of "$ROOT/runner.sh" async-mem s1 --smoke --quick)" 2
is "run_all.sh --batch=.. exits 2 (it would write into the project root)" \
    "$(RESULTS_DIR="$usage_res" rc_of "$ROOT/run_all.sh" --smoke --scenarios=s1 --batch=..)" 2
is "runner.sh --batch=. exits 2 (it would write into results/ itself)" \
    "$(RESULTS_DIR="$usage_res" rc_of "$ROOT/runner.sh" async-mem s1 --smoke --batch=.)" 2
is "run_all.sh SAT_RATIO=abc exits 2" \
    "$(RESULTS_DIR="$usage_res" SAT_RATIO=abc rc_of "$ROOT/run_all.sh" --smoke --scenarios=s1)" 2
is "run_all.sh SAT_RATIO=1.5 exits 2" \
    "$(RESULTS_DIR="$usage_res" SAT_RATIO=1.5 rc_of "$ROOT/run_all.sh" --smoke --scenarios=s1)" 2
is "run_all.sh EQUAL_WARMUP_SEC=abc exits 2" \
    "$(RESULTS_DIR="$usage_res" EQUAL_WARMUP_SEC=abc rc_of "$ROOT/run_all.sh" --smoke --scenarios=s1)" 2
is "run_all.sh EQUAL_MEASURE_SEC=0 exits 2" \
    "$(RESULTS_DIR="$usage_res" EQUAL_MEASURE_SEC=0 rc_of "$ROOT/run_all.sh" --smoke --scenarios=s1)" 2
for b in vs-nginx conn-scaling loadgen-vs-wrk idle-conns; do
    b_rc=0
    b_err=$("$ROOT/bench/$b.sh" --bogus 2>&1 >/dev/null) || b_rc=$?
    is "bench/$b.sh --bogus exits 2 naming it on the first line" "$b_rc $(head -1 <<<"$b_err" | grep -c -- "'--bogus'")" "2 1"
done
for v in inf 0x1 0 abc; do
    is "run_all.sh TARGET_RATIO=$v exits 2" \
        "$(RESULTS_DIR="$usage_res" TARGET_RATIO=$v rc_of "$ROOT/run_all.sh" --smoke --scenarios=s1)" 2
done
is "runner.sh PORT=70000 exits 2 (not a TCP port)" \
    "$(RESULTS_DIR="$usage_res" PORT=70000 rc_of "$ROOT/runner.sh" async-mem s1 --smoke)" 2
is "runner.sh --batch= exits 2 (an empty value is a usage error, never the default)" \
    "$(RESULTS_DIR="$usage_res" rc_of "$ROOT/runner.sh" async-mem s1 --smoke --batch=)" 2
is "runner.sh --wrk-conns without a value exits 2" \
    "$(RESULTS_DIR="$usage_res" rc_of "$ROOT/runner.sh" async-mem s1 --smoke --wrk-conns)" 2
is "runner.sh --quick=1 exits 2 (a flag takes no value)" \
    "$(RESULTS_DIR="$usage_res" rc_of "$ROOT/runner.sh" async-mem s1 --quick=1)" 2
is "runner.sh takes --opt value as --opt=value (--check-only: nothing created)" \
    "$(RESULTS_DIR="$usage_res" rc_of "$ROOT/runner.sh" async-mem s1 --smoke --wrk-conns 48 --batch it-space --check-only)" 0
ok "runner.sh --version names the commit and the libraries" \
    bash -c "'$ROOT/runner.sh' --version | grep -Eq '^runner.sh ([0-9a-f]{12}(-dirty)?|unknown) \\(libuv [0-9.]+, .*llhttp [0-9.]+\\)\$'"
is "no usage error left a batch folder behind" "$(find "$usage_res" -mindepth 1 | head -3)" ""

ok "shellcheck: runner.sh, run_all.sh, runner/*.sh, this test" \
    quiet bash -c "cd '$ROOT' && shellcheck -x runner.sh run_all.sh runner/*.sh tests/it_runner.sh"

if [[ "$IT_RUNNER_E2E" != 1 ]]; then
    echo "1..$n"
    exit $(( failed > 0 ))
fi

# ---- runner.sh async-mem s1 --smoke -------------------------------------------------------
export RESULTS_DIR="$TMP/results"
rc=0
"$ROOT/runner.sh" async-mem s1 --smoke --batch=it >"$TMP/runner.out" 2>"$TMP/runner.err" || rc=$?
is "runner.sh async-mem s1 --smoke exits 0" "$rc" 0
if [[ $rc -ne 0 ]]; then sed 's/^/# /' "$TMP/runner.err" | tail -n 20; fi
run="$RESULTS_DIR/it/async-mem-s1"
res="$run/result.json"
ok "result.json is JSON" quiet jq -e . "$res"
[[ -f "$res" ]] || echo '{}' >"$res"
is "one result line on stdout: the server, the scenario and its figures" \
    "$(grep -c . "$TMP/runner.out") $(grep -cE '^async-mem s1: saturation=[0-9,]+ req/s sustained=[0-9,]+ of [0-9,]+ req/s p99=[0-9.]+ ms server_cpu=[0-9.]+% req/cpu_s=[0-9,n/a]+ valid=(yes|no \(.+\))$' "$TMP/runner.out")" "1 1"
ok "a progress line per phase on stderr" \
    bash -c "for p in build start verify probe sustain stop; do grep -q \"] \$p: \" '$TMP/runner.err' || exit 1; done"

n_srv=$(jq '.config.server_cpu_count // 1' "$res")
n_lg=$(jq '.config.loadgen_cpu_count // 1' "$res")
JQ_ARGS=(--argjson n_srv "$n_srv" --argjson n_lg "$n_lg")
for key in server scenario kind batch repeat saturation_rps target_rps sustained_rps latency_p50_ms \
    latency_p75_ms latency_p90_ms latency_p99_ms latency_p99_9_ms latency_p99_99_ms latency_max_ms \
    send_lag_p50_ms send_lag_p99_ms send_lag_max_ms requests_waited_for_connection \
    server_cpu_pct server_cpu_s req_per_cpu_sec server_rss_mb handler_p99_us loadgen_cpu_pct errors \
    errors_total probe config host versions timestamps validity flags problems failure server_exit; do
    jqok "result.json has $key" "has(\"$key\")"
done
jqok "server, scenario, kind" '.server == "async-mem" and .scenario == "s1" and .kind == "saturation"'
jqok "failure is null" '.failure == null'
jqok "saturation_rps > 0" '.saturation_rps > 0'
jqok "target_rps = round(sat_ratio x saturation_rps)" \
    '.target_rps == ((.saturation_rps * .config.sat_ratio) | floor) or .target_rps == ((.saturation_rps * .config.sat_ratio) | floor + 1)'
jqok "sustained_rps > 0" '.sustained_rps > 0'
jqok "latency p50 <= p90 <= p99 <= p99.9 <= max, in (0, 60000) ms" \
    '.latency_p50_ms > 0 and .latency_p50_ms <= .latency_p90_ms and .latency_p90_ms <= .latency_p99_ms
     and .latency_p99_ms <= .latency_p99_9_ms and .latency_p99_9_ms <= .latency_max_ms and .latency_max_ms < 60000'
jqok "server_cpu_pct in (0, 100 x server CPUs]" '.server_cpu_pct > 0 and .server_cpu_pct <= 100 * $n_srv * 1.05'
jqok "probe server_cpu_pct in (0, 100 x server CPUs]" '.probe.server_cpu_pct > 0 and .probe.server_cpu_pct <= 100 * $n_srv * 1.05'
jqok "loadgen_cpu_pct in (0, 100 x loadgen CPUs]" '.loadgen_cpu_pct > 0 and .loadgen_cpu_pct <= 100 * $n_lg * 1.05'
jqok "req_per_cpu_sec = sustained_rps / (server_cpu_pct / 100)" \
    '.req_per_cpu_sec > 0 and ((.req_per_cpu_sec - .sustained_rps / (.server_cpu_pct / 100)) | fabs) <= 1'
jqok "server_rss_mb in (0, 4096)" '.server_rss_mb > 0 and .server_rss_mb < 4096'
# the handler's time is inside each request's round trip: its p99 cannot pass the slowest one
jqok "handler_p99_us is a number in (0, latency_max_ms x 1000]" \
    '(.handler_p99_us | type) == "number" and .handler_p99_us > 0 and .handler_p99_us <= 1000 * .latency_max_ms'
jqok "contention on the server CPUs: busy >= 0, other = busy - own (floored at 0)" \
    '.server_cpus_busy_pct >= 0 and .server_cpus_busy_pct <= 100 * $n_srv * 1.05
     and ((.server_cpus_other_pct - ([.server_cpus_busy_pct - .server_cpu_pct, 0] | max)) | fabs) < 0.02'
jqok "errors by class" '.errors | has("connect") and has("read") and has("write") and has("timeout") and has("parse") and has("status")'
jqok "validity flags are booleans, stationary null (a smoke window is too short to judge)" \
    '[.validity | del(.stationary)[] | type] == ["boolean", "boolean", "boolean", "boolean", "boolean", "boolean", "boolean"]
     and (.validity | has("stationary")) and .validity.stationary == null and .stationarity.stationary == null'
jqok "the probe is loadgen-bound only when not saturated" '(.validity.probe_loadgen_bound and .validity.saturated) | not'
jqok "loadgen_bound is the probe's or the sustain's" \
    '.validity.loadgen_bound == (.validity.probe_loadgen_bound or .validity.sustain_loadgen_bound)'
jqok "the sustain is loadgen-bound when the loadgen CPU reached 90% of its CPUs" \
    '(.loadgen_cpu_pct >= 90 * $n_lg | not) or .validity.sustain_loadgen_bound'
jqok "quiet matches the other load on the server CPUs in both phases" \
    '.validity.quiet == (.server_cpus_other_pct <= 10 * $n_srv and .probe.server_cpus_other_pct <= 10 * $n_srv)'
jqok "flags list every problem, problems give each a phase and a reason" \
    '(.flags | length) <= (.problems | length) and all(.problems[]; (.reason | length) > 0 and (.phase == "probe" or .phase == "sustain"))'
jqok "send lag: null or 0 <= p50 <= p99 <= max" \
    '.send_lag_p99_ms == null or (.send_lag_p50_ms >= 0 and .send_lag_p50_ms <= .send_lag_p99_ms and .send_lag_p99_ms <= .send_lag_max_ms)'
jqok "clean matches the error counts" \
    '.validity.clean == (.errors_total == 0 and ([.probe.errors[]] | add) == 0
                         and (.unexpected_status_counts | length) == 0 and (.probe.unexpected_status_counts | length) == 0)'
jqok "rate_held matches sustained vs target" \
    '.validity.rate_held == (((.sustained_rps - .target_rps) | fabs) <= 0.01 * .target_rps)'
jqok "config: smoke, 32 connections, CPUs, threads, group commit off" \
    '.config.mode == "smoke" and .config.wrk_conns == 32 and .config.server_threads == $n_srv and .config.group_commit == 1
     and .config.wrk_threads >= 1 and (.config.server_cpus | length) > 0 and .config.sat_ratio == 0.7'
jqok "host: cpu_model, cores, kernel, hostname" \
    "(.host.cores == $(nproc --all)) and (.host.kernel == \"$(uname -r)\") and (.host.hostname | length) > 0 and has(\"host\")"
jqok "versions: libuv, llhttp, sqlite, ck, git commit" \
    '(.versions.libuv | test("^[0-9]+\\.")) and .versions.llhttp == "8.1.0" and (.versions.sqlite | test("^3\\."))
     and (.versions.ck | test("^[0-9]")) and (.versions.git_commit | test("^[0-9a-f]{40}$"))
     and (.versions.git_dirty | type) == "boolean" and (.versions.compiler | length) > 0'
jqok "timestamps ISO-8601 UTC, start <= end" \
    '(.timestamps.start | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"))
     and (.timestamps.end | test("Z$")) and .timestamps.start <= .timestamps.end'
jqok "server exited 0 after SIGTERM, within 2 s" '.server_exit.code == 0 and .server_exit.stop_s <= 2'
jqok "window metrics: handled requests counted" '.server_metrics.window_handled > 0'
ok "histogram.txt is an HdrHistogram spectrum" grep -q 'Percentile' "$run/histogram.txt"
ok "loadgen.json, facts.json and server.log written" test -s "$run/loadgen.json" -a -s "$run/facts.json" -a -f "$run/server.log"
srv_pid=$(grep -o 'pid [0-9]*' "$run/runner.log" | head -n1 | cut -d' ' -f2)
ok "the server (pid ${srv_pid:-?}) is gone" bash -c "[[ -n '$srv_pid' ]] && ! kill -0 '$srv_pid' 2>/dev/null"

# ---- a failing run writes result.json with the failure -------------------------------------
rc=0
BUILD="$TMP/nobuild" RUNNER_BUILD=0 "$ROOT/runner.sh" async-mem s2 --smoke --batch=it-fail \
    >/dev/null 2>"$TMP/fail.err" || rc=$?
is "runner.sh with a missing binary exits 1" "$rc" 1
ok "its result.json carries the failure" \
    quiet jq -e '.failure | test("missing")' "$RESULTS_DIR/it-fail/async-mem-s2/result.json"

# ---- run_all.sh --smoke -----------------------------------------------------------------------
rc=0
# --budget=1: no re-runs, so that the counts below are the plan's (tests/it_reruns.sh has them).
# s1 and s2, the scenarios that decide the default verdict (s3's and s4's pipelines are the
# same code: tests/it_cores.sh runs s3, tests/it_reruns.sh s4 on the sqlite pair)
"$ROOT/run_all.sh" --smoke --scenarios=s1,s2 --repeats=1 --batch=it-all --budget=1 >"$TMP/all.out" 2>"$TMP/all.err" || rc=$?
is "run_all.sh --smoke exits 0" "$rc" 0
if [[ $rc -ne 0 ]]; then grep -E '^\[run_all\]' "$TMP/all.err" | sed 's/^/# /' | tail -n 30; fi
batch="$RESULTS_DIR/it-all"
ok "progress lines [i/8]" grep -Eq '^\[run_all\] \[5/8\] (actor|async)-mem s2 \.\.\.' "$TMP/all.err"
jqfile "matrix.json: the seed, the budget, each round's order a permutation of its group" "$batch/matrix.json" \
    '. as $m | (.seed | type) == "number" and .budget_s == 1 and (.rounds | length) == 4
     and all(.rounds[]; . as $r | ($r.order | sort) == ($m.groups[] | select(.scenario == $r.scenario) | .servers | sort))'
# each run's facts: its round and its place in that round's recorded order
misplaced=0
for f in "$batch"/*/facts.json; do
    jq -e --slurpfile m "$batch/matrix.json" '.kind as $k | .scenario as $s | .server as $v | .config.round_position as $p
        | .config.round == 1 and ([$m[0].rounds[] | select(.scenario == $s and .round == 1
            and .kind == (if $k == "equal-load" then "equal" else "probe" end)) | .order[$p - 1]] == [$v])' "$f" >/dev/null ||
        misplaced=$((misplaced + 1))
done
is "facts: every run's config.round and config.round_position match matrix.json's order" "$misplaced" 0
ok "index.json parses" quiet jq -e . "$batch/index.json"
[[ -f "$batch/index.json" ]] || echo '{}' >"$batch/index.json"
res="$batch/index.json"
jqok "index.json: 4 runs, all without failure, no probe-only runs with one repeat" \
    '(.runs | length) == 4 and all(.runs[]; .failure == null) and (.probe_runs | length) == 0'
jqok "index.json: 2 comparisons, one per scenario, with a verdict each" \
    '[.comparisons[].scenario] == ["s1", "s2"] and all(.comparisons[]; .verdict == "PASS" or .verdict == "FAIL" or .verdict == "INCONCLUSIVE")'
jqok "index.json: equal-load runs at one rate per scenario" \
    '(.equal_load_runs | length) == 4 and all(.comparisons[]; .equal_load.candidate.target_rps == .equal_load.baseline.target_rps)'
jqok "index.json: equal-load rate = sat_ratio x the slower saturation" \
    'all(.comparisons[]; .equal_load.rate_rps == ([.candidate_result.saturation_rps, .baseline_result.saturation_rps] | min * 0.7 | round))'
jqok "index.json: one round gives no interval: no basis, INCONCLUSIVE with the reason" \
    'all(.comparisons[]; .basis == null and .verdict == "INCONCLUSIVE" and .ratio == null
        and (.reasons[0] | test("^[01] of 1 probe pairs valid \\(an interval needs 2\\)$")))'
jqok "index.json: overall verdict follows s1 and s2" \
    '.verdict.overall == ([.comparisons[] | select(.scenario == "s1" or .scenario == "s2") | .verdict]
        | if any(. == "FAIL") then "FAIL" elif any(. == "INCONCLUSIVE") then "INCONCLUSIVE" else "PASS" end)'
jqok "index.json: smoke, host, versions, config, target ratio" \
    '.smoke == true and .host.cores > 0 and (.versions.git_commit | length) == 40 and .config.wrk_conns == 32 and .target_ratio == 0.5'
ok "summary.md opens with the one-line verdict, marked as a smoke run" grep -Eq '^\*\*smoke run, not a result: (PASS|FAIL|INCONCLUSIVE): .{1,180}\*\*$' "$batch/summary.md"
ok "summary.md says plainly that smoke figures are not results" grep -q 'Smoke run: checks the pipeline, too short to mean anything' "$batch/summary.md"
ok "run_all's last lines say the smoke verdict is not a result" \
    bash -c "tail -n 3 '$TMP/all.err' | grep -q 'smoke run: checks the pipeline, too short to mean anything'"
ok "summary.md has a row per comparison in the verdict, probe and equal-load ratio tables" \
    bash -c "[[ \$(grep -Ec '^\| s[1-4] \| actor-(mem|sqlite) / async-(mem|sqlite) \|' '$batch/summary.md') -eq 6 ]]"
# (the rows of those two sections: the cost account's tables have rows of the same shape)
ok "summary.md has a row per server and scenario at its own saturation and at equal load" \
    bash -c "rows() { awk -v h=\"\$1\" '/^## /{on = index(\$0, h) == 4} on' '$batch/summary.md' |
                      grep -Ec '^\| s[1-4] \| (actor|async)-(mem|sqlite) \|'; }
             [[ \$(rows 'Each server at') -eq 4 && \$(rows 'Equal load') -eq 4 ]]"
ok "summary.md names the host and versions" grep -Eq "Host .*cores.*kernel" "$batch/summary.md"
ok "report.html rendered: a latency spectrum per scenario, own and equal load (tests/it_report.sh checks the page)" \
    bash -c "[[ \$(grep -Eo 'data-plot=\"latency-s[1-4]-(own|equal)\"' '$batch/report.html' | wc -l) -eq 4 ]]"
ok "report.html: the smoke banner" grep -q 'Smoke run: checks the pipeline, too short to mean anything' "$batch/report.html"

# ---- a failed run makes its scenario ERROR (the rest of the rules: test_analysis.py) --------
fake="$TMP/results/fake-fail"
cp -r "$batch" "$fake"
jq '.failure = "test failure"' "$fake/actor-mem-s2/result.json" >"$fake/r.tmp" && mv "$fake/r.tmp" "$fake/actor-mem-s2/result.json"
"$ROOT/runner/summarize.sh" "$fake"
res="$fake/index.json"
jqok "verdict: a failed run makes its scenario ERROR and the overall INCOMPLETE unless FAIL" \
    '.comparisons[1].verdict == "ERROR" and (.verdict.overall == "INCOMPLETE" or .verdict.overall == "FAIL") and (.failures | length) == 1'
ok "summary.md lists the failure" grep -q 'actor-mem-s2: test failure' "$fake/summary.md"

tap_finish
