#!/usr/bin/env bash
# contention.sh: runs build/bench/contention (mutex vs store actor at T client threads,
# ops/s and p50/p99 per operation, then ns per hop) and, unless --no-callgrind, counts
# the instructions of one hop of each kind under callgrind (HOP_ITERS hops, collection
# limited to the hop loop, total Ir / HOP_ITERS). Prints a header with date, host, CPUs
# and commit. Timings need the machine to themselves; callgrind counts do not.
set -euo pipefail

BUILD=${BUILD:-build}
HOP_ITERS=${HOP_ITERS:-200000}       # hops per callgrind measurement
CONTENTION_ARGS=${CONTENTION_ARGS:-} # extra arguments for the binary (see its --help)

usage() {
    cat <<EOF
usage: bench/contention.sh [--no-callgrind | --callgrind-only] [-- BINARY-ARGS...]
  --no-callgrind    only the timed part (ops/s, latencies, ns per hop)
  --callgrind-only  only the instructions per hop (callgrind; not timed)
  BINARY-ARGS       passed to $BUILD/bench/contention (--threads, --seconds, --store, ...)
Environment: BUILD=$BUILD HOP_ITERS=$HOP_ITERS CONTENTION_ARGS=$CONTENTION_ARGS
EOF
}

timed=1
callgrind=1
args=()
while [ $# -gt 0 ]; do
    case "$1" in
    --no-callgrind) callgrind=0; shift ;;
    --callgrind-only) timed=0; shift ;;
    --) shift; args+=("$@"); break ;;
    -h | --help) usage; exit 0 ;;
    *) echo "contention.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
if [ "$timed" = 0 ] && [ "$callgrind" = 0 ]; then
    echo "contention.sh: --no-callgrind and --callgrind-only leave nothing to do" >&2
    exit 2
fi
if ! [[ $HOP_ITERS =~ ^[1-9][0-9]*$ ]]; then
    echo "contention.sh: HOP_ITERS must be a positive integer, got '$HOP_ITERS'" >&2
    exit 2
fi
if [ -n "$CONTENTION_ARGS" ]; then
    read -r -a extra <<<"$CONTENTION_ARGS"
    args+=("${extra[@]}")
fi

bin=$BUILD/bench/contention
if [ ! -x "$bin" ]; then
    make --no-print-directory "$bin" >&2
fi
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git diff --quiet HEAD -- actor-server bench/contention.c common 2>/dev/null; then
    commit="$commit+dirty"
fi
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) host $(hostname) $(nproc) CPUs commit $commit" \
    "load $(cut -d' ' -f1-3 /proc/loadavg)"

if [ "$timed" = 1 ]; then
    "$bin" "${args[@]}"
fi
if [ "$callgrind" = 1 ]; then
    command -v valgrind >/dev/null || { echo "contention.sh: needs valgrind" >&2; exit 1; }
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    echo "# instructions per hop (callgrind, $HOP_ITERS hops, hop loop only)"
    for kind in mailbox remote local; do
        valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$tmp/$kind.out" \
            "$bin" --hop-only "$kind" --hop-iters "$HOP_ITERS" >/dev/null 2>"$tmp/$kind.err" || {
            cat "$tmp/$kind.err" >&2
            exit 1
        }
        ir=$(awk '/^(summary|totals):/ { print $2; exit }' "$tmp/$kind.out")
        [ -n "$ir" ] || { echo "contention.sh: no totals in the callgrind output" >&2; exit 1; }
        awk -v k="$kind" -v ir="$ir" -v n="$HOP_ITERS" \
            'BEGIN { printf "instr %s %.1f instructions/hop\n", k, ir / n }'
    done
fi
