#!/usr/bin/env bash
# run_all.sh: the comparison matrix (actor and async on s1-s3 with the memory store, both on
# s4 with SQLite) in one batch: per scenario REPEATS saturation probes per server,
# interleaved actor, async, actor, async, ... (the first of each also sustains SAT_RATIO x its
# own saturation), then both servers at equal load; with --sweep, instead of those sustained
# windows, both servers at each rate of a sweep (SPEC.md section 14); then summary.md and
# index.json with the per-scenario and overall "within 2x" verdicts (runner/summarize.sh;
# SPEC.md sections 8-9), and report.html (runner/report.sh).
# Runs runner.sh one run at a time; ends only the runner it started, by pid.
# Exit: 0 all runs completed (any verdict), 1 a run failed, 2 usage, 3 FAIL and
# 4 INCONCLUSIVE with --fail-on-verdict.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# First of all, before anything is created: install what runs need when missing.
case " $* " in *" -h "*|*" --help "*|*" --cpu-plan "*) ;; *) "$ROOT/scripts/deps.sh" run ;; esac
# shellcheck source=runner/lib.sh
. "$ROOT/runner/lib.sh"
# shellcheck source=runner/sweep.sh
. "$ROOT/runner/sweep.sh"

TARGET_RATIO="${TARGET_RATIO:-0.5}"     # PASS when actor/async >= this on s1 and s2
SAT_RATIO="${SAT_RATIO:-0.7}"           # passed through to runner.sh (and used for equal load)
REPEATS="${REPEATS:-}"                  # probes per server and scenario (full 3, quick 3, smoke 2)
EQUAL_LOAD="${EQUAL_LOAD:-}"            # 0: skip the equal-load re-runs (default 1; 0 with --sweep)
RATES_ENV="${SWEEP_RATES:-}"            # SWEEP_RATES: as --rates=
EQUAL_WARMUP_SEC="${EQUAL_WARMUP_SEC:-}"    # equal-load warm-up (full 10, quick 5, smoke 1)
EQUAL_MEASURE_SEC="${EQUAL_MEASURE_SEC:-}"  # equal-load measured window (full 30, quick 10, smoke 1)
RESULTS_DIR="${RESULTS_DIR:-$ROOT/results}"
BATCH="${BATCH:-}"

# Only this script sets these per run; inherited values would change every run.
unset TARGET_RPS RUN_SUFFIX PROBE_ONLY REPEAT SUSTAIN SWEEP SWEEP_BASE_RPS SWEEP_RATES

ALL_SERVERS="actor-mem async-mem actor-sqlite async-sqlite"
ALL_SCENARIOS="s1 s2 s3 s4"

usage() {
    cat <<USAGE
usage: ./run_all.sh [--help] [--quick] [--smoke] [--scenarios=s1,s2] [--servers=...]
                    [--repeats=N] [--batch=ID] [--fail-on-verdict] [--sweep [--rates=R1,R2,...]]
                    [--scaling=N1,N2,...] [--cpu-plan]
Runs the matrix (actor-mem, async-mem on s1 s2 s3; actor-sqlite, async-sqlite on s4) into
results/<batch>/: per scenario N closed-loop probes per server, interleaved (actor, async,
actor, async, ...), each on a fresh server; the first run of each server also sustains
SAT_RATIO x its own saturation; then both servers at equal load (SAT_RATIO x the slower
one's median saturation). Writes results/<batch>/summary.md, index.json and report.html.
  --quick            probe 2+8 s, sustain 10+15 s, equal load 5+10 s, 3 probes per server
                     (about 11 minutes on 2 CPUs)
  --smoke            a few seconds per run, 2 probes per server, for tests: its figures and
                     its verdict are not results
  --scenarios=LIST   subset of: $ALL_SCENARIOS
  --servers=LIST     subset of: $ALL_SERVERS
  --repeats=N        probes per server and scenario (default 3; smoke 2)
  --batch=ID         batch id (default: UTC timestamp)
  --fail-on-verdict  exit 3 when the overall verdict is FAIL, 4 when it is INCONCLUSIVE
  --sweep            latency under load (SPEC.md section 14): after the probes of a scenario
                     (no sustain after them, no equal load unless EQUAL_LOAD=1), both servers
                     at the same constant rates, each step a fresh server: 10%, 20%, ... 120%
                     of the slower server's median saturation; the knee of each server and
                     their ratio in summary.md, latency and CPU against offered load in
                     report.html. With --quick: steps 2+4 s, about 18 minutes for s1-s4 on 2
                     CPUs (17.9 measured; the estimate is printed at the start)
  --rates=LIST       the sweep's rates in req/s, comma-separated (positive numbers; needs --sweep)
  --scaling=LIST     server CPU counts, e.g. 1,2,4,8: after the matrix, one closed-loop probe
                     of every selected server and scenario at each count the host can give
                     with the load generator on cores of its own (the CPU plan of each count:
                     SPEC.md section 4; a count equal to the matrix's is taken from the
                     matrix), counts it cannot give skipped with a message;
                     a scaling table (req/s, req/CPU-s, actor/async per count) in summary.md
                     and report.html. Runs are named <server>-<scenario>-cpusN, never part of
                     the verdict
  --cpu-plan         print the CPU plan of the matrix's runs and of every --scaling count
                     (server_cpus=, loadgen_cpus=, idle_cpus=, then why) and exit 0: builds,
                     installs and runs nothing
Environment: TARGET_RATIO ($TARGET_RATIO) SAT_RATIO ($SAT_RATIO) REPEATS EQUAL_LOAD (1; 0 with
  --sweep) EQUAL_WARMUP_SEC EQUAL_MEASURE_SEC SWEEP_RATES (as --rates) SWEEP_WARMUP_SEC
  SWEEP_MEASURE_SEC (sweep step, full 5+20 s) RESULTS_DIR, and everything runner.sh reads
  (WARMUP_SEC MEASURE_SEC PROBE_SEC SERVER_CPUS LOADGEN_CPUS SMT SERVER_THREADS CPU_MASK
  CPU_TOPOLOGY_ROOT WRK_CONNS WRK_THREADS BEARER
  ACTOR_WORKERS GROUP_COMMIT LOADGEN_TICK LOADGEN_HOSTS SERVER_ADDR AGENT_CPUS SSH_OPTS ...).
Exit status: 0 all runs completed (whatever the verdict), 1 a run failed, 2 usage,
3 verdict FAIL and 4 verdict INCONCLUSIVE with --fail-on-verdict.
USAGE
}

usage_error() {
    echo "run_all.sh: $*" >&2
    echo "run ./run_all.sh --help for usage" >&2
    exit 2
}

mode=full mode_flag=() fail_on_verdict=0 opt_repeats="" sweep=0 have_rates=0 opt_rates="" scaling="" cpu_plan=0
scenarios=$ALL_SCENARIOS servers=$ALL_SERVERS
for arg in "$@"; do
    case "$arg" in
        -h|--help) usage; exit 0 ;;
        --quick|--smoke)
            [[ "$mode" == full || "$mode" == "${arg#--}" ]] || usage_error "--quick and --smoke exclude each other"
            mode=${arg#--} mode_flag=("$arg") ;;
        --scenarios=*) scenarios=$(tr ',' ' ' <<<"${arg#*=}") ;;
        --servers=*) servers=$(tr ',' ' ' <<<"${arg#*=}") ;;
        --repeats=*) opt_repeats=${arg#*=} ;;
        --batch=*) BATCH=${arg#*=} ;;
        --fail-on-verdict) fail_on_verdict=1 ;;
        --sweep) sweep=1 ;;
        --rates=*) opt_rates=${arg#*=} have_rates=1 ;;
        --scaling=*) scaling=${arg#*=}; [[ -n "$scaling" ]] || usage_error "--scaling needs a list, e.g. --scaling=1,2,4,8" ;;
        --cpu-plan) cpu_plan=1 ;;
        *) usage_error "unknown argument '$arg'" ;;
    esac
done
if (( cpu_plan )); then
    # the plans alone (runner/analysis/cpuplan.py): nothing built, installed or run
    echo "# the matrix's runs (runner.sh's plan)"
    rc=0
    cpu_plan_run ${scaling:+"--scaling=$scaling"} || rc=$?
    (( rc != 2 )) || usage_error "--cpu-plan: the plan failed (see above)"
    exit "$rc"
fi
for s in $scenarios; do
    [[ " $ALL_SCENARIOS " == *" $s "* ]] || usage_error "unknown scenario '$s' (one of: $ALL_SCENARIOS)"
done
for s in $servers; do
    [[ " $ALL_SERVERS " == *" $s "* ]] || usage_error "unknown server '$s' (one of: $ALL_SERVERS)"
done
if [[ ! "$TARGET_RATIO" =~ ^([0-9]+(\.[0-9]*)?|\.[0-9]+)$ ]] || ! awk -v r="$TARGET_RATIO" 'BEGIN { exit !(r > 0) }'; then
    usage_error "TARGET_RATIO must be a decimal number > 0, got '$TARGET_RATIO'"
fi
[[ -n "$BATCH" ]] || BATCH=$(batch_id_new)
batch_id_valid "$BATCH" || usage_error "batch id may hold only [A-Za-z0-9._-] and is not . or .., got '$BATCH'"
case "$mode" in
    full) eq_warm=10 eq_meas=30 def_repeats=3 ;;
    quick) eq_warm=5 eq_meas=10 def_repeats=3 ;;
    smoke) eq_warm=1 eq_meas=1 def_repeats=2 ;;
esac
eq_warm=${EQUAL_WARMUP_SEC:-$eq_warm}
eq_meas=${EQUAL_MEASURE_SEC:-$eq_meas}
[[ "$eq_warm" =~ ^[0-9]+$ ]] || usage_error "EQUAL_WARMUP_SEC must be whole seconds, got '$eq_warm'"
if [[ ! "$eq_meas" =~ ^[0-9]+$ ]] || (( 10#$eq_meas == 0 )); then
    usage_error "EQUAL_MEASURE_SEC must be whole seconds > 0, got '$eq_meas'"
fi
eq_warm=$((10#$eq_warm)) eq_meas=$((10#$eq_meas))
sat_ratio_valid "$SAT_RATIO" || usage_error "SAT_RATIO must be in (0, 1], got '$SAT_RATIO'"
repeats=${opt_repeats:-${REPEATS:-$def_repeats}}
if [[ ! "$repeats" =~ ^[0-9]+$ ]] || (( 10#$repeats < 1 || 10#$repeats > 20 )); then
    usage_error "repeats must be a whole number in 1..20, got '$repeats'"
fi
repeats=$((10#$repeats))
if [[ -z "$EQUAL_LOAD" ]]; then EQUAL_LOAD=$(( sweep ? 0 : 1 )); fi
[[ "$EQUAL_LOAD" == 0 || "$EQUAL_LOAD" == 1 ]] || usage_error "EQUAL_LOAD must be 0 or 1, got '$EQUAL_LOAD'"
rates=""
if (( have_rates )) || [[ -n "$RATES_ENV" ]]; then
    (( sweep )) || usage_error "--rates needs --sweep"
    (( have_rates )) || opt_rates=$RATES_ENV
    rates=$(sweep_rates_parse "$opt_rates") || usage_error "--rates: $rates"
fi
read -r _w _m _p _pw _c sweep_warm sweep_meas < <(mode_durations "$mode")
sweep_warm=${SWEEP_WARMUP_SEC:-$sweep_warm}
sweep_meas=${SWEEP_MEASURE_SEC:-$sweep_meas}
if (( sweep )); then
    [[ "$sweep_warm" =~ ^[0-9]+$ ]] || usage_error "SWEEP_WARMUP_SEC must be whole seconds, got '$sweep_warm'"
    if [[ ! "$sweep_meas" =~ ^[0-9]+$ ]] || (( 10#$sweep_meas == 0 )); then
        usage_error "SWEEP_MEASURE_SEC must be whole seconds > 0, got '$sweep_meas'"
    fi
fi

# The matrix, in order: per scenario the actor server then the async one.
pairs=()   # "scenario actor async" for scenarios where both servers are selected
runs=()    # "server scenario"
for sc in $ALL_SCENARIOS; do
    [[ " $scenarios " == *" $sc "* ]] || continue
    if [[ "$sc" == s4 ]]; then actor=actor-sqlite async=async-sqlite; else actor=actor-mem async=async-mem; fi
    n_sel=0
    for sv in $actor $async; do
        if [[ " $servers " == *" $sv "* ]]; then runs+=("$sv $sc"); n_sel=$((n_sel + 1)); fi
    done
    (( n_sel < 2 )) || pairs+=("$sc $actor $async")
done
(( ${#runs[@]} > 0 )) || usage_error "no run matches --scenarios='$scenarios' --servers='$servers' (s1-s3 use the -mem servers, s4 the -sqlite ones)"

# Scaling: which server CPU counts this host can give (runner/analysis/scaling.py decides).
scaling_plan=()   # "run N SERVER_CPUS LOADGEN_CPUS" or "skip N REASON..."
if [[ -n "$scaling" ]]; then
    mask=$(affinity_cpus) || usage_error "cannot read this shell's CPU affinity (taskset)"
    plan_out=$(analysis scaling-plan "$scaling" "$mask" 2>&1) || usage_error "--scaling: ${plan_out#analysis scaling-plan: }"
    mapfile -t scaling_plan <<<"$plan_out"
fi

batch_dir="$RESULTS_DIR/$BATCH"
mkdir -p "$batch_dir"
export LOG_TAG=run_all LOG_FILE="$batch_dir/run_all.log" RESULTS_DIR SAT_RATIO
started=$(now_iso)
# matrix.json: what was planned, so that a run that never wrote a result is still listed.
printf '%s\n' "${runs[@]}" | jq -R -s --arg batch "$BATCH" --arg mode "$mode" --arg started "$started" \
    --argjson target "$TARGET_RATIO" --argjson sat "$SAT_RATIO" --argjson eq "$EQUAL_LOAD" \
    --argjson eqw "$eq_warm" --argjson eqm "$eq_meas" --argjson repeats "$repeats" \
    --argjson sweep "$sweep" --arg rates "$rates" --argjson sw "$((10#$sweep_warm))" --argjson sm "$((10#$sweep_meas))" '
    {batch: $batch, mode: $mode, started: $started, target_ratio: $target, sat_ratio: $sat,
     repeats: $repeats, equal_load: ($eq == 1), equal_load_warmup_sec: $eqw, equal_load_measure_sec: $eqm,
     sweep: (if $sweep == 1 then {rates_rps: (if $rates == "" then null else ($rates | split(",") | map(tonumber)) end),
             warmup_sec: $sw, measure_sec: $sm} else null end),
     runs: [split("\n")[] | select(. != "") | split(" ") | {server: .[0], scenario: .[1]}]}' \
    >"$batch_dir/matrix.json"
if [[ -n "$scaling" ]]; then
    printf '%s\n' "${scaling_plan[@]}" | jq -R -s --arg counts "$scaling" '
        [split("\n")[] | select(. != "") | split(" ")] as $p
        | {counts: ($counts | split(",") | map(tonumber) | unique),
           ran: [$p[] | select(.[0] == "run") | {count: (.[1] | tonumber), server_cpus: .[2], loadgen_cpus: .[3]}],
           skipped: [$p[] | select(.[0] == "skip") | {count: (.[1] | tonumber), reason: (.[2:] | join(" "))}]}' \
        >"$batch_dir/.scaling.json"
    jq --slurpfile sc "$batch_dir/.scaling.json" '.scaling = $sc[0]' "$batch_dir/matrix.json" >"$batch_dir/matrix.json.tmp" &&
        mv -f "$batch_dir/matrix.json.tmp" "$batch_dir/matrix.json"
    rm -f "$batch_dir/.scaling.json"
    for p in "${scaling_plan[@]}"; do
        read -r what n rest <<<"$p"
        if [[ "$what" == skip ]]; then
            log_info "scaling: $n server CPUs skipped: $rest"
        fi
    done
fi

RUNNER_PID=""
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    if [[ -n "$RUNNER_PID" ]] && kill -0 "$RUNNER_PID" 2>/dev/null; then
        kill -TERM "$RUNNER_PID" 2>/dev/null || true
        wait "$RUNNER_PID" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'log_info "interrupted"; exit 130' INT TERM

# run_one SERVER SCENARIO SUFFIX [ENV=VALUE...]: runs runner.sh in the background (so that a
# signal can end it by pid) and prints its one-line outcome. Returns runner.sh's status.
i=0
run_one() {
    local sv=$1 sc=$2 suffix=$3 rc=0 res t0
    shift 3
    i=$((i + 1))
    t0=$(clock_s)
    log_info "[$i/$n_total] $sv $sc${suffix:+ ($suffix)} ..."
    env "$@" "$ROOT/runner.sh" "$sv" "$sc" "${mode_flag[@]}" "--batch=$BATCH" &
    RUNNER_PID=$!
    wait "$RUNNER_PID" || rc=$?
    RUNNER_PID=""
    res="$batch_dir/$sv-$sc$suffix/result.json"
    if [[ -f "$res" ]]; then
        log_info "[$i/$n_total] $sv $sc${suffix:+ ($suffix)}: $(jq -r '
            def f(d): if . == null then "null" else (. * pow(10; d) | round / pow(10; d) | tostring) end;
            if .failure != null then "FAILED: \(.failure)"
            else "\(if .saturation_rps != null then "saturation \(.saturation_rps | f(0)) req/s" else "" end)\(if .sustained_rps != null then "\(if .saturation_rps != null then ", " else "" end)sustained \(.sustained_rps | f(0)) req/s, p99 \(.latency_p99_ms | f(3)) ms, \(.req_per_cpu_sec | f(0)) req/CPU-s" else "" end)\(if (.flags | length) > 0 then " (\(.flags | join(", ")))" else "" end)" end' "$res") ($(calc "$(clock_s) - $t0") s)"
    else
        log_info "[$i/$n_total] $sv $sc: FAILED (exit $rc, no result.json)"
    fi
    return "$rc"
}

n_eq=0
(( EQUAL_LOAD == 0 )) || n_eq=$(( 2 * ${#pairs[@]} ))
n_scaling=0
for p in "${scaling_plan[@]}"; do
    [[ "$p" != run* ]] || n_scaling=$((n_scaling + ${#runs[@]}))
done
n_total=$(( ${#runs[@]} * repeats + n_eq + n_scaling ))
n_steps=0
if (( sweep )); then
    # the default steps: as many as runner/analysis/sweep.py's fractions (a large base keeps them apart)
    if [[ -n "$rates" ]]; then n_steps=$(tr ',' '\n' <<<"$rates" | wc -l); else n_steps=$(analysis sweep-rates 1000000 | tr ',' '\n' | wc -l); fi
fi
log_info "batch $BATCH ($mode): ${#runs[@]} servers x scenarios, $repeats probe(s) each, interleaved, + $n_eq equal-load runs = $n_total runs$( (( sweep )) && echo ", + ${#runs[@]} sweeps of $n_steps steps") -> $batch_dir"
if (( sweep )); then
    est=$(sweep_estimate_s "$mode" "${#runs[@]}" "$repeats" 0 "$n_eq" "$((eq_warm + eq_meas))" "${#runs[@]}" "$n_steps")
    log_info "estimate: about $(( (est + 59) / 60 )) min ($est s: probes, sweep steps of ${sweep_warm}+${sweep_meas} s with ${SWEEP_STEP_OVERHEAD_S} s each for a fresh server, and ${SWEEP_RUN_OVERHEAD_S} s per run)"
fi
[[ "$mode" != smoke ]] || log_info "smoke run: checks the pipeline, too short to mean anything"
failed=0
for sc in $ALL_SCENARIOS; do
    # REPEATS rounds, each server of the scenario once per round (interleaved)
    for ((r = 1; r <= repeats; r++)); do
        for run in "${runs[@]}"; do
            read -r sv rsc <<<"$run"
            [[ "$rsc" == "$sc" ]] || continue
            if (( r == 1 )); then
                run_one "$sv" "$sc" "" REPEAT=1 SUSTAIN=$(( sweep ? 0 : 1 )) || failed=1
            else
                run_one "$sv" "$sc" "-probe$r" PROBE_ONLY=1 REPEAT="$r" RUN_SUFFIX="-probe$r" || failed=1
            fi
        done
    done
    # Equal load: both servers at SAT_RATIO x the slower one's median saturation.
    for p in "${pairs[@]}"; do
        read -r psc actor async <<<"$p"
        [[ "$psc" == "$sc" && "$EQUAL_LOAD" == 1 ]] || continue
        if ! rate=$(analysis equal-rate "$batch_dir" "$sc" "$SAT_RATIO" 2>"$batch_dir/.equal-rate.err"); then
            log_info "equal load $sc: skipped ($(cat "$batch_dir/.equal-rate.err"))"
            i=$((i + 2))
            continue
        fi
        log_info "equal load $sc at $rate req/s (SAT_RATIO x the slower median saturation): $actor, $async"
        for sv in "$actor" "$async"; do
            run_one "$sv" "$sc" -equal TARGET_RPS="$rate" RUN_SUFFIX=-equal \
                WARMUP_SEC="$eq_warm" MEASURE_SEC="$eq_meas" || failed=1
        done
    done
    # The sweep: both servers at the same constant rates, after the probes (SPEC.md section 14).
    (( sweep )) || continue
    sv_list=()
    for run in "${runs[@]}"; do
        read -r sv rsc <<<"$run"
        [[ "$rsc" != "$sc" ]] || sv_list+=("$sv")
    done
    (( ${#sv_list[@]} > 0 )) || continue
    if ! base=$(analysis sweep-base "$batch_dir" "$sc" 2>"$batch_dir/.equal-rate.err"); then
        log_info "sweep $sc: skipped ($(cat "$batch_dir/.equal-rate.err"))"
        failed=1
        continue
    fi
    sc_rates=$rates
    [[ -n "$sc_rates" ]] || sc_rates=$(analysis sweep-rates "$base")
    log_info "sweep $sc: ${sv_list[*]} at $sc_rates req/s (base: the slower median saturation, $base req/s)"
    for sv in "${sv_list[@]}"; do
        rc=0 t0=$(clock_s)
        env SWEEP_BASE_RPS="$base" "$ROOT/runner.sh" "$sv" "$sc" "${mode_flag[@]}" "--batch=$BATCH" --sweep "--rates=$sc_rates" &
        RUNNER_PID=$!
        wait "$RUNNER_PID" || rc=$?
        RUNNER_PID=""
        (( rc == 0 )) || failed=1
        log_info "sweep $sc: $sv done$( (( rc == 0 )) || echo " with a failed step (exit $rc)") ($(calc "$(clock_s) - $t0") s)"
    done
done
rm -f "$batch_dir/.equal-rate.err"

# Scaling: every selected server and scenario once more at each other server CPU count the
# host can give (the matrix's own count is already measured: its first probes).
if [[ -n "$scaling" ]]; then
    main_count=$(jq -r '.config.server_cpu_count // empty' "$batch_dir"/*/result.json 2>/dev/null | head -n 1)
    for p in "${scaling_plan[@]}"; do
        read -r what n scpus lcpus <<<"$p"
        [[ "$what" == run ]] || continue
        if [[ "$n" == "$main_count" ]]; then
            log_info "scaling: $n server CPU(s): the matrix's own runs"
            i=$((i + ${#runs[@]}))
            continue
        fi
        log_info "scaling: $n server CPU(s): server CPUs $scpus, loadgen CPUs $lcpus"
        for run in "${runs[@]}"; do
            read -r sv sc <<<"$run"
            # the runner plans the count itself (the same plan, with its reasons in config.cpu_plan)
            run_one "$sv" "$sc" "-cpus$n" PROBE_ONLY=1 REPEAT=1 RUN_SUFFIX="-cpus$n" \
                SERVER_CPU_COUNT="$n" SERVER_CPUS="" LOADGEN_CPUS="" || failed=1
        done
    done
fi

jq --arg ended "$(now_iso)" '.ended = $ended' "$batch_dir/matrix.json" >"$batch_dir/matrix.json.tmp" &&
    mv -f "$batch_dir/matrix.json.tmp" "$batch_dir/matrix.json"
TARGET_RATIO="$TARGET_RATIO" "$ROOT/runner/summarize.sh" "$batch_dir" || { log_info "summarize failed"; exit 1; }
cat "$batch_dir/summary.md" >&2
"$ROOT/runner/report.sh" "$batch_dir" || { log_info "report.sh failed"; exit 1; }
IFS=$'\t' read -r overall headline < <(analysis headline "$batch_dir")
log_info "verdict: $headline"
log_info "summary: $batch_dir/summary.md, index: $batch_dir/index.json, report: $batch_dir/report.html"
[[ "$mode" != smoke ]] || log_info "smoke run: checks the pipeline, too short to mean anything; its verdict is not a result"
if (( failed )); then
    log_info "at least one run failed (see index.json .failures)"
    exit 1
fi
if (( fail_on_verdict )); then
    case "$overall" in
        FAIL) exit 3 ;;
        INCONCLUSIVE) exit 4 ;;
    esac
fi
exit 0
