#!/usr/bin/env bash
# summarize.sh: turns a batch folder's result.json files into index.json (every result, the
# per-scenario decisions and the overall verdict) and summary.md (the same as tables).
# Re-runnable on old batches; reads only results/<batch>/ and never runs a benchmark.
# The work is done by the analysis package (runner/analysis/summary.py, verdict.py, rules.py).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET_RATIO="${TARGET_RATIO:-}"    # default: matrix.json's target_ratio, else 0.5
PYTHON="${PYTHON:-python3}"

# shellcheck source=runner/lib.sh
. "$ROOT/runner/lib.sh"

usage() {
    cat <<USAGE
usage: runner/summarize.sh [--help] [--version] results/<batch>
Writes results/<batch>/index.json and results/<batch>/summary.md from the batch's
*/result.json (and matrix.json when present: the planned runs and settings), applying the
validity rules and the verdict of SPEC.md sections 8 and 9.
Environment: TARGET_RATIO (from matrix.json, else 0.5), PYTHON ($PYTHON).
Exit status: 0 written, 1 a file could not be read or written, 2 usage.
USAGE
}

case "${1:-}" in
    -h|--help) usage; exit 0 ;;
    --version) suite_version summarize.sh; exit 0 ;;
esac
batch_dir=$(batch_dir_arg summarize.sh "$@") || exit 2
if [[ -n "$TARGET_RATIO" ]]; then
    analysis summarize "$batch_dir" "$TARGET_RATIO"
else
    analysis summarize "$batch_dir"
fi
