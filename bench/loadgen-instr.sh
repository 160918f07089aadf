#!/usr/bin/env bash
# loadgen-instr.sh: the load generator's own instructions per request under callgrind:
# build/loadgen (1 thread) against build/async-server (1 loop, memory store, GET /ping) for
# DURATION seconds; instructions per request = the Ir of the worker threads (callgrind
# --separate-threads; main's start-up, progress and report left out) / requests
# completed. With one connection (the default) every wake-up handles one response, so the
# closed-loop count repeats within 0.2% even on a busy host; with more connections, and at
# a constant rate, it depends on how many responses a wake-up finds (timing). One row per
# I/O back-end in IO and mode: closed loop, and constant rate at RATE req/s (on epoll: io_uv
# and the tick loop). Server and generator pinned to different CPUs. Prints JSON lines.
set -euo pipefail

LOADGEN="${LOADGEN:-build/loadgen}"
ASYNC_SERVER="${ASYNC_SERVER:-build/async-server}"
CONNECTIONS="${CONNECTIONS:-1}"
DURATION="${DURATION:-3}"       # seconds of each run
RATE="${RATE:-2000}"            # req/s of the constant-rate rows
IO="${IO:-epoll}"               # I/O back-ends, space-separated: epoll and/or uring
LOADGEN_CPU="${LOADGEN_CPU:-1}"
SERVER_CPU="${SERVER_CPU:-0}"
COMMIT="${COMMIT:-}"            # the commit LOADGEN was built from (default: its tree's HEAD)

usage() {
    cat <<USAGE
usage: bench/loadgen-instr.sh [--help]
The load generator's instructions per completed request (callgrind, its worker threads),
closed loop and constant rate. Prints JSON lines.
Environment: LOADGEN ($LOADGEN), ASYNC_SERVER ($ASYNC_SERVER), CONNECTIONS ($CONNECTIONS),
DURATION ($DURATION s), RATE ($RATE req/s), IO ($IO), LOADGEN_CPU ($LOADGEN_CPU),
SERVER_CPU ($SERVER_CPU), COMMIT.
USAGE
}
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_help_only "$@"
command -v valgrind >/dev/null || { echo "loadgen-instr.sh: needs valgrind" >&2; exit 1; }

TMP=$(mktemp -d)
SERVER_PID=""
cleanup() {
    if [[ -n "$SERVER_PID" ]]; then bench_stop "$SERVER_PID"; fi
    rm -rf "$TMP"
}
trap cleanup EXIT

PORT=$(bench_free_port)
taskset -c "$SERVER_CPU" "$ASYNC_SERVER" --store=memory --host 127.0.0.1 --port "$PORT" \
    --threads 1 >"$TMP/server.log" 2>&1 &
SERVER_PID=$!
bench_wait_port "$PORT"

# ir_run ARGS...: prints "Ir completed": the Ir of the worker threads of one loadgen run
# under callgrind (thread 1, main, left out) and its completed requests
ir_run() {
    local ir=0 completed f n
    rm -f "$TMP"/cg.out*
    taskset -c "$LOADGEN_CPU" valgrind --tool=callgrind --separate-threads=yes \
        --callgrind-out-file="$TMP/cg.out" \
        "$LOADGEN" --url "http://127.0.0.1:$PORT/ping" --connections "$CONNECTIONS" \
        --duration "$DURATION" --quiet --json "$TMP/run.json" "$@" >"$TMP/vg.log" 2>&1 || {
        echo "loadgen-instr.sh: loadgen failed: $(tail -n 3 "$TMP/vg.log")" >&2
        return 1
    }
    for f in "$TMP"/cg.out-*; do
        [[ "$f" == *-01 ]] && continue
        # "summary: N" (valgrind 3.19) or "totals: N"
        n=$(sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' "$f" | head -n1)
        ir=$((ir + n))
    done
    completed=$(jq -r .requests_completed "$TMP/run.json")
    echo "$ir $completed"
}

commit="${COMMIT:-$(git -C "$(dirname "$LOADGEN")/.." rev-parse --short HEAD 2>/dev/null ||
    echo unknown)}"
for io in $IO; do
    for mode in closed rate; do
        args=(--io "$io")
        [[ "$mode" == rate ]] && args+=(--rate "$RATE")
        read -r ir n < <(ir_run "${args[@]}")
        jq -nc --arg io "$io" --arg mode "$mode" --argjson ir "$ir" --argjson n "$n" \
            --arg commit "$commit" --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
            --arg host "$(hostname)" --argjson conns "$CONNECTIONS" --argjson rate "$RATE" \
            --argjson secs "$DURATION" \
            '{date: $date, host: $host, commit: $commit, io: $io, mode: $mode,
              connections: $conns, rate: (if $mode == "rate" then $rate else null end),
              duration_s: $secs, worker_ir: $ir, completed: $n,
              instr_per_req: (($ir / $n) * 10 | round / 10)}'
    done
done
