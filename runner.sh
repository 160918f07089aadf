#!/usr/bin/env bash
# runner.sh: one server x one scenario. Builds if needed, starts the server pinned to its
# CPUs with a fresh store, sanity-checks the routes, probes saturation closed-loop, then
# sustains SAT_RATIO x saturation at a constant rate (or, for run_all.sh, only probes, or only
# sustains a given rate; or, with --sweep, drives a fresh server at each rate of a sweep) and
# records latency, CPU, RSS and the handler p99 into results/<batch>/<run>/result.json (see
# SPEC.md). This script collects raw facts
# (facts.json, the load generator's JSON, /metrics scrapes, /proc samples); the analysis
# package (runner/analysis) turns them into result.json and judges validity.
# Ends only the processes it started, by pid. Exit: 0 ok, 1 run failed, 2 usage.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# First of all, before anything is created: install what runs need when missing.
case " $* " in *" -h "*|*" --help "*|*" --cpu-plan "*) ;; *) "$ROOT/scripts/deps.sh" run ;; esac
# shellcheck source=runner/lib.sh
. "$ROOT/runner/lib.sh"
# shellcheck source=runner/proc.sh
. "$ROOT/runner/proc.sh"
# shellcheck source=runner/host.sh
. "$ROOT/runner/host.sh"
# shellcheck source=runner/sanity.sh
. "$ROOT/runner/sanity.sh"
# shellcheck source=runner/sweep.sh
. "$ROOT/runner/sweep.sh"
# shellcheck source=runner/remote.sh
. "$ROOT/runner/remote.sh"

# Settings: environment variables mirror the options; an option beats the environment,
# the environment beats --quick/--smoke, which beat the defaults shown.
ENV_WARMUP_SEC="${WARMUP_SEC:-}"          # sustain warm-up, discarded (30)
ENV_MEASURE_SEC="${MEASURE_SEC:-}"        # sustain measured window (60)
ENV_PROBE_SEC="${PROBE_SEC:-}"            # saturation probe, measured part (30)
ENV_PROBE_WARMUP_SEC="${PROBE_WARMUP_SEC:-}"  # probe warm-up, discarded (5)
ENV_WRK_CONNS="${WRK_CONNS:-}"            # connections (256)
ENV_WRK_THREADS="${WRK_THREADS:-}"        # loadgen threads (CPUs in LOADGEN_CPUS)
SERVER_CPUS="${SERVER_CPUS:-}"            # default: the CPU plan (runner/analysis/cpuplan.py)
LOADGEN_CPUS="${LOADGEN_CPUS:-}"          # default: the CPU plan
SMT="${SMT:-}"                            # the plan's SMT policy: one (default), both, off
SERVER_THREADS="${SERVER_THREADS:-}"      # the server's --threads (default: its CPU count)
SERVER_CPU_COUNT="${SERVER_CPU_COUNT:-}"  # the plan's server CPU count (run_all --scaling; default: the plan's)
SAT_RATIO="${SAT_RATIO:-0.7}"             # sustained rate = SAT_RATIO x saturation
BEARER="${BEARER:-test-token-aaaaaaaaaaaaaaaaaaaa}"
ACTOR_WORKERS="${ACTOR_WORKERS:-}"        # actor-server --workers (unset: server default 0)
GROUP_COMMIT="${GROUP_COMMIT:-}"          # --group-commit N for actor-server (unset: server default 1)
SEED_USERS="${SEED_USERS:-10000}"         # must match the mix files' id range
REQ_TIMEOUT_SEC="${REQ_TIMEOUT_SEC:-10}"  # loadgen per-request timeout
LOADGEN_TICK="${LOADGEN_TICK:-}"          # loadgen --tick at a constant rate (unset: its default)
STOP_TIMEOUT_SEC="${STOP_TIMEOUT_SEC:-5}" # SIGTERM to exit, else SIGKILL and failure
READY_TIMEOUT_SEC="${READY_TIMEOUT_SEC:-15}"
ACCESS_LOG="${ACCESS_LOG:-/dev/null}"     # server --access-log (the logger still formats)
TARGET_RPS="${TARGET_RPS:-}"              # set: skip the probe, sustain this rate (equal load)
PROBE_ONLY="${PROBE_ONLY:-0}"             # 1: probe only, no sustain (run_all's repeats)
REPEAT="${REPEAT:-}"                      # the probe repeat this run is (recorded; run_all sets it)
ROUND="${ROUND:-}"                        # run_all's round of this run (recorded in config.round)
ROUND_POSITION="${ROUND_POSITION:-}"      # its place in the round's shuffled order (config.round_position)
CHECK_ONLY=0                              # 1: --check-only
RUN_SUFFIX="${RUN_SUFFIX:-}"              # appended to the run folder name ("-equal", "-probe2")
SUSTAIN="${SUSTAIN:-1}"                   # 0: probe without the sustain, kind saturation (run_all --sweep)
SWEEP="${SWEEP:-0}"                       # 1: as --sweep
SWEEP_RATES="${SWEEP_RATES:-}"            # as --rates=
SWEEP_BASE_RPS="${SWEEP_BASE_RPS:-}"      # set: no probe, the sweep's 100% (run_all: the slower median)
ENV_SWEEP_WARMUP_SEC="${SWEEP_WARMUP_SEC:-}"    # sweep step warm-up, discarded (5)
ENV_SWEEP_MEASURE_SEC="${SWEEP_MEASURE_SEC:-}"  # sweep step measured window (20)
RESULTS_DIR="${RESULTS_DIR:-$ROOT/results}"
MIX_DIR="${MIX_DIR:-$ROOT/loadgen-scripts}"  # scenario mix files
BUILD="${BUILD:-build}"                   # binaries: $BUILD/{async,actor}-server, $BUILD/loadgen
RUNNER_BUILD="${RUNNER_BUILD:-1}"         # 0: never run make, require the binaries
PORT="${PORT:-}"                          # default: a free loopback port
PORT_GIVEN=$PORT
BATCH="${BATCH:-}"
# Load from other hosts (runner/remote.sh; README "Running across machines"):
LOADGEN_HOSTS="${LOADGEN_HOSTS:-}"        # ssh destinations, comma-separated (unset: the loadgen runs here)
SERVER_ADDR_SET="${SERVER_ADDR:+1}"
SERVER_ADDR="${SERVER_ADDR:-127.0.0.1}"   # IPv4 address the server listens on and the agents connect to
AGENT_CPUS="${AGENT_CPUS:-}"              # CPUs each agent is pinned to on its host (unset: all its CPUs)
SSH_OPTS="${SSH_OPTS:-}"                  # extra ssh/scp options, e.g. "-F ~/.ssh/bench_config"
SSH_CONNECT_TIMEOUT_SEC="${SSH_CONNECT_TIMEOUT_SEC:-10}"
MAX_START_SKEW_MS="${MAX_START_SKEW_MS:-10}"  # bound on |clock offset| + ssh round trip / 2 of every load host
AGENT_START_LEAD_SEC="${AGENT_START_LEAD_SEC:-3}"  # agents start this long after they are launched
AGENT_GRACE_SEC="${AGENT_GRACE_SEC:-15}"  # an agent still running this long (+ REQ_TIMEOUT_SEC) after its phase fails the run
CLOCK_SAMPLES="${CLOCK_SAMPLES:-8}"       # ssh round trips per clock-offset measure

SERVERS="actor-mem async-mem actor-sqlite async-sqlite"
SCENARIOS="s1 s2 s3 s4"

usage() {
    cat <<USAGE
usage: ./runner.sh [--help] <server> <scenario> [--quick] [--smoke] [--measure-sec=N]
                   [--warmup-sec=N] [--probe-sec=N] [--wrk-conns=N] [--wrk-threads=N]
                   [--batch=ID] [--probe-only] [--sweep [--rates=R1,R2,...]] [--check-only]
       ./runner.sh --cpu-plan
  server:   $SERVERS
  scenario: s1 (GET /ping), s2 (GET /users/:id, bearer), s3 (mixed, memory store),
            s4 (mixed, sqlite store)
  --quick       10 s warm-up, 15 s measure, 8 s probe (+2 s probe warm-up), sweep steps 2+4 s
  --smoke       a few seconds in all, for tests: probe 1+2 s, sustain 1+2 s, sweep steps 1+1 s,
                32 connections
  --batch       results go to results/<batch>/<server>-<scenario>/ (default: UTC timestamp)
  --probe-only  only the saturation probe (no sustained window)
  --sweep       after the probe (no sustain), one step per rate of the sweep, each a fresh
                server at that constant rate for SWEEP_WARMUP_SEC + SWEEP_MEASURE_SEC, in
                results/<batch>/<server>-<scenario>-sweep-NN/ (SPEC.md section 14); the rates
                are 10%, 20%, ... 120% of the probe's saturation unless given
  --rates=LIST  the sweep's rates in req/s, comma-separated (positive numbers; needs --sweep)
  --cpu-plan    print the CPU plan (server_cpus=, loadgen_cpus=, idle_cpus=, then why) and
                exit 0: builds, installs and runs nothing (SPEC.md section 4)
  --check-only  check the arguments and the environment, then exit 0 (or 2 with the usage
                error) without building, starting or creating anything (run_all.sh checks
                every planned run this way first)
Environment (an option beats it; it beats --quick/--smoke):
  WARMUP_SEC (30) MEASURE_SEC (60) PROBE_SEC (30) PROBE_WARMUP_SEC (5) WRK_CONNS (256, or
  64 per server thread when more; smoke: 32, or 8 per thread) WRK_THREADS (CPUs in
  LOADGEN_CPUS) SERVER_CPUS / LOADGEN_CPUS (the CPU plan from the machine's topology: never
  a core on both sides, the server in as few L3 domains and nodes as possible, the load
  generator 1.6 cores per server core where the mask allows; either may be given, the
  other is planned on the cores left) SMT (one: a server CPU is a core, its SMT siblings
  idle; both: every hardware thread; off: one thread per core on both sides) CPU_MASK (plan
  on this CPU list instead of the affinity mask) CPU_TOPOLOGY_ROOT (/sys/devices/system/cpu)
  SERVER_THREADS (the server's --threads; default its CPU count; more is oversubscribed,
  warned about) SERVER_CPU_COUNT (the plan's server CPUs instead of its default) SAT_RATIO (0.7) BEARER ACTOR_WORKERS GROUP_COMMIT (1: every POST
  committed alone, in both servers; N > 1: the actor server's store actor commits up to N
  POSTs together, async-server stays at 1) SEED_USERS (10000) REQ_TIMEOUT_SEC (10) LOADGEN_TICK
  STOP_TIMEOUT_SEC (5) RESULTS_DIR MIX_DIR BUILD (build) RUNNER_BUILD (1) PORT
  TARGET_RPS (skip the probe and sustain this rate: run_all's equal-load runs)
  PROBE_ONLY (1: as --probe-only) REPEAT (the probe repeat number to record)
  RUN_SUFFIX (appended to the run folder name) SUSTAIN (0: no sustain after the probe)
  ROUND, ROUND_POSITION (run_all's round and the run's place in it, recorded in config)
  SWEEP (1: as --sweep) SWEEP_RATES (as --rates) SWEEP_BASE_RPS (skip the probe; the 100% of
  the default rates: run_all's slower median saturation) SWEEP_WARMUP_SEC (5) SWEEP_MEASURE_SEC (20)
Load from other hosts (README "Running across machines"): LOADGEN_HOSTS (user@h1,user@h2:
  one agent per host over ssh; needs SERVER_ADDR) SERVER_ADDR (127.0.0.1: the address the
  server listens on and the agents connect to) AGENT_CPUS (all of each host's CPUs) SSH_OPTS
  SSH_CONNECT_TIMEOUT_SEC (10) MAX_START_SKEW_MS (10) AGENT_START_LEAD_SEC (3)
  AGENT_GRACE_SEC (15) CLOCK_SAMPLES (8)
Writes facts.json (raw), result.json (SPEC.md section 7), histogram.txt, loadgen.json,
probe.json, server.log and runner.log. Progress: one line per phase on stderr.
Exit status: 0 run completed (whatever its validity flags), 1 run failed (result.json
says why; with --sweep: a step failed, the other steps still ran), 2 usage.
USAGE
}

usage_error() {
    echo "runner.sh: $*" >&2
    echo "run ./runner.sh --help for usage" >&2
    exit 2
}

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }
is_pos_int() { [[ "$1" =~ ^[0-9]+$ ]] && (( 10#$1 > 0 )); }

# pick VALUE...: the first non-empty argument.
pick() {
    local v
    for v in "$@"; do
        if [[ -n "$v" ]]; then printf '%s\n' "$v"; return 0; fi
    done
}

# parse_args ARGS...: sets server, scenario, mode, bin_name, store, mix and the durations,
# connections, threads and CPUs; exits 2 on any usage error, before anything is created.
parse_args() {
    local opt_warmup="" opt_measure="" opt_probe="" opt_conns="" opt_threads="" arg
    local opt_rates="" have_rates=0 base_checked
    local positional=()
    mode=full
    for arg in "$@"; do
        case "$arg" in
            -h|--help) usage; exit 0 ;;
            --quick|--smoke)
                [[ "$mode" == full || "$mode" == "${arg#--}" ]] || usage_error "--quick and --smoke exclude each other"
                mode=${arg#--} ;;
            --measure-sec=*) opt_measure=${arg#*=} ;;
            --warmup-sec=*) opt_warmup=${arg#*=} ;;
            --probe-sec=*) opt_probe=${arg#*=} ;;
            --wrk-conns=*) opt_conns=${arg#*=} ;;
            --wrk-threads=*) opt_threads=${arg#*=} ;;
            --batch=*) BATCH=${arg#*=} ;;
            --probe-only) PROBE_ONLY=1 ;;
            --check-only) CHECK_ONLY=1 ;;
            --sweep) SWEEP=1 ;;
            --rates=*) opt_rates=${arg#*=} have_rates=1 ;;
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

    local p_warm p_meas p_probe p_pwarm p_conns p_swarm p_smeas
    read -r p_warm p_meas p_probe p_pwarm p_conns p_swarm p_smeas < <(mode_durations "$mode")
    warmup_sec=$(pick "$opt_warmup" "$ENV_WARMUP_SEC" "$p_warm")
    measure_sec=$(pick "$opt_measure" "$ENV_MEASURE_SEC" "$p_meas")
    probe_sec=$(pick "$opt_probe" "$ENV_PROBE_SEC" "$p_probe")
    probe_warmup_sec=$(pick "$ENV_PROBE_WARMUP_SEC" "$p_pwarm")
    wrk_conns=$(pick "$opt_conns" "$ENV_WRK_CONNS")   # default below, from the server's threads
    sweep_warmup_sec=$(pick "$ENV_SWEEP_WARMUP_SEC" "$p_swarm")
    sweep_measure_sec=$(pick "$ENV_SWEEP_MEASURE_SEC" "$p_smeas")

    is_uint "$warmup_sec" || usage_error "warm-up must be whole seconds, got '$warmup_sec'"
    is_pos_int "$measure_sec" || usage_error "measure must be whole seconds > 0, got '$measure_sec'"
    is_pos_int "$probe_sec" || usage_error "probe must be whole seconds > 0, got '$probe_sec'"
    is_uint "$probe_warmup_sec" || usage_error "PROBE_WARMUP_SEC must be whole seconds, got '$probe_warmup_sec'"
    if [[ -n "$wrk_conns" ]]; then is_pos_int "$wrk_conns" || usage_error "connections must be > 0, got '$wrk_conns'"; fi
    is_uint "$sweep_warmup_sec" || usage_error "SWEEP_WARMUP_SEC must be whole seconds, got '$sweep_warmup_sec'"
    is_pos_int "$sweep_measure_sec" || usage_error "SWEEP_MEASURE_SEC must be whole seconds > 0, got '$sweep_measure_sec'"
    warmup_sec=$((10#$warmup_sec)) measure_sec=$((10#$measure_sec)) probe_sec=$((10#$probe_sec))
    sweep_warmup_sec=$((10#$sweep_warmup_sec)) sweep_measure_sec=$((10#$sweep_measure_sec))
    probe_warmup_sec=$((10#$probe_warmup_sec))
    if ! sat_ratio_valid "$SAT_RATIO"; then
        usage_error "SAT_RATIO must be in (0, 1], got '$SAT_RATIO'"
    fi
    is_pos_int "$SEED_USERS" || usage_error "SEED_USERS must be a whole number > 0, got '$SEED_USERS'"
    is_pos_int "$REQ_TIMEOUT_SEC" || usage_error "REQ_TIMEOUT_SEC must be whole seconds > 0, got '$REQ_TIMEOUT_SEC'"
    is_pos_int "$STOP_TIMEOUT_SEC" || usage_error "STOP_TIMEOUT_SEC must be whole seconds > 0, got '$STOP_TIMEOUT_SEC'"
    is_pos_int "$READY_TIMEOUT_SEC" || usage_error "READY_TIMEOUT_SEC must be whole seconds > 0, got '$READY_TIMEOUT_SEC'"
    if [[ -n "$PORT" ]] && { ! is_pos_int "$PORT" || (( 10#$PORT > 65535 )); }; then
        usage_error "PORT must be a port number 1..65535, got '$PORT'"
    fi
    if [[ -n "$TARGET_RPS" ]]; then
        is_pos_int "$TARGET_RPS" || usage_error "TARGET_RPS must be a whole rate > 0, got '$TARGET_RPS'"
    fi
    [[ "$PROBE_ONLY" == 0 || "$PROBE_ONLY" == 1 ]] || usage_error "PROBE_ONLY must be 0 or 1, got '$PROBE_ONLY'"
    if [[ "$PROBE_ONLY" == 1 && -n "$TARGET_RPS" ]]; then
        usage_error "--probe-only and TARGET_RPS exclude each other (a probe-only run has no sustained rate)"
    fi
    if [[ -n "$REPEAT" ]]; then is_pos_int "$REPEAT" || usage_error "REPEAT must be a whole number > 0, got '$REPEAT'"; fi
    if [[ -n "$ROUND" ]]; then is_pos_int "$ROUND" || usage_error "ROUND must be a whole number > 0, got '$ROUND'"; fi
    if [[ -n "$ROUND_POSITION" ]]; then
        is_pos_int "$ROUND_POSITION" || usage_error "ROUND_POSITION must be a whole number > 0, got '$ROUND_POSITION'"
    fi
    [[ "$SUSTAIN" == 0 || "$SUSTAIN" == 1 ]] || usage_error "SUSTAIN must be 0 or 1, got '$SUSTAIN'"
    if [[ "$SUSTAIN" == 0 && -n "$TARGET_RPS" ]]; then
        usage_error "SUSTAIN=0 and TARGET_RPS exclude each other (an equal-load run is its sustain)"
    fi
    [[ "$SWEEP" == 0 || "$SWEEP" == 1 ]] || usage_error "SWEEP must be 0 or 1, got '$SWEEP'"
    sweep_rates=""
    if (( have_rates )) || [[ -n "$SWEEP_RATES" ]]; then
        [[ "$SWEEP" == 1 ]] || usage_error "--rates needs --sweep"
        (( have_rates )) || opt_rates=$SWEEP_RATES
        sweep_rates=$(sweep_rates_parse "$opt_rates") || usage_error "--rates: $sweep_rates"
    fi
    if [[ "$SWEEP" == 1 ]]; then
        [[ "$PROBE_ONLY" == 0 ]] || usage_error "--sweep and --probe-only exclude each other"
        [[ -z "$TARGET_RPS" ]] || usage_error "--sweep and TARGET_RPS exclude each other (the sweep sets its rates)"
    fi
    if [[ -n "$SWEEP_BASE_RPS" ]]; then
        [[ "$SWEEP" == 1 ]] || usage_error "SWEEP_BASE_RPS needs --sweep"
        [[ "$SWEEP_BASE_RPS" != *,* ]] || usage_error "SWEEP_BASE_RPS is one rate, got '$SWEEP_BASE_RPS'"
        base_checked=$(sweep_rates_parse "$SWEEP_BASE_RPS") || usage_error "SWEEP_BASE_RPS: $base_checked"
        SWEEP_BASE_RPS=$base_checked
    fi
    if [[ -n "$ACTOR_WORKERS" ]]; then
        is_uint "$ACTOR_WORKERS" || usage_error "ACTOR_WORKERS must be a whole number, got '$ACTOR_WORKERS'"
    fi
    if [[ -n "$GROUP_COMMIT" ]]; then
        is_pos_int "$GROUP_COMMIT" || usage_error "GROUP_COMMIT must be a whole number > 0, got '$GROUP_COMMIT'"
    fi
    if [[ -n "$LOADGEN_TICK" && ! "$LOADGEN_TICK" =~ ^[0-9]+(\.[0-9]+)?(us|ms|s)?$ ]]; then
        usage_error "LOADGEN_TICK must be a duration such as 50us, got '$LOADGEN_TICK'"
    fi

    # CPUs: the CPU plan from the machine's topology (SPEC.md section 4); an override is judged.
    mask=$(affinity_cpus) || usage_error "cannot read this shell's CPU affinity (taskset)"
    if [[ -n "$SERVER_CPU_COUNT" ]]; then
        is_pos_int "$SERVER_CPU_COUNT" || usage_error "SERVER_CPU_COUNT must be a whole number > 0, got '$SERVER_CPU_COUNT'"
    fi
    # with LOADGEN_HOSTS the load comes from other hosts: LOADGEN_CPUS only holds the runner
    if ! cpu_plan_json=$(cpu_plan_run --json --mask="$mask" ${SERVER_CPU_COUNT:+"--count=$SERVER_CPU_COUNT"} \
            ${LOADGEN_HOSTS:+--remote} 2>&1); then
        usage_error "CPU plan: ${cpu_plan_json#analysis cpu-plan: }"
    fi
    IFS=$'\t' read -r SERVER_CPUS LOADGEN_CPUS _ < <(jq -r '[.server_cpus, .loadgen_cpus, .idle_cpus] | @tsv' <<<"$cpu_plan_json")
    n_server_cpus=$(cpulist_count "$SERVER_CPUS") || usage_error "bad SERVER_CPUS '$SERVER_CPUS'"
    n_loadgen_cpus=$(cpulist_count "$LOADGEN_CPUS") || usage_error "bad LOADGEN_CPUS '$LOADGEN_CPUS'"
    if [[ -n "${CPU_MASK:-}" ]] && ! cpus_within "$SERVER_CPUS,$LOADGEN_CPUS" "$mask"; then
        usage_error "CPU_MASK '$CPU_MASK' plans CPUs $SERVER_CPUS / $LOADGEN_CPUS outside this shell's affinity $mask (CPU_MASK is for --cpu-plan, or a subset of the mask)"
    fi
    # The server's threads: its CPUs, unless SERVER_THREADS forces more or fewer (oversubscribed
    # when more: the run then measures thread switching too, and says so).
    n_server_threads=${SERVER_THREADS:-$n_server_cpus}
    is_pos_int "$n_server_threads" || usage_error "SERVER_THREADS must be a whole number > 0, got '$n_server_threads'"
    n_server_threads=$((10#$n_server_threads))
    # Connections follow the server: a quarter of the mode's pool per server thread (64 of
    # 256), the pool the floor (SPEC.md section 5).
    wrk_conns_given=true
    if [[ -z "$wrk_conns" ]]; then
        wrk_conns=$(conns_default "$p_conns" "$n_server_threads")
        wrk_conns_given=false
    fi
    wrk_conns=$((10#$wrk_conns))
    wrk_threads=$(pick "$opt_threads" "$ENV_WRK_THREADS" "$n_loadgen_cpus")
    wrk_threads_given=$(pick "$opt_threads" "$ENV_WRK_THREADS")
    is_pos_int "$wrk_threads" || usage_error "loadgen threads must be > 0, got '$wrk_threads'"
    wrk_threads=$((10#$wrk_threads))
    [[ -z "$wrk_threads_given" ]] || wrk_threads_given=$wrk_threads
    remote_parse
    cpus_disjoint=true
    if [[ -n "$(comm -12 <(cpulist_expand "$SERVER_CPUS" | sort -u) <(cpulist_expand "$LOADGEN_CPUS" | sort -u))" ]]; then
        cpus_disjoint=false
    fi

    [[ -n "$BATCH" ]] || BATCH=$(batch_id_new)
    batch_id_valid "$BATCH" || usage_error "batch id may hold only [A-Za-z0-9._-] and is not . or .., got '$BATCH'"
    [[ "$RUN_SUFFIX" =~ ^[A-Za-z0-9._-]*$ ]] || usage_error "bad RUN_SUFFIX '$RUN_SUFFIX'"
    kind=saturation
    [[ -z "$TARGET_RPS" ]] || kind=equal-load
    [[ "$PROBE_ONLY" == 0 ]] || kind=probe
}

# ---- facts, result and failure ----------------------------------------------------------
# fact PATH JSON: sets PATH of facts.json; fact_str PATH STRING: the same with a string.
fact() { json_set "$FACTS" "$1" "$2"; }
fact_str() { json_set_str "$FACTS" "$1" "$2"; }

# build_result: result.json from facts.json (the analysis package); never fails the caller.
build_result() {
    analysis result "$run_dir" 2>>"$LOG_FILE" || log_info "warning: building result.json failed (see runner.log)"
}

# fail MSG: records MSG as the run's failure, writes result.json, stops what this run
# started (the EXIT trap) and exits 1.
fail() {
    trap - INT TERM
    log_info "FAILED: $*"
    if [[ -f "${FACTS:-}" ]]; then
        fact_str .failure "$*" || true
        fact_str .timestamps.end "$(now_iso)" || true
        build_result
    fi
    exit 1
}

SERVER_PID="" LOADGEN_PID="" BG_PID="" DIED=""
cleanup() {
    local rc=$? pid
    # an exit through set -e, not through fail: still say in result.json that the run failed
    if (( rc != 0 )) && [[ -f "${FACTS:-}" ]] && jq -e '.failure == null' "$FACTS" >/dev/null 2>&1; then
        fact_str .failure "runner.sh failed unexpectedly (exit $rc) at ${LAST_ERR:-an unknown command}" || true
        fact_str .timestamps.end "$(now_iso)" || true
        build_result
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
    remote_cleanup
    if [[ -n "${run_dir:-}" ]]; then rm -f "$run_dir/server.db" "$run_dir/server.db-wal" "$run_dir/server.db-shm"; fi
}

# server_died: sets DIED to how the (already exited) server ended, for failure messages.
# Not in a subshell: only this shell can wait for its child.
server_died() {
    local st=0
    wait "$SERVER_PID" 2>/dev/null || st=$?
    SERVER_PID=""
    if (( st > 128 )); then DIED="killed by signal $((st - 128))"; else DIED="exit status $st"; fi
    DIED="$DIED; server.log ends: $(tail -n 3 "$run_dir/server.log" | tr '\n' ' ')"
}

# ---- phase: setup ---------------------------------------------------------------------------
# setup_run: the run folder, the log and facts.json with everything known before the start.
setup_run() {
    run_name="$server-$scenario$RUN_SUFFIX"
    run_dir="$RESULTS_DIR/$BATCH/$run_name"
    rm -rf "$run_dir"
    mkdir -p "$run_dir"
    run_dir=$(cd "$run_dir" && pwd)
    FACTS="$run_dir/facts.json"
    export LOG_FILE="$run_dir/runner.log" LOG_TAG="runner $run_name"
    : >"$LOG_FILE"
    local config_json
    config_json=$(jq -n \
        --arg mode "$mode" --arg store "$store" --arg mix "loadgen-scripts/$mix" \
        --arg server_cpus "$SERVER_CPUS" --arg loadgen_cpus "$LOADGEN_CPUS" --arg mask "$mask" \
        --argjson n_server "$n_server_cpus" --argjson n_loadgen "$n_loadgen_cpus" \
        --argjson disjoint "$cpus_disjoint" --argjson conns "$wrk_conns" --argjson threads "$wrk_threads" \
        --argjson warm "$warmup_sec" --argjson meas "$measure_sec" --argjson probe "$probe_sec" \
        --argjson pwarm "$probe_warmup_sec" --argjson ratio "$SAT_RATIO" \
        --argjson seed "$SEED_USERS" --argjson timeout "$REQ_TIMEOUT_SEC" \
        --arg workers "$ACTOR_WORKERS" --arg bin "$bin_name" --arg access_log "$ACCESS_LOG" \
        --arg target "$TARGET_RPS" --arg gc "$GROUP_COMMIT" --arg tick "$LOADGEN_TICK" \
        --arg addr "$SERVER_ADDR" --arg hosts "$LOADGEN_HOSTS" --arg agent_cpus "$AGENT_CPUS" \
        --argjson skew "$MAX_START_SKEW_MS" --argjson cpu_plan "$cpu_plan_json" \
        --argjson threads_srv "$n_server_threads" --arg threads_given "$SERVER_THREADS" \
        --argjson conns_given "$wrk_conns_given" --argjson pool "$(mode_durations "$mode" | cut -d' ' -f5)" \
        --arg round "$ROUND" --arg round_pos "$ROUND_POSITION" '
        {mode: $mode, store: $store, mix: $mix, binary: $bin, affinity_mask: $mask,
         server_cpus: $server_cpus, loadgen_cpus: $loadgen_cpus, server_cpu_count: $n_server,
         loadgen_cpu_count: $n_loadgen, cpus_disjoint: $disjoint, server_threads: $threads_srv,
         server_threads_given: ($threads_given != ""), oversubscribed: ($threads_srv > $n_server),
         cpu_plan: $cpu_plan,
         actor_workers: (if $bin == "actor-server" then (if $workers == "" then 0 else ($workers | tonumber) end) else null end),
         group_commit: (if $gc == "" or $bin != "actor-server" then 1 else ($gc | tonumber) end),
         wrk_conns: $conns, wrk_conns_given: $conns_given, conns_per_server_thread: ($pool / 4 | floor),
         wrk_threads: $threads, pipeline: 1,
         loadgen_tick: (if $tick == "" then null else $tick end),
         probe_warmup_sec: $pwarm, probe_sec: $probe, warmup_sec: $warm, measure_sec: $meas,
         sat_ratio: $ratio, fixed_target_rps: (if $target == "" then null else ($target | tonumber) end),
         seed_users: $seed, request_timeout_sec: $timeout, access_log: $access_log, port: null,
         server_addr: $addr,
         loadgen_hosts: (if $hosts == "" then null else ($hosts | split(",") | map(select(. != ""))) end),
         agent_cpus: (if $agent_cpus == "" then null else $agent_cpus end),
         max_start_skew_ms: (if $hosts == "" then null else $skew end),
         round: (if $round == "" then null else ($round | tonumber) end),
         round_position: (if $round_pos == "" then null else ($round_pos | tonumber) end)}')
    jq -n --arg server "$server" --arg scenario "$scenario" --arg kind "$kind" --arg batch "$BATCH" \
        --arg run "$run_name" --arg start "$(now_iso)" --arg repeat "$REPEAT" --argjson config "$config_json" \
        --argjson host "${HOST_JSON:-$(host_json)}" --argjson versions "${VERSIONS_JSON:-$(versions_json "$ROOT")}" \
        --argjson tck "$(proc_clk_tck)" '
        {server: $server, scenario: $scenario, kind: $kind, batch: $batch, run: $run,
         repeat: (if $repeat == "" then (if $kind == "saturation" then 1 else null end) else ($repeat | tonumber) end),
         config: $config, host: $host, versions: $versions, clk_tck: $tck,
         timestamps: {start: $start, end: null}, phases: {}, stop: {}, failure: null}' >"$FACTS"
    # (a sweep step's result.json is first written after its window: 96 steps x 0.5 s of python)
    [[ "$kind" == sweep ]] || build_result
    log_info "$server $scenario ($mode, $kind): server CPUs $SERVER_CPUS, loadgen CPUs $LOADGEN_CPUS x $wrk_threads threads, $wrk_conns connections -> $run_dir"
    [[ "$cpus_disjoint" == true ]] || log_info "warning: server and loadgen CPUs overlap ($SERVER_CPUS / $LOADGEN_CPUS): results are not fair"
    local w
    while IFS= read -r w; do
        [[ -z "$w" || "$w" == "server and load generator share CPU"* ]] || log_info "warning: CPU plan: $w"
    done < <(jq -r '.warnings[]' <<<"$cpu_plan_json")
    if (( n_server_threads > n_server_cpus )); then
        log_info "warning: oversubscribed: $n_server_threads server threads on $n_server_cpus CPU(s) (SERVER_THREADS): the figures include thread switching and are not a $n_server_threads-CPU result"
    fi
}

# ---- phase: build -------------------------------------------------------------------
phase_build() {
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
}

# ---- phase: start -------------------------------------------------------------------
phase_start() {
    if [[ -z "$PORT" ]]; then
        PORT=$("${ANALYSIS_PYTHON:-python3}" -c 'import socket, sys; s = socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' "$SERVER_ADDR") ||
            fail "could not find a free port on $SERVER_ADDR"
    fi
    fact .config.port "$PORT"
    url="http://$SERVER_ADDR:$PORT"
    local args=("--store=$store" --host "$SERVER_ADDR" --port "$PORT" --threads "$n_server_threads"
        --bearer "$BEARER" --seed-users "$SEED_USERS" --access-log "$ACCESS_LOG")
    if [[ "$store" == sqlite ]]; then
        rm -f "$run_dir/server.db" "$run_dir/server.db-wal" "$run_dir/server.db-shm"
        args+=(--db "$run_dir/server.db")
    fi
    if [[ "$bin_name" == actor-server && -n "$ACTOR_WORKERS" ]]; then args+=(--workers "$ACTOR_WORKERS"); fi
    # group commit is the actor server's store actor's (async-server accepts only 1)
    if [[ "$bin_name" == actor-server && -n "$GROUP_COMMIT" ]]; then args+=("--group-commit=$GROUP_COMMIT"); fi
    printf '%q ' taskset -c "$SERVER_CPUS" "$server_bin" "${args[@]}" >"$run_dir/server.cmd"
    echo >>"$run_dir/server.cmd"
    local t_start ready_rc=0
    t_start=$(clock_s)
    (cd "$run_dir" && exec taskset -c "$SERVER_CPUS" "$server_bin" "${args[@]}") \
        >"$run_dir/server.log" 2>&1 </dev/null &
    SERVER_PID=$!
    ping_wait "$url" "$SERVER_PID" "$READY_TIMEOUT_SEC" || ready_rc=$?
    case "$ready_rc" in
        0) ;;
        1) server_died; fail "server exited before answering /ping ($DIED)" ;;
        *) fail "server did not answer /ping within ${READY_TIMEOUT_SEC} s" ;;
    esac
    # The port was free when picked; make sure it is our server that answered.
    if ! grep -Eq "listening on http://${SERVER_ADDR//./\\.}:$PORT([^0-9]|\$)" "$run_dir/server.log"; then
        fail "/ping answered on port $PORT but server.log has no 'listening on $url' (another process on the port?)"
    fi
    log_info "start: $bin_name --store=$store pid $SERVER_PID on $SERVER_ADDR port $PORT, $n_server_threads thread(s) on CPUs $SERVER_CPUS, ready in $(calc "$(clock_s) - $t_start") s"
}

# ---- phase: sanity ------------------------------------------------------------------
phase_sanity() {
    local why
    if ! why=$(sanity_check "$url" "$scenario" "$BEARER"); then
        fail "sanity check failed: $why"
    fi
    case "$scenario" in
        s1) log_info "sanity: GET /ping 200 pong, GET /metrics 200" ;;
        s2) log_info "sanity: GET /ping, /metrics, /users/1 200; 401 without or with a wrong bearer" ;;
        *) log_info "sanity: GET /ping, /metrics, /users/1, /users?limit 200; POST /users 201; 401 without the bearer" ;;
    esac
}

# ---- load generator ---------------------------------------------------------------------
# run_load PHASE RATE WARMUP DURATION JSON HGRM [SCRAPE_PREFIX]: runs the loadgen pinned to
# LOADGEN_CPUS, or with LOADGEN_HOSTS one agent per load host over ssh (runner/remote.sh:
# clocks checked, a common --start-at, outputs merged exactly into JSON and HGRM). A
# background job on the load generator's CPUs (load_sampler) samples, at the end of the
# warm-up, the server's process tree (CPU, every thread's CPU and name), /proc/stat of the
# server CPUs and the load generator's threads (and scrapes /metrics to
# SCRAPE_PREFIX-before.prom when given), and the load generator's threads again just before
# its window ends (after it exits they are gone); right after it exits the server is
# sampled again (and /metrics scraped to SCRAPE_PREFIX-after.prom). Records the phase's raw
# facts in facts.json (.phases.PHASE); the caller's progress line (`analysis line`) then
# writes result.json.
run_load() {
    local phase=$1 rate=$2 warm=$3 dur=$4 json=$5 hgrm=$6 scrape=${7:-} rc=0 t0 cpu0 cpu1 st0 st1
    local edge="$run_dir/.$phase.edge" extra=() edge_wait=$warm lg_pid="" lgt0="" lgt1=""
    rm -f "$edge" "$edge".* "$json" "$hgrm"
    [[ -z "$LOADGEN_TICK" || "$rate" == 0 ]] || extra=(--tick "$LOADGEN_TICK")
    if remote_enabled; then
        remote_clock_check "$phase"
        remote_start_at
        edge_wait=$(calc "$(remote_seconds_until "$START_AT") + $warm")
    fi
    t0=$(clock_s)
    if [[ "$edge_wait" == 0 ]]; then
        if ! proc_tree_sample "$SERVER_PID" >"$edge.srv0"; then server_died; fail "server exited before the $phase ($DIED)"; fi
        cpustat_sample "$SERVER_CPUS" >"$edge.stat"
        if [[ -n "$scrape" ]]; then metrics_scrape "$url" "$scrape-before.prom" || fail "scraping /metrics before the $phase failed"; fi
        : >"$edge"
    fi
    if remote_enabled; then
        load_sampler "$t0" "$edge_wait" "$dur" "" "$edge" "$scrape" &
        BG_PID=$!
        remote_agents_start "$phase" "$rate" "$warm" "$dur" "${extra[@]}"
        remote_agents_wait "$phase" "$warm" "$dur"
    else
        taskset -c "$LOADGEN_CPUS" "$loadgen_bin" --url "$url" --mix "$mix_file" \
            --connections "$wrk_conns" --threads "$wrk_threads" --duration "$dur" --warmup "$warm" \
            --rate "$rate" --timeout "$REQ_TIMEOUT_SEC" --bearer "$BEARER" "${extra[@]}" \
            --json "$json" --hgrm "$hgrm" >>"$run_dir/loadgen-$phase.log" 2>&1 </dev/null &
        LOADGEN_PID=$!
        lg_pid=$LOADGEN_PID
        load_sampler "$t0" "$edge_wait" "$dur" "$lg_pid" "$edge" "$scrape" &
        BG_PID=$!
        wait "$LOADGEN_PID" || rc=$?
        LOADGEN_PID=""
    fi
    if ! proc_tree_sample "$SERVER_PID" >"$edge.srv1"; then server_died; fail "server exited during the $phase ($DIED)"; fi
    st1=$(cpustat_sample "$SERVER_CPUS")
    load_sampler_end "$rc" "$edge"
    if [[ -n "$scrape" ]]; then
        metrics_scrape "$url" "$scrape-after.prom" || fail "scraping /metrics after the $phase failed"
        [[ -f "$scrape-before.prom" ]] || fail "scraping /metrics at the end of the $phase warm-up failed"
    fi
    (( rc == 0 )) || fail "loadgen exited $rc in the $phase: $(tail -n 3 "$run_dir/loadgen-$phase.log" | tr '\n' ' ')"
    if remote_enabled; then remote_agents_collect "$phase" "$dur" "$json" "$hgrm"; fi
    [[ -e "$edge" && -s "$edge.srv0" ]] || fail "the $phase lasted less than its warm-up: no CPU sample at the window's start"
    local a b
    read -r a b _ <"$edge.srv0"
    cpu0="$a $b"
    read -r a b _ <"$edge.srv1"
    cpu1="$a $b"
    st0=$(cat "$edge.stat" 2>/dev/null || echo "0 0 0")
    if [[ -n "$lg_pid" && -s "$edge.lg1" ]]; then
        lgt0=$(cat "$edge.lg0" 2>/dev/null || echo "$t0 0 1") lgt1=$(<"$edge.lg1")
    fi
    jq -e 'has("achieved_rps") and has("requests_completed") and has("errors") and has("latency_ms")
           and has("loadgen_cpu_s")' "$json" >/dev/null 2>&1 ||
        fail "loadgen's $phase json ($json) lacks achieved_rps/requests_completed/errors/latency_ms/loadgen_cpu_s"
    fact ".phases.$phase" "$(jq -n --arg json "$(basename "$json")" --arg hgrm "$(basename "$hgrm")" \
        --arg c0 "$cpu0" --arg c1 "$cpu1" --arg s0 "$st0" --arg s1 "$st1" --argjson wall "$(calc "$(clock_s) - $t0")" \
        --rawfile srv0 "$edge.srv0" --rawfile srv1 "$edge.srv1" --arg lg0 "$lgt0" --arg lg1 "$lgt1" \
        --arg scrape "${scrape:+$(basename "$scrape")}" --argjson rate "$rate" --argjson remote "$(remote_phase_json "$phase")" '
        def nums: split(" ") | map(select(. != "") | tonumber);
        {loadgen_json: $json, histogram: $hgrm, cpu: [($c0 | nums), ($c1 | nums)],
         cpustat: [($s0 | nums), ($s1 | nums)], wall_s: $wall,
         tasks: {server: [$srv0, $srv1], loadgen: (if $lg1 == "" then null else [$lg0, $lg1] end)},
         connections: '"$wrk_conns"',
         target_rps: (if $rate > 0 then $rate else null end),
         scrapes: (if $scrape == "" then null else ["\($scrape)-before.prom", "\($scrape)-after.prom"] end)} + $remote')"
    rm -f "$edge" "$edge".*
    # result.json is rewritten by the phase's progress line (`analysis line` writes it)
}

# load_sampler T0 EDGE_WAIT DURATION LOADGEN_PID EDGE SCRAPE: the background job of run_load,
# pinned to the load generator's CPUs. Unless EDGE_WAIT is 0 (then run_load sampled already),
# at T0 + EDGE_WAIT - a lead (half the warm-up, at most 1 s) it samples /proc/stat of the
# server CPUs (EDGE.stat), the server's tree (EDGE.srv0), the load generator's threads
# (EDGE.lg0), scrapes /metrics (SCRAPE-before.prom) and creates EDGE (the start edge is done).
# The lead keeps its forks (awk, curl: 30-60 ms of CPU) in the discarded warm-up and off the
# server's CPUs: taken at the window's start on any CPU, they made the first second of every
# constant-rate window the worst (p99 52-108 ms, the median second 1.6-1.9 ms, bench/NOTES.md).
# The CPU window is so up to 1 s longer than the latency window, at the same load. With a
# LOADGEN_PID, at T0 + EDGE_WAIT + DURATION - a quarter of a second (a quarter of DURATION
# when shorter) it samples the load generator's threads again (EDGE.lg1): builtins only, no
# fork inside the window.
load_sampler() {
    local t0=$1 wait0=$2 dur=$3 lg=$4 edge=$5 scrape=$6 lead end_at
    if [[ "$cpus_disjoint" == true ]]; then taskset -pc "$LOADGEN_CPUS" "$BASHPID" >/dev/null 2>&1 || true; fi
    lead=$(calc "$wait0 / 2 < 1 ? $wait0 / 2 : 1")
    end_at=$(calc "$t0 + $wait0 + $dur - ($dur / 4 < 0.25 ? $dur / 4 : 0.25)")
    if [[ "$wait0" != 0 ]]; then
        sleep_until "$(calc "$t0 + $wait0 - $lead")"
        cpustat_sample "$SERVER_CPUS" >"$edge.stat"
        proc_tree_sample "$SERVER_PID" >"$edge.srv0.tmp" && mv "$edge.srv0.tmp" "$edge.srv0"
        if [[ -n "$lg" ]]; then proc_tree_sample "$lg" self >"$edge.lg0.tmp" && mv "$edge.lg0.tmp" "$edge.lg0"; fi
        if [[ -n "$scrape" ]]; then metrics_scrape "$url" "$scrape-before.prom" || rm -f "$scrape-before.prom"; fi
        : >"$edge"
    fi
    [[ -n "$lg" ]] || return 0
    sleep_until "$end_at"
    proc_tree_sample "$lg" self >"$edge.lg1.tmp" && mv "$edge.lg1.tmp" "$edge.lg1"
}

# load_sampler_end RC EDGE: after the load generator exited with RC: ends the sampler job
# (BG_PID). When the loadgen failed, at once; else once its start edge is done (EDGE
# exists), without waiting for the end sample of the load generator's threads when that
# is still pending (the loadgen ended before it).
load_sampler_end() {
    local rc=$1 edge=$2
    [[ -n "$BG_PID" ]] || return 0
    if (( rc == 0 )); then
        while kill -0 "$BG_PID" 2>/dev/null && [[ ! -e "$edge" ]]; do sleep 0.05; done
    fi
    if kill -0 "$BG_PID" 2>/dev/null; then
        pkill -TERM -P "$BG_PID" 2>/dev/null || true
        kill -TERM "$BG_PID" 2>/dev/null || true
    fi
    wait "$BG_PID" 2>/dev/null || true
    BG_PID=""
}

# ---- phase: probe ---------------------------------------------------------------------------
# phase_probe: the closed-loop probe; then, when neither CPU rule saw the server saturated
# (total CPU, busiest thread), the load generator did not limit it and it had no errors
# (`analysis plateau-needed`), the plateau probe: the same once more with twice the
# connections, on the same server. A gain under 5% with the server's CPU not rising either
# is saturation by plateau (SPEC.md section 8); the saturation figure stays the first probe's.
phase_probe() {
    log_info "probe: closed loop, $wrk_conns connections, ${probe_warmup_sec} s warm-up + ${probe_sec} s ..."
    run_load probe 0 "$probe_warmup_sec" "$probe_sec" "$run_dir/probe.json" "$run_dir/probe-histogram.txt"
    log_info "probe: $(analysis line "$run_dir" probe)"
    jq -e '(.saturation_rps // 0) > 0' "$run_dir/result.json" >/dev/null ||
        fail "the probe completed no requests (achieved_rps $(jq '.achieved_rps' "$run_dir/probe.json"))"
    if [[ "$(analysis plateau-needed "$run_dir")" == yes ]]; then
        local conns=$wrk_conns
        wrk_conns=$((2 * conns))
        log_info "plateau probe: not saturated by CPU nor by a thread, loadgen not the limit: closed loop again with $wrk_conns connections, ${probe_warmup_sec} s warm-up + ${probe_sec} s ..."
        run_load plateau 0 "$probe_warmup_sec" "$probe_sec" "$run_dir/plateau.json" "$run_dir/plateau-histogram.txt"
        wrk_conns=$conns
        log_info "plateau probe: $(analysis line "$run_dir" plateau)"
    fi
}

# ---- phase: sustain -------------------------------------------------------------------------
phase_sustain() {
    local target=$1
    log_info "sustain: constant $target req/s, ${warmup_sec} s warm-up (discarded) + ${measure_sec} s measured ..."
    run_load sustain "$target" "$warmup_sec" "$measure_sec" "$run_dir/loadgen.json" "$run_dir/histogram.txt" "$run_dir/metrics"
    log_info "sustain: $(analysis line "$run_dir" sustain)"
}

# ---- phase: stop ----------------------------------------------------------------------------
phase_stop() {
    local hwm_kb t_stop deadline exit_code=0 stop_s
    # the whole process tree's (a wrapper, a master and its workers): each process's own peak, summed
    if ! hwm_kb=$(proc_tree_hwm_kb "$SERVER_PID"); then server_died; fail "server exited before it was stopped ($DIED)"; fi
    fact .stop.rss_kb "$hwm_kb"
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
        fact .stop '{"code": null, "killed": true}'
        fail "server did not exit within ${STOP_TIMEOUT_SEC} s of SIGTERM (killed)"
    fi
    wait "$SERVER_PID" || exit_code=$?
    SERVER_PID=""
    stop_s=$(calc "$(clock_s) - $t_stop")
    fact .stop "{\"rss_kb\": $hwm_kb, \"code\": $exit_code, \"killed\": false, \"stop_s\": $stop_s}"
    (( exit_code == 0 )) || fail "server exited $exit_code after SIGTERM (want 0): $(tail -n 3 "$run_dir/server.log" | tr '\n' ' ')"
    log_info "stop: exited 0 in $stop_s s after SIGTERM, peak RSS $(awk -v k="$hwm_kb" 'BEGIN { printf "%.1f", k / 1024 }') MB"
}

# ---- phase: sweep ---------------------------------------------------------------------------
# phase_sweep BASE_RPS: the rate sweep (SPEC.md section 14): one step per rate (--rates, or
# 10%, 20%, ... 120% of BASE_RPS), ascending, each a run of its own (sweep_step) on a fresh
# server, in a subshell so that a failed step ends only itself. The port is picked once and
# reused (a new one after a failed step); host and version facts are read once. Returns 1
# when a step failed, after running every step.
STEP_PID=""
phase_sweep() {
    local base=$1 rates rate n i=0 failed=0
    local -a list
    LOG_TAG="runner $server-$scenario sweep"
    if [[ -n "$sweep_rates" ]]; then
        rates=$sweep_rates
    elif ! rates=$(analysis sweep-rates "$base"); then
        log_info "sweep: FAILED: no rates from the base '$base' req/s"
        return 1
    fi
    IFS=, read -r -a list <<<"$rates"
    n=${#list[@]}
    log_info "sweep: $n steps at $rates req/s (base $base req/s), each on a fresh server: ${sweep_warmup_sec} s warm-up + ${sweep_measure_sec} s measured"
    # the runner's own work (curl, jq, python) stays off the server CPUs, as in phase_build
    taskset -pc "$LOADGEN_CPUS" $$ >/dev/null 2>&1 || log_info "warning: could not pin the runner to $LOADGEN_CPUS"
    local own_port=$PORT
    HOST_JSON=$(host_json) VERSIONS_JSON=$(versions_json "$ROOT")
    trap sweep_stop EXIT
    trap 'log_info "sweep: interrupted by a signal"; exit 1' INT TERM
    for rate in "${list[@]}"; do
        i=$((i + 1))
        if [[ -z "$PORT" ]]; then
            PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') || PORT=""
        fi
        ( sweep_step "$i" "$n" "$rate" "$base" ) &
        STEP_PID=$!
        if ! wait "$STEP_PID"; then
            failed=$((failed + 1))
            PORT=$own_port
        fi
        STEP_PID=""
        RUNNER_BUILD=0   # the first step built (or checked) the binaries
    done
    trap - INT TERM
    log_info "sweep: done, $((n - failed)) of $n steps completed -> $RESULTS_DIR/$BATCH/$server-$scenario-sweep-*"
    (( failed == 0 ))
}

# sweep_stop: the EXIT trap of phase_sweep: ends the running step (whose own trap stops its
# server and records the failure), by pid.
sweep_stop() {
    if [[ -n "$STEP_PID" ]] && kill -0 "$STEP_PID" 2>/dev/null; then
        kill -TERM "$STEP_PID" 2>/dev/null || true
        wait "$STEP_PID" 2>/dev/null || true
    fi
}

# sweep_step I N RATE BASE_RPS: step I of N (run in a subshell): results/<batch>/<server>-
# <scenario>-sweep-II/, kind sweep, facts .sweep{step, steps, offered_rps, base_rps,
# fraction_of_base, rates_given}; a fresh server (and database), the sanity check, RATE req/s
# for the sweep step's warm-up and window, stop. Exits 1 through fail on any failure.
sweep_step() {
    local i=$1 n=$2 rate=$3 base=$4
    kind=sweep REPEAT="" RUN_SUFFIX="-sweep-$(printf '%02d' "$i")"
    warmup_sec=$sweep_warmup_sec measure_sec=$sweep_measure_sec
    setup_run
    fact .sweep "$(jq -n --argjson i "$i" --argjson n "$n" --argjson rate "$rate" --argjson base "$base" \
        --argjson given "$([[ -n "$sweep_rates" ]] && echo true || echo false)" '
        {step: $i, steps: $n, offered_rps: $rate, base_rps: $base,
         fraction_of_base: (if $base > 0 then ($rate / $base * 10000 | round / 10000) else null end),
         rates_given: $given}')"
    LAST_ERR=""
    trap 'LAST_ERR="line $LINENO: $BASH_COMMAND"' ERR
    trap cleanup EXIT
    trap 'fail "interrupted by a signal"' INT TERM
    phase_build
    phase_start
    phase_sanity
    log_info "step $i/$n: constant $rate req/s ($(fmt_num "$(calc "100 * $rate / $base")" 1)% of $base req/s), ${warmup_sec} s warm-up (discarded) + ${measure_sec} s measured ..."
    run_load sustain "$rate" "$warmup_sec" "$measure_sec" "$run_dir/loadgen.json" "$run_dir/histogram.txt" "$run_dir/metrics"
    phase_stop
    fact_str .timestamps.end "$(now_iso)"
    # one Python call writes the complete result.json and prints the step's line (0.5 s a call)
    local line
    line=$(analysis line "$run_dir" sustain 2>>"$LOG_FILE") || fail "building result.json failed (see runner.log)"
    log_info "step $i/$n: $line"
    trap - INT TERM
}

main() {
    local a
    for a in "$@"; do
        case "$a" in -h|--help) usage; exit 0 ;; esac
    done
    for a in "$@"; do
        # the plan alone: nothing built, installed or run (works before scripts/deps.sh)
        if [[ "$a" == --cpu-plan ]]; then cpu_plan_run; exit $?; fi
    done
    parse_args "$@"
    if [[ "$CHECK_ONLY" == 1 ]]; then return 0; fi
    if [[ "$SWEEP" == 1 && -n "$SWEEP_BASE_RPS" ]]; then
        # run_all.sh --sweep: the probes are done; only the steps
        phase_sweep "$SWEEP_BASE_RPS"
        return
    fi
    setup_run
    LAST_ERR=""
    trap 'LAST_ERR="line $LINENO: $BASH_COMMAND"' ERR
    trap cleanup EXIT
    trap 'fail "interrupted by a signal"' INT TERM
    phase_build
    if remote_enabled; then remote_setup; fi
    phase_start
    phase_sanity
    local target=$TARGET_RPS
    if [[ -z "$TARGET_RPS" ]]; then
        phase_probe
        target=$(jq --argjson k "$SAT_RATIO" '.saturation_rps * $k | round | if . < 1 then 1 else . end' "$run_dir/result.json")
    fi
    if [[ "$PROBE_ONLY" == 0 && "$SUSTAIN" == 1 && "$SWEEP" == 0 ]]; then phase_sustain "$target"; fi
    phase_stop
    fact_str .timestamps.end "$(now_iso)"
    build_result
    trap - INT TERM
    log_info "done: $run_dir/result.json"
    if [[ "$SWEEP" == 1 ]]; then
        # this run is complete; each step is a run of its own with its own traps
        trap - EXIT ERR
        PORT=${PORT_GIVEN:-}
        phase_sweep "$(jq '.saturation_rps | round | if . < 1 then 1 else . end' "$run_dir/result.json")"
    fi
}

main "$@"
