#!/usr/bin/env bash
# it_sweep.sh: integration tests of rate sweeps (TAP; SPEC.md section 14): the --sweep and
# --rates usage errors of runner.sh and run_all.sh, then a smoke sweep `./run_all.sh --smoke
# --sweep --scenarios=s1 --repeats=1 --rates=...` whose every per-step field is checked in
# index.json and result.json, whose knees agree with the steps' classes (the rule's known values
# are tests/test_sweep.py's), and whose summary.md and report.html (tests/it_report.sh's page checks)
# carry them; and runner.sh's own sweeps: after its probe, and from a given base with the
# default rates. Needs build/{actor,async}-server and build/loadgen (fails, never skips,
# without them). Results go to a temporary folder, removed at the end.
# shellcheck disable=SC2016  # single-quoted jq filters bind their own $variables
# test-timeout: 600
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KEEP_RESULTS="${KEEP_RESULTS:-0}"         # 1: keep the temporary results folder
SWEEP_TEST_RATES="${SWEEP_TEST_RATES:-300,1500,150000}"  # the smoke sweep's rates (req/s)

usage() {
    cat <<USAGE
usage: tests/it_sweep.sh [--help]
Environment: BUILD (build), KEEP_RESULTS (0), SWEEP_TEST_RATES ($SWEEP_TEST_RATES: a low rate,
a moderate one and one far beyond what the servers hold, so that a step breaks the rule).
USAGE
}
# shellcheck source=tests/lib/it.sh
. "$ROOT/tests/lib/it.sh"
it_args "$@"
it_tmpdir it_sweep
export RESULTS_DIR="$TMP/results"
unset SWEEP SWEEP_RATES SWEEP_BASE_RPS SUSTAIN EQUAL_LOAD TARGET_RPS PROBE_ONLY REPEAT RUN_SUFFIX

# rc_err NAME WANT_RC WANT_TEXT CMD...: CMD exits WANT_RC and says WANT_TEXT on stderr.
rc_err() {
    local name=$1 want=$2 text=$3 rc=0
    shift 3
    "$@" >/dev/null 2>"$TMP/err" || rc=$?
    n=$((n + 1))
    if [[ "$rc" == "$want" ]] && grep -qF -- "$text" "$TMP/err"; then
        echo "ok $n - $name"
    else
        echo "not ok $n - $name: exit $rc (want $want), stderr: $(head -c 300 "$TMP/err" | tr '\n' ' ')"
        failed=$((failed + 1))
    fi
}

# ---- usage errors: exit 2 before anything runs ---------------------------------------------
for script in run_all.sh runner.sh; do
    args=()
    [[ "$script" == run_all.sh ]] || args=(async-mem s1)
    rc_err "$script: --rates without --sweep" 2 "--rates needs --sweep" "$ROOT/$script" "${args[@]}" --rates=1000
    rc_err "$script: --rates= empty" 2 "the list is empty" "$ROOT/$script" "${args[@]}" --sweep --rates=
    rc_err "$script: --rates with a word" 2 "'abc' is not a rate" "$ROOT/$script" "${args[@]}" --sweep --rates=100,abc
    rc_err "$script: --rates with a negative rate" 2 "'-5' is not a rate" "$ROOT/$script" "${args[@]}" --sweep --rates=-5
    rc_err "$script: --rates with 0" 2 "'0' is out of range" "$ROOT/$script" "${args[@]}" --sweep --rates=0,10
    rc_err "$script: --rates with an empty item" 2 "has an empty item" "$ROOT/$script" "${args[@]}" --sweep --rates=10,,20
    rc_err "$script: --rates with an exponent" 2 "'1e3' is not a rate" "$ROOT/$script" "${args[@]}" --sweep --rates=1e3
    rc_err "$script: --rates with a repeat" 2 "rate 20 is given twice" "$ROOT/$script" "${args[@]}" --sweep --rates=20,10,20.0
    rc_err "$script: --rates beyond the load generator's maximum" 2 "out of range" "$ROOT/$script" "${args[@]}" --sweep --rates=100000001
    rc_err "$script: SWEEP_RATES is checked like --rates" 2 "'x' is not a rate" env SWEEP_RATES=x "$ROOT/$script" "${args[@]}" --sweep
done
rc_err "runner.sh: --sweep with --probe-only" 2 "exclude each other" "$ROOT/runner.sh" async-mem s1 --sweep --probe-only
rc_err "runner.sh: --sweep with TARGET_RPS" 2 "exclude each other" env TARGET_RPS=100 "$ROOT/runner.sh" async-mem s1 --sweep
rc_err "runner.sh: SWEEP_BASE_RPS without --sweep" 2 "SWEEP_BASE_RPS needs --sweep" env SWEEP_BASE_RPS=100 "$ROOT/runner.sh" async-mem s1
rc_err "runner.sh: a bad SWEEP_BASE_RPS" 2 "SWEEP_BASE_RPS:" env SWEEP_BASE_RPS=fast "$ROOT/runner.sh" async-mem s1 --sweep
rc_err "runner.sh: SWEEP_BASE_RPS is one rate" 2 "SWEEP_BASE_RPS is one rate" env SWEEP_BASE_RPS=10,20 "$ROOT/runner.sh" async-mem s1 --sweep
rc_err "runner.sh: a bad SWEEP_MEASURE_SEC" 2 "SWEEP_MEASURE_SEC must be" env SWEEP_MEASURE_SEC=0 "$ROOT/runner.sh" async-mem s1 --sweep
rc_err "run_all.sh: a bad SWEEP_WARMUP_SEC" 2 "SWEEP_WARMUP_SEC must be" env SWEEP_WARMUP_SEC=x "$ROOT/run_all.sh" --sweep
ok "usage errors created no results" test ! -e "$RESULTS_DIR"
ok "runner.sh --help documents --sweep and --rates" bash -c "'$ROOT/runner.sh' --help | grep -q -- '--sweep' && '$ROOT/runner.sh' --help | grep -q -- '--rates=LIST'"
ok "run_all.sh --help documents --sweep and --rates" bash -c "'$ROOT/run_all.sh' --help | grep -q -- '--sweep' && '$ROOT/run_all.sh' --help | grep -q -- '--rates=LIST'"

# ---- run_all.sh --smoke --sweep ----------------------------------------------------------------
rc=0
# --budget=1: no re-run of a disturbed probe, so that the base is round 1's slower probe
"$ROOT/run_all.sh" --smoke --sweep --scenarios=s1 --repeats=1 "--rates=$SWEEP_TEST_RATES" --batch=it-sweep --budget=1 \
    >"$TMP/all.out" 2>"$TMP/all.err" || rc=$?
is "run_all.sh --smoke --sweep exits 0" "$rc" 0
if [[ $rc -ne 0 ]]; then grep -E '^\[run_all\]|FAILED' "$TMP/all.err" | sed 's/^/# /' | tail -n 30; fi
batch="$RESULTS_DIR/it-sweep"
idx="$batch/index.json"
[[ -f "$idx" ]] || echo '{}' >"$idx"
ok "the time estimate is printed at the start" grep -Eq '^\[run_all\] estimate: about [0-9]+ min \([0-9]+ s' "$TMP/all.err"
rates_json=$(tr ',' '\n' <<<"$SWEEP_TEST_RATES" | sort -g | jq -s -c 'map(tonumber)')
jqfile "matrix.json records the sweep's rates and durations" "$batch/matrix.json" \
    ".sweep.rates_rps == $rates_json and .sweep.warmup_sec == 1 and .sweep.measure_sec == 1 and .equal_load == false"
jqfile "index.json: the probes (saturation runs without a sustain), no equal-load run" "$idx" \
    '(.runs | length) == 2 and all(.runs[]; .kind == "saturation" and .sustained_rps == null and .saturation_rps > 0)
     and (.equal_load_runs | length) == 0'
jqfile "index.json: one swept scenario, s1, both servers at the given rates" "$idx" \
    "(.sweep.scenarios | length) == 1 and .sweep.scenarios[0].scenario == \"s1\"
     and .sweep.scenarios[0].rates_rps == $rates_json
     and all(.sweep.scenarios[0].servers[]; [.steps[].offered_rps] == $rates_json and .steps_total == ($rates_json | length))"
jqfile "index.json: the base is the slower saturation, rounded to whole req/s" "$idx" \
    '(.sweep.scenarios[0].base_rps | . == floor) and ((.sweep.scenarios[0].base_rps - ([.runs[].saturation_rps] | min)) | fabs) <= 0.5
     and .sweep.scenarios[0].rates_given == true'
jqfile "index.json: the knee rule's multiple is 5, its low load at most 30% of the base (SPEC.md section 14)" "$idx" \
    '.sweep.knee_p99_multiple == 5 and .sweep.low_load_max_fraction == 0.3'

# every per-step field, in index.json
for key in step run path offered_rps fraction_of_base achieved_rps latency_p50_ms latency_p90_ms latency_p99_ms \
    latency_p99_9_ms latency_max_ms server_cpu_pct req_per_cpu_sec handler_p99_us errors errors_total \
    loadgen_cpu_pct send_lag_p99_ms requests_waited_for_connection server_cpus_other_pct validity flags problems \
    failure latency_by_loadgen p99_vs_base knee_rule; do
    jqfile "every step has $key" "$idx" "all(.sweep.scenarios[0].servers[].steps[]; has(\"$key\"))"
done
# A smoke step at a few hundred req/s on a quiet host can use less than one clock tick of
# the server's CPU (10 ms): its CPU reads 0% and req/CPU-s is undefined (null), not a number.
jqfile "steps: rates, latencies, CPU, req/CPU-s (null only at 0% CPU), loadgen CPU and errors are numbers" "$idx" \
    'all(.sweep.scenarios[0].servers[].steps[]; .failure != null or
        (([.offered_rps, .achieved_rps, .latency_p50_ms, .latency_p90_ms, .latency_p99_ms, .latency_p99_9_ms,
          .latency_max_ms, .server_cpu_pct, .loadgen_cpu_pct, .errors_total] | all(type == "number"))
         and ((.req_per_cpu_sec | type == "number") or (.req_per_cpu_sec == null and .server_cpu_pct == 0))))'
jqfile "steps: handler p99, send lag p99 and waited requests are numbers or null (older load generators)" "$idx" \
    'all(.sweep.scenarios[0].servers[].steps[]; [.handler_p99_us, .send_lag_p99_ms, .requests_waited_for_connection]
        | all(. == null or type == "number"))'
jqfile "steps: p50 <= p90 <= p99 <= p99.9 <= max" "$idx" \
    'all(.sweep.scenarios[0].servers[].steps[]; .failure != null or (.latency_p50_ms <= .latency_p90_ms
        and .latency_p90_ms <= .latency_p99_ms and .latency_p99_ms <= .latency_p99_9_ms and .latency_p99_9_ms <= .latency_max_ms))'
jqfile "steps: req/CPU-s = achieved / (server CPU / 100) where the CPU is above 0" "$idx" \
    'all(.sweep.scenarios[0].servers[].steps[]; .failure != null or .server_cpu_pct == 0
        or ((.req_per_cpu_sec - .achieved_rps / (.server_cpu_pct / 100)) | fabs) <= 1)'
jqfile "steps: every validity flag is a boolean (rate_held, sustain_loadgen_bound, loadgen_bound, clean, quiet)" "$idx" \
    'all(.sweep.scenarios[0].servers[].steps[]; .failure != null or
        ([.validity.rate_held, .validity.sustain_loadgen_bound, .validity.loadgen_bound, .validity.clean, .validity.quiet]
         | all(type == "boolean")))'
jqfile "steps: rate_held matches achieved vs offered (1%)" "$idx" \
    'all(.sweep.scenarios[0].servers[].steps[]; .failure != null or
        .validity.rate_held == (((.achieved_rps - .offered_rps) | fabs) <= 0.01 * .offered_rps))'
jqfile "steps: clean matches the error count (unexpected statuses count as status errors)" "$idx" \
    'all(.sweep.scenarios[0].servers[].steps[]; .failure != null or .validity.clean == (.errors_total == 0))'
jqfile "steps: loadgen-bound when the loadgen CPU reached 90% of its CPUs, and then drawn as the loadgen's" "$idx" \
    '.runs[0].config.loadgen_cpu_count as $n | all(.sweep.scenarios[0].servers[].steps[]; .failure != null or
        (((.loadgen_cpu_pct >= 90 * $n) | not) or .validity.sustain_loadgen_bound)
        and .latency_by_loadgen == .validity.sustain_loadgen_bound)'
jqfile "steps: flags name each failed validity flag" "$idx" \
    'all(.sweep.scenarios[0].servers[].steps[]; .failure != null or
        ((.validity.rate_held == false) == (.flags | index("rate not held") != null))
        and ((.validity.quiet == false) == (.flags | index("other load") != null))
        and ((.validity.sustain_loadgen_bound == true) == (.flags | index("loadgen-bound") != null)))'

# every step's result.json agrees with index.json
while IFS=$'\t' read -r who j run; do
    res="$batch/$run/result.json"
    ok "$run: run folder with result.json, loadgen.json, histogram.txt, scrapes, server.log" \
        test -s "$res" -a -s "$batch/$run/loadgen.json" -a -s "$batch/$run/histogram.txt" \
        -a -s "$batch/$run/metrics-after.prom" -a -f "$batch/$run/server.log"
    jqfile "$run: result.json kind sweep, step facts, the same figures as index.json" "$res" \
        "$(jq -c ".sweep.scenarios[0].servers.$who.steps[$j]" "$idx") as \$s | $(jq '.sweep.scenarios[0].base_rps' "$idx") as \$base |
         .kind == \"sweep\" and .repeat == null and .sweep.step == \$s.step and .sweep.offered_rps == \$s.offered_rps
         and .sweep.base_rps == \$base and .sweep.rates_given == true and .target_rps == \$s.offered_rps
         and .sustained_rps == \$s.achieved_rps and .latency_p99_ms == \$s.latency_p99_ms
         and .latency_p99_9_ms == \$s.latency_p99_9_ms and .latency_max_ms == \$s.latency_max_ms
         and .server_cpu_pct == \$s.server_cpu_pct and .handler_p99_us == \$s.handler_p99_us
         and .validity == \$s.validity and .flags == \$s.flags and .config.measure_sec == 1 and .config.warmup_sec == 1"
done < <(jq -r '.sweep.scenarios[0].servers | to_entries[] | .key as $w | .value.steps | to_entries[] | [$w, .key, .value.run] | @tsv' "$idx")
ok "step folders are <server>-s1-sweep-01.. in rate order" bash -c \
    "cd '$batch' && [[ \"\$(ls -d *-sweep-* | paste -sd' ')\" == 'actor-mem-s1-sweep-01 actor-mem-s1-sweep-02 actor-mem-s1-sweep-03 async-mem-s1-sweep-01 async-mem-s1-sweep-02 async-mem-s1-sweep-03' ]]"

# The knees agree with the step classes index.json gives: the highest "ok" step below the first
# "break". (The rule itself, on steps with known knees, is tests/test_sweep.py's: this batch's
# figures are whatever the host gave, and the rule recomputed here would only repeat the product.)
for who in candidate baseline; do
    # shellcheck disable=SC2016  # jq variables
    jqfile "$who: the knee is the highest ok step below the first break, broke_at that break" "$idx" '
        .sweep.scenarios[0].servers[$w] as $srv | ($srv.steps | sort_by(.offered_rps)) as $s
        | ([$s[] | select(.knee_rule.class == "break")][0].offered_rps) as $b
        | ([$s[] | select(.knee_rule.class == "ok" and ($b == null or .offered_rps < $b))] | last | .offered_rps) as $k
        | all($s[]; .knee_rule.class | IN("ok", "break", "unknown"))
          and $srv.knee.rate_rps == $k and $srv.knee.broke_at_rps == $b
          and $srv.knee.lower_bound == ($k != null and $b == null)' --arg w "$who"
done
jqfile "the knee ratio is candidate / baseline, with its kind" "$idx" \
    '.sweep.scenarios[0] as $s | $s.servers.candidate.knee as $a | $s.servers.baseline.knee as $b
     | if ($a.rate_rps == null or $b.rate_rps == null or ($a.lower_bound and $b.lower_bound)) then $s.knee_ratio == null
       else $s.knee_ratio == ($a.rate_rps / $b.rate_rps * 1000 | round / 1000)
            and $s.knee_ratio_kind == (if $a.lower_bound then "at least" elif $b.lower_bound then "at most" else "exact" end) end'
ok "summary.md has the sweep section with the knees table" bash -c \
    "grep -q '^## Latency under load: rate sweeps' '$batch/summary.md' && grep -q '^| s1 | actor-mem / async-mem | [0-9,]* req/s |' '$batch/summary.md'"
is "summary.md has a row per step" "$(grep -Ec '^\| (actor|async)-mem \| [0-9]+ \|' "$batch/summary.md")" 6
ok "report.html has the latency and CPU plots against offered load" bash -c \
    "grep -q 'data-plot=\"sweep-latency-s1\"' '$batch/report.html' && grep -q 'data-plot=\"sweep-cpu-s1\"' '$batch/report.html'"
# report_checks: tests/it_report.sh's page checks on this batch; its TAP lines go to a file,
# so that tests/run.sh counts them once, as the one test below
# shellcheck disable=SC2317  # invoked through ok
report_checks() {
    REPORT_BATCH="$batch" KEEP_RESULTS=0 "$ROOT/tests/it_report.sh" >"$TMP/it_report.tap" 2>&1
}
ok "report.html passes tests/it_report.sh's page checks (every figure is index.json's, tagged)" report_checks
grep -E '^not ok' "$TMP/it_report.tap" | sed 's/^/# it_report.sh: /' || true

# ---- runner.sh --sweep: the probe, then the steps ------------------------------------------
rc=0
"$ROOT/runner.sh" async-mem s1 --smoke --sweep --rates=1500,300 --batch=it-one >"$TMP/one.out" 2>"$TMP/one.err" || rc=$?
is "runner.sh --sweep --rates exits 0" "$rc" 0
one="$RESULTS_DIR/it-one"
jqfile "runner.sh --sweep: the run is the probe, kind saturation, no sustain" "$one/async-mem-s1/result.json" \
    '.kind == "saturation" and .saturation_rps > 0 and .sustained_rps == null and .target_rps == null'
ok "runner.sh --sweep: no sustain files in the probe's folder" test ! -e "$one/async-mem-s1/loadgen.json"
jqfile "runner.sh --sweep: step 1 is the lowest rate, based on this probe's saturation" "$one/async-mem-s1-sweep-01/result.json" \
    "$(jq '.saturation_rps | round' "$one/async-mem-s1/result.json") as \$sat | .sweep.step == 1 and .sweep.steps == 2
     and .sweep.offered_rps == 300 and .sweep.base_rps == \$sat and .target_rps == 300 and .sustained_rps > 0 and .failure == null"
jqfile "runner.sh --sweep: step 2 at 1500 req/s" "$one/async-mem-s1-sweep-02/result.json" \
    '.sweep.step == 2 and .sweep.offered_rps == 1500 and .target_rps == 1500 and .kind == "sweep"'
ok "runner.sh --sweep: each step on a fresh server (two server pids besides the probe's)" bash -c \
    "p0=\$(grep -o 'pid [0-9]*' '$one/async-mem-s1/runner.log'); p1=\$(grep -o 'pid [0-9]*' '$one/async-mem-s1-sweep-01/runner.log');
     p2=\$(grep -o 'pid [0-9]*' '$one/async-mem-s1-sweep-02/runner.log'); [[ -n \$p1 && -n \$p2 && \$p0 != \$p1 && \$p1 != \$p2 ]]"
ok "runner.sh --sweep: every server it started is gone" bash -c \
    "for p in \$(cat '$one'/*/runner.log | grep -o 'pid [0-9]*' | cut -d' ' -f2); do ! kill -0 \$p 2>/dev/null || exit 1; done"

# ---- runner.sh --sweep from a given base: the default rates (run_all's path) ----------------
rc=0
SWEEP_BASE_RPS=3 "$ROOT/runner.sh" async-mem s1 --smoke --sweep --batch=it-base >"$TMP/base.out" 2>"$TMP/base.err" || rc=$?
is "SWEEP_BASE_RPS=3 runner.sh --sweep exits 0" "$rc" 0
ok "no probe run from a given base" test ! -e "$RESULTS_DIR/it-base/async-mem-s1"
is "the default rates of a 3 req/s base: 10%..120% rounded, at least 1, without repeats" \
    "$(jq -s -c 'sort_by(.sweep.step) | map(.sweep.offered_rps)' "$RESULTS_DIR"/it-base/async-mem-s1-sweep-*/result.json)" \
    "$(python3 -c 'print([max(1, round(k / 10 * 3)) for k in range(1, 13)])' | jq -c 'unique')"
jqfile "the default rates are not given rates, and record their fraction of the base" \
    "$RESULTS_DIR/it-base/async-mem-s1-sweep-04/result.json" \
    '.sweep.rates_given == false and .sweep.base_rps == 3 and .sweep.fraction_of_base == (.sweep.offered_rps / 3 * 10000 | round / 10000)'

tap_finish
