#!/usr/bin/env bash
# campaign.sh: the many-core campaign in one command (docs/many-cores.md): prints the host's
# topology and the CPU plan, then runs, within a time budget (9 minutes, aiming at 7), the
# batch that answers the many-core question (actor-mem against async-mem on s1-s3 at the
# plan's largest server size and at 1, 2 and 4 server CPUs, the load generator on cores of
# its own), and writes at most 8 files under OUT, the headline last. The plan, the durations
# and the estimate are runner/analysis/campaign.py's; this wrapper finds the interpreter
# (and, in an unpacked bundle, the bundle's tools: runner/lib.sh) and hands over.
# Works from a checkout (after make) and from an unpacked bundle (make bundle).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=runner/lib.sh
. "$ROOT/runner/lib.sh"

usage() {
    analysis campaign --help
}

case "${1:-}" in
    -h|--help) usage; exit 0 ;;
esac
analysis_python_find || { echo "campaign.sh: needs python3 (3.9 or later)" >&2; exit 1; }
# exec: a signal to this process reaches the campaign, which ends its run_all.sh by pid
PYTHONPATH="$ANALYSIS_DIR${PYTHONPATH:+:$PYTHONPATH}" exec "$ANALYSIS_PYTHON" -S -m analysis campaign "$@"
