#!/usr/bin/env bash
# loadgen-vs-wrk.sh: requests per load-generator CPU-second, build/loadgen vs wrk, closed
# loop, GET /ping, same connections, one thread each pinned to LOADGEN_CPU, against one
# server pinned to SERVER_CPU (nginx, one worker, `return 200 "pong"`, in its own temp
# prefix, or build/async-server with SERVER=async). CPU is user+sys of the whole
# generator process (GNU time). A benchmark, not a test: prints a report on stdout.
set -euo pipefail

CONNECTIONS="${CONNECTIONS:-64}"
DURATION="${DURATION:-10}"          # seconds per run
REPEAT="${REPEAT:-3}"               # runs per tool, interleaved; the median ratio is reported
SERVER="${SERVER:-nginx}"           # nginx | async
LOADGEN_CPU="${LOADGEN_CPU:-1}"
SERVER_CPU="${SERVER_CPU:-0}"
LOADGEN="${LOADGEN:-build/loadgen}"
ASYNC_SERVER="${ASYNC_SERVER:-build/async-server}"
WRK="${WRK:-wrk}"

usage() {
    cat <<USAGE
usage: bench/loadgen-vs-wrk.sh [--help]
Compares requests per CPU-second of loadgen and wrk (GET /ping, closed loop, 1 thread).
Environment: CONNECTIONS ($CONNECTIONS), DURATION ($DURATION s), REPEAT ($REPEAT),
SERVER ($SERVER: nginx|async), LOADGEN_CPU ($LOADGEN_CPU), SERVER_CPU ($SERVER_CPU),
LOADGEN ($LOADGEN), ASYNC_SERVER ($ASYNC_SERVER), WRK ($WRK).
USAGE
}
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_help_only "$@"

cd "$(dirname "$0")/.."
TMP=$(mktemp -d)
SERVER_PID=""
cleanup() {
    if [[ -n "$SERVER_PID" ]]; then bench_stop "$SERVER_PID"; fi
    rm -rf "$TMP"
}
trap cleanup EXIT

PORT=$(bench_free_port)
if [[ "$SERVER" == nginx ]]; then
    mkdir -p "$TMP/logs"
    cat >"$TMP/nginx.conf" <<NGINX
worker_processes 1;
daemon off;
master_process off;
pid $TMP/nginx.pid;
error_log $TMP/logs/error.log;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $TMP/body; proxy_temp_path $TMP/proxy;
    fastcgi_temp_path $TMP/fcgi; uwsgi_temp_path $TMP/uwsgi; scgi_temp_path $TMP/scgi;
    keepalive_requests 1000000000;
    server { listen 127.0.0.1:$PORT; location / { return 200 "pong"; } }
}
NGINX
    taskset -c "$SERVER_CPU" nginx -p "$TMP" -c "$TMP/nginx.conf" 2>"$TMP/server.log" &
    SERVER_PID=$!
    server_version=$(nginx -v 2>&1)
else
    taskset -c "$SERVER_CPU" "$ASYNC_SERVER" --store=memory --host 127.0.0.1 --port "$PORT" \
        --threads 1 --seed-users 10000 >"$TMP/server.log" 2>&1 &
    SERVER_PID=$!
    server_version="async-server $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
fi
for _ in $(seq 100); do
    curl -s -m 1 "http://127.0.0.1:$PORT/ping" >/dev/null 2>&1 && break
    sleep 0.05
done
URL="http://127.0.0.1:$PORT"

run_wrk() { # prints "requests cpu_s"
    taskset -c "$LOADGEN_CPU" /usr/bin/time -o "$TMP/time" -f '%U %S' \
        "$WRK" -t1 -c"$CONNECTIONS" -d"${DURATION}s" "$URL/ping" >"$TMP/wrk.out" 2>&1
    local req
    req=$(awk '/requests in/ { print $1 }' "$TMP/wrk.out")
    awk -v r="$req" '{ print r, $1 + $2 }' "$TMP/time"
}
run_loadgen() {
    taskset -c "$LOADGEN_CPU" /usr/bin/time -o "$TMP/time" -f '%U %S' \
        "$LOADGEN" --url "$URL" --connections "$CONNECTIONS" --threads 1 \
        --duration "$DURATION" --quiet --json "$TMP/lg.json"
    local req
    req=$(jq -r '.requests_completed' "$TMP/lg.json")
    awk -v r="$req" '{ print r, $1 + $2 }' "$TMP/time"
}

echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  host: $(hostname)  cores: $(nproc)"
echo "loadgen: $(git rev-parse --short HEAD 2>/dev/null || echo '?')  wrk: $("$WRK" -v 2>&1 | head -1 | awk '{print $1, $2}')  server: $server_version"
echo "GET /ping, closed loop, 1 thread, $CONNECTIONS connections, ${DURATION}s per run; generator on CPU $LOADGEN_CPU, server on CPU $SERVER_CPU"
printf '%-4s %-8s %12s %10s %14s\n' run tool requests cpu_s req_per_cpu_s
ratios=()
for i in $(seq "$REPEAT"); do
    read -r wr wc < <(run_wrk)
    read -r lr lc < <(run_loadgen)
    wrate=$(awk -v r="$wr" -v c="$wc" 'BEGIN { printf "%.0f", r / c }')
    lrate=$(awk -v r="$lr" -v c="$lc" 'BEGIN { printf "%.0f", r / c }')
    printf '%-4s %-8s %12s %10s %14s\n' "$i" wrk "$wr" "$wc" "$wrate"
    printf '%-4s %-8s %12s %10s %14s\n' "$i" loadgen "$lr" "$lc" "$lrate"
    ratios+=("$(awk -v a="$lrate" -v b="$wrate" 'BEGIN { printf "%.3f", a / b }')")
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
echo "ratio loadgen/wrk (req per CPU-second), per run: ${ratios[*]}; median: $median"
