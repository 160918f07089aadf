#!/usr/bin/env bash
# idle-conns.sh: memory of a server holding N idle keep-alive connections. Starts the
# server (--threads = CPUs, --max-conns above N), records its RSS, opens N connections
# with bench/idle_client.py (each answers one GET /ping first), then reads VmRSS and
# VmHWM from /proc/PID/status, checks that /ping still answers on a fresh connection,
# and compares the peak with TARGET_MB. SERVER is async-server, actor-server or both.
set -euo pipefail

BUILD=${BUILD:-build}
THREADS=${THREADS:-$(nproc)}   # server --threads
TARGET_MB=${TARGET_MB:-128}    # VmHWM target with N idle connections
SETTLE_S=${SETTLE_S:-1}        # wait after the last connection before reading memory
OUT=${OUT:-$BUILD/bench/idle-conns-latest.json}

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    cat <<EOF
usage: bench/idle-conns.sh SERVER [N]
  SERVER  async-server, actor-server or both
  N       idle keep-alive connections (default 10000)
Environment: BUILD=$BUILD THREADS=$THREADS TARGET_MB=$TARGET_MB SETTLE_S=$SETTLE_S OUT=$OUT
Exit 0 when every server stayed within TARGET_MB and answered /ping, 1 otherwise, 2 usage.
EOF
}
if [ $# -lt 1 ] || [ $# -gt 2 ]; then echo "idle-conns.sh: expected SERVER [N], got $# arguments" >&2; usage >&2; exit 2; fi
case "$1" in
-h | --help) usage; exit 0 ;;
async-server | actor-server) servers=("$1") ;;
both) servers=(async-server actor-server) ;;
*) echo "idle-conns.sh: unknown server '$1'" >&2; usage >&2; exit 2 ;;
esac
n=${2:-10000}
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "idle-conns.sh: N must be a positive integer, got '$n'" >&2; usage >&2; exit 2; }

# The client needs N sockets; the server N plus its own.
need=$((n + 256))
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$need" ]; then
    ulimit -n "$need" 2>/dev/null || ulimit -n "$(ulimit -Hn)"
fi
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$need" ]; then
    echo "idle-conns.sh: open-file limit $(ulimit -n) < $need (raise the hard limit)" >&2
    exit 1
fi

here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
pids=()
# shellcheck disable=SC2317 # invoked by the trap
cleanup() { bench_stop "${pids[@]}"; rm -rf "$tmp"; }
trap cleanup EXIT

status_kb() { sed -n "s/^$2:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$1/status"; }

run_one() {
    local name=$1 pid port client rss0 hwm rss ok failed ping closed line
    "$BUILD/$name" --threads "$THREADS" --port 0 --max-conns $((n + 128)) 2>"$tmp/$name.log" &
    pid=$!
    pids+=("$pid")
    port=""
    for _ in $(seq 1 100); do
        port=$(sed -n 's/.*listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$tmp/$name.log")
        [ -n "$port" ] && break
        sleep 0.05
    done
    [ -n "$port" ] || { echo "idle-conns.sh: $name did not start" >&2; cat "$tmp/$name.log" >&2; return 1; }
    rss0=$(status_kb "$pid" VmRSS)

    echo "idle-conns.sh: $name: opening $n connections..." >&2
    python3 "$here/idle_client.py" --port "$port" --count "$n" >"$tmp/client.out" &
    client=$!
    pids+=("$client")
    line=""
    for _ in $(seq 1 1200); do
        line=$(grep '^ready' "$tmp/client.out" || true)
        [ -n "$line" ] && break
        kill -0 "$client" 2>/dev/null || break
        sleep 0.1
    done
    [ -n "$line" ] || { echo "idle-conns.sh: client did not get ready" >&2; return 1; }
    read -r _ ok failed <<<"$line"
    sleep "$SETTLE_S"
    hwm=$(status_kb "$pid" VmHWM)
    rss=$(status_kb "$pid" VmRSS)
    if ping=$(curl -s -m 5 "http://127.0.0.1:$port/ping"); then :; else ping="(no answer)"; fi
    kill "$client"
    wait "$client" || true
    closed=$(sed -n 's/^closed_by_server //p' "$tmp/client.out")
    kill "$pid"
    wait "$pid" || true

    jq -n -c --arg s "$name" --argjson n "$n" --argjson ok "$ok" --argjson failed "$failed" \
        --argjson closed "${closed:-0}" --argjson rss0 "$rss0" --argjson rss "$rss" \
        --argjson hwm "$hwm" --arg ping "$ping" --argjson target "$TARGET_MB" \
        --argjson threads "$THREADS" \
        '{server: $s, threads: $threads, connections_requested: $n, connections_open: $ok,
          connections_failed: $failed, closed_by_server_while_idle: $closed,
          rss_before_kb: $rss0, vmrss_kb: $rss, vmhwm_kb: $hwm,
          per_connection_bytes: (if $ok > 0 then (($rss - $rss0) * 1024 / $ok | floor) else null end),
          ping_still_answers: ($ping == "pong"), target_mb: $target,
          within_target: ($hwm <= $target * 1024)}' >>"$tmp/results.jsonl"
}

for s in "${servers[@]}"; do
    run_one "$s"
done

mkdir -p "$(dirname "$OUT")"
jq -s --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --arg host "$(hostname)" \
    --argjson cores "$(nproc)" --arg kernel "$(uname -r)" \
    --arg commit "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
    '{date: $date, host: $host, cores: $cores, kernel: $kernel, commit: $commit,
      results: .}' "$tmp/results.jsonl" >"$OUT"

echo "idle keep-alive connections: $(jq -r .date "$OUT")  host $(hostname)  $(nproc) cores  kernel $(uname -r)  commit $(jq -r .commit "$OUT")"
printf '%-13s %8s %7s %10s %10s %10s %10s %6s %s\n' server open failed "RSS before" VmRSS VmHWM \
    "per conn" "/ping" "target"
jq -r '.results[] | [.server, .connections_open, .connections_failed + .closed_by_server_while_idle,
        .rss_before_kb, .vmrss_kb, .vmhwm_kb, (.per_connection_bytes // 0),
        (if .ping_still_answers then "ok" else "FAIL" end),
        (if .within_target then "<= \(.target_mb) MB: ok" else "> \(.target_mb) MB: OVER" end)] | @tsv' "$OUT" |
    awk -F'\t' '{ printf "%-13s %8d %7d %7.1f MB %7.1f MB %7.1f MB %8d B %6s %s\n",
                  $1, $2, $3, $4 / 1024, $5 / 1024, $6 / 1024, $7, $8, $9 }'
echo "results: $OUT"
jq -e '[.results[] | .within_target and .ping_still_answers and
        .connections_failed == 0 and .closed_by_server_while_idle == 0] | all' "$OUT" >/dev/null
