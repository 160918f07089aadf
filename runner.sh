#!/usr/bin/env bash
# runner.sh: one server x one scenario. Builds if needed, starts the server (any definition
# in servers/, SERVER_DEFS) pinned to its CPUs with a fresh store, verifies it keeps the
# contract (CONTRACT.md), probes saturation closed-loop, then
# sustains SAT_RATIO x saturation at a constant rate (or, for run_all.sh, only probes, or only
# sustains a given rate; or, with --sweep, drives a fresh server at each rate of a sweep) and
# records latency, CPU, RSS and the handler p99 into results/<batch>/<run>/result.json (see
# SPEC.md). This script collects raw facts
# (facts.json, the load generator's JSON, /metrics scrapes, /proc samples); the analysis
# package (runner/analysis) turns them into result.json and judges validity.
# Ends only the processes it started, by pid. Exit: 0 ok, 1 run failed, 2 usage.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# What runs need is installed (scripts/deps.sh run) once the options are read, before the
# definition and the values are checked (parse_args); --help, --version, --cpu-plan and
# --list-servers read files only: they install and build nothing.
# shellcheck source=runner/lib.sh
. "$ROOT/runner/lib.sh"
# shellcheck source=runner/proc.sh
. "$ROOT/runner/proc.sh"
# shellcheck source=runner/host.sh
. "$ROOT/runner/host.sh"
# shellcheck source=runner/server.sh
. "$ROOT/runner/server.sh"
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
ACTOR_PLACEMENT="${ACTOR_PLACEMENT:-}"    # actor-server ladder: --placement local|spread (unset: local)
ACTOR_MESSAGE="${ACTOR_MESSAGE:-}"        # --message pointer|malloc|copy (unset: pointer)
ACTOR_MAILBOX="${ACTOR_MAILBOX:-}"        # --mailbox vyukov|ring|mutex (unset: vyukov)
ACTOR_DRAIN="${ACTOR_DRAIN:-}"            # --drain N, 1..4096 (unset: 64)
ACTOR_SPIN="${ACTOR_SPIN:-}"              # --spin N, 0..1000000 (unset: 64)
SEED_USERS="${SEED_USERS:-10000}"         # must match the mix files' id range
REQ_TIMEOUT_SEC="${REQ_TIMEOUT_SEC:-10}"  # loadgen per-request timeout
LOADGEN_TICK="${LOADGEN_TICK:-}"          # loadgen --tick at a constant rate (unset: its default)
STOP_TIMEOUT_SEC="${STOP_TIMEOUT_SEC:-5}" # stop signal to exit, else SIGKILL and failure
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
# Load from other hosts (runner/remote.sh; docs/multi-host.md):
LOADGEN_HOSTS="${LOADGEN_HOSTS:-}"        # ssh destinations, comma-separated (unset: the loadgen runs here)
SERVER_ADDR_SET="${SERVER_ADDR:+1}"
SERVER_ADDR="${SERVER_ADDR:-127.0.0.1}"   # IPv4 address the server listens on and the agents connect to
AGENT_CPUS="${AGENT_CPUS:-}"              # CPUs each agent is pinned to on its host (unset: all its CPUs)
SSH_OPTS="${SSH_OPTS:-}"                  # extra ssh/scp options, e.g. "-F ~/.ssh/bench_config"
SSH_CONNECT_TIMEOUT_SEC="${SSH_CONNECT_TIMEOUT_SEC:-10}"
MAX_START_SKEW_MS="${MAX_START_SKEW_MS:-10}"  # bound on |clock offset| + ssh round trip / 2 of every load host
AGENT_START_LEAD_SEC="${AGENT_START_LEAD_SEC:-3}"  # agents start this long after they are launched
LOADGEN_GRACE_SEC="${LOADGEN_GRACE_SEC:-15}"  # the local loadgen still running this long (+ REQ_TIMEOUT_SEC) after its window is killed, the run failed
AGENT_GRACE_SEC="${AGENT_GRACE_SEC:-15}"  # an agent still running this long (+ REQ_TIMEOUT_SEC) after its phase fails the run
CLOCK_SAMPLES="${CLOCK_SAMPLES:-8}"       # ssh round trips per clock-offset measure

VERIFY_ONLY=0                             # 1: --verify (start, verify, stop; no load)
# The server's definition, as definition_load reads it (servers/NAME.toml, SERVER_DEFS).
def_file="" def_sha256="" def_ours=false def_build="" def_ready_path=/ping def_stop_signal=TERM
def_scenarios="" def_program="" def_env_args="" def_access_log=true def_build_command=false def_url="" store="" mix=""

usage() {
    cat <<USAGE
usage: ./runner.sh [--help] [--version] <server> <scenario> [--quick] [--smoke] [--measure-sec=N]
                   [--warmup-sec=N] [--probe-sec=N] [--wrk-conns=N] [--wrk-threads=N]
                   [--batch=ID] [--probe-only] [--sweep [--rates=R1,R2,...]] [--check-only]
       ./runner.sh --cpu-plan
       ./runner.sh --list-servers
       ./runner.sh --verify <server> [<scenario>] [--batch=ID]
  server:   a server definition, servers/<server>.toml or one in a SERVER_DEFS folder
            (SERVER_DEFS=DIR1:DIR2; servers/README.md); the built-in ones are actor-mem,
            async-mem (s1-s3), actor-sqlite and async-sqlite (s4)
  scenario: mix:PATH (a mix file of your own, named by its stem; servers/README.md),
            s1 (GET /ping), s2 (GET /users/:id, bearer), s3 (mixed, memory store),
            s4 (mixed, sqlite store); one the definition lists
  --list-servers  every definition: name, scenarios, file, description (installs and
                builds nothing)
  --verify      only start the server, check it against CONTRACT.md for the scenario (every
                scenario it lists when none is given), and stop it: exit 0 every case
                passed, 1 a case failed (named on stdout and in result.json's failure)
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
  --version     print the checkout's commit and the libraries' versions, and exit
Options take their value as --opt=value or --opt value; an empty value is a usage error.
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
  warned about) SERVER_CPU_COUNT (the plan's server CPUs instead of its default) SAT_RATIO (0.7) BEARER ACTOR_WORKERS ACTOR_PLACEMENT ACTOR_MESSAGE ACTOR_MAILBOX ACTOR_DRAIN ACTOR_SPIN
  (the actor server's runtime ladder, actor-server --help) GROUP_COMMIT (1: every POST
  committed alone, in both servers; N > 1: the actor server's store actor commits up to N
  POSTs together, async-server stays at 1) SEED_USERS (10000) REQ_TIMEOUT_SEC (10) LOADGEN_TICK
  LOADGEN_GRACE_SEC (15: the loadgen still running REQ_TIMEOUT_SEC + this after its window
  is killed, the run failed)
  STOP_TIMEOUT_SEC (5) READY_TIMEOUT_SEC (15: the ready_path must answer 200 by then)
  ACCESS_LOG (/dev/null: the server's access log) BATCH (as --batch) RESULTS_DIR MIX_DIR
  BUILD (build) RUNNER_BUILD (1) PORT
  TARGET_RPS (skip the probe and sustain this rate: run_all's equal-load runs)
  PROBE_ONLY (1: as --probe-only) REPEAT (the probe repeat number to record)
  RUN_SUFFIX (appended to the run folder name) SUSTAIN (0: no sustain after the probe)
  ROUND, ROUND_POSITION (run_all's round and the run's place in it, recorded in config)
  SWEEP (1: as --sweep) SWEEP_RATES (as --rates) SWEEP_BASE_RPS (skip the probe; the 100% of
  the default rates: run_all's slower median saturation) SWEEP_WARMUP_SEC (5) SWEEP_MEASURE_SEC (20)
Load from other hosts (docs/multi-host.md): LOADGEN_HOSTS (user@h1,user@h2:
  one agent per host over ssh; needs SERVER_ADDR) SERVER_ADDR (127.0.0.1: the address the
  server listens on and the agents connect to) AGENT_CPUS (all of each host's CPUs) SSH_OPTS
  SSH_CONNECT_TIMEOUT_SEC (10) MAX_START_SKEW_MS (10) AGENT_START_LEAD_SEC (3)
  AGENT_GRACE_SEC (15) CLOCK_SAMPLES (8)
Writes facts.json (raw), result.json (SPEC.md section 7), histogram.txt, loadgen.json,
probe.json, server.cmd, server.log, verify.json, verify.log and runner.log. Progress: one
line per phase on stderr.
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

# definition_load NAME [SCENARIO]: reads server NAME's definition (servers/NAME.toml or a
# SERVER_DEFS folder, through runner/analysis/servers.py) into the def_* variables, and with
# SCENARIO its store and mix file. A usage error (exit 2) for an unknown or broken
# definition, an unknown scenario, or a scenario the definition does not list.
definition_load() {
    local plan
    plan=$(analysis server-plan "$1" ${2:+"$2"} 2>&1) || usage_error "${plan#analysis server-plan: }"
    local vars
    vars=$(jq -r '@sh "def_file=\(.file) def_sha256=\(.sha256) def_ours=\(.ours) def_build=\(.build | join(" "))
        def_ready_path=\(.ready_path) def_stop_signal=\(.stop_signal) def_scenarios=\(.scenarios | join(" "))
        def_program=\(.program) def_env_args=\(.env_args | join(" ")) def_access_log=\(.uses_access_log) def_build_command=\(.build_command) def_url=\(.url // "")
        store=\(.store // "") mix=\(.mix // "")" + (if .scenario then " scenario=" + (.scenario | @sh) else "" end)' <<<"$plan") || usage_error "cannot read the definition of '$1': $plan"
    eval "$vars"
    # a mix scenario of one's own: found by its name from here on (SCENARIO_MIXES)
    [[ "$mix" != /* ]] || export SCENARIO_MIXES="$mix${SCENARIO_MIXES:+:$SCENARIO_MIXES}"
}

# def_has_env_arg VAR: true when the definition adds arguments for the runner variable VAR.
def_has_env_arg() { [[ " $def_env_args " == *" $1 "* ]]; }

# parse_args ARGS...: sets server, scenario, mode, the def_* facts of its definition, store,
# mix and the durations, connections, threads and CPUs; exits 2 on any usage error, before
# anything is created.
parse_args() {
    local opt_warmup="" opt_measure="" opt_probe="" opt_conns="" opt_threads="" arg
    local opt_rates="" have_rates=0 base_checked
    local positional=()
    mode=full
    local opt val has_val
    while (( $# > 0 )); do
        arg=$1
        shift
        opt=$arg val="" has_val=0
        if [[ "$arg" == --*=* ]]; then opt=${arg%%=*} val=${arg#*=} has_val=1; fi
        case "$opt" in
            --measure-sec|--warmup-sec|--probe-sec|--wrk-conns|--wrk-threads|--batch|--rates)
                if (( ! has_val )); then
                    (( $# > 0 )) || usage_error "$opt needs a value ($opt=VALUE or $opt VALUE)"
                    [[ "$1" != -* ]] || usage_error "$opt needs a value, got the option '$1'"
                    val=$1
                    shift
                fi
                # (an empty --rates gets the sweep's own message: "the list is empty ...")
                [[ -n "$val" || "$opt" == --rates ]] || usage_error "$opt needs a value, got an empty one" ;;
            -h|--help|--version|--quick|--smoke|--probe-only|--check-only|--sweep|--verify|--list-servers|--cpu-plan)
                (( ! has_val )) || usage_error "$opt takes no value, got '$arg'" ;;
        esac
        case "$opt" in
            -h|--help) usage; exit 0 ;;
            --version) suite_version runner.sh; exit 0 ;;
            --quick|--smoke)
                [[ "$mode" == full || "$mode" == "${opt#--}" ]] || usage_error "--quick and --smoke exclude each other"
                mode=${opt#--} ;;
            --measure-sec) opt_measure=$val ;;
            --warmup-sec) opt_warmup=$val ;;
            --probe-sec) opt_probe=$val ;;
            --wrk-conns) opt_conns=$val ;;
            --wrk-threads) opt_threads=$val ;;
            --batch) BATCH=$val ;;
            --probe-only) PROBE_ONLY=1 ;;
            --check-only) CHECK_ONLY=1 ;;
            --sweep) SWEEP=1 ;;
            --rates) opt_rates=$val have_rates=1 ;;
            --verify) VERIFY_ONLY=1 ;;
            --list-servers|--cpu-plan) usage_error "$opt takes no other argument" ;;
            -*) usage_error "unknown option '$arg'" ;;
            *) positional+=("$arg") ;;
        esac
    done
    if [[ "$VERIFY_ONLY" == 1 ]]; then
        (( ${#positional[@]} == 1 || ${#positional[@]} == 2 )) ||
            usage_error "--verify expects <server> [<scenario>], got ${#positional[@]} arguments"
        if [[ "$PROBE_ONLY" == 1 || "$SWEEP" == 1 || $have_rates == 1 ]]; then
            usage_error "--verify runs no load: it excludes --probe-only, --sweep and --rates"
        fi
    else
        [[ ${#positional[@]} -eq 2 ]] || usage_error "expected <server> <scenario>, got ${#positional[@]} arguments"
    fi
    server=${positional[0]} scenario=${positional[1]:-}
    # the options are read: install what the checks below and the run need, when missing
    "$ROOT/scripts/deps.sh" run
    definition_load "$server" "$scenario"
    if [[ -n "$def_url" && "$VERIFY_ONLY" != 1 ]]; then
        usage_error "$server is a server already running ($def_url): only --verify checks it yet; measuring it needs its CPU, which no sampler here reads (servers/README.md)"
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
    is_pos_int "$LOADGEN_GRACE_SEC" || usage_error "LOADGEN_GRACE_SEC must be whole seconds > 0, got '$LOADGEN_GRACE_SEC'"
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
    # the actor server's ladder (actor-server --help); exported: env_args reads them
    [[ -z "$ACTOR_PLACEMENT" || "$ACTOR_PLACEMENT" =~ ^(local|spread)$ ]] || usage_error "ACTOR_PLACEMENT must be local or spread, got '$ACTOR_PLACEMENT'"
    [[ -z "$ACTOR_MESSAGE" || "$ACTOR_MESSAGE" =~ ^(pointer|malloc|copy)$ ]] || usage_error "ACTOR_MESSAGE must be pointer, malloc or copy, got '$ACTOR_MESSAGE'"
    [[ -z "$ACTOR_MAILBOX" || "$ACTOR_MAILBOX" =~ ^(vyukov|ring|mutex)$ ]] || usage_error "ACTOR_MAILBOX must be vyukov, ring or mutex, got '$ACTOR_MAILBOX'"
    if [[ -n "$ACTOR_DRAIN" ]] && { ! is_pos_int "$ACTOR_DRAIN" || (( 10#$ACTOR_DRAIN > 4096 )); }; then
        usage_error "ACTOR_DRAIN must be a whole number in 1..4096, got '$ACTOR_DRAIN'"
    fi
    if [[ -n "$ACTOR_SPIN" ]] && { ! is_uint "$ACTOR_SPIN" || (( 10#$ACTOR_SPIN > 1000000 )); }; then
        usage_error "ACTOR_SPIN must be a whole number in 0..1000000, got '$ACTOR_SPIN'"
    fi
    export ACTOR_PLACEMENT ACTOR_MESSAGE ACTOR_MAILBOX ACTOR_DRAIN ACTOR_SPIN
    if [[ -n "$GROUP_COMMIT" ]]; then
        # the servers' --group-commit range (common/app/options.h OPTIONS_GROUP_COMMIT_MAX)
        if ! is_pos_int "$GROUP_COMMIT" || (( 10#$GROUP_COMMIT > 64 )); then
            usage_error "GROUP_COMMIT must be a whole number in 1..64, got '$GROUP_COMMIT'"
        fi
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
    # a CPU given outside the affinity mask would only fail at taskset, after the run began
    cpus_within "$SERVER_CPUS" "$mask" || usage_error "SERVER_CPUS '$SERVER_CPUS' is not within this shell's CPU affinity $mask"
    cpus_within "$LOADGEN_CPUS" "$mask" || usage_error "LOADGEN_CPUS '$LOADGEN_CPUS' is not within this shell's CPU affinity $mask"
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
    [[ "$VERIFY_ONLY" == 0 ]] || kind=verify
}

# run_traps_set: the traps of one run (the main one, a sweep step, a verify run): the last
# failing command remembered for the failure message, cleanup at the exit, a signal a failure.
run_traps_set() {
    LAST_ERR=""
    trap 'LAST_ERR="line $LINENO: $BASH_COMMAND"' ERR
    trap cleanup EXIT
    trap 'fail "interrupted by a signal"' INT TERM
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
    local note=""
    # a full results folder named as the cause (whatever failed to write there)
    [[ -z "${run_dir:-}" ]] || note=$(analysis full-note "$run_dir" 2>/dev/null || true)
    [[ -z "$note" || "$*" == *"$note"* ]] || set -- "$*; $note"
    log_info "FAILED: $*"
    FAILED_WHY=$*           # said once: cleanup adds no second cause when facts.json is unwritable
    if [[ -f "${FACTS:-}" ]]; then
        fact_str .failure "$*" || true
        fact_str .timestamps.end "$(now_iso)" || true
        build_result
    fi
    # the one result line on stdout, as a completed run's
    echo "${server:-?} ${scenario:-?}: FAILED: $*"
    exit 1
}

SERVER_PID="" SERVER_SID="" LOADGEN_PID="" BG_PID="" DIED="" FAILED_WHY=""
cleanup() {
    local rc=$? pid
    # an exit through set -e, not through fail: still say in result.json that the run failed
    if (( rc != 0 )) && [[ -z "$FAILED_WHY" && -f "${FACTS:-}" ]] && jq -e '.failure == null' "$FACTS" >/dev/null 2>&1; then
        local why note
        why="runner.sh failed unexpectedly (exit $rc) at ${LAST_ERR:-an unknown command}"
        note=$(analysis full-note "$run_dir" 2>/dev/null || true)
        [[ -z "$note" ]] || why="$why; $note"
        fact_str .failure "$why" || true
        fact_str .timestamps.end "$(now_iso)" || true
        build_result
        log_info "FAILED: $why"
        # the one result line on stdout, as fail() and a completed run give it
        echo "${server:-?} ${scenario:-?}: FAILED: $why"
    fi
    # the edge sampler's sleep first (its parent is our own background job)
    if [[ -n "$BG_PID" ]]; then pkill -TERM -P "$BG_PID" 2>/dev/null || true; fi
    for pid in "$BG_PID" "$LOADGEN_PID"; do
        if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null || true
        fi
    done
    server_kill_tree
    remote_cleanup
    if [[ -n "${run_dir:-}" ]]; then rm -f "$run_dir/server.db" "$run_dir/server.db-wal" "$run_dir/server.db-shm"; fi
}

# server_kill_tree: ends whatever is left of the server's process tree (SERVER_SID, which
# outlives SERVER_PID when the leader exited first): its stop signal, 1 s, then SIGKILL.
server_kill_tree() {
    [[ -n "$SERVER_SID" ]] || return 0
    if [[ -n "$(server_tree_pids "$SERVER_SID")" ]]; then
        server_signal "${def_stop_signal:-TERM}" "$SERVER_SID"
        server_tree_wait "$SERVER_SID" "$(calc "$(clock_s) + 1")" || server_signal KILL "$SERVER_SID"
        server_tree_wait "$SERVER_SID" "$(calc "$(clock_s) + 2")" ||
            log_info "warning: processes of the server's tree outlived SIGKILL: $(server_tree_pids "$SERVER_SID" | paste -sd' ' -)"
    fi
    if [[ -n "$SERVER_PID" ]]; then wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""; fi
    SERVER_SID=""
}

# server_alive: true while the server's leader (SERVER_PID) runs (not exited, not a zombie).
server_alive() {
    local line
    [[ -n "$SERVER_PID" ]] || return 1
    { read -r line <"/proc/$SERVER_PID/stat"; } 2>/dev/null || return 1
    line=${line##*) }
    [[ "${line%% *}" != Z ]]
}

# sample_failed FILE WHEN: a sample of the server's tree could not be written to FILE (a
# file of the run folder): with the server still running, writing failed (the cause: a full
# results folder, `analysis full-note`), else the server exited (how: server_died, which
# waits for it, so never called while it runs). Fails the run either way.
sample_failed() {
    local note
    if server_alive; then
        note=$(analysis full-note "$run_dir" 2>/dev/null || true)
        fail "writing ${1#"$run_dir"/} $2 failed: ${note:-see runner.log}"
    fi
    server_died
    fail "server exited $2 ($DIED)"
}

# server_answering PHASE: after the PHASE's load the server must answer its ready path again
# within REQ_TIMEOUT_SEC: one that stopped answering (stopped, wedged) fails the run, its
# process state named, so that no figure of that window counts.
server_answering() {
    local code state=gone line
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time "$REQ_TIMEOUT_SEC" "$url$def_ready_path" 2>/dev/null || true)
    [[ "$code" != 200 ]] || return 0
    [[ "$code" != 000 && -n "$code" ]] || code="no answer"
    if [[ -n "$SERVER_PID" ]] && { read -r line <"/proc/$SERVER_PID/stat"; } 2>/dev/null; then
        line=${line##*) }
        state="state ${line%% *}"
        [[ "${line%% *}" != T ]] || state="$state, stopped by a signal"
    fi
    fail "server stopped answering during the $1: $def_ready_path got $code within ${REQ_TIMEOUT_SEC} s (its leader: $state)"
}

# server_died: sets DIED to how the (already exited) server ended, for failure messages: its
# exit status and the first line of server.log that reads like an error. Not in a subshell:
# only this shell can wait for its child. What is left of its tree is ended by cleanup.
server_died() {
    local st=0
    wait "$SERVER_PID" 2>/dev/null || st=$?
    SERVER_PID=""
    if (( st > 128 )); then DIED="killed by signal $((st - 128))"; else DIED="exit status $st"; fi
    DIED="$DIED; server.log: $(server_log_error "$run_dir/server.log")"
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
        --arg mode "$mode" --arg store "$store" --arg mix "$([[ "$mix" == /* ]] || echo -n loadgen-scripts/)$mix" \
        --arg server_cpus "$SERVER_CPUS" --arg loadgen_cpus "$LOADGEN_CPUS" --arg mask "$mask" \
        --argjson n_server "$n_server_cpus" --argjson n_loadgen "$n_loadgen_cpus" \
        --argjson disjoint "$cpus_disjoint" --argjson conns "$wrk_conns" --argjson threads "$wrk_threads" \
        --argjson warm "$warmup_sec" --argjson meas "$measure_sec" --argjson probe "$probe_sec" \
        --argjson pwarm "$probe_warmup_sec" --argjson ratio "$SAT_RATIO" \
        --argjson seed "$SEED_USERS" --argjson timeout "$REQ_TIMEOUT_SEC" \
        --arg workers "$ACTOR_WORKERS" --arg bin "$def_program" --arg access_log "$ACCESS_LOG" \
        --argjson has_workers "$(def_has_env_arg ACTOR_WORKERS && echo true || echo false)" \
        --argjson has_gc "$(def_has_env_arg GROUP_COMMIT && echo true || echo false)" \
        --arg def_name "$server" --arg def_file "$def_file" --arg def_sha "$def_sha256" \
        --argjson ours "$def_ours" --arg def_build "$def_build" --arg def_scs "$def_scenarios" \
        --arg ready "$def_ready_path" --arg stop_sig "$def_stop_signal" \
        --arg target "$TARGET_RPS" --arg gc "$GROUP_COMMIT" --arg tick "$LOADGEN_TICK" \
        --arg addr "$SERVER_ADDR" --arg hosts "$LOADGEN_HOSTS" --arg agent_cpus "$AGENT_CPUS" \
        --argjson skew "$MAX_START_SKEW_MS" --argjson cpu_plan "$cpu_plan_json" \
        --argjson threads_srv "$n_server_threads" --arg threads_given "$SERVER_THREADS" \
        --argjson conns_given "$wrk_conns_given" --argjson pool "$(mode_durations "$mode" | cut -d' ' -f5)" \
        --arg round "$ROUND" --arg round_pos "$ROUND_POSITION" '
        {mode: $mode, store: (if $store == "" then null else $store end), mix: $mix, binary: $bin,
         server_definition: {name: $def_name, file: $def_file, sha256: $def_sha, ours: $ours,
             build: ($def_build | split(" ") | map(select(. != ""))), scenarios: ($def_scs | split(" ")),
             ready_path: $ready, stop_signal: $stop_sig, command: null, env: null},
         server_metrics: null, affinity_mask: $mask,
         server_cpus: $server_cpus, loadgen_cpus: $loadgen_cpus, server_cpu_count: $n_server,
         loadgen_cpu_count: $n_loadgen, cpus_disjoint: $disjoint, server_threads: $threads_srv,
         server_threads_given: ($threads_given != ""), oversubscribed: ($threads_srv > $n_server),
         cpu_plan: $cpu_plan,
         actor_workers: (if $has_workers then (if $workers == "" then 0 else ($workers | tonumber) end) else null end),
         group_commit: (if $has_gc and $gc != "" then ($gc | tonumber) elif $has_gc or $ours then 1 else null end),
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
# phase_build: make the definition's own binaries (build = [...]; a server from elsewhere
# builds nothing here) and the load generator (not for --verify), then pins this shell to
# the load generator's CPUs.
phase_build() {
    local b targets=() made=()
    loadgen_bin="$BUILD/loadgen"
    [[ "$loadgen_bin" == /* ]] || loadgen_bin="$ROOT/$loadgen_bin"
    build_dir="$BUILD"
    [[ "$build_dir" == /* ]] || build_dir="$ROOT/$build_dir"
    for b in $def_build; do targets+=("build/$b"); done
    [[ "$VERIFY_ONLY" == 1 ]] || targets+=(build/loadgen)
    if [[ "$RUNNER_BUILD" == 1 && "$BUILD" == build && ${#targets[@]} -gt 0 ]]; then
        if ! make -C "$ROOT" --no-print-directory -s "${targets[@]}" >"$run_dir/build.log" 2>&1; then
            fail "build failed: make ${targets[*]} (see build.log)"
        fi
    fi
    # a server from elsewhere with a build_command (servers/README.md): built here, in the checkout
    if [[ "$RUNNER_BUILD" == 1 && "$def_build_command" == true ]]; then
        local -a bargv
        mapfile -d '' -t bargv < <(analysis server-build "$server" "$ROOT" "$build_dir" | jq -j '.[] | (., "\u0000")')
        (cd "$ROOT" && "${bargv[@]}") >>"$run_dir/build.log" 2>&1 </dev/null ||
            fail "build failed: ${bargv[*]} (its build_command; see build.log)"
        made+=("$server (${bargv[*]})")
    fi
    for b in $def_build; do
        [[ -x "$build_dir/$b" ]] || fail "server binary $build_dir/$b is missing (make build/$b)"
        made+=("$BUILD/$b")
    done
    if [[ "$VERIFY_ONLY" == 0 ]]; then
        [[ -x "$loadgen_bin" ]] || fail "load generator $loadgen_bin is missing (make build/loadgen)"
        made+=("$BUILD/loadgen")
    fi
    mix_file="$MIX_DIR/$mix"
    [[ "$mix" != /* ]] || mix_file=$mix   # a mix scenario of one's own (mix:PATH)
    [[ -r "$mix_file" ]] || fail "mix file $mix_file is missing"
    if [[ -n "$def_build" ]]; then
        log_info "build: ok (${made[*]})"
    else
        log_info "build: ok (${made[*]:-nothing}; $server is not built by this project)"
    fi
    # From here on this script's own work (curl, jq, sampling) runs on the loadgen CPUs,
    # so that nothing but the server runs on the server's CPUs.
    taskset -pc "$LOADGEN_CPUS" $$ >/dev/null 2>&1 || log_info "warning: could not pin the runner to $LOADGEN_CPUS"
}

# free_port: a TCP port free on SERVER_ADDR now (the kernel's pick), for a run without PORT.
free_port() {
    "${ANALYSIS_PYTHON:-python3}" -c 'import socket, sys; s = socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' "$SERVER_ADDR"
}

# phase_attach: a server already running (the definition's url, no command): nothing is
# started; ready when ready_path answers 200 within READY_TIMEOUT_SEC. Its process is not
# ours: no CPU, threads or memory of it are read.
phase_attach() {
    local t_start code=""
    url=$def_url PORT=${def_url##*:}
    fact .config.port "$PORT"
    fact .config.server_definition.url "\"$def_url\""
    t_start=$(clock_s)
    while :; do
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url$def_ready_path" || true)
        [[ "$code" != 200 ]] || break
        if [[ "$(calc "$(clock_s) - $t_start >= $READY_TIMEOUT_SEC")" == 1 ]]; then
            fail "$server at $url did not answer $def_ready_path with 200 within ${READY_TIMEOUT_SEC} s (READY_TIMEOUT_SEC; last: ${code:-no answer})"
        fi
        sleep 0.2
    done
    log_info "start: $server is already running at $url (not started here; its CPU is not measured)"
}

# ---- phase: start -------------------------------------------------------------------
# phase_start: the definition's command with its placeholders filled (SPEC.md section 3),
# its env, pinned to SERVER_CPUS, in the run folder, as the leader of a session of its own
# (setsid: SERVER_PID leads every process it starts); server.cmd records the exact command.
# Ready when ready_path answers 200 within READY_TIMEOUT_SEC and the port's listening
# sockets are all the tree's (ours also print their "listening on" line).
phase_start() {
    local why
    if [[ -n "$def_url" ]]; then phase_attach; return; fi
    if [[ -z "$PORT" ]]; then
        PORT=$(free_port) || fail "could not find a free port on $SERVER_ADDR"
    fi
    fact .config.port "$PORT"
    url="http://$SERVER_ADDR:$PORT"
    if [[ -n "$(port_listeners "$PORT")" ]]; then
        fail "port $PORT is already in use by another process (a listening socket before the start): set another PORT"
    fi
    rm -f "$run_dir/server.db" "$run_dir/server.db-wal" "$run_dir/server.db-shm"
    local values=("root=$ROOT" "build=$build_dir" "host=$SERVER_ADDR" "port=$PORT" "threads=$n_server_threads"
        "db=$run_dir/server.db" "bearer=$BEARER" "seed_users=$SEED_USERS" "access_log=$ACCESS_LOG"
        "run_dir=$run_dir")
    local -a argv envs launch
    analysis server-run "$server" "${values[@]}" >"$run_dir/.server.json" 2>"$run_dir/.server.err" ||
        fail "the command of $def_file cannot be filled in: $(cat "$run_dir/.server.err")"
    mapfile -d '' -t argv < <(jq -j '.command[] | (., "\u0000")' "$run_dir/.server.json")
    mapfile -d '' -t envs < <(jq -j '.env | to_entries[] | ("\(.key)=\(.value)", "\u0000")' "$run_dir/.server.json")
    fact .config.server_definition.command "$(jq -c .command "$run_dir/.server.json")"
    fact .config.server_definition.env "$(jq -c .env "$run_dir/.server.json")"
    # what ran: the program's and scripts' sha256 and the version (runner/analysis/ran.py)
    fact .config.server_definition.ran "$(analysis server-ran "$run_dir/.server.json" 2>/dev/null || echo null)"
    rm -f "$run_dir/.server.json" "$run_dir/.server.err"
    if [[ "${argv[0]}" == */* ]]; then
        [[ -f "${argv[0]}" && -x "${argv[0]}" ]] || fail "the server program ${argv[0]} (command[0] of $def_file) is missing or not executable"
    elif ! command -v "${argv[0]}" >/dev/null; then
        fail "the server program '${argv[0]}' (command[0] of $def_file) is not on PATH"
    fi
    launch=(setsid taskset -c "$SERVER_CPUS")
    if (( ${#envs[@]} > 0 )); then launch+=(env "${envs[@]}"); fi
    launch+=("${argv[@]}")
    { printf 'cd %q && ' "$run_dir"; printf '%q ' "${launch[@]}"; echo; } >"$run_dir/server.cmd"
    local t_start ready_rc=0
    t_start=$(clock_s)
    (cd "$run_dir" && exec "${launch[@]}") >"$run_dir/server.log" 2>&1 </dev/null &
    SERVER_PID=$! SERVER_SID=$!
    server_ready_wait "$url$def_ready_path" "$SERVER_PID" "$READY_TIMEOUT_SEC" || ready_rc=$?
    case "$ready_rc" in
        0) ;;
        1) server_died; fail "server exited before $def_ready_path answered 200 ($DIED)" ;;
        *) fail "server did not answer $def_ready_path with 200 within ${READY_TIMEOUT_SEC} s (READY_TIMEOUT_SEC); server.log: $(server_log_error "$run_dir/server.log")" ;;
    esac
    if [[ "$(ps -o sid= -p "$SERVER_PID" | tr -d ' ')" != "$SERVER_PID" ]]; then
        fail "the server (pid $SERVER_PID) does not lead a session of its own (setsid): its process tree cannot be told apart"
    fi
    # The port was free before the start: make sure it is this tree that answers on it.
    why=$(server_owns_port "$SERVER_PID" "$PORT") || fail "$def_ready_path answered on port $PORT, but $why"
    if [[ "$def_ours" == true ]] &&
        ! grep -Eq "listening on http://${SERVER_ADDR//./\\.}:$PORT([^0-9]|\$)" "$run_dir/server.log"; then
        fail "$def_ready_path answered on port $PORT but server.log has no 'listening on $url' (another process on the port?)"
    fi
    local n_procs
    n_procs=$(server_tree_pids "$SERVER_PID" | wc -l)
    log_info "start: $server (${argv[0]##*/}) pid $SERVER_PID, $n_procs process(es), on $SERVER_ADDR port $PORT, $n_server_threads thread(s) on CPUs $SERVER_CPUS, ready in $(calc "$(clock_s) - $t_start") s"
}

# ---- phase: verify ------------------------------------------------------------------
# phase_verify: the contract check before any load (CONTRACT.md; runner/analysis/verify.py):
# every case listed in verify.log, the report in verify.json. A failed case fails the run
# (result.json's failure names it); none of the figures are measured then. Records whether
# the server's /metrics can give the handler figures (config.server_metrics), and the
# same-work warnings (config.verify_warnings; CONTRACT.md section 7).
phase_verify() {
    local rc=0 n bad first
    analysis verify "$url" "$mix_file" --bearer="$BEARER" --seed-users="$SEED_USERS" \
        --access-log="$(case "$def_access_log" in true) echo yes ;; false) echo no ;; *) echo unknown ;; esac)" \
        --json="$run_dir/verify.json" >"$run_dir/verify.log" 2>&1 || rc=$?
    if [[ "$VERIFY_ONLY" == 1 ]]; then cat "$run_dir/verify.log"; fi
    if (( rc != 0 && rc != 1 )) || [[ ! -s "$run_dir/verify.json" ]]; then
        fail "verify could not run (exit $rc): $(tail -n 3 "$run_dir/verify.log" | tr '\n' ' ')"
    fi
    n=$(jq '.cases | length' "$run_dir/verify.json")
    bad=$(jq '.failed | length' "$run_dir/verify.json")
    if (( rc != 0 || bad > 0 )); then
        first=$(jq -r '[.cases[] | select(.ok | not) | "\(.name): \(.why)"] | .[:3] | join("; ")' "$run_dir/verify.json")
        (( bad <= 3 )) || first="$first; and $((bad - 3)) more"
        fail "verify: $bad of $n contract cases failed (CONTRACT.md; verify.log): $first"
    fi
    server_metrics=$(jq '.metrics' "$run_dir/verify.json")
    fact .config.server_metrics "$server_metrics"
    log_info "verify: $n of $n contract cases passed (CONTRACT.md); $(jq -r '.metrics_note' "$run_dir/verify.json")"
    # CONTRACT.md section 7 (same work): warnings, into result.json and summary.md
    fact .config.verify_warnings "$(jq -c '.warnings // []' "$run_dir/verify.json")"
    jq -r '.warnings // [] | .[] | "warning: same work: \(.)"' "$run_dir/verify.json" | while IFS= read -r w; do log_info "$w"; done
}

# metrics_prefix: the scrape files' prefix for run_load, empty (no scrapes, handler figures
# null) when the server has no usable /metrics.
metrics_prefix() {
    if [[ "${server_metrics:-false}" == true ]]; then echo "$run_dir/metrics"; fi
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
        proc_tree_sample "$SERVER_PID" >"$edge.srv0" || sample_failed "$edge.srv0" "before the $phase"
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
    proc_tree_sample "$SERVER_PID" >"$edge.srv1" || sample_failed "$edge.srv1" "during the $phase"
    st1=$(cpustat_sample "$SERVER_CPUS")
    load_sampler_end "$rc" "$edge"
    server_answering "$phase"
    if [[ -n "$scrape" ]]; then
        metrics_scrape "$url" "$scrape-after.prom" || fail "scraping /metrics after the $phase failed"
        [[ -f "$scrape-before.prom" ]] || fail "scraping /metrics at the end of the $phase warm-up failed"
    fi
    if [[ -e "$edge.hung" ]]; then
        fail "loadgen hung in the $phase: still running $(<"$edge.hung") s after its window's end, killed"
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
    # the watchdog: a load generator still there LOADGEN_GRACE_SEC after its window's end
    # (its in-flight requests had REQ_TIMEOUT_SEC) hangs: ended, and EDGE.hung says so
    sleep_until "$(calc "$t0 + $wait0 + $dur + $REQ_TIMEOUT_SEC + $LOADGEN_GRACE_SEC")"
    if kill -0 "$lg" 2>/dev/null; then
        echo "$((REQ_TIMEOUT_SEC + LOADGEN_GRACE_SEC))" >"$edge.hung" || true
        kill -KILL "$lg" 2>/dev/null || true
    fi
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
    run_load sustain "$target" "$warmup_sec" "$measure_sec" "$run_dir/loadgen.json" "$run_dir/histogram.txt" "$(metrics_prefix)"
    log_info "sustain: $(analysis line "$run_dir" sustain)"
}

# ---- phase: stop ----------------------------------------------------------------------------
phase_stop() {
    local hwm_kb t_stop deadline exit_code=0 stop_s sig=$def_stop_signal left signum how
    if [[ -n "$def_url" ]]; then log_info "stop: nothing to stop ($server at $def_url was not started here)"; return; fi
    # the whole process tree's (a wrapper, a master and its workers): each process's own peak, summed
    if ! hwm_kb=$(proc_tree_hwm_kb "$SERVER_PID"); then server_died; fail "server exited before it was stopped ($DIED)"; fi
    fact .stop.rss_kb "$hwm_kb"
    t_stop=$(clock_s)
    # the stop signal to the leader first (a master stops its workers its own way), then to
    # every other process of its tree (a wrapper script's child, which no one forwards it to)
    server_signal "$sig" "$SERVER_PID"
    deadline=$(calc "$t_stop + $STOP_TIMEOUT_SEC")
    if ! server_tree_wait "$SERVER_SID" "$deadline"; then
        left=$(server_tree_pids "$SERVER_SID" | wc -l)
        server_signal KILL "$SERVER_SID"
        server_tree_wait "$SERVER_SID" "$(calc "$(clock_s) + 2")" || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID="" SERVER_SID=""
        fact .stop '{"code": null, "killed": true}'
        fail "server did not exit within ${STOP_TIMEOUT_SEC} s of SIG$sig: $left process(es) of its tree killed"
    fi
    wait "$SERVER_PID" || exit_code=$?
    SERVER_PID="" SERVER_SID=""
    stop_s=$(calc "$(clock_s) - $t_stop")
    fact .stop "{\"rss_kb\": $hwm_kb, \"code\": $exit_code, \"killed\": false, \"stop_s\": $stop_s}"
    signum=$(kill -l "$sig")
    # Ours handle the signal and exit 0; a server from elsewhere may also end by the signal's
    # default action (a runtime without a handler: exit status 128 + its number).
    how="exited 0"
    if (( exit_code != 0 )); then
        if [[ "$def_ours" == false ]] && (( exit_code == 128 + signum )); then
            how="ended by SIG$sig (status $exit_code)"
        else
            fail "server exited $exit_code after SIG$sig (want 0$([[ "$def_ours" == true ]] || echo " or $((128 + signum))")): $(tail -n 3 "$run_dir/server.log" | tr '\n' ' ')"
        fi
    fi
    log_info "stop: $how in $stop_s s after SIG$sig, no process of its tree left, peak RSS $(awk -v k="$hwm_kb" 'BEGIN { printf "%.1f", k / 1024 }') MB"
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
        if [[ -z "$PORT" ]]; then PORT=$(free_port) || PORT=""; fi
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
# fraction_of_base, rates_given}; a fresh server (and database), the verify stage, RATE req/s
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
    run_traps_set
    phase_build
    phase_start
    phase_verify
    log_info "step $i/$n: constant $rate req/s ($(fmt_num "$(calc "100 * $rate / $base")" 1)% of $base req/s), ${warmup_sec} s warm-up (discarded) + ${measure_sec} s measured ..."
    run_load sustain "$rate" "$warmup_sec" "$measure_sec" "$run_dir/loadgen.json" "$run_dir/histogram.txt" "$(metrics_prefix)"
    phase_stop
    fact_str .timestamps.end "$(now_iso)"
    # one Python call writes the complete result.json and prints the step's line (0.5 s a call)
    local line
    line=$(analysis line "$run_dir" sustain 2>>"$LOG_FILE") || fail "building result.json failed (see runner.log)"
    log_info "step $i/$n: $line"
    trap - INT TERM
}

# list_servers: ./runner.sh --list-servers: every definition (servers/ and SERVER_DEFS) with
# its scenarios, file and description; exit 2 when a definition is broken or a name is
# defined twice. Reads files only.
list_servers() {
    local out name scs path desc
    out=$(analysis servers 2>&1) || { echo "runner.sh: ${out#analysis servers: }" >&2; exit 2; }
    printf '%-16s %-12s %-36s %s\n' SERVER SCENARIOS FILE DESCRIPTION
    while IFS=$'\t' read -r name scs path desc; do
        [[ -n "$name" ]] || continue
        printf '%-16s %-12s %-36s %s\n' "$name" "$scs" "${path#"$ROOT"/}" "$desc"
    done <<<"$out"
}

# verify_main: ./runner.sh --verify NAME [SCENARIO]: for the scenario (or each one the
# definition lists) a run of kind verify in results/<batch>/NAME-SCENARIO-verify/: build,
# start, verify, stop, each scenario on a fresh server in a subshell of its own. Returns 1
# when a scenario failed, after checking every one.
verify_main() {
    local scs=${scenario:-$def_scenarios} sc failed=0 n=0
    for sc in $scs; do
        n=$((n + 1))
        ( verify_one "$sc" ) || failed=$((failed + 1))
        PORT=$PORT_GIVEN RUNNER_BUILD=0   # the first run built (or checked) the binaries
    done
    LOG_TAG="runner $server verify" LOG_FILE=""
    if (( failed == 0 )); then
        log_info "PASS: $server keeps the contract (CONTRACT.md) on $scs -> $RESULTS_DIR/$BATCH/"
    else
        log_info "FAIL: $server broke the contract on $failed of $n scenario(s) (the failing cases above; verify.log in $RESULTS_DIR/$BATCH/$server-*-verify/)"
    fi
    (( failed == 0 ))
}

# verify_one SCENARIO: one verify run (in a subshell); exits 1 through fail when a case fails.
verify_one() {
    scenario=$1 RUN_SUFFIX=-verify
    definition_load "$server" "$scenario"
    setup_run
    run_traps_set
    phase_build
    phase_start
    phase_verify
    phase_stop
    fact_str .timestamps.end "$(now_iso)"
    build_result
    trap - INT TERM
}

main() {
    local a
    for a in "$@"; do
        case "$a" in
            -h|--help) usage; exit 0 ;;
            --version) suite_version runner.sh; exit 0 ;;
        esac
    done
    # the plan alone: nothing built, installed or run (works before scripts/deps.sh); with
    # other arguments a usage error, as --list-servers (parse_args)
    if [[ $# -eq 1 && "$1" == --cpu-plan ]]; then
        local plan rc=0
        plan=$(cpu_plan_run 2>&1) || rc=$?
        (( rc != 2 )) || usage_error "CPU plan: ${plan#analysis cpu-plan: }"
        printf '%s\n' "$plan"
        exit "$rc"
    fi
    if [[ $# -eq 1 && "$1" == --list-servers ]]; then
        list_servers
        return
    fi
    parse_args "$@"
    if [[ "$CHECK_ONLY" == 1 ]]; then return 0; fi
    if [[ "$VERIFY_ONLY" == 1 ]]; then
        verify_main
        return
    fi
    if [[ "$SWEEP" == 1 && -n "$SWEEP_BASE_RPS" ]]; then
        # run_all.sh --sweep: the probes are done; only the steps
        phase_sweep "$SWEEP_BASE_RPS"
        return
    fi
    setup_run
    run_traps_set
    phase_build
    if remote_enabled; then remote_setup; fi
    phase_start
    phase_verify
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
    # the run's one result line, on stdout (the progress stays on stderr)
    analysis result-line "$run_dir" || true
    if [[ "$SWEEP" == 1 ]]; then
        # this run is complete; each step is a run of its own with its own traps
        trap - EXIT ERR
        PORT=${PORT_GIVEN:-}
        phase_sweep "$(jq '.saturation_rps | round | if . < 1 then 1 else . end' "$run_dir/result.json")"
    fi
}

main "$@"
