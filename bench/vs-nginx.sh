#!/usr/bin/env bash
# vs-nginx.sh: GET /ping on async-server (--threads 1) against nginx (worker_processes 1,
# keep-alive, access_log off, `return 200 "pong"`), each pinned to SERVER_CPU with the
# load generator pinned to LOADGEN_CPU; a discarded warm-up run, then a measured run with
# the server's CPU (utime+stime from /proc/PID/stat; nginx: the worker) sampled at its
# edges. The metric is requests per server CPU-second; the ratio is only valid when every
# server was saturated (CPU >= 90%), otherwise it WARNs. ACTOR=1 adds actor-server.
set -euo pipefail

BUILD=${BUILD:-build}
DURATION=${DURATION:-10}        # measured seconds
WARMUP=${WARMUP:-3}             # discarded warm-up seconds (a separate load run)
CONNECTIONS=${CONNECTIONS:-64}  # keep-alive connections
SERVER_CPU=${SERVER_CPU:-0}     # CPU the server under test is pinned to
LOADGEN_CPU=${LOADGEN_CPU:-1}   # CPU the load generator is pinned to
ACTOR=${ACTOR:-0}               # 1: also actor-server --threads 1 --workers 0
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
MIN_CPU_PCT=${MIN_CPU_PCT:-90}  # below this the server was not saturated
LOADGEN=${LOADGEN:-auto}        # auto (build/loadgen if built, else wrk), loadgen or wrk
PIPELINE=${PIPELINE:-1}         # requests in flight per connection (loadgen only)
OUT=${OUT:-$BUILD/bench/vs-nginx-latest.json}

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    cat <<EOF
usage: bench/vs-nginx.sh [--help]
Environment: DURATION=$DURATION WARMUP=$WARMUP CONNECTIONS=$CONNECTIONS SERVER_CPU=$SERVER_CPU
  LOADGEN_CPU=$LOADGEN_CPU ACTOR=$ACTOR (1 adds actor-server --threads 1 --workers 0)
  NGINX=$NGINX BUILD=$BUILD MIN_CPU_PCT=$MIN_CPU_PCT OUT=$OUT
  LOADGEN=$LOADGEN (auto: $BUILD/loadgen if built, else wrk) PIPELINE=$PIPELINE (loadgen only)
Results: a table on stdout, JSON in OUT. Exit 0, 1 on failure, 2 usage, 3 when a server
was not saturated (the ratio is then not valid).
EOF
}
case "${1:-}" in
-h | --help) usage; exit 0 ;;
"") ;;
*) usage >&2; exit 2 ;;
esac
# nginx-light and wrk, installed on demand (no system nginx is started)
"$(dirname "${BASH_SOURCE[0]}")/../scripts/deps.sh" bench

for bin in "$BUILD/async-server" "$NGINX" taskset; do
    command -v "$bin" >/dev/null || { echo "vs-nginx.sh: missing $bin" >&2; exit 1; }
done
if [ "$ACTOR" = 1 ] && [ ! -x "$BUILD/actor-server" ]; then
    echo "vs-nginx.sh: missing $BUILD/actor-server" >&2
    exit 1
fi
loadgen=$LOADGEN
if [ "$loadgen" = auto ]; then
    if [ -x "$BUILD/loadgen" ]; then loadgen=loadgen; else loadgen=wrk; fi
fi
case "$loadgen" in
loadgen) [ -x "$BUILD/loadgen" ] || { echo "vs-nginx.sh: missing $BUILD/loadgen" >&2; exit 1; } ;;
wrk)
    command -v wrk >/dev/null || { echo "vs-nginx.sh: missing wrk" >&2; exit 1; }
    [ "$PIPELINE" = 1 ] || { echo "vs-nginx.sh: PIPELINE needs LOADGEN=loadgen" >&2; exit 2; }
    ;;
*) usage >&2; exit 2 ;;
esac

tmp=$(mktemp -d)
pids=()
# shellcheck disable=SC2317 # invoked by the trap
cleanup() { bench_stop "${pids[@]}"; rm -rf "$tmp"; }
trap cleanup EXIT

tck=$(getconf CLK_TCK)
# utime + stime of a process, in clock ticks (fields 14 and 15 of /proc/PID/stat)
cpu_ticks() {
    local stat
    stat=$(cat "/proc/$1/stat")
    stat=${stat##*) }  # drop "pid (comm) "; comm may contain spaces
    # shellcheck disable=SC2086
    set -- $stat
    echo $((${12} + ${13}))
}
wait_port() {
    for _ in $(seq 1 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
        sleep 0.05
    done
    echo "vs-nginx.sh: nothing listening on port $1" >&2
    return 1
}

# run_load URL SECONDS JSONFILE: one load-generator run pinned to LOADGEN_CPU
run_load() {
    if [ "$loadgen" = loadgen ]; then
        taskset -c "$LOADGEN_CPU" "$BUILD/loadgen" --url "$1" --connections "$CONNECTIONS" \
            --threads 1 --pipeline "$PIPELINE" --duration "$2" --warmup 0 --quiet --json "$3" >&2
    else
        taskset -c "$LOADGEN_CPU" wrk -t1 -c"$CONNECTIONS" -d"$2"s "$1" >"$3.txt"
        # "N requests in 10.00s, ..." -> {requests_completed, elapsed_s}
        awk '/requests in/ { n = $1; e = $4; sub(/s,?$/, "", e);
                print "{\"requests_completed\":" n ",\"elapsed_s\":" e "}" }' "$3.txt" >"$3"
    fi
}

# measure NAME PID PORT: warm-up, then the measured run; appends a JSON line to results
measure() {
    local name=$1 pid=$2 port=$3 url c0 c1 t0 t1
    url="http://127.0.0.1:$port/ping"
    echo "vs-nginx.sh: $name: warm-up ${WARMUP}s, measuring ${DURATION}s..." >&2
    run_load "$url" "$WARMUP" "$tmp/$name-warm.json"
    c0=$(cpu_ticks "$pid")
    t0=$(date +%s%N)
    run_load "$url" "$DURATION" "$tmp/$name.json"
    c1=$(cpu_ticks "$pid")
    t1=$(date +%s%N)
    jq -c --arg n "$name" --argjson cpu_ticks "$((c1 - c0))" --argjson tck "$tck" \
        --argjson wall_ns "$((t1 - t0))" \
        '{server: $n, requests: .requests_completed, elapsed_s: .elapsed_s,
          rps: (.requests_completed / .elapsed_s),
          server_cpu_s: ($cpu_ticks / $tck), window_s: ($wall_ns / 1e9),
          errors: (.errors_total // null),
          loadgen_cpu_pct: (if .loadgen_cpu_s.total then 100 * .loadgen_cpu_s.total / .elapsed_s
                            else null end)}
         | . + {server_cpu_pct: (100 * .server_cpu_s / .window_s),
                requests_per_cpu_s: (if .server_cpu_s > 0 then .requests / .server_cpu_s
                                     else null end)}' \
        "$tmp/$name.json" >>"$tmp/results.jsonl"
}

loadavg=$(cut -d' ' -f1-3 /proc/loadavg) # other work on the machine, before we start

# --- async-server (and actor-server) ---
run_ours() {
    local name=$1
    shift
    local port pid
    port=$(bench_free_port)
    taskset -c "$SERVER_CPU" "$BUILD/$name" --threads 1 --port "$port" "$@" \
        2>"$tmp/$name.log" &
    pid=$!
    pids+=("$pid")
    wait_port "$port"
    measure "$name" "$pid" "$port"
    bench_stop "$pid"
}
run_ours async-server
if [ "$ACTOR" = 1 ]; then
    run_ours actor-server --workers 0
fi

# --- nginx, own prefix ---
port=$(bench_free_port)
mkdir -p "$tmp/nginx/logs"
cat >"$tmp/nginx/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/logs/error.log;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_timeout 65;
    keepalive_requests 100000000; # as our servers: never close a busy keep-alive connection
    client_body_temp_path $tmp/nginx/body;
    proxy_temp_path $tmp/nginx/proxy;
    fastcgi_temp_path $tmp/nginx/fastcgi;
    uwsgi_temp_path $tmp/nginx/uwsgi;
    scgi_temp_path $tmp/nginx/scgi;
    server {
        listen 127.0.0.1:$port;
        location = /ping { return 200 "pong"; }
    }
}
EOF
taskset -c "$SERVER_CPU" "$NGINX" -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" 2>"$tmp/nginx.log" &
master=$!
pids+=("$master")
wait_port "$port"
worker=""
for _ in $(seq 1 50); do
    worker=$(ps -o pid= --ppid "$master" | tr -d ' ' | head -n1)
    [ -n "$worker" ] && break
    sleep 0.05
done
[ -n "$worker" ] || { echo "vs-nginx.sh: no nginx worker under pid $master" >&2; exit 1; }
measure nginx "$worker" "$port"
bench_stop "$master"

# --- report ---
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
nginx_v=$("$NGINX" -v 2>&1 | sed 's/^nginx version: //')
gcc_v=$(${CC:-cc} --version | head -n1)
mkdir -p "$(dirname "$OUT")"
jq -s --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --arg host "$(hostname)" \
    --argjson cores "$(nproc)" --arg kernel "$(uname -r)" --arg nginx "$nginx_v" \
    --arg cc "$gcc_v" --arg commit "$commit" --arg loadgen "$loadgen" \
    --argjson conns "$CONNECTIONS" --argjson pipe "$PIPELINE" --argjson dur "$DURATION" --argjson warm "$WARMUP" \
    --argjson min "$MIN_CPU_PCT" --arg loadavg "$loadavg" \
    '{date: $date, loadavg_before: $loadavg, host: $host, cores: $cores, kernel: $kernel, nginx: $nginx,
      compiler: $cc, commit: $commit, loadgen: $loadgen, connections: $conns, pipeline: $pipe,
      duration_s: $dur, warmup_s: $warm, min_cpu_pct: $min, results: .,
      saturated: (all(.[]; .server_cpu_pct >= $min))}' "$tmp/results.jsonl" >"$OUT"

echo "vs nginx, GET /ping: $(jq -r '.date' "$OUT")  host $(hostname)  $(nproc) cores  kernel $(uname -r)"
echo "nginx $nginx_v  |  $gcc_v  |  commit $commit  |  load average before: $loadavg"
echo "load: $loadgen, $CONNECTIONS keep-alive connections, pipeline $PIPELINE, ${WARMUP}s warm-up (discarded) + ${DURATION}s measured;" \
    "servers on CPU $SERVER_CPU, load generator on CPU $LOADGEN_CPU"
printf '%-14s %12s %14s %22s %14s %7s\n' server "req/s" "server CPU%" "req per server CPU-s" \
    "loadgen CPU%" errors
jq -r '.results[] | [.server, .rps, .server_cpu_pct, (.requests_per_cpu_s // 0),
        (.loadgen_cpu_pct // "-"), (.errors // "-")] | @tsv' "$OUT" |
    awk -F'\t' '{ printf "%-14s %12.0f %13.1f%% %22.0f %14s %7s\n", $1, $2, $3, $4,
                   ($5 == "-" ? "-" : sprintf("%.1f%%", $5)), $6 }'
status=0
errs=$(jq -r '[.results[] | select((.errors // 0) > 0) | "\(.server) (\(.errors))"] | join(" ")' "$OUT")
if [ -n "$errs" ]; then
    echo "WARNING: the load generator counted errors: $errs" >&2
    status=3
fi
low=$(jq -r --argjson min "$MIN_CPU_PCT" \
    '.results[] | select(.server_cpu_pct < $min) | "\(.server) (\(.server_cpu_pct | floor)%)"' "$OUT")
for s in async-server actor-server; do
    ratio=$(jq -r --arg s "$s" '[.results[] | {(.server): .requests_per_cpu_s}] | add |
        if .[$s] and .nginx then .[$s] / .nginx else empty end' "$OUT")
    [ -n "$ratio" ] || continue
    if [ -n "$low" ]; then
        printf '%s / nginx, requests per server CPU-second: %.2fx  (NOT VALID, see warning)\n' "$s" "$ratio"
    else
        printf '%s / nginx, requests per server CPU-second: %.2fx\n' "$s" "$ratio"
    fi
done
if [ -n "$low" ]; then
    echo "WARNING: server CPU below $MIN_CPU_PCT% during the measured window: $(echo "$low" | paste -sd' ')." \
        "That server was not saturated, so requests per CPU-second are not comparable and the" \
        "ratio is not a valid result." >&2
    busy_lg=$(jq -r --argjson min "$MIN_CPU_PCT" '[.results[] | select((.loadgen_cpu_pct // 100) >= $min)
        | .server] | join(" ")' "$OUT")
    if [ -n "$busy_lg" ]; then
        echo "  The load generator was CPU-bound against: $busy_lg (try PIPELINE=8 or more)." >&2
    else
        echo "  The load generator was not CPU-bound either: other work on the machine took the" \
            "CPUs (see the load average); re-run when it is idle." >&2
    fi
    status=3
fi
echo "results: $OUT"
exit "$status"
