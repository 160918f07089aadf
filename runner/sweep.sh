# shellcheck shell=bash
# sweep.sh: the shell side of rate sweeps (SPEC.md section 14), shared by runner.sh and
# run_all.sh: the --rates list check and the per-run overheads of run_all.sh's time
# estimate (planned_s). The steps are run by runner.sh (phase_sweep); the knee and every
# derived figure are runner/analysis/sweep.py's.
# Sourced, never executed; defines functions only. Needs lib.sh (mode_durations).

# Most steps a sweep may have (run folders are numbered -sweep-01 .. -sweep-99).
SWEEP_MAX_STEPS=99
# The load generator's highest --rate (loadgen/config.c).
SWEEP_MAX_RPS=100000000

# sweep_rates_parse LIST: checks a --rates list ("1000,2500.5,4000": positive numbers in
# req/s, comma-separated, no repeats, at most SWEEP_MAX_STEPS). On success prints the rates
# in ascending order, comma-separated, each as a plain JSON number, and returns 0; otherwise
# prints why (one line) and returns 1.
sweep_rates_parse() {
    local list=$1 item out
    local -a items
    if [[ -z "$list" ]]; then echo "the list is empty (give rates in req/s, e.g. --rates=1000,2000,4000)"; return 1; fi
    if [[ "$list" == ,* || "$list" == *, || "$list" == *,,* ]]; then
        echo "'$list' has an empty item (rates are separated by single commas)"
        return 1
    fi
    IFS=, read -r -a items <<<"$list"
    (( ${#items[@]} <= SWEEP_MAX_STEPS )) || { echo "${#items[@]} rates: at most $SWEEP_MAX_STEPS"; return 1; }
    for item in "${items[@]}"; do
        if [[ ! "$item" =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
            echo "'$item' is not a rate (a positive number of req/s such as 1500 or 2500.5)"
            return 1
        fi
        if ! awk -v r="$item" -v m="$SWEEP_MAX_RPS" 'BEGIN { exit !(r > 0 && r <= m) }'; then
            echo "'$item' is out of range (a rate is > 0 and <= $SWEEP_MAX_RPS req/s)"
            return 1
        fi
    done
    out=$(printf '%s\n' "${items[@]}" | awk '{ printf "%.10g\n", $1 + 0 }' | sort -g)
    if [[ -n "$(uniq -d <<<"$out")" ]]; then
        echo "rate $(uniq -d <<<"$out" | head -n1) is given twice"
        return 1
    fi
    paste -sd, - <<<"$out"
}

# Per-run overheads of the time estimate, in seconds, measured on the 2-CPU host `vm` on
# 2026-12-01 run alone (`./run_all.sh --quick --sweep`, SPEC.md section 14): a
# runner.sh run beyond its loadgen windows (start-up, host and version facts, server start,
# sanity, stop, analysis: 24 probes took 12.9 s each for 10 s of windows), and a sweep step
# beyond its window (fresh server, sanity, stop, analysis: 12 steps of 2+4 s took 89.7 s).
# shellcheck disable=SC2034  # read by run_all.sh (planned_s)
SWEEP_RUN_OVERHEAD_S=3
# shellcheck disable=SC2034
SWEEP_STEP_OVERHEAD_S=1.5
