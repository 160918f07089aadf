#!/usr/bin/env bash
# report.sh: renders results/<batch>/report.html, one self-contained page (plots inlined as
# SVG, no scripts, no network), from the batch's index.json and its runs' histogram.txt.
# Re-runnable on old batches; reads only results/<batch>/ and never runs a benchmark.
# The plots are drawn by gnuplot (runner/plots/*.gp); the analysis package (runner/analysis/report.py) writes the page.
# Without gnuplot the page has its tables and a note where each plot would be (said once).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GNUPLOT="${GNUPLOT:-gnuplot}"       # the gnuplot binary (svg terminal)
PYTHON="${PYTHON:-python3}"
REPORT_OUT="${REPORT_OUT:-}"        # default: results/<batch>/report.html

# shellcheck source=runner/lib.sh
. "$ROOT/runner/lib.sh"

usage() {
    cat <<USAGE
usage: runner/report.sh [--help] [--version] results/<batch>
Writes results/<batch>/report.html from results/<batch>/index.json (runner/summarize.sh
writes it) and every run's histogram.txt: the verdict banner, throughput and the verdict
ratio against TARGET_RATIO, each scenario's latency percentile spectrum (own load and equal
load), requests per server CPU-second, handler p99 beside client p99, host and configuration.
Environment: GNUPLOT ($GNUPLOT), PYTHON ($PYTHON), REPORT_OUT (the output file).
Exit status: 0 written, 1 rendering failed, 2 usage (no such batch or no index.json).
USAGE
}

case "${1:-}" in
    -h|--help) usage; exit 0 ;;
    --version) suite_version report.sh; exit 0 ;;
esac
batch_dir=$(batch_dir_arg report.sh "$@") || exit 2
[[ -f "$batch_dir/index.json" ]] || {
    echo "report.sh: $batch_dir/index.json missing (run runner/summarize.sh $batch_dir first)" >&2
    exit 2
}
if ! command -v "$GNUPLOT" >/dev/null; then   # a bundle on a borrowed host, say: tables, no plots
    echo "report.sh: $GNUPLOT not found: report.html has its tables without plots (apt-get install gnuplot-nox for them)" >&2
fi
out=${REPORT_OUT:-$batch_dir/report.html}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/report.XXXXXX")
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT

GNUPLOT="$GNUPLOT" analysis report "$batch_dir" "$WORK" "$out"
echo "report.sh: wrote $out" >&2
