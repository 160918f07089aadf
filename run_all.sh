#!/usr/bin/env bash
# run_all.sh: a comparison batch: per scenario a group of servers (runner/default-pairs.toml,
# or --pair / --pairs / --servers --baseline; runner/analysis/matrix.py), REPEATS rounds in
# each of which every server of the group runs once on a fresh server, in a seeded random
# order (the first round's runs also sustain SAT_RATIO x their own saturation), then the
# servers at equal load; rounds the host disturbed are run again within a time budget
# (SPEC.md section 9); with --sweep, instead of the sustained windows, every server at each
# rate of a sweep (SPEC.md section 14); then summary.md and index.json with the verdict
# (runner/summarize.sh) and report.html (runner/report.sh).
# Runs runner.sh one run at a time; ends only the runner it started, by pid.
# Exit: 0 all runs completed (any verdict), 1 a run failed, 2 usage, 3 FAIL and
# 4 INCONCLUSIVE with --fail-on-verdict.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=runner/lib.sh
. "$ROOT/runner/lib.sh"
# shellcheck source=runner/sweep.sh
. "$ROOT/runner/sweep.sh"

TARGET_RATIO="${TARGET_RATIO:-0.5}"     # PASS when candidate/baseline >= this on the deciding scenarios
SAT_RATIO="${SAT_RATIO:-0.7}"           # passed through to runner.sh (and used for equal load)
REPEATS="${REPEATS:-}"                  # planned rounds per scenario (full 3, quick 3, smoke 2)
CALIBRATE_BASELINE="${CALIBRATE_BASELINE:-async-mem}" # --calibrate: this server against a copy of itself
MIN_VALID_PAIRS="${MIN_VALID_PAIRS:-3}" # re-run disturbed rounds until this many valid pairs
BUDGET="${BUDGET:-}"                    # as --budget
SEED="${SEED:-}"                        # as --seed
EQUAL_LOAD="${EQUAL_LOAD:-}"            # 0: skip the equal-load re-runs (default 1; 0 with --sweep)
RATES_ENV="${SWEEP_RATES:-}"            # SWEEP_RATES: as --rates=
EQUAL_WARMUP_SEC="${EQUAL_WARMUP_SEC:-}"    # equal-load warm-up (full 10, quick 5, smoke 1)
EQUAL_MEASURE_SEC="${EQUAL_MEASURE_SEC:-}"  # equal-load measured window (full 30, quick 10, smoke 1)
RESULTS_DIR="${RESULTS_DIR:-$ROOT/results}"
BATCH="${BATCH:-}"
# The time estimate's end of batch: summarize.sh and report.sh (4 s for a --quick batch of
# 32 runs on the 2-CPU host `vm`, 2026-12-02), with room for larger batches.
FINAL_S=10

# Only this script sets these per run; inherited values would change every run.
unset TARGET_RPS RUN_SUFFIX PROBE_ONLY REPEAT SUSTAIN SWEEP SWEEP_BASE_RPS SWEEP_RATES ROUND ROUND_POSITION

usage() {
    cat <<USAGE
usage: ./run_all.sh [--help] [--version] [--quick | --smoke] [--scenarios=s1,s2]
                    [--pair=CANDIDATE,BASELINE]... [--pairs=FILE] [--servers=a,b,c [--baseline=b]]
                    [--repeats=N] [--seed=N] [--budget=DURATION] [--batch=ID] [--fail-on-verdict] [--calibrate]
                    [--sweep [--rates=R1,R2,...]] [--scaling=N1,N2,...] [--cpu-plan]
                    [--no-cost] [--ladder[=RUNG,...]]
Runs a comparison batch into results/<batch>/. Which servers run on which scenario, and
which is compared with which (candidate / baseline, against TARGET_RATIO):
  (default)          runner/default-pairs.toml: actor-mem vs async-mem on s1 s2 s3,
                     actor-sqlite vs async-sqlite on s4; s1 and s2 decide
  --pair=C,B         candidate C against baseline B on every scenario both serve (servers/
                     NAME.toml); repeatable; replaces the default
  --pairs=FILE       the pairs of a file shaped like runner/default-pairs.toml
  --servers=a,b,c --baseline=b
                     a league: every listed server on each scenario it shares with the
                     baseline, each compared with the baseline
  --servers=LIST     without --baseline: the default pairs limited to these servers
  --scenarios=LIST   only these scenarios (s1 s2 s3 s4, and mix:PATH: a mix file of
                     your own as a scenario named by its stem, run by every selected
                     server whose scenarios cover the routes it uses; servers/README.md)
Per scenario: REPEATS rounds, in each every server of the scenario once, each on a fresh
server, in a balanced order (ABBA: each server first in every other round) drawn from
--seed (the same seed gives the same orders); round 1
also sustains SAT_RATIO x each server's own saturation, rounds 2.. are probe-only runs
(<server>-<scenario>-probeN); then every compared server at equal load (SAT_RATIO x the
slowest median saturation, <server>-<scenario>-equal). A comparison with fewer than
MIN_VALID_PAIRS valid pairs gets a new round for each round the host disturbed (other
load on the server CPUs, a window not stationary), and, when its probes gave too few valid
pairs, more equal-load rounds (-equal2, ...), while the batch fits its --budget
(SPEC.md section 9). Writes matrix.json, summary.md, index.json and report.html.
  --quick            probe 2+8 s, sustain 10+15 s, equal load 5+10 s, 3 rounds (about 11
                     minutes on 2 CPUs for the default pairs, 15 at most with re-runs)
  --smoke            a few seconds per run, 2 rounds, for tests: its figures and its
                     verdict are not results
  --repeats=N        planned rounds per scenario, 1..20 (default 3; smoke 2)
  --seed=N           the seed of the rounds' base order, a whole number (default: from the
                     batch id); recorded in matrix.json, each run's place in its facts
  --budget=DURATION  the batch's wall time within which re-runs may be added, e.g. 900,
                     900s, 15m, 1h30m (default: the planned estimate and a third more; the
                     estimate is printed at the start); planned runs always run
  --batch=ID         batch id (default: UTC timestamp)
  --calibrate        A/A: CALIBRATE_BASELINE ($CALIBRATE_BASELINE) against a copy of itself
                     (results/calibration/defs/NAME-b.toml) on s1,s2 (or --scenarios); its
                     pair ratios are added to the host's noise floor, results/calibration/
                     <host>.json (CALIBRATION=FILE: another), which later batches' intervals
                     include (SPEC.md section 9). Run several, e.g. with --quick --repeats=6
  --fail-on-verdict  exit 3 when the overall verdict is FAIL, 4 when it is INCONCLUSIVE,
                     6 when it is N/A or INCOMPLETE
  --sweep            latency under load (SPEC.md section 14): after the probes of a scenario
                     (no sustain after them, no equal load unless EQUAL_LOAD=1), every server
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
  --no-cost          skip the cost account: by default, after the runs, every server and
                     scenario of the batch is counted per request (callgrind instructions,
                     strace system calls by kind, context switches, the /metrics counters:
                     hops, cross-thread hops, wake-ups, lock waits), plus one contended row
                     per server binary (4 server threads, pipelined load), into cost.json,
                     index.json's cost list and summary.md (SPEC.md section 16); about 5-10 s a
                     row on 2 CPUs, shortened (never skipped) by --smoke
  --ladder           the ladder of the actor runtime's choices: async-mem and actor-mem at
                     each rung (today's flags; placement=spread, message=malloc, message=copy,
                     mailbox=ring, mailbox=mutex alone; then spread+copy+mutex), generated
                     definitions under results/<batch>/ladder-servers/, as a league against
                     async-mem on s2 unless --scenarios says otherwise; the ladder table in
                     summary.md, its chart in report.html, index.json's ladder list
  --ladder=RUNG,...  only those rungs (of default, spread, malloc, copy, ring, mutex, all),
                     async-mem always the baseline; e.g. --ladder=default,spread (placement)
  --version          print the checkout's commit and the libraries' versions, and exit
Options take their value as --opt=value or --opt value; an empty value is a usage error.
Every value, and runner.sh's checks of every planned run (runner.sh --check-only), are
checked before anything is created.
Environment: TARGET_RATIO ($TARGET_RATIO) SAT_RATIO ($SAT_RATIO) REPEATS MIN_VALID_PAIRS
  ($MIN_VALID_PAIRS) BUDGET (as --budget) SEED (as --seed) EQUAL_LOAD (1; 0 with --sweep)
  EQUAL_WARMUP_SEC EQUAL_MEASURE_SEC SWEEP_RATES (as --rates) SWEEP_WARMUP_SEC
  SWEEP_MEASURE_SEC (sweep step, full 5+20 s) BATCH (as --batch) RESULTS_DIR SERVER_DEFS, and everything
  runner.sh reads (WARMUP_SEC MEASURE_SEC PROBE_SEC SERVER_CPUS LOADGEN_CPUS SMT SERVER_THREADS
  CPU_MASK CPU_TOPOLOGY_ROOT WRK_CONNS
  WRK_THREADS BEARER ACTOR_WORKERS GROUP_COMMIT LOADGEN_TICK LOADGEN_HOSTS SERVER_ADDR
  AGENT_CPUS SSH_OPTS ...).
Exit status: 0 all runs completed (whatever the verdict), 1 a run failed, 2 usage,
3 verdict FAIL, 4 verdict INCONCLUSIVE and 6 verdict N/A or INCOMPLETE with --fail-on-verdict.
USAGE
}

usage_error() {
    echo "run_all.sh: $*" >&2
    echo "run ./run_all.sh --help for usage" >&2
    exit 2
}

# duration_s TEXT: TEXT (900, 900s, 15m, 1h30m, 2h) in whole seconds; returns 1 when it is
# not such a duration or is 0.
duration_s() {
    local t=$1
    [[ -n "$t" && "$t" =~ ^([0-9]+h)?([0-9]+m)?([0-9]+s?)?$ ]] || return 1
    local h=${BASH_REMATCH[1]%h} m=${BASH_REMATCH[2]%m} s=${BASH_REMATCH[3]%s}
    local total=$(( 10#${h:-0} * 3600 + 10#${m:-0} * 60 + 10#${s:-0} ))
    (( total > 0 )) || return 1
    echo "$total"
}

no_cost=0 ladder=0 ladder_rungs=""
mode=full mode_flag=() fail_on_verdict=0 calibrate=0 opt_repeats="" sweep=0 have_rates=0 opt_rates="" scaling="" cpu_plan=0
opt_scenarios="" opt_servers="" opt_baseline="" opt_pairs_file="" opt_seed=$SEED opt_budget=$BUDGET
opt_pairs=()
have_scenarios=0 have_servers=0 have_baseline=0 have_pairs_file=0
while (( $# > 0 )); do
    arg=$1
    shift
    opt=$arg val="" has_val=0
    if [[ "$arg" == --*=* ]]; then opt=${arg%%=*} val=${arg#*=} has_val=1; fi
    case "$opt" in
        --scenarios|--servers|--baseline|--pair|--pairs|--repeats|--batch|--rates|--scaling|--seed|--budget)
            if (( ! has_val )); then
                (( $# > 0 )) || usage_error "$opt needs a value ($opt=VALUE or $opt VALUE)"
                [[ "$1" != -* ]] || usage_error "$opt needs a value, got the option '$1'"
                val=$1
                shift
            fi
            # (an empty --rates is the sweep's own message: "the list is empty ...")
            [[ -n "$val" || "$opt" == --rates ]] || usage_error "$opt needs a value, got an empty one" ;;
        -h|--help|--version|--quick|--smoke|--fail-on-verdict|--sweep|--cpu-plan|--calibrate|--no-cost)
            (( ! has_val )) || usage_error "$opt takes no value, got '$arg'" ;;
    esac
    case "$opt" in
        -h|--help) usage; exit 0 ;;
        --version) suite_version run_all.sh; exit 0 ;;
        --quick|--smoke)
            [[ "$mode" == full || "$mode" == "${opt#--}" ]] || usage_error "--quick and --smoke exclude each other"
            mode=${opt#--} mode_flag=("$opt") ;;
        --scenarios) opt_scenarios=$val have_scenarios=1 ;;
        --servers) opt_servers=$val have_servers=1 ;;
        --baseline) opt_baseline=$val have_baseline=1 ;;
        --pair) opt_pairs+=("$val") ;;
        --pairs) opt_pairs_file=$val have_pairs_file=1 ;;
        --repeats) opt_repeats=$val ;;
        --batch) BATCH=$val ;;
        --seed) opt_seed=$val ;;
        --budget) opt_budget=$val ;;
        --fail-on-verdict) fail_on_verdict=1 ;;
        --sweep) sweep=1 ;;
        --rates) opt_rates=$val have_rates=1 ;;
        --scaling) scaling=$val ;;
        --cpu-plan) cpu_plan=1 ;;
        --calibrate) calibrate=1 ;;
        --no-cost) no_cost=1 ;;
        --ladder)
            # --ladder=RUNG,RUNG,...: only those rungs (checked by analysis ladder-defs)
            (( ! has_val )) || [[ -n "$val" ]] || usage_error "--ladder= needs rungs, got an empty list"
            ladder=1 ladder_rungs=$val ;;
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
# The options are read (a usage error so far needed nothing installed): now, before anything
# is checked further or created, install what runs need when missing (python3, jq, ...).
"$ROOT/scripts/deps.sh" run
if (( calibrate )); then
    (( ${#opt_pairs[@]} == 0 && ! have_pairs_file && ! have_servers && ! have_baseline && ! sweep )) ||
        usage_error "--calibrate runs CALIBRATE_BASELINE against a copy of itself: it excludes --pair, --pairs, --servers, --baseline and --sweep"
fi
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
if [[ ! "$MIN_VALID_PAIRS" =~ ^[0-9]+$ ]] || (( 10#$MIN_VALID_PAIRS < 1 || 10#$MIN_VALID_PAIRS > 20 )); then
    usage_error "MIN_VALID_PAIRS must be a whole number in 1..20, got '$MIN_VALID_PAIRS'"
fi
MIN_VALID_PAIRS=$((10#$MIN_VALID_PAIRS))
if [[ -n "$opt_seed" ]]; then
    [[ "$opt_seed" =~ ^[0-9]{1,18}$ ]] || usage_error "--seed must be a whole number (at most 18 digits), got '$opt_seed'"
    seed=$((10#$opt_seed))
else
    seed=$(cksum <<<"$BATCH" | cut -d' ' -f1)   # the same batch id, the same orders
fi
budget_s=""
if [[ -n "$opt_budget" ]]; then
    budget_s=$(duration_s "$opt_budget") ||
        usage_error "--budget must be a duration > 0 such as 900, 900s, 15m or 1h30m, got '$opt_budget'"
fi
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

if (( calibrate )); then
    # A/A: the baseline against itself under a second name (SPEC.md section 9, "The noise floor")
    cal_defs="$RESULTS_DIR/calibration/defs"
    cal_twin=$(analysis calibrate-def "$CALIBRATE_BASELINE" "$cal_defs") ||
        usage_error "--calibrate: no definition of CALIBRATE_BASELINE '$CALIBRATE_BASELINE'"
    export SERVER_DEFS="$cal_defs${SERVER_DEFS:+:$SERVER_DEFS}"
    opt_pairs=("$cal_twin,$CALIBRATE_BASELINE")
    (( have_scenarios )) || opt_scenarios=s1,s2 have_scenarios=1
fi
# The ladder (runner/analysis/ladder.py): its definitions under the batch folder, as a league.
if (( ladder )); then
    (( ! have_servers && ! have_baseline && ! have_pairs_file && ${#opt_pairs[@]} == 0 )) ||
        usage_error "--ladder chooses its servers (async-mem and a definition per rung): no --servers, --baseline or --pair"
    # (into a temporary folder until the batch folder exists: a usage error creates nothing)
    ladder_tmp=$(mktemp -d "${TMPDIR:-/tmp}/ladder.XXXXXX")
    trap 'rm -rf "$ladder_tmp"' EXIT
    opt_servers=$(analysis ladder-defs "$ladder_tmp" ${ladder_rungs:+"$ladder_rungs"} 2>&1) || usage_error "--ladder: ${opt_servers#analysis ladder-defs: }"
    user_defs=${SERVER_DEFS:-}
    export SERVER_DEFS="$ladder_tmp${user_defs:+:$user_defs}"
    opt_baseline=async-mem have_servers=1 have_baseline=1
    (( have_scenarios )) || opt_scenarios=s2 have_scenarios=1
fi
# The matrix (runner/analysis/matrix.py): per scenario a group of servers and its comparisons.
matrix_args=()
for p in "${opt_pairs[@]}"; do matrix_args+=("--pair=$p"); done
(( ! have_pairs_file )) || matrix_args+=("--pairs=$opt_pairs_file")
(( ! have_servers )) || matrix_args+=("--servers=$opt_servers")
(( ! have_baseline )) || matrix_args+=("--baseline=$opt_baseline")
(( ! have_scenarios )) || matrix_args+=("--scenarios=$opt_scenarios")
rc=0
matrix_doc=$(analysis matrix "${matrix_args[@]}" 2>&1) || rc=$?
if (( rc == 2 )); then
    usage_error "${matrix_doc#analysis matrix: }"
elif (( rc != 0 )); then
    echo "run_all.sh: the matrix could not be read: $matrix_doc" >&2
    exit 1
fi
# mix scenarios of one's own (--scenarios=mix:PATH): runner.sh finds them by name here
SCENARIO_MIXES=$(jq -r '[.scenario_mixes // {} | .[]] + [env.SCENARIO_MIXES // empty] | join(":")' <<<"$matrix_doc")
export SCENARIO_MIXES
groups=()   # "scenario server,server,..." in scenario order; servers in the group's order
comps=()    # "scenario candidate baseline"
runs=()     # "server scenario": every server of every group
mapfile -t groups < <(jq -r '.groups[] | "\(.scenario) \(.servers | join(","))"' <<<"$matrix_doc")
mapfile -t comps < <(jq -r '.groups[] | .scenario as $s | .comparisons[] | "\($s) \(.candidate) \(.baseline)"' <<<"$matrix_doc")
for g in "${groups[@]}"; do
    read -r sc list <<<"$g"
    IFS=, read -r -a names <<<"$list"
    for sv in "${names[@]}"; do runs+=("$sv $sc"); done
done
(( ${#runs[@]} > 0 )) || usage_error "no run matches the selection"

# compared_servers SCENARIO: the servers of SCENARIO's comparisons, comma-separated, in the
# group's order (a server compared with nothing runs its probes only).
compared_servers() {
    local g c sc list sv csc cand base out=()
    local -a names
    for g in "${groups[@]}"; do
        read -r sc list <<<"$g"
        [[ "$sc" == "$1" ]] || continue
        IFS=, read -r -a names <<<"$list"
        for sv in "${names[@]}"; do
            for c in "${comps[@]}"; do
                read -r csc cand base <<<"$c"
                if [[ "$csc" == "$sc" && ( "$cand" == "$sv" || "$base" == "$sv" ) ]]; then out+=("$sv"); break; fi
            done
        done
    done
    local IFS=,
    echo "${out[*]}"
}

# Scaling: which server CPU counts this host can give (runner/analysis/scaling.py decides).
scaling_plan=()   # "run N SERVER_CPUS LOADGEN_CPUS" or "skip N REASON..."
if [[ -n "$scaling" ]]; then
    mask=$(affinity_cpus) || usage_error "cannot read this shell's CPU affinity (taskset)"
    plan_out=$(analysis scaling-plan "$scaling" "$mask" 2>&1) || usage_error "--scaling: ${plan_out#analysis scaling-plan: }"
    mapfile -t scaling_plan <<<"$plan_out"
fi

# runner.sh's own checks of every planned run, before anything is created: the same
# arguments and environment as the run, with --check-only (DEPS_SKIP: this script ran deps.sh).
# check_run SERVER SCENARIO [ENV=VALUE...]: exits 2 with runner.sh's message when it refuses.
check_run() {
    local sv=$1 sc=$2 out rc=0
    shift 2
    out=$(env DEPS_SKIP=1 "$@" "$ROOT/runner.sh" "$sv" "$sc" "${mode_flag[@]}" "--batch=$BATCH" --check-only 2>&1) || rc=$?
    (( rc == 0 )) && return 0
    (( rc != 2 )) || usage_error "$sv $sc: $(head -n 1 <<<"$out" | sed 's/^runner\.sh: //')"
    echo "run_all.sh: runner.sh --check-only $sv $sc failed (exit $rc): $out" >&2
    exit 1
}
for run in "${runs[@]}"; do
    read -r sv sc <<<"$run"
    check_run "$sv" "$sc" REPEAT=1 ROUND=1 ROUND_POSITION=1 SUSTAIN=$(( sweep ? 0 : 1 ))
done
read -r sv sc <<<"${runs[0]}"
(( repeats < 2 )) || check_run "$sv" "$sc" PROBE_ONLY=1 REPEAT=2 ROUND=2 ROUND_POSITION=1 RUN_SUFFIX=-probe2
if (( EQUAL_LOAD == 1 )); then
    check_run "$sv" "$sc" TARGET_RPS=1 RUN_SUFFIX=-equal ROUND=1 ROUND_POSITION=1 WARMUP_SEC="$eq_warm" MEASURE_SEC="$eq_meas"
fi

# ---- the time estimate and the budget -------------------------------------------------------
read -r d_warm d_meas d_probe d_pwarm _c _sw _sm < <(mode_durations "$mode")
d_warm=${WARMUP_SEC:-$d_warm} d_meas=${MEASURE_SEC:-$d_meas}
d_probe=${PROBE_SEC:-$d_probe} d_pwarm=${PROBE_WARMUP_SEC:-$d_pwarm}
# the windows of one run of each kind, in seconds (the runner's overhead comes on top)
win_sat=$(( d_pwarm + d_probe + (sweep ? 0 : d_warm + d_meas) ))
win_probe=$(( d_pwarm + d_probe ))
win_equal=$(( eq_warm + eq_meas ))
n_steps=0
if (( sweep )); then
    # the default steps: as many as runner/analysis/sweep.py's fractions (a large base keeps them apart)
    if [[ -n "$rates" ]]; then n_steps=$(tr ',' '\n' <<<"$rates" | wc -l); else n_steps=$(analysis sweep-rates 1000000 | tr ',' '\n' | wc -l); fi
fi
n_scaling=0
for p in "${scaling_plan[@]}"; do
    [[ "$p" != run* ]] || n_scaling=$((n_scaling + ${#runs[@]}))
done
overhead_s=$SWEEP_RUN_OVERHEAD_S   # per run; replaced by this batch's own mean once runs are done
overhead_sum=0 overhead_n=0

# planned_s FROM OVERHEAD: the planned runs of the groups FROM.. (0-based) and everything
# after them (scaling runs, summary and report), in seconds, with OVERHEAD per run.
planned_s() {
    local from=$1 oh=$2 k sc list n_all n_cmp t=0 cmp
    local -a names
    for ((k = from; k < ${#groups[@]}; k++)); do
        read -r sc list <<<"${groups[k]}"
        IFS=, read -r -a names <<<"$list"
        n_all=${#names[@]}
        cmp=$(compared_servers "$sc")
        n_cmp=0
        [[ -z "$cmp" ]] || n_cmp=$(tr ',' '\n' <<<"$cmp" | wc -l)
        t=$(calc "$t + $n_all * ($win_sat + $oh) + $n_all * ($repeats - 1) * ($win_probe + $oh)")
        (( EQUAL_LOAD == 0 )) || t=$(calc "$t + $n_cmp * ($win_equal + $oh)")
        (( ! sweep )) || t=$(calc "$t + $n_all * ($oh + $n_steps * ($sweep_warm + $sweep_meas + $SWEEP_STEP_OVERHEAD_S))")
    done
    calc "$t + $n_scaling * ($win_probe + $oh) + $cost_s + $FINAL_S"
}
# the cost account: a row per server and scenario and a contended row per binary (cost.py)
cost_s=0
(( no_cost )) || cost_s=$(analysis cost-estimate "$mode" "$(( ${#runs[@]} + 2 ))")
estimate_s=$(planned_s 0 "$overhead_s")
estimate_s=$(awk -v t="$estimate_s" 'BEGIN { printf "%d\n", t + 0.999 }')
budget_default=0
if [[ -z "$budget_s" ]]; then budget_s=$(( estimate_s + (estimate_s + 2) / 3 )) budget_default=1; fi

# ---- the batch folder and matrix.json ------------------------------------------------------
batch_dir="$RESULTS_DIR/$BATCH"
mkdir -p "$batch_dir"
# a batch run again into its folder: the old summary goes first, not left beside new runs
rm -f "$batch_dir/index.json" "$batch_dir/summary.md" "$batch_dir/report.html"
if (( ladder )); then
    # the ladder's definitions move into the batch folder, which keeps them
    mkdir -p "$batch_dir/ladder-servers"
    cp "$ladder_tmp"/* "$batch_dir/ladder-servers/"
    rm -rf "$ladder_tmp"
    export SERVER_DEFS="$batch_dir/ladder-servers${user_defs:+:$user_defs}"
fi
export LOG_TAG=run_all LOG_FILE="$batch_dir/run_all.log" RESULTS_DIR SAT_RATIO
started=$(now_iso)
batch_t0=$(clock_s)
# the host's CPU time and steal over the batch (/proc/stat's "cpu" line: all CPUs)
cpu_line() { awk '$1 == "cpu" { t = 0; for (i = 2; i <= 9; i++) t += $i; print t, $9; exit }' /proc/stat; }
read -r host_total0 host_steal0 < <(cpu_line)
# matrix.json: what was planned, so that a run that never wrote a result is still listed;
# the rounds, re-runs and budget decisions are appended as the batch goes (SPEC.md section 9).
printf '%s\n' "${runs[@]}" | jq -R -s --arg batch "$BATCH" --arg mode "$mode" --arg started "$started" \
    --argjson target "$TARGET_RATIO" --argjson sat "$SAT_RATIO" --argjson eq "$EQUAL_LOAD" \
    --argjson eqw "$eq_warm" --argjson eqm "$eq_meas" --argjson repeats "$repeats" \
    --argjson sweep "$sweep" --arg rates "$rates" --argjson sw "$((10#$sweep_warm))" --argjson sm "$((10#$sweep_meas))" \
    --argjson m "$matrix_doc" --argjson seed "$seed" --argjson minv "$MIN_VALID_PAIRS" \
    --argjson budget "$budget_s" --argjson bdef "$budget_default" --argjson est "$estimate_s" '
    {batch: $batch, mode: $mode, started: $started, target_ratio: $target, sat_ratio: $sat,
     repeats: $repeats, min_valid_pairs: $minv, seed: $seed,
     budget_s: $budget, budget_default: ($bdef == 1), estimate_s: $est,
     equal_load: ($eq == 1), equal_load_warmup_sec: $eqw, equal_load_measure_sec: $eqm,
     sweep: (if $sweep == 1 then {rates_rps: (if $rates == "" then null else ($rates | split(",") | map(tonumber)) end),
             warmup_sec: $sw, measure_sec: $sm} else null end),
     selection: $m.selection, baseline: $m.baseline, groups: $m.groups,
     runs: [split("\n")[] | select(. != "") | split(" ") | {server: .[0], scenario: .[1]}],
     rounds: [], reruns: [], budget_stops: []}' \
    >"$batch_dir/matrix.json"
if (( calibrate )); then
    jq '.calibrate = true' "$batch_dir/matrix.json" >"$batch_dir/matrix.json.tmp" &&
        mv -f "$batch_dir/matrix.json.tmp" "$batch_dir/matrix.json"
fi
# matrix_add KEY JSON: appends JSON to the array KEY of matrix.json.
matrix_add() {
    jq --argjson v "$2" ".$1 += [\$v]" "$batch_dir/matrix.json" >"$batch_dir/matrix.json.tmp" &&
        mv -f "$batch_dir/matrix.json.tmp" "$batch_dir/matrix.json"
}
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
# interrupted: the running run ends as failed (cleanup), the finished ones stay; no summary
# is written, and stdout's one line says so
trap 'log_info "interrupted by a signal: ${i:-0} of ${n_total:-?} runs started, no summary written"; echo "$batch_dir: INTERRUPTED (no summary)"; exit 130' INT TERM

# run_one SERVER SCENARIO SUFFIX WINDOWS_S [ENV=VALUE...]: runs runner.sh in the background (so
# that a signal can end it by pid) and prints its one-line outcome; WINDOWS_S (its planned
# windows) against its wall time updates the per-run overhead. Returns runner.sh's status.
i=0
run_one() {
    local sv=$1 sc=$2 suffix=$3 windows=$4 rc=0 res t0 wall
    shift 4
    i=$((i + 1))
    t0=$(clock_s)
    log_info "[$i/$n_total] $sv $sc${suffix:+ ($suffix)} ..."
    # (runner.sh's own result line goes to stderr with its progress: this script's stdout
    # holds only its last line, the batch and its verdict)
    # the host's canary right before and after the run (canary.py: a slow host is flagged)
    canary_before=$(analysis canary "${SERVER_CPUS:-}" "${LOADGEN_CPUS:-}" 2>/dev/null) || canary_before=null
    env "$@" "$ROOT/runner.sh" "$sv" "$sc" "${mode_flag[@]}" "--batch=$BATCH" >&2 &
    RUNNER_PID=$!
    wait "$RUNNER_PID" || rc=$?
    RUNNER_PID=""
    canary_after=$(analysis canary "${SERVER_CPUS:-}" "${LOADGEN_CPUS:-}" 2>/dev/null) || canary_after=null
    if [[ -f "$batch_dir/$sv-$sc$suffix/result.json" ]]; then
        jq --argjson a "$canary_before" --argjson b "$canary_after" '.host_speed = {canary_before_us: $a.us,
            canary_after_us: $b.us, canary_cpus: ($a.cpus // $b.cpus), method: "pipe round trip, median of 2000 (us)"}' \
            "$batch_dir/$sv-$sc$suffix/result.json" >"$batch_dir/.hs.json" &&
            mv -f "$batch_dir/.hs.json" "$batch_dir/$sv-$sc$suffix/result.json"
    fi
    wall=$(calc "$(clock_s) - $t0")
    if (( rc == 0 )); then
        overhead_sum=$(calc "$overhead_sum + $wall - $windows") overhead_n=$((overhead_n + 1))
        overhead_s=$(calc "$overhead_sum / $overhead_n < 0 ? 0 : $overhead_sum / $overhead_n")
    fi
    res="$batch_dir/$sv-$sc$suffix/result.json"
    if [[ -f "$res" ]]; then
        log_info "[$i/$n_total] $sv $sc${suffix:+ ($suffix)}: $(jq -r '
            def f(d): if . == null then "null" else (. * pow(10; d) | round / pow(10; d) | tostring) end;
            if .failure != null then "FAILED: \(.failure)"
            else "\(if .saturation_rps != null then "saturation \(.saturation_rps | f(0)) req/s" else "" end)\(if .sustained_rps != null then "\(if .saturation_rps != null then ", " else "" end)sustained \(.sustained_rps | f(0)) req/s, p99 \(.latency_p99_ms | f(3)) ms, \(.req_per_cpu_sec | f(0)) req/CPU-s" else "" end)\(if (.flags | length) > 0 then " (\(.flags | join(", ")))" else "" end)" end' "$res") ($wall s)"
    else
        log_info "[$i/$n_total] $sv $sc: FAILED (exit $rc, no result.json)"
    fi
    return "$rc"
}

# shuffled SCENARIO KIND ROUND SERVER...: the servers in the round's balanced order, one line,
# space-separated: a base order drawn from (seed, scenario, kind), ABBA over the rounds
# (analysis round-order, matrix.round_order; SPEC.md section 9), so a seed gives the same orders.
shuffled() {
    analysis round-order "$seed" "$@"
}

# run_round SCENARIO KIND ROUND RERUN SERVER...: one round: every SERVER once, in the round's
# random order, each a fresh runner.sh run; KIND probe (round 1: the saturation runs, with
# their sustain unless --sweep; rounds 2..: probe-only -probeN) or equal (-equal, -equalN at
# $eq_rate req/s). Records the round in matrix.json; sets failed=1 when a run failed.
run_round() {
    local sc=$1 kind=$2 rnd=$3 rerun=$4 order pos=0 sv suffix
    shift 4
    read -r -a order <<<"$(shuffled "$sc" "$kind" "$rnd" "$@")"
    matrix_add rounds "$(jq -n --arg sc "$sc" --arg kind "$kind" --argjson r "$rnd" --argjson rerun "$rerun" \
        --arg order "${order[*]}" --arg rate "${eq_rate:-}" '
        {scenario: $sc, kind: $kind, round: $r, rerun: ($rerun == 1), order: ($order | split(" ")),
         rate_rps: (if $kind == "equal" then ($rate | tonumber) else null end)}')"
    for sv in "${order[@]}"; do
        pos=$((pos + 1))
        if [[ "$kind" == equal ]]; then
            suffix=-equal
            (( rnd == 1 )) || suffix="-equal$rnd"
            run_one "$sv" "$sc" "$suffix" "$win_equal" TARGET_RPS="$eq_rate" RUN_SUFFIX="$suffix" \
                WARMUP_SEC="$eq_warm" MEASURE_SEC="$eq_meas" ROUND="$rnd" ROUND_POSITION="$pos" || failed=1
        elif (( rnd == 1 )); then
            run_one "$sv" "$sc" "" "$win_sat" REPEAT=1 SUSTAIN=$(( sweep ? 0 : 1 )) \
                ROUND=1 ROUND_POSITION="$pos" || failed=1
        else
            run_one "$sv" "$sc" "-probe$rnd" "$win_probe" PROBE_ONLY=1 REPEAT="$rnd" RUN_SUFFIX="-probe$rnd" \
                ROUND="$rnd" ROUND_POSITION="$pos" || failed=1
        fi
    done
}

# reruns SCENARIO KIND GROUP_INDEX: the re-run rounds of KIND (probe or equal) for SCENARIO
# while a comparison needs one (analysis rounds-status | rounds-next: the rule is in
# runner/analysis/rounds.py) and the next round, with the planned runs still to come, fits
# the budget. Each re-run and each budget stop is recorded in matrix.json.
reruns() {
    local sc=$1 kind=$2 gi=$3 status next rnd n win cost left planned why
    local -a servers
    planned=$repeats
    [[ "$kind" == probe ]] || planned=1
    while :; do
        if ! status=$(analysis rounds-status "$batch_dir" "$sc" 2>"$batch_dir/.rounds.err"); then
            log_info "re-runs $sc ($kind): no status ($(cat "$batch_dir/.rounds.err")), none run"
            failed=1
            return 0
        fi
        if ! next=$(analysis rounds-next "$kind" "$MIN_VALID_PAIRS" "$planned" <<<"$status" 2>"$batch_dir/.rounds.err"); then
            log_info "re-runs $sc ($kind): no decision ($(cat "$batch_dir/.rounds.err")), none run"
            failed=1
            return 0
        fi
        [[ "$next" != null ]] || return 0
        rnd=$(jq -r '.round' <<<"$next")
        read -r -a servers <<<"$(jq -r '.servers | join(" ")' <<<"$next")"
        n=${#servers[@]}
        win=$win_probe
        [[ "$kind" == probe ]] || win=$win_equal
        cost=$(calc "$n * ($win + $overhead_s)")
        left=$(planned_s "$((gi + 1))" "$overhead_s")
        why=$(jq -r '[.answers[] | "round \(.round) of \(.candidate)/\(.baseline) ("
            + (if .valid then "valid: more pairs for the interval" else .why end) + ")"] | join(", ")' <<<"$next")
        if ! awk -v e="$(calc "$(clock_s) - $batch_t0")" -v c="$cost" -v l="$left" -v b="$budget_s" 'BEGIN { exit !(e + c + l <= b) }'; then
            log_info "re-run $sc $kind round $rnd (${servers[*]}): not run: about $(fmt_num "$cost") s would exceed the budget of $budget_s s ($(fmt_num "$(calc "$(clock_s) - $batch_t0")") s spent, about $(fmt_num "$left") s of planned work left); it was for $why"
            matrix_add budget_stops "$(jq -n --arg sc "$sc" --arg kind "$kind" --argjson next "$next" \
                --argjson cost "$cost" --argjson left "$left" --argjson spent "$(calc "$(clock_s) - $batch_t0")" '
                {scenario: $sc, kind: $kind, round: $next.round, servers: $next.servers,
                 comparisons: $next.comparisons, estimate_s: $cost, spent_s: $spent, planned_left_s: $left}')"
            return 0
        fi
        log_info "re-run $sc $kind round $rnd (${servers[*]}, fresh servers): for $why"
        matrix_add reruns "$(jq -n --arg sc "$sc" --argjson next "$next" --arg text "$why" '
            {scenario: $sc, kind: $next.kind, round: $next.round, servers: $next.servers,
             comparisons: $next.comparisons, answers: $next.answers, why: $text}')"
        n_total=$((n_total + n))
        rerun_rounds=$((rerun_rounds + 1)) rerun_runs=$((rerun_runs + n))
        run_round "$sc" "$kind" "$rnd" 1 "${servers[@]}"
    done
}

n_eq=0
if (( EQUAL_LOAD == 1 )); then
    for g in "${groups[@]}"; do
        read -r sc _ <<<"$g"
        cmp=$(compared_servers "$sc")
        [[ -z "$cmp" ]] || n_eq=$((n_eq + $(tr ',' '\n' <<<"$cmp" | wc -l)))
    done
fi
n_total=$(( ${#runs[@]} * repeats + n_eq + n_scaling ))
rerun_rounds=0 rerun_runs=0
log_info "batch $BATCH ($mode): ${#runs[@]} servers x scenarios, $repeats round(s) each in a balanced order (ABBA, seed $seed), + $n_eq equal-load runs = $n_total runs$( (( sweep )) && echo ", + ${#runs[@]} sweeps of $n_steps steps") -> $batch_dir"
log_info "estimate: about $(( (estimate_s + 59) / 60 )) min ($estimate_s s: runs of their windows + ${overhead_s} s each$( (( sweep )) && echo ", sweep steps of ${sweep_warm}+${sweep_meas} s + ${SWEEP_STEP_OVERHEAD_S} s each"), ${FINAL_S} s for the summary and report); budget $budget_s s$( (( budget_default )) && echo " (the estimate and a third more)"): re-runs of disturbed rounds (up to $MIN_VALID_PAIRS valid pairs) only while the batch fits it"
[[ "$mode" != smoke ]] || log_info "smoke run: checks the pipeline, too short to mean anything"
failed=0
for ((gi = 0; gi < ${#groups[@]}; gi++)); do
    read -r sc list <<<"${groups[gi]}"
    IFS=, read -r -a names <<<"$list"
    # REPEATS rounds, every server of the scenario once per round, in a random order
    for ((r = 1; r <= repeats; r++)); do
        run_round "$sc" probe "$r" 0 "${names[@]}"
    done
    cmp=$(compared_servers "$sc")
    [[ -z "$cmp" ]] || reruns "$sc" probe "$gi"
    # Equal load: every compared server at SAT_RATIO x the slowest median saturation.
    eq_rate=""
    if [[ -n "$cmp" && "$EQUAL_LOAD" == 1 ]]; then
        if eq_rate=$(analysis equal-rate "$batch_dir" "$sc" "$SAT_RATIO" 2>"$batch_dir/.equal-rate.err"); then
            IFS=, read -r -a eq_servers <<<"$cmp"
            log_info "equal load $sc at $eq_rate req/s (SAT_RATIO x the slowest median saturation): ${eq_servers[*]}"
            run_round "$sc" equal 1 0 "${eq_servers[@]}"
            reruns "$sc" equal "$gi"
        else
            log_info "equal load $sc: skipped ($(cat "$batch_dir/.equal-rate.err"))"
            i=$((i + $(tr ',' '\n' <<<"$cmp" | wc -l)))
            eq_rate=""
        fi
    fi
    # The sweep: every server at the same constant rates, after the probes (SPEC.md section 14).
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
        env SWEEP_BASE_RPS="$base" "$ROOT/runner.sh" "$sv" "$sc" "${mode_flag[@]}" "--batch=$BATCH" --sweep "--rates=$sc_rates" >&2 &
        RUNNER_PID=$!
        wait "$RUNNER_PID" || rc=$?
        RUNNER_PID=""
        (( rc == 0 )) || failed=1
        log_info "sweep $sc: $sv done$( (( rc == 0 )) || echo " with a failed step (exit $rc)") ($(calc "$(clock_s) - $t0") s)"
    done
done
rm -f "$batch_dir/.equal-rate.err" "$batch_dir/.rounds.err"

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
            run_one "$sv" "$sc" "-cpus$n" "$win_probe" PROBE_ONLY=1 REPEAT=1 RUN_SUFFIX="-cpus$n" \
                SERVER_CPU_COUNT="$n" SERVER_CPUS="" LOADGEN_CPUS="" || failed=1
        done
    done
fi

# The cost account (runner/analysis/cost.py): counts per request, from the binaries just measured.
if (( ! no_cost )); then
    log_info "cost account: every server and scenario (and a contended row per binary), about $cost_s s"
    # (a failed stage leaves index.json without its cost list; the runs and the verdict stand)
    analysis cost "$batch_dir" "$mode" >&2 || log_info "the cost account failed (see above): no cost list in index.json"
fi

read -r host_total1 host_steal1 < <(cpu_line)
jq --arg ended "$(now_iso)" --argjson spent "$(calc "$(clock_s) - $batch_t0")" \
    --argjson t0 "$host_total0" --argjson t1 "$host_total1" --argjson s0 "$host_steal0" --argjson s1 "$host_steal1" '
    .ended = $ended | .spent_s = $spent
    | .host_steal_over_batch = {steal_ticks: ($s1 - $s0), cpu_ticks: ($t1 - $t0),
                     steal_pct: (if $t1 > $t0 then (10000 * ($s1 - $s0) / ($t1 - $t0) | round / 100) else null end)}' \
    "$batch_dir/matrix.json" >"$batch_dir/matrix.json.tmp" && mv -f "$batch_dir/matrix.json.tmp" "$batch_dir/matrix.json"
TARGET_RATIO="$TARGET_RATIO" "$ROOT/runner/summarize.sh" "$batch_dir" || { log_info "summarize failed"; exit 1; }
cat "$batch_dir/summary.md" >&2
"$ROOT/runner/report.sh" "$batch_dir" || { log_info "report.sh failed"; exit 1; }
log_info "summary: $batch_dir/summary.md, index: $batch_dir/index.json, report: $batch_dir/report.html"
[[ "$mode" != smoke ]] || log_info "smoke run: checks the pipeline, too short to mean anything; its verdict is not a result"
(( ! failed )) || log_info "at least one run failed (see index.json .failures)"
if (( calibrate )); then
    cal_file=$(analysis calibrate-record "$batch_dir") || { log_info "calibrate-record failed"; exit 1; }
    log_info "calibration: the A/A pair ratios added to the host's noise floor, $cal_file"
fi
IFS=$'\t' read -r overall headline < <(analysis headline "$batch_dir")
log_info "verdict: $headline"
n_stops=$(jq '.budget_stops | length' "$batch_dir/matrix.json")
if (( rerun_rounds == 0 )); then
    log_info "re-runs: none$( (( n_stops > 0 )) && echo " ($n_stops not run: over the budget of $budget_s s)")"
else
    log_info "re-runs: $rerun_rounds round(s), $rerun_runs run(s): $(jq -r '[.reruns[] | "\(.scenario) \(.kind) round \(.round) for \(.why)"] | join("; ")' "$batch_dir/matrix.json")$( (( n_stops > 0 )) && echo "; $n_stops more not run: over the budget of $budget_s s")"
fi
# the one result line on stdout: where the batch is and its verdict
echo "$batch_dir: $headline"
(( ! failed )) || exit 1
if (( fail_on_verdict )); then
    case "$overall" in
        FAIL) exit 3 ;;
        INCONCLUSIVE) exit 4 ;;
        PASS) ;;
        *) exit 6 ;;   # N/A (nothing decided) or INCOMPLETE: not a pass either
    esac
fi
exit 0
