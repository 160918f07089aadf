#!/usr/bin/env bash
# compare.sh: compares two batches run by run, like a benchmark baseline comparison: for
# every run (server-scenario, and the -equal re-runs) each metric of B relative to A, the
# ratio B/A, the percent and its direction in words, flagged beyond the noise threshold.
# Reads only the two batches' index.json (runner/analysis/compare.py does the work); runs nothing.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON="${PYTHON:-python3}"
# shellcheck source=runner/lib.sh
. "$ROOT/runner/lib.sh"
# Noise thresholds in percent (empty: the measured defaults below).
export NOISE_RPS_PCT="${NOISE_RPS_PCT:-}" NOISE_LATENCY_PCT="${NOISE_LATENCY_PCT:-}"
export NOISE_CPU_PCT="${NOISE_CPU_PCT:-}" NOISE_HANDLER_PCT="${NOISE_HANDLER_PCT:-}"
export NOISE_RSS_PCT="${NOISE_RSS_PCT:-}"

usage() {
    cat <<'USAGE'
usage: runner/compare.sh [--help] [--version] results/<A> results/<B>
Prints, for every run present in both batches, each metric of B relative to A: A, B, the
ratio B/A and the change in words with its sense, e.g.
  "B is 7.1% slower than A (saturation req/s)"
  "B's p99 is 12.0% higher (worse) than A's"
Higher is better for saturation req/s and req/CPU-s; lower is better for latency (p50,
p99, p99.9, handler p99), server CPU and peak RSS. Server CPU and latency compare only at
the same offered load: the run's header says when target_rps differs between A and B.
A run whose validity flags are bad in either batch (not saturated, loadgen-bound, rate not
held, errors) is noted: its figures may not mean what they say.

Noise: a change is flagged IMPROVED or REGRESSED only when |B/A - 1| exceeds the threshold
of its metric class; otherwise "within noise". The defaults depend on the batches' mode
(both the same; else the smoke ones): the spread measured between repeated batches of
unchanged code on the 2-CPU development host (SPEC.md section 13), rounded up:
USAGE
    analysis compare --defaults
    cat <<'USAGE'
Smoke windows are 1-2 s on a shared host, so those are wide: on smoke batches only gross
changes are flagged. On another host, run the same commit twice, run
NOISE_RPS_PCT=0 NOISE_LATENCY_PCT=0 NOISE_CPU_PCT=0 NOISE_HANDLER_PCT=0 NOISE_RSS_PCT=0
runner/compare.sh on the two, and set the variables from the spread it prints.
Exit status: 0 compared, 1 an index.json could not be read, 2 usage (bad arguments, a
folder without index.json, a bad NOISE_* value).
USAGE
}

case "${1:-}" in
    -h|--help) usage; exit 0 ;;
    --version) suite_version compare.sh; exit 0 ;;
esac
if [[ $# -ne 2 ]]; then
    echo "compare.sh: need two batch folders, got $#" >&2
    echo "run runner/compare.sh --help for usage" >&2
    exit 2
fi
for d in "$1" "$2"; do
    if [[ ! -f "${d%/}/index.json" ]]; then
        echo "compare.sh: '$d' is not a batch folder with an index.json (runner/summarize.sh writes it)" >&2
        exit 2
    fi
done
analysis compare "${1%/}" "${2%/}"
