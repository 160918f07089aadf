#!/usr/bin/env bash
# it_contract_actor.sh: the same contract suite (it_contract.py), unchanged, against the actor server.
set -euo pipefail; cd "$(dirname "$0")/.."; SERVER="${ACTOR_SERVER:-${BUILD:-build}/actor-server}"
if [[ -x "$SERVER" ]] && "$SERVER" --help >/dev/null 2>&1; then SERVER="$SERVER" exec tests/it_contract.py "$@"; else echo "1..0 # SKIP actor-server not built"; fi
