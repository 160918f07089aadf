#!/usr/bin/env bash
# runner.sh: one server x one scenario. Builds if needed, starts the server pinned to its
# CPUs with a fresh store, sanity-checks the routes, probes saturation closed-loop, then
# sustains SAT_RATIO x saturation at a constant rate and records latency, CPU, RSS and
# the handler p99 into results/<batch>/<server>-<scenario>/result.json (see SPEC.md).
# Ends only the processes it started, by pid. Exit: 0 ok, 1 run failed, 2 usage.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=runner/lib.sh
. "$ROOT/runner/lib.sh"
# shellcheck source=runner/proc.sh
. "$ROOT/runner/proc.sh"
# shellcheck source=runner/metrics.sh
. "$ROOT/runner/metrics.sh"
# shellcheck source=runner/host.sh
. "$ROOT/runner/host.sh"
# shellcheck source=runner/sanity.sh
. "$ROOT/runner/sanity.sh"

# Settings: environment variables mirror the options; an option beats the environment,
# the environment beats --quick/--smoke, which beat the defaults shown.
ENV_WARMUP_SEC="${WARMUP_SEC:-}"          # sustain warm-up, discarded (30)
ENV_MEASURE_SEC="${MEASURE_SEC:-}"        # sustain measured window (60)
ENV_PROBE_SEC="${PROBE_SEC:-}"            # saturation probe, measured part (30)
ENV_PROBE_WARMUP_SEC="${PROBE_WARMUP_SEC:-}"  # probe warm-up, discarded (5)
ENV_WRK_CONNS="${WRK_CONNS:-}"            # connections (256)
ENV_WRK_THREADS="${WRK_THREADS:-}"        # loadgen threads (CPUs in LOADGEN_CPUS)
SERVER_CPUS="${SERVER_CPUS:-}"            # default: first half of the affinity mask
LOADGEN_CPUS="${LOADGEN_CPUS:-}"          # default: second half
SAT_RATIO="${SAT_RATIO:-0.7}"             # sustained rate = SAT_RATIO x saturation
BEARER="${BEARER:-test-token-aaaaaaaaaaaaaaaaaaaa}"
ACTOR_WORKERS="${ACTOR_WORKERS:-}"        # actor-server --workers (unset: server default 0)
SEED_USERS="${SEED_USERS:-10000}"         # must match the mix files' id range
REQ_TIMEOUT_SEC="${REQ_TIMEOUT_SEC:-10}"  # loadgen per-request timeout
STOP_TIMEOUT_SEC="${STOP_TIMEOUT_SEC:-5}" # SIGTERM to exit, else SIGKILL and failure
READY_TIMEOUT_SEC="${READY_TIMEOUT_SEC:-15}"
ACCESS_LOG="${ACCESS_LOG:-/dev/null}"     # server --access-log (the logger still formats)
TARGET_RPS="${TARGET_RPS:-}"              # set: skip the probe, sustain this rate (equal load)
RUN_SUFFIX="${RUN_SUFFIX:-}"              # appended to the run folder name ("-equal")
RESULTS_DIR="${RESULTS_DIR:-$ROOT/results}"
MIX_DIR="${MIX_DIR:-$ROOT/loadgen-scripts}"  # scenario mix files
BUILD="${BUILD:-build}"                   # binaries: $BUILD/{async,actor}-server, $BUILD/loadgen
RUNNER_BUILD="${RUNNER_BUILD:-1}"         # 0: never run make, require the binaries
PORT="${PORT:-}"                          # default: a free loopback port
BATCH="${BATCH:-}"

SERVERS="actor-mem async-mem actor-sqlite async-sqlite"
SCENARIOS="s1 s2 s3 s4"

usage() {
    cat <<USAGE
usage: ./runner.sh [--help] <server> <scenario> [--quick] [--smoke] [--measure-sec=N]
                   [--warmup-sec=N] [--probe-sec=N] [--wrk-conns=N] [--wrk-threads=N]
                   [--batch=ID]
  server:   $SERVERS
  scenario: s1 (GET /ping), s2 (GET /users/:id, bearer), s3 (mixed, memory store),
            s4 (mixed, sqlite store)
  --quick   15 s warm-up, 15 s measure, 10 s probe (+3 s probe warm-up)
  --smoke   a few seconds in all, for tests: probe 1+2 s, sustain 1+2 s, 32 connections
  --batch   results go to results/<batch>/<server>-<scenario>/ (default: UTC timestamp)
Environment (an option beats it; it beats --quick/--smoke):
  WARMUP_SEC (30) MEASURE_SEC (60) PROBE_SEC (30) PROBE_WARMUP_SEC (5) WRK_CONNS (256)
  WRK_THREADS (CPUs in LOADGEN_CPUS) SERVER_CPUS / LOADGEN_CPUS (the affinity mask split in
  two halves, server first) SAT_RATIO (0.7) BEARER ACTOR_WORKERS SEED_USERS (10000)
  REQ_TIMEOUT_SEC (10) STOP_TIMEOUT_SEC (5) RESULTS_DIR MIX_DIR BUILD (build) RUNNER_BUILD (1)
  PORT TARGET_RPS (skip the probe and sustain this rate: run_all's equal-load runs)
  RUN_SUFFIX (appended to the run folder name)
Writes result.json, histogram.txt, loadgen.json, server.log and runner.log.
Exit status: 0 run completed, 1 run failed (result.json says why), 2 usage.
USAGE
}

usage_error() {
    echo "runner.sh: $*" >&2
    echo "run ./runner.sh --help for usage" >&2
    exit 2
}

# ---- arguments ------------------------------------------------------------------
opt_warmup="" opt_measure="" opt_probe="" opt_conns="" opt_threads="" mode=full
positional=()
for arg in "$@"; do
    case "$arg" in
        -h|--help) usage; exit 0 ;;
        --quick) mode=quick ;;
        --smoke) mode=smoke ;;
        --measure-sec=*) opt_measure=${arg#*=} ;;
        --warmup-sec=*) opt_warmup=${arg#*=} ;;
        --probe-sec=*) opt_probe=${arg#*=} ;;
        --wrk-conns=*) opt_conns=${arg#*=} ;;
        --wrk-threads=*) opt_threads=${arg#*=} ;;
        --batch=*) BATCH=${arg#*=} ;;
        -*) usage_error "unknown option '$arg'" ;;
        *) positional+=("$arg") ;;
    esac
done
[[ ${#positional[@]} -eq 2 ]] || usage_error "expected <server> <scenario>, got ${#positional[@]} arguments"
server=${positional[0]} scenario=${positional[1]}

case "$server" in
    actor-mem) bin_name=actor-server store=memory ;;
    async-mem) bin_name=async-server store=memory ;;
    actor-sqlite) bin_name=actor-server store=sqlite ;;
    async-sqlite) bin_name=async-server store=sqlite ;;
    *) usage_error "unknown server '$server' (one of: $SERVERS)" ;;
esac
case "$scenario" in
    s1) mix=s1_ping.mix ;;
    s2) mix=s2_user_get.mix ;;
    s3|s4) mix=s3_mixed.mix ;;
    *) usage_error "unknown scenario '$scenario' (one of: $SCENARIOS)" ;;
esac
if [[ "$scenario" == s3 && "$store" != memory ]]; then
    usage_error "scenario s3 uses the memory store: run it on actor-mem or async-mem"
fi
if [[ "$scenario" == s4 && "$store" != sqlite ]]; then
    usage_error "scenario s4 uses the sqlite store: run it on actor-sqlite or async-sqlite"
fi

# pick VALUE...: the first non-empty argument.
pick() {
    local v
    for v in "$@"; do
        if [[ -n "$v" ]]; then printf '%s\n' "$v"; return 0; fi
    done
}
case "$mode" in
    full) p_warm=30 p_meas=60 p_probe=30 p_pwarm=5 p_conns=256 ;;
    quick) p_warm=15 p_meas=15 p_probe=10 p_pwarm=3 p_conns=256 ;;
    smoke) p_warm=1 p_meas=2 p_probe=2 p_pwarm=1 p_conns=32 ;;
esac
warmup_sec=$(pick "$opt_warmup" "$ENV_WARMUP_SEC" "$p_warm")
measure_sec=$(pick "$opt_measure" "$ENV_MEASURE_SEC" "$p_meas")
probe_sec=$(pick "$opt_probe" "$ENV_PROBE_SEC" "$p_probe")
probe_warmup_sec=$(pick "$ENV_PROBE_WARMUP_SEC" "$p_pwarm")
wrk_conns=$(pick "$opt_conns" "$ENV_WRK_CONNS" "$p_conns")

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }
is_pos_int() { [[ "$1" =~ ^[0-9]+$ ]] && (( 10#$1 > 0 )); }
is_uint "$warmup_sec" || usage_error "warm-up must be whole seconds, got '$warmup_sec'"
is_pos_int "$measure_sec" || usage_error "measure must be whole seconds > 0, got '$measure_sec'"
is_pos_int "$probe_sec" || usage_error "probe must be whole seconds > 0, got '$probe_sec'"
is_uint "$probe_warmup_sec" || usage_error "PROBE_WARMUP_SEC must be whole seconds, got '$probe_warmup_sec'"
is_pos_int "$wrk_conns" || usage_error "connections must be > 0, got '$wrk_conns'"
warmup_sec=$((10#$warmup_sec)) measure_sec=$((10#$measure_sec)) probe_sec=$((10#$probe_sec))
probe_warmup_sec=$((10#$probe_warmup_sec)) wrk_conns=$((10#$wrk_conns))
if [[ ! "$SAT_RATIO" =~ ^(0?\.[0-9]+|1(\.0*)?)$ ]] || ! awk -v r="$SAT_RATIO" 'BEGIN { exit !(r > 0 && r <= 1) }'; then
    usage_error "SAT_RATIO must be in (0, 1], got '$SAT_RATIO'"
fi
is_pos_int "$SEED_USERS" || usage_error "SEED_USERS must be a whole number > 0, got '$SEED_USERS'"
is_pos_int "$REQ_TIMEOUT_SEC" || usage_error "REQ_TIMEOUT_SEC must be whole seconds > 0, got '$REQ_TIMEOUT_SEC'"
is_pos_int "$STOP_TIMEOUT_SEC" || usage_error "STOP_TIMEOUT_SEC must be whole seconds > 0, got '$STOP_TIMEOUT_SEC'"
is_pos_int "$READY_TIMEOUT_SEC" || usage_error "READY_TIMEOUT_SEC must be whole seconds > 0, got '$READY_TIMEOUT_SEC'"
if [[ -n "$PORT" ]] && ! is_pos_int "$PORT"; then usage_error "PORT must be a port number, got '$PORT'"; fi
if [[ -n "$TARGET_RPS" ]]; then
    is_pos_int "$TARGET_RPS" || usage_error "TARGET_RPS must be a whole rate > 0, got '$TARGET_RPS'"
fi
if [[ -n "$ACTOR_WORKERS" ]]; then
    is_uint "$ACTOR_WORKERS" || usage_error "ACTOR_WORKERS must be a whole number, got '$ACTOR_WORKERS'"
fi

# CPUs: the affinity mask split in two halves unless given.
mask=$(affinity_cpus) || usage_error "cannot read this shell's CPU affinity (taskset)"
if [[ -z "$SERVER_CPUS" || -z "$LOADGEN_CPUS" ]]; then
    split=$(cpulist_split "$mask") || usage_error "cannot split the affinity mask '$mask'"
    [[ -n "$SERVER_CPUS" ]] || SERVER_CPUS=$(sed -n 1p <<<"$split")
    [[ -n "$LOADGEN_CPUS" ]] || LOADGEN_CPUS=$(sed -n 2p <<<"$split")
fi
n_server_cpus=$(cpulist_count "$SERVER_CPUS") || usage_error "bad SERVER_CPUS '$SERVER_CPUS'"
n_loadgen_cpus=$(cpulist_count "$LOADGEN_CPUS") || usage_error "bad LOADGEN_CPUS '$LOADGEN_CPUS'"
wrk_threads=$(pick "$opt_threads" "$ENV_WRK_THREADS" "$n_loadgen_cpus")
is_pos_int "$wrk_threads" || usage_error "loadgen threads must be > 0, got '$wrk_threads'"
wrk_threads=$((10#$wrk_threads))
cpus_disjoint=true
if [[ -n "$(comm -12 <(cpulist_expand "$SERVER_CPUS" | sort -u) <(cpulist_expand "$LOADGEN_CPUS" | sort -u))" ]]; then
    cpus_disjoint=false
fi

[[ -n "$BATCH" ]] || BATCH=$(batch_id_new)
[[ "$BATCH" =~ ^[A-Za-z0-9._-]+$ ]] || usage_error "batch id may hold only [A-Za-z0-9._-], got '$BATCH'"
[[ "$RUN_SUFFIX" =~ ^[A-Za-z0-9._-]*$ ]] || usage_error "bad RUN_SUFFIX '$RUN_SUFFIX'"
kind=saturation
[[ -z "$TARGET_RPS" ]] || kind=equal-load

run_name="$server-$scenario$RUN_SUFFIX"
run_dir="$RESULTS_DIR/$BATCH/$run_name"
rm -rf "$run_dir"
mkdir -p "$run_dir"
run_dir=$(cd "$run_dir" && pwd)
RES="$run_dir/result.json"
export LOG_FILE="$run_dir/runner.log" LOG_TAG="runner $run_name"
: >"$LOG_FILE"

# ---- state and cleanup ----------------------------------------------------------
SERVER_PID="" LOADGEN_PID="" BG_PID="" DIED=""
cleanup() {
    local rc=$? pid
    # an exit through set -e, not through fail: still say in result.json that the run failed
    if (( rc != 0 )) && [[ -f "${RES:-}" ]] && jq -e '.failure == null' "$RES" >/dev/null 2>&1; then
        json_set_str "$RES" .failure "runner.sh failed unexpectedly (exit $rc) at ${LAST_ERR:-an unknown command}" || true
        json_set_str "$RES" .timestamps.end "$(now_iso)" || true
        log_info "FAILED: runner.sh exited $rc at ${LAST_ERR:-an unknown command}"
    fi
    # the edge sampler's sleep first (its parent is our own background job)
    if [[ -n "$BG_PID" ]]; then pkill -TERM -P "$BG_PID" 2>/dev/null || true; fi
    for pid in "$BG_PID" "$LOADGEN_PID" "$SERVER_PID"; do
        if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null || true
        fi
    done
    if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        sleep 1
        kill -KILL "$SERVER_PID" 2>/dev/null || true
    fi
    rm -f "$run_dir/server.db" "$run_dir/server.db-wal" "$run_dir/server.db-shm"
}
LAST_ERR=""
trap 'LAST_ERR="line $LINENO: $BASH_COMMAND"' ERR
trap cleanup EXIT
trap 'fail "interrupted by a signal"' INT TERM

# server_died: sets DIED to how the (already exited) server ended, for failure messages.
# Not in a subshell: only this shell can wait for its child.
server_died() {
    local st=0
    wait "$SERVER_PID" 2>/dev/null || st=$?
    SERVER_PID=""
    if (( st > 128 )); then DIED="killed by signal $((st - 128))"; else DIED="exit status $st"; fi
    DIED="$DIED; server.log ends: $(tail -n 3 "$run_dir/server.log" | tr '\n' ' ')"
}

# fail MSG: records MSG as the run's failure in result.json, stops what this run
# started (the EXIT trap) and exits 1.
fail() {
    trap - INT TERM
    log_info "FAILED: $*"
    if [[ -f "$RES" ]]; then
        json_set_str "$RES" .failure "$*" || true
        json_set_str "$RES" .timestamps.end "$(now_iso)" || true
    fi
    exit 1
}

# ---- result skeleton: every field present from the start, null until known -------
config_json=$(jq -n \
    --arg mode "$mode" --arg store "$store" --arg mix "loadgen-scripts/$mix" \
    --arg server_cpus "$SERVER_CPUS" --arg loadgen_cpus "$LOADGEN_CPUS" --arg mask "$mask" \
    --argjson n_server "$n_server_cpus" --argjson n_loadgen "$n_loadgen_cpus" \
    --argjson disjoint "$cpus_disjoint" --argjson conns "$wrk_conns" --argjson threads "$wrk_threads" \
    --argjson warm "$warmup_sec" --argjson meas "$measure_sec" --argjson probe "$probe_sec" \
    --argjson pwarm "$probe_warmup_sec" --argjson ratio "$SAT_RATIO" \
    --argjson seed "$SEED_USERS" --argjson timeout "$REQ_TIMEOUT_SEC" \
    --arg workers "$ACTOR_WORKERS" --arg bin "$bin_name" --arg access_log "$ACCESS_LOG" \
    --arg target "$TARGET_RPS" \
    '{mode: $mode, store: $store, mix: $mix, binary: $bin, affinity_mask: $mask,
      server_cpus: $server_cpus, loadgen_cpus: $loadgen_cpus, server_cpu_count: $n_server,
      loadgen_cpu_count: $n_loadgen, cpus_disjoint: $disjoint, server_threads: $n_server,
      actor_workers: (if $bin == "actor-server" then (if $workers == "" then 0 else ($workers | tonumber) end) else null end),
      wrk_conns: $conns, wrk_threads: $threads, pipeline: 1,
      probe_warmup_sec: $pwarm, probe_sec: $probe, warmup_sec: $warm, measure_sec: $meas,
      sat_ratio: $ratio, fixed_target_rps: (if $target == "" then null else ($target | tonumber) end),
      seed_users: $seed, request_timeout_sec: $timeout, access_log: $access_log, port: null}')
jq -n --arg server "$server" --arg scenario "$scenario" --arg kind "$kind" --arg batch "$BATCH" \
    --arg run "$run_name" --arg start "$(now_iso)" --argjson config "$config_json" \
    --argjson host "$(host_json)" --argjson versions "$(versions_json "$ROOT")" '
    {server: $server, scenario: $scenario, kind: $kind, batch: $batch, run: $run,
     saturation_rps: null, target_rps: null, sustained_rps: null,
     latency_p50_ms: null, latency_p75_ms: null, latency_p90_ms: null, latency_p99_ms: null,
     latency_p99_9_ms: null, latency_p99_99_ms: null, latency_max_ms: null, latency_mean_ms: null,
     service_time_p50_ms: null, service_time_p99_ms: null, service_time_max_ms: null,
     requests_completed: null, measured_window_s: null, server_cpu_window_s: null,
     server_cpu_pct: null, server_cpu_s: null, req_per_cpu_sec: null,
     server_rss_mb: null, handler_p99_us: null, handler_p50_us: null,
     server_cpus_busy_pct: null, server_cpus_other_pct: null, server_cpus_steal_pct: null,
     loadgen_cpu_pct: null, loadgen_cpu_s: null,
     errors: null, errors_total: null, status_counts: null, unexpected_status_counts: null,
     in_flight_at_end: null,
     probe: null, server_metrics: null, server_exit: null,
     config: $config, host: $host, versions: $versions,
     timestamps: {start: $start, end: null},
     validity: {saturated: null, loadgen_bound: null, rate_held: null, clean: null},
     failure: null,
     files: {histogram: "histogram.txt", loadgen_json: "loadgen.json", server_log: "server.log",
             runner_log: "runner.log"}}' >"$RES"

log_info "$server $scenario ($mode): server CPUs $SERVER_CPUS, loadgen CPUs $LOADGEN_CPUS x $wrk_threads threads, $wrk_conns connections -> $run_dir"
[[ "$cpus_disjoint" == true ]] || log_info "warning: server and loadgen CPUs overlap ($SERVER_CPUS / $LOADGEN_CPUS): results are not fair"

# ---- phase: build -------------------------------------------------------------------
server_bin="$BUILD/$bin_name" loadgen_bin="$BUILD/loadgen"
[[ "$server_bin" == /* ]] || server_bin="$ROOT/$server_bin"
[[ "$loadgen_bin" == /* ]] || loadgen_bin="$ROOT/$loadgen_bin"
if [[ "$RUNNER_BUILD" == 1 && "$BUILD" == build ]]; then
    if ! make -C "$ROOT" --no-print-directory -s "build/$bin_name" build/loadgen >"$run_dir/build.log" 2>&1; then
        fail "build failed: make build/$bin_name build/loadgen (see build.log)"
    fi
fi
[[ -x "$server_bin" ]] || fail "server binary $server_bin is missing (make build/$bin_name)"
[[ -x "$loadgen_bin" ]] || fail "load generator $loadgen_bin is missing (make build/loadgen)"
mix_file="$MIX_DIR/$mix"
[[ -r "$mix_file" ]] || fail "mix file $mix_file is missing"
log_info "build: ok ($BUILD/$bin_name, $BUILD/loadgen)"

# From here on this script's own work (curl, jq, sampling) runs on the loadgen CPUs,
# so that nothing but the server runs on the server's CPUs.
taskset -pc "$LOADGEN_CPUS" $$ >/dev/null 2>&1 || log_info "warning: could not pin the runner to $LOADGEN_CPUS"

# ---- phase: start -------------------------------------------------------------------
if [[ -z "$PORT" ]]; then
    PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') ||
        fail "could not find a free loopback port"
fi
json_set "$RES" .config.port "$PORT"
url="http://127.0.0.1:$PORT"
server_args=("--store=$store" --host 127.0.0.1 --port "$PORT" --threads "$n_server_cpus"
    --bearer "$BEARER" --seed-users "$SEED_USERS" --access-log "$ACCESS_LOG")
if [[ "$store" == sqlite ]]; then
    rm -f "$run_dir/server.db" "$run_dir/server.db-wal" "$run_dir/server.db-shm"
    server_args+=(--db "$run_dir/server.db")
fi
if [[ "$bin_name" == actor-server && -n "$ACTOR_WORKERS" ]]; then
    server_args+=(--workers "$ACTOR_WORKERS")
fi
printf '%q ' taskset -c "$SERVER_CPUS" "$server_bin" "${server_args[@]}" >"$run_dir/server.cmd"
echo >>"$run_dir/server.cmd"
t_start=$(clock_s)
(cd "$run_dir" && exec taskset -c "$SERVER_CPUS" "$server_bin" "${server_args[@]}") \
    >"$run_dir/server.log" 2>&1 </dev/null &
SERVER_PID=$!
ready_rc=0
ping_wait "$url" "$SERVER_PID" "$READY_TIMEOUT_SEC" || ready_rc=$?
case "$ready_rc" in
    0) ;;
    1) server_died; fail "server exited before answering /ping ($DIED)" ;;
    *) fail "server did not answer /ping within ${READY_TIMEOUT_SEC} s" ;;
esac
# The port was free when picked; make sure it is our server that answered.
if ! grep -Eq "listening on http://127\.0\.0\.1:$PORT([^0-9]|\$)" "$run_dir/server.log"; then
    fail "/ping answered on port $PORT but server.log has no 'listening on http://127.0.0.1:$PORT' (another process on the port?)"
fi
log_info "start: $bin_name --store=$store pid $SERVER_PID on port $PORT, $n_server_cpus thread(s) on CPUs $SERVER_CPUS, ready in $(calc "$(clock_s) - $t_start") s"

# ---- phase: sanity ------------------------------------------------------------------
if ! why=$(sanity_check "$url" "$scenario" "$BEARER"); then
    fail "sanity check failed: $why"
fi
case "$scenario" in
    s1) log_info "sanity: GET /ping 200 pong, GET /metrics 200" ;;
    s2) log_info "sanity: GET /ping, /metrics, /users/1 200; 401 without or with a wrong bearer" ;;
    *) log_info "sanity: GET /ping, /metrics, /users/1, /users?limit 200; POST /users 201; 401 without the bearer" ;;
esac

# ---- load generator ---------------------------------------------------------------------
# run_load PHASE RATE WARMUP DURATION JSON HGRM [SCRAPE_PREFIX]: runs the loadgen pinned to
# LOADGEN_CPUS; at the end of its warm-up a background job samples the server's CPU (and
# scrapes /metrics to SCRAPE_PREFIX-before.prom when given); right after it exits the CPU is
# sampled again (and /metrics scraped to SCRAPE_PREFIX-after.prom). Sets LOAD_T0 (clock at
# launch), LOAD_CPU0 / LOAD_CPU1 (proc_sample lines at the window's edges), LOAD_STAT0 /
# LOAD_STAT1 (cpustat_sample of SERVER_CPUS at the same edges), LOAD_WALL_S.
run_load() {
    local phase=$1 rate=$2 warm=$3 dur=$4 json=$5 hgrm=$6 scrape=${7:-} rc=0
    local edge="$run_dir/.$phase.edge"
    rm -f "$edge" "$edge.stat" "$json" "$hgrm"
    LOAD_T0=$(clock_s)
    if (( warm == 0 )); then
        if ! proc_sample "$SERVER_PID" >"$edge"; then server_died; fail "server exited before the $phase ($DIED)"; fi
        cpustat_sample "$SERVER_CPUS" >"$edge.stat"
        if [[ -n "$scrape" ]]; then metrics_scrape "$url" "$scrape-before.prom" || fail "scraping /metrics before the $phase failed"; fi
    else
        (
            sleep "$warm"
            cpustat_sample "$SERVER_CPUS" >"$edge.stat"
            proc_sample "$SERVER_PID" >"$edge.tmp" && mv "$edge.tmp" "$edge"
            if [[ -n "$scrape" ]]; then metrics_scrape "$url" "$scrape-before.prom" || rm -f "$scrape-before.prom"; fi
        ) &
        BG_PID=$!
    fi
    taskset -c "$LOADGEN_CPUS" "$loadgen_bin" --url "$url" --mix "$mix_file" \
        --connections "$wrk_conns" --threads "$wrk_threads" --duration "$dur" --warmup "$warm" \
        --rate "$rate" --timeout "$REQ_TIMEOUT_SEC" --bearer "$BEARER" \
        --json "$json" --hgrm "$hgrm" >>"$run_dir/loadgen-$phase.log" 2>&1 </dev/null &
    LOADGEN_PID=$!
    wait "$LOADGEN_PID" || rc=$?
    LOADGEN_PID=""
    if ! LOAD_CPU1=$(proc_sample "$SERVER_PID"); then server_died; fail "server exited during the $phase ($DIED)"; fi
    LOAD_STAT1=$(cpustat_sample "$SERVER_CPUS")
    LOAD_WALL_S=$(calc "$(clock_s) - $LOAD_T0")
    if [[ -n "$BG_PID" ]]; then wait "$BG_PID" || true; BG_PID=""; fi
    if [[ -n "$scrape" ]]; then
        metrics_scrape "$url" "$scrape-after.prom" || fail "scraping /metrics after the $phase failed"
        [[ -f "$scrape-before.prom" ]] || fail "scraping /metrics at the end of the $phase warm-up failed"
    fi
    (( rc == 0 )) || fail "loadgen exited $rc in the $phase: $(tail -n 3 "$run_dir/loadgen-$phase.log" | tr '\n' ' ')"
    [[ -s "$edge" ]] || fail "the $phase lasted less than its warm-up: no CPU sample at the window's start"
    LOAD_CPU0=$(<"$edge")
    LOAD_STAT0=$(cat "$edge.stat" 2>/dev/null || echo "0 0 0")
    rm -f "$edge" "$edge.stat"
    jq -e 'has("achieved_rps") and has("requests_completed") and has("errors") and has("latency_ms")
           and has("loadgen_cpu_s")' "$json" >/dev/null 2>&1 ||
        fail "loadgen's $phase json ($json) lacks achieved_rps/requests_completed/errors/latency_ms/loadgen_cpu_s"
}

# errors_total JSON: errors of every class (connect, read, write, timeout, parse, status);
# a response with an unexpected status is a status error, so it is counted once.
errors_total() {
    jq '[.errors // {} | to_entries[].value] | add // 0' "$1"
}

# unexpected_total JSON: responses whose status differed from the mix's expectation.
unexpected_total() {
    jq '[.unexpected_status_counts // {} | to_entries[].value] | add // 0' "$1"
}

# loadgen_pct JSON: the loadgen's CPU in percent of one CPU over its measured window
# (its loadgen_cpu_s is getrusage at the window's edges; elapsed_s is that window).
loadgen_pct() {
    jq 'if (.elapsed_s // 0) > 0 then ((.loadgen_cpu_s.total // 0) / .elapsed_s * 10000 | round / 100) else null end' "$1"
}

# contention_json SERVER_CPU_PCT: {server_cpus_busy_pct, server_cpus_other_pct,
# server_cpus_steal_pct} of the last run_load window: how busy the server's CPUs were, and
# how much of that was not the server (other processes, or the hypervisor's steal).
contention_json() {
    local busy steal
    read -r busy steal < <(cpustat_pct "$LOAD_STAT0" "$LOAD_STAT1" "$n_server_cpus")
    jq -n --argjson busy "$busy" --argjson steal "$steal" --argjson own "$1" '
        {server_cpus_busy_pct: $busy, server_cpus_steal_pct: $steal,
         server_cpus_other_pct: (if $busy != null and $own != null
            then ([($busy - $own), 0] | max | . * 100 | round / 100) else null end)}'
}

# contention_note JSON_OR_FILE: ", server CPUs N% busy, M% not the server" when something
# else used more than 10% of the server's CPUs, else nothing.
contention_note() {
    # shellcheck disable=SC2016  # $n is jq's
    local filter='if (.server_cpus_other_pct // 0) > 10 * $n
        then ", server CPUs \(.server_cpus_busy_pct)% busy, \(.server_cpus_other_pct)% of it NOT THE SERVER" else "" end'
    if [[ -f "$1" ]]; then
        jq -r --argjson n "$n_server_cpus" "$filter" "$1"
    else
        jq -r --argjson n "$n_server_cpus" "$filter" <<<"$1"
    fi
}

# ---- phase: probe -------------------------------------------------------------------------
saturated=null loadgen_bound=null probe_clean=true
if [[ -z "$TARGET_RPS" ]]; then
    log_info "probe: closed loop, $wrk_conns connections, ${probe_warmup_sec} s warm-up + ${probe_sec} s ..."
    run_load probe 0 "$probe_warmup_sec" "$probe_sec" "$run_dir/probe.json" "$run_dir/probe-histogram.txt"
    sat_rps=$(jq '.achieved_rps' "$run_dir/probe.json")
    probe_cpu_pct=$(proc_cpu_pct "$LOAD_CPU0" "$LOAD_CPU1")
    probe_lg_pct=$(loadgen_pct "$run_dir/probe.json")
    probe_err=$(errors_total "$run_dir/probe.json")
    [[ "$probe_err" == 0 && "$(unexpected_total "$run_dir/probe.json")" == 0 ]] || probe_clean=false
    saturated=$(awk -v c="$probe_cpu_pct" -v n="$n_server_cpus" 'BEGIN { print (c != "null" && c >= 90 * n) ? "true" : "false" }')
    loadgen_bound=$(awk -v c="$probe_lg_pct" -v n="$n_loadgen_cpus" -v s="$saturated" \
        'BEGIN { print (s == "false" && c != "null" && c >= 90 * n) ? "true" : "false" }')
    probe_json=$(jq --argjson cpu "$probe_cpu_pct" --argjson lg "$probe_lg_pct" \
        --argjson wall "$LOAD_WALL_S" --argjson cpu_s "$(proc_cpu_sec "$LOAD_CPU0" "$LOAD_CPU1")" '
        {rps: .achieved_rps, requests_completed: .requests_completed,
         latency_p50_ms: .latency_ms.p50, latency_p99_ms: .latency_ms.p99, latency_max_ms: .latency_ms.max,
         server_cpu_pct: $cpu, server_cpu_s: $cpu_s,
         req_per_cpu_sec: (if $cpu != null and $cpu > 0 then (.achieved_rps / ($cpu / 100) | round) else null end),
         loadgen_cpu_pct: $lg, loadgen_cpu_s: .loadgen_cpu_s.total, loadgen_wall_s: $wall,
         errors: .errors, unexpected_status_counts: .unexpected_status_counts,
         connections_established: .connections_established, connections_failed: .connections_failed,
         json: "probe.json", histogram: "probe-histogram.txt"}' "$run_dir/probe.json")
    probe_json=$(jq --argjson c "$(contention_json "$probe_cpu_pct")" '. + $c' <<<"$probe_json")
    json_set "$RES" .probe "$probe_json"
    json_set "$RES" .saturation_rps "$sat_rps"
    json_set "$RES" .validity.saturated "$saturated"
    json_set "$RES" .validity.loadgen_bound "$loadgen_bound"
    awk -v r="$sat_rps" 'BEGIN { exit !(r > 0) }' || fail "the probe completed no requests (achieved_rps $sat_rps)"
    target_rps=$(awk -v r="$sat_rps" -v k="$SAT_RATIO" 'BEGIN { t = int(r * k + 0.5); print (t < 1) ? 1 : t }')
    note=""
    [[ "$saturated" == true ]] || note=" NOT SATURATED"
    [[ "$loadgen_bound" == false ]] || note="$note, LOADGEN-BOUND"
    [[ "$probe_clean" == true ]] || note="$note, $probe_err errors"
    note="$note$(contention_note "$probe_json")"
    log_info "probe: $(fmt_num "$sat_rps") req/s, server CPU $probe_cpu_pct% of $n_server_cpus CPU(s), loadgen CPU $probe_lg_pct% of $n_loadgen_cpus CPU(s)$note"
else
    target_rps=$TARGET_RPS
fi
json_set "$RES" .target_rps "$target_rps"

# ---- phase: sustain -------------------------------------------------------------------------
log_info "sustain: constant $target_rps req/s, ${warmup_sec} s warm-up (discarded) + ${measure_sec} s measured ..."
run_load sustain "$target_rps" "$warmup_sec" "$measure_sec" "$run_dir/loadgen.json" "$run_dir/histogram.txt" "$run_dir/metrics"
lg="$run_dir/loadgen.json"
cpu_pct=$(proc_cpu_pct "$LOAD_CPU0" "$LOAD_CPU1")
cpu_s=$(proc_cpu_sec "$LOAD_CPU0" "$LOAD_CPU1")
window_s=$(awk -v a="$LOAD_CPU0" -v b="$LOAD_CPU1" 'BEGIN { split(a, x, " "); split(b, y, " "); printf "%.2f\n", y[1] - x[1] }')
lg_pct=$(loadgen_pct "$lg")
handler_p99=$(metrics_handler_p99_us "$run_dir/metrics-before.prom" "$run_dir/metrics-after.prom")
handler_p50=$(metrics_handler_quantile_us 0.5 "$run_dir/metrics-before.prom" "$run_dir/metrics-after.prom")
server_metrics=$(jq -n --argjson routes "$(metrics_routes_json "$run_dir/metrics-before.prom" "$run_dir/metrics-after.prom")" \
    --argjson rej "$(metrics_delta "$run_dir/metrics-before.prom" "$run_dir/metrics-after.prom" http_overload_rejections_total)" \
    --argjson handled "$(metrics_delta "$run_dir/metrics-before.prom" "$run_dir/metrics-after.prom" http_handler_latency_us_count)" \
    --argjson users "$(metrics_sum "$run_dir/metrics-after.prom" store_users)" \
    --argjson conns "$(metrics_sum "$run_dir/metrics-after.prom" http_open_connections)" \
    '{window_requests_by_route: $routes, window_handled: $handled, window_overload_rejections: $rej,
      store_users_after: $users, open_connections_after: $conns,
      scrapes: ["metrics-before.prom", "metrics-after.prom"]}')
json_set "$RES" .server_metrics "$server_metrics"
contention=$(contention_json "$cpu_pct")
sus_err=$(errors_total "$lg")
clean=false
if [[ "$sus_err" == 0 && "$(unexpected_total "$lg")" == 0 && "$probe_clean" == true ]]; then clean=true; fi
update=$(jq --argjson target "$target_rps" --argjson cpu "$cpu_pct" --argjson cpu_s "$cpu_s" \
    --argjson window "$window_s" --argjson lg "$lg_pct" --argjson hp99 "$(json_num_or_null "$handler_p99")" \
    --argjson hp50 "$(json_num_or_null "$handler_p50")" --argjson errs "$sus_err" --argjson clean "$clean" \
    --argjson contention "$contention" '
    . as $l | {
     sustained_rps: $l.achieved_rps, requests_completed: $l.requests_completed,
     measured_window_s: $l.elapsed_s, server_cpu_window_s: $window,
     latency_p50_ms: $l.latency_ms.p50, latency_p75_ms: $l.latency_ms.p75, latency_p90_ms: $l.latency_ms.p90,
     latency_p99_ms: $l.latency_ms.p99, latency_p99_9_ms: $l.latency_ms.p99_9,
     latency_p99_99_ms: $l.latency_ms.p99_99, latency_max_ms: $l.latency_ms.max,
     latency_mean_ms: $l.latency_ms.mean,
     service_time_p50_ms: $l.service_time_ms.p50, service_time_p99_ms: $l.service_time_ms.p99,
     service_time_max_ms: $l.service_time_ms.max,
     server_cpu_pct: $cpu, server_cpu_s: $cpu_s,
     req_per_cpu_sec: (if $cpu != null and $cpu > 0 then ($l.achieved_rps / ($cpu / 100) | round) else null end),
     handler_p99_us: $hp99, handler_p50_us: $hp50,
     loadgen_cpu_pct: $lg, loadgen_cpu_s: $l.loadgen_cpu_s.total,
     errors: $l.errors, errors_total: $errs, status_counts: $l.status_counts,
     unexpected_status_counts: $l.unexpected_status_counts, in_flight_at_end: $l.in_flight_at_end,
     rate_held: ($target > 0 and (($l.achieved_rps - $target) | fabs) <= 0.01 * $target),
     clean: $clean} + $contention' "$lg")
jq --argjson u "$update" '. + ($u | del(.rate_held, .clean))
    | .validity.rate_held = $u.rate_held | .validity.clean = $u.clean' "$RES" >"$RES.tmp" && mv -f "$RES.tmp" "$RES"
read -r sus_rps p99 rate_held rpc < <(jq -r '"\(.sustained_rps) \(.latency_p99_ms) \(.validity.rate_held) \(.req_per_cpu_sec)"' "$RES")
note=""
[[ "$rate_held" == true ]] || note=" RATE NOT HELD"
[[ "$clean" == true ]] || note="$note, $sus_err errors"
note="$note$(contention_note "$RES")"
log_info "sustain: $(fmt_num "$sus_rps") req/s of $target_rps, p99 $(fmt_num "$p99" 3) ms, server CPU $cpu_pct% ($rpc req/CPU-s), handler p99 $handler_p99 us, loadgen CPU $lg_pct%$note"

# ---- phase: stop ----------------------------------------------------------------------------
if ! hwm_kb=$(proc_hwm_kb "$SERVER_PID"); then server_died; fail "server exited before it was stopped ($DIED)"; fi
json_set "$RES" .server_rss_mb "$(awk -v k="$hwm_kb" 'BEGIN { printf "%.1f\n", k / 1024 }')"
t_stop=$(clock_s)
kill -TERM "$SERVER_PID"
deadline=$(calc "$t_stop + $STOP_TIMEOUT_SEC")
while kill -0 "$SERVER_PID" 2>/dev/null && awk -v t="$(clock_s)" -v d="$deadline" 'BEGIN { exit !(t < d) }'; do
    sleep 0.05
done
if kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -KILL "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
    json_set "$RES" .server_exit '{"code": null, "killed": true}'
    fail "server did not exit within ${STOP_TIMEOUT_SEC} s of SIGTERM (killed)"
fi
exit_code=0
wait "$SERVER_PID" || exit_code=$?
SERVER_PID=""
stop_s=$(calc "$(clock_s) - $t_stop")
json_set "$RES" .server_exit "{\"code\": $exit_code, \"killed\": false, \"stop_s\": $stop_s}"
(( exit_code == 0 )) || fail "server exited $exit_code after SIGTERM (want 0): $(tail -n 3 "$run_dir/server.log" | tr '\n' ' ')"
log_info "stop: exited 0 in $stop_s s after SIGTERM, peak RSS $(awk -v k="$hwm_kb" 'BEGIN { printf "%.1f", k / 1024 }') MB"

json_set_str "$RES" .timestamps.end "$(now_iso)"
trap - INT TERM
log_info "done: $RES"
