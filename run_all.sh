#!/usr/bin/env bash
# run_all.sh: the comparison matrix (actor and async on s1-s3 with the memory store, both on
# s4 with SQLite) in one batch, the equal-load re-runs, then summary.md and index.json with
# the per-scenario and overall "within 2x" verdicts (runner/summarize.sh; see SPEC.md), and
# report.html, the same as plots (runner/report.sh).
# Runs runner.sh one run at a time; ends only the runner it started, by pid.
# Exit: 0 all runs completed (any verdict), 1 a run failed, 2 usage, 3 FAIL with --fail-on-verdict.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=runner/lib.sh
. "$ROOT/runner/lib.sh"

TARGET_RATIO="${TARGET_RATIO:-0.5}"     # PASS when actor/async >= this on s1 and s2
SAT_RATIO="${SAT_RATIO:-0.7}"           # passed through to runner.sh (and used for equal load)
EQUAL_LOAD="${EQUAL_LOAD:-1}"           # 0: skip the equal-load re-runs
EQUAL_WARMUP_SEC="${EQUAL_WARMUP_SEC:-}"    # equal-load warm-up (full 10, quick 5, smoke 1)
EQUAL_MEASURE_SEC="${EQUAL_MEASURE_SEC:-}"  # equal-load measured window (full 30, quick 10, smoke 1)
RESULTS_DIR="${RESULTS_DIR:-$ROOT/results}"
BATCH="${BATCH:-}"

# Only the equal-load runs set these; inherited values would turn every run into one.
unset TARGET_RPS RUN_SUFFIX

ALL_SERVERS="actor-mem async-mem actor-sqlite async-sqlite"
ALL_SCENARIOS="s1 s2 s3 s4"

usage() {
    cat <<USAGE
usage: ./run_all.sh [--help] [--quick] [--smoke] [--scenarios=s1,s2] [--servers=...]
                    [--batch=ID] [--fail-on-verdict]
Runs the matrix (actor-mem, async-mem on s1 s2 s3; actor-sqlite, async-sqlite on s4) into
results/<batch>/, re-runs both servers of each scenario at equal load (SAT_RATIO x the slower
one's saturation), and writes results/<batch>/summary.md, index.json and report.html.
  --quick            15 s warm-up, 15 s measure, 10 s probe per run (equal load: 5+10 s)
  --smoke            a few seconds per run, for tests
  --scenarios=LIST   subset of: $ALL_SCENARIOS
  --servers=LIST     subset of: $ALL_SERVERS
  --batch=ID         batch id (default: UTC timestamp)
  --fail-on-verdict  exit 3 when the overall verdict is FAIL
Environment: TARGET_RATIO ($TARGET_RATIO) SAT_RATIO ($SAT_RATIO) EQUAL_LOAD (1)
  EQUAL_WARMUP_SEC EQUAL_MEASURE_SEC RESULTS_DIR, and everything runner.sh reads
  (WARMUP_SEC MEASURE_SEC PROBE_SEC SERVER_CPUS LOADGEN_CPUS WRK_CONNS WRK_THREADS BEARER ...).
Exit status: 0 all runs completed (whatever the verdict), 1 a run failed, 2 usage,
3 verdict FAIL with --fail-on-verdict.
USAGE
}

usage_error() {
    echo "run_all.sh: $*" >&2
    echo "run ./run_all.sh --help for usage" >&2
    exit 2
}

mode=full mode_flag=() fail_on_verdict=0
scenarios=$ALL_SCENARIOS servers=$ALL_SERVERS
for arg in "$@"; do
    case "$arg" in
        -h|--help) usage; exit 0 ;;
        --quick) mode=quick mode_flag=(--quick) ;;
        --smoke) mode=smoke mode_flag=(--smoke) ;;
        --scenarios=*) scenarios=$(tr ',' ' ' <<<"${arg#*=}") ;;
        --servers=*) servers=$(tr ',' ' ' <<<"${arg#*=}") ;;
        --batch=*) BATCH=${arg#*=} ;;
        --fail-on-verdict) fail_on_verdict=1 ;;
        *) usage_error "unknown argument '$arg'" ;;
    esac
done
for s in $scenarios; do
    [[ " $ALL_SCENARIOS " == *" $s "* ]] || usage_error "unknown scenario '$s' (one of: $ALL_SCENARIOS)"
done
for s in $servers; do
    [[ " $ALL_SERVERS " == *" $s "* ]] || usage_error "unknown server '$s' (one of: $ALL_SERVERS)"
done
awk -v r="$TARGET_RATIO" 'BEGIN { exit !(r + 0 > 0 && r == r + 0) }' || usage_error "bad TARGET_RATIO '$TARGET_RATIO'"
[[ -n "$BATCH" ]] || BATCH=$(batch_id_new)
[[ "$BATCH" =~ ^[A-Za-z0-9._-]+$ ]] || usage_error "batch id may hold only [A-Za-z0-9._-], got '$BATCH'"
case "$mode" in
    full) eq_warm=10 eq_meas=30 ;;
    quick) eq_warm=5 eq_meas=10 ;;
    smoke) eq_warm=1 eq_meas=1 ;;
esac
eq_warm=${EQUAL_WARMUP_SEC:-$eq_warm}
eq_meas=${EQUAL_MEASURE_SEC:-$eq_meas}

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

batch_dir="$RESULTS_DIR/$BATCH"
mkdir -p "$batch_dir"
export LOG_TAG=run_all LOG_FILE="$batch_dir/run_all.log" RESULTS_DIR SAT_RATIO
started=$(now_iso)
# matrix.json: what was planned, so that a run that never wrote a result is still listed.
printf '%s\n' "${runs[@]}" | jq -R -s --arg batch "$BATCH" --arg mode "$mode" --arg started "$started" \
    --argjson target "$TARGET_RATIO" --argjson sat "$SAT_RATIO" --argjson eq "$EQUAL_LOAD" \
    --argjson eqw "$eq_warm" --argjson eqm "$eq_meas" '
    {batch: $batch, mode: $mode, started: $started, target_ratio: $target, sat_ratio: $sat,
     equal_load: ($eq == 1), equal_load_warmup_sec: $eqw, equal_load_measure_sec: $eqm,
     runs: [split("\n")[] | select(. != "") | split(" ") | {server: .[0], scenario: .[1]}]}' \
    >"$batch_dir/matrix.json"

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

# run_one TAG SERVER SCENARIO SUFFIX [ENV=VALUE...]: runs runner.sh in the background (so that a
# signal can end it by pid) and prints its one-line outcome. Returns runner.sh's status.
run_one() {
    local tag=$1 sv=$2 sc=$3 suffix=$4 rc=0 res
    shift 4
    env "$@" "$ROOT/runner.sh" "$sv" "$sc" "${mode_flag[@]}" "--batch=$BATCH" &
    RUNNER_PID=$!
    wait "$RUNNER_PID" || rc=$?
    RUNNER_PID=""
    res="$batch_dir/$sv-$sc$suffix/result.json"
    if [[ -f "$res" ]]; then
        log_info "$tag $sv $sc: $(jq -r '
            def f(d): if . == null then "null" else (. * pow(10; d) | round / pow(10; d) | tostring) end;
            def flags: [(if .validity.saturated == false then "not saturated" else empty end),
                        (if .validity.loadgen_bound == true then "loadgen-bound" else empty end),
                        (if .validity.rate_held == false then "rate not held" else empty end),
                        (if .validity.clean == false then "errors" else empty end)] | join(", ");
            if .failure != null then "FAILED: \(.failure)"
            else "\(if .saturation_rps != null then "saturation \(.saturation_rps | f(0)) req/s, " else "" end)sustained \(.sustained_rps | f(0)) req/s, p99 \(.latency_p99_ms | f(3)) ms, \(.req_per_cpu_sec | f(0)) req/CPU-s\(if flags != "" then " (\(flags))" else "" end)" end' "$res")"
    else
        log_info "$tag $sv $sc: FAILED (exit $rc, no result.json)"
    fi
    return "$rc"
}

failed=0
n=${#runs[@]} i=0
n_eq=${#pairs[@]} i_eq=0
log_info "batch $BATCH ($mode): ${n} runs$( ((EQUAL_LOAD == 1 && n_eq > 0)) && echo " + $n_eq equal-load pairs") -> $batch_dir"
for sc in $ALL_SCENARIOS; do
    for r in "${runs[@]}"; do
        read -r sv rsc <<<"$r"
        [[ "$rsc" == "$sc" ]] || continue
        i=$((i + 1))
        log_info "[$i/$n] $sv $sc ..."
        run_one "[$i/$n]" "$sv" "$sc" "" || failed=1
    done
    # Equal load: both servers at SAT_RATIO x the slower one's saturation.
    for p in "${pairs[@]}"; do
        read -r psc actor async <<<"$p"
        [[ "$psc" == "$sc" && "$EQUAL_LOAD" == 1 ]] || continue
        i_eq=$((i_eq + 1))
        ra="$batch_dir/$actor-$sc/result.json" rb="$batch_dir/$async-$sc/result.json"
        if ! rate=$(jq -n --slurpfile a "$ra" --slurpfile b "$rb" --argjson k "$SAT_RATIO" '
                [$a[0], $b[0]] | if all(.failure == null and (.saturation_rps // 0) > 0)
                then (map(.saturation_rps) | min) * $k | round | if . < 1 then 1 else . end
                else error("a run failed") end' 2>/dev/null); then
            log_info "[equal $i_eq/$n_eq] $sc: skipped (a saturation run failed)"
            continue
        fi
        log_info "[equal $i_eq/$n_eq] $sc at $rate req/s (SAT_RATIO x the slower saturation): $actor, $async ..."
        for sv in "$actor" "$async"; do
            run_one "[equal $i_eq/$n_eq]" "$sv" "$sc" -equal TARGET_RPS="$rate" RUN_SUFFIX=-equal \
                WARMUP_SEC="$eq_warm" MEASURE_SEC="$eq_meas" || failed=1
        done
    done
done

jq --arg ended "$(now_iso)" '.ended = $ended' "$batch_dir/matrix.json" >"$batch_dir/matrix.json.tmp" &&
    mv -f "$batch_dir/matrix.json.tmp" "$batch_dir/matrix.json"
TARGET_RATIO="$TARGET_RATIO" "$ROOT/runner/summarize.sh" "$batch_dir" || { log_info "summarize failed"; exit 1; }
cat "$batch_dir/summary.md" >&2
"$ROOT/runner/report.sh" "$batch_dir" || { log_info "report.sh failed"; exit 1; }
overall=$(jq -r '.verdict.overall' "$batch_dir/index.json")
log_info "verdict: $overall; summary: $batch_dir/summary.md, index: $batch_dir/index.json, report: $batch_dir/report.html"
if (( failed )); then
    log_info "at least one run failed (see index.json .failures)"
    exit 1
fi
if (( fail_on_verdict )) && [[ "$overall" == FAIL ]]; then
    exit 3
fi
exit 0
