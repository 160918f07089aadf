#!/usr/bin/env bash
# report.sh: renders results/<batch>/report.html, one self-contained page (plots inlined as
# SVG, no scripts, no network), from the batch's index.json and its runs' histogram.txt; for
# a kept batch (index.json and summary.md only) also summary.md, from index.json alone.
# Re-runnable on old batches; reads only results/<batch>/ and never runs a benchmark.
# The plots are drawn by gnuplot (runner/plots/*.gp); the analysis package writes the files
# (runner/analysis/rerender.py, report.py, summary.py).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GNUPLOT="${GNUPLOT:-gnuplot}"       # the gnuplot binary (svg terminal)
PYTHON="${PYTHON:-python3}"
REPORT_OUT="${REPORT_OUT:-}"        # default: results/<batch>/report.html

# shellcheck source=runner/lib.sh
. "$ROOT/runner/lib.sh"

usage() {
    cat <<USAGE
usage: runner/report.sh [--help] [--version] [--out=DIR] [--rejudge] results/<batch>
Writes results/<batch>/report.html from results/<batch>/index.json (runner/summarize.sh
writes it) and every run's histogram.txt: the verdict banner, throughput and the verdict
ratio against TARGET_RATIO, each scenario's latency percentile spectrum (own load and equal
load), requests per server CPU-second, handler p99 beside client p99, host and configuration.
A kept batch (index.json without its runs' result.json, as results/ref-1) gets summary.md and
report.html rendered from index.json alone by today's code (no latency spectrum plots: the
histograms are not kept; every figure is in the tables).
  --out=DIR   write into DIR (created) instead of the batch folder
  --rejudge   judge the batch by today's rules first (from its run folders, or from the runs
              index.json holds) and write that index.json, summary.md and report.html
Environment: GNUPLOT ($GNUPLOT), PYTHON ($PYTHON), REPORT_OUT (the report.html file).
Exit status: 0 written, 1 rendering failed (also: a kept index.json of an older schema
without --rejudge, or one that holds no runs), 2 usage (no such batch or no index.json).
USAGE
}

case "${1:-}" in
    -h|--help) usage; exit 0 ;;
    --version) suite_version report.sh; exit 0 ;;
esac
render_opts=()
args=()
for arg in "$@"; do
    case "$arg" in
        --out=?*|--rejudge) render_opts+=("$arg") ;;
        -*) echo "report.sh: unknown option '$arg'" >&2; usage >&2; exit 2 ;;
        *) args+=("$arg") ;;
    esac
done
batch_dir=$(batch_dir_arg report.sh "${args[@]}") || exit 2
[[ -f "$batch_dir/index.json" ]] || {
    echo "report.sh: $batch_dir/index.json missing (run runner/summarize.sh $batch_dir first)" >&2
    exit 2
}
command -v "$GNUPLOT" >/dev/null || { echo "report.sh: $GNUPLOT not found (apt-get install gnuplot-nox)" >&2; exit 1; }
if [[ -n "$REPORT_OUT" ]]; then render_opts+=("--html=$REPORT_OUT"); fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/report.XXXXXX")
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT

GNUPLOT="$GNUPLOT" analysis render "$batch_dir" "$WORK" "${render_opts[@]}"
