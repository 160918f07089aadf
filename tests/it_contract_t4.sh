#!/usr/bin/env bash
# it_contract_t4.sh: the contract suite (it_contract.py), unchanged, at --threads 4 against
# both servers: async-server, actor-server with --workers 2 (every hop crosses threads)
# and actor-server with --workers 0 (loops 1-3 hop to the store on loop 0). Real
# parallelism on a multi-core host, time-slicing on a small one (issue 16).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
THREADS=${THREADS_PARALLEL:-4}
# On a ThreadSanitizer build (make check-tsan) the first race kills the server, so the
# checks after it fail instead of a warning going unread in a log.
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1}

usage() {
    echo "usage: tests/it_contract_t4.sh   (env: BUILD=$BUILD THREADS_PARALLEL=$THREADS)"
}
[ $# -eq 0 ] || { usage; [ "$1" = -h ] || [ "$1" = --help ] && exit 0; exit 2; }

rc=0
n=0
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for cfg in "async-server:" "actor-server:--workers 2" "actor-server:--workers 0"; do
    server=$BUILD/${cfg%%:*}
    args=${cfg#*:}
    if [ ! -x "$server" ]; then
        n=$((n + 1))
        echo "ok $n - [t$THREADS ${cfg%%:*} $args] # SKIP $server not built"
        continue
    fi
    echo "# contract suite: $server --threads $THREADS $args"
    SERVER=$server THREADS=$THREADS SERVER_ARGS=$args tests/it_contract.py >"$tmp" || rc=1
    # one plan for the whole stream: each result renumbered, labelled with its server
    while IFS= read -r line; do
        if [[ $line =~ ^(not\ ok|ok)\ [0-9]+(\ -\ )?(.*)$ ]]; then
            n=$((n + 1))
            echo "${BASH_REMATCH[1]} $n - [t$THREADS ${cfg%%:*} $args] ${BASH_REMATCH[3]}"
        elif [[ ! $line =~ ^1\.\.[0-9]+ ]]; then
            echo "$line"
        fi
    done <"$tmp"
done
echo "1..$n"
exit "$rc"
