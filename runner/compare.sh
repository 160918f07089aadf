#!/usr/bin/env bash
# compare.sh: compares two batches: each comparison's ratio (candidate / baseline) of B against
# A's with an interval drawn from both batches (IMPROVED, REGRESSED, WITHIN NOISE; exit 5 on a
# regression, for CI), then run by run each metric of B relative to A beyond fixed thresholds.
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
usage: runner/compare.sh [--help] [--version] [--format=text|json|junit] [--fail-on-verdict]
                         results/<A> results/<B>
First, per comparison of the two batches (scenario, candidate / baseline): A's ratio and
B's with their intervals and the change B/A with a 95% interval drawn from both batches (the
two intervals' standard errors in log scale added; SPEC.md section 13): IMPROVED when the
whole interval is above 1, REGRESSED when below, WITHIN NOISE when it holds 1, N/A when a
batch has no interval or the two were decided on different figures. This is what a CI gate
should read. --format=json prints it as JSON, --format=junit as JUnit XML (one testcase per
comparison: REGRESSED a failure, N/A skipped), and neither prints the run-by-run part.
Then (text only), for every run present in both batches, each metric of B relative to A: A, B, the
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
Exit status: 0 compared, nothing regressed; 5 a comparison REGRESSED; 6 with
--fail-on-verdict, a comparison is N/A or either batch's verdict is not PASS (FAIL,
INCONCLUSIVE, INCOMPLETE or N/A); 1 an index.json could not be read; 2 usage (bad arguments,
a folder without index.json, a bad NOISE_* value or --format).
USAGE
}

case "${1:-}" in
    -h|--help) usage; exit 0 ;;
    --version) suite_version compare.sh; exit 0 ;;
esac
opts=() dirs=()
for a in "$@"; do
    case "$a" in
        --format=text|--format=json|--format=junit|--fail-on-verdict) opts+=("$a") ;;
        -*) echo "compare.sh: unknown option '$a'" >&2; echo "run runner/compare.sh --help for usage" >&2; exit 2 ;;
        *) dirs+=("$a") ;;
    esac
done
if [[ ${#dirs[@]} -ne 2 ]]; then
    echo "compare.sh: need two batch folders, got ${#dirs[@]}" >&2
    echo "run runner/compare.sh --help for usage" >&2
    exit 2
fi
for d in "${dirs[@]}"; do
    if [[ ! -f "${d%/}/index.json" ]]; then
        echo "compare.sh: '$d' is not a batch folder with an index.json (runner/summarize.sh writes it)" >&2
        exit 2
    fi
done
analysis compare "${opts[@]}" "${dirs[0]%/}" "${dirs[1]%/}"
