#!/usr/bin/env bash
# vs-nginx.sh: GET /ping on async-server (--threads 1) against nginx (worker_processes 1,
# keep-alive, access_log off, `return 200 "pong"`), each pinned to SERVER_CPU with the
# load generator pinned to LOADGEN_CPU. ROUNDS rounds, each measuring every server once in
# an order rotated per round (drift hits every server alike): a discarded warm-up run,
# then a measured run with the server's CPU (utime+stime from /proc/PID/stat; nginx: the
# worker) sampled at its edges. The metric is requests per server CPU-second, the median
# over the rounds; a ratio is only valid when every server was saturated (CPU >= 90%) in
# every round, otherwise it WARNs. ACTOR=1 adds actor-server.
set -euo pipefail

BUILD=${BUILD:-build}
DURATION=${DURATION:-10}        # measured seconds per round
ROUNDS=${ROUNDS:-3}             # rounds (median reported)
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
Environment: DURATION=$DURATION ROUNDS=$ROUNDS WARMUP=$WARMUP CONNECTIONS=$CONNECTIONS SERVER_CPU=$SERVER_CPU
  LOADGEN_CPU=$LOADGEN_CPU ACTOR=$ACTOR (1 adds actor-server --threads 1 --workers 0)
  NGINX=$NGINX BUILD=$BUILD MIN_CPU_PCT=$MIN_CPU_PCT OUT=$OUT
  LOADGEN=$LOADGEN (auto: $BUILD/loadgen if built, else wrk) PIPELINE=$PIPELINE (loadgen only)
A timed benchmark: run it with nothing else on the machine.
Results: a table on stdout, JSON in OUT. Exit 0, 1 on failure, 2 usage, 3 when a server
was not saturated in some round (the ratio is then not valid).
EOF
}
case "${1:-}" in
-h | --help) usage; exit 0 ;;
"") ;;
*) echo "vs-nginx.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
esac
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "vs-nginx.sh: ROUNDS must be a positive integer" >&2; exit 2; }
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
*) echo "vs-nginx.sh: LOADGEN must be loadgen or wrk, got '$loadgen'" >&2; usage >&2; exit 2 ;;
esac

tmp=$(mktemp -d)
pids=()
# shellcheck disable=SC2317 # invoked by the trap
cleanup() { bench_stop "${pids[@]}"; rm -rf "$tmp"; }
trap cleanup EXIT

tck=$(getconf CLK_TCK)
cpu_ticks() { bench_cpu_ticks "$1"; }
wait_port() { bench_wait_port "$1"; }

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

# measure NAME PID PORT ROUND: warm-up, then the measured run; appends a JSON line to results
measure() {
    local name=$1 pid=$2 port=$3 round=$4 url c0 c1 t0 t1
    url="http://127.0.0.1:$port/ping"
    echo "vs-nginx.sh: round $round/$ROUNDS: $name: warm-up ${WARMUP}s, measuring ${DURATION}s..." >&2
    run_load "$url" "$WARMUP" "$tmp/$name-warm.json"
    c0=$(cpu_ticks "$pid")
    t0=$(date +%s%N)
    run_load "$url" "$DURATION" "$tmp/$name.json"
    c1=$(cpu_ticks "$pid")
    t1=$(date +%s%N)
    jq -c --arg n "$name" --argjson cpu_ticks "$((c1 - c0))" --argjson tck "$tck" \
        --argjson wall_ns "$((t1 - t0))" --argjson round "$round" \
        '{server: $n, round: $round, requests: .requests_completed, elapsed_s: .elapsed_s,
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

loadavg=$(cut -d' ' -f1-3 /proc/loadavg)
busy_before=$(bench_cpu_busy 2 "$SERVER_CPU" "$LOADGEN_CPU") # other work, before we start

# --- the servers, started once (an idle server costs nothing), all on SERVER_CPU ---
declare -A port cpu_pid
run_ours() {
    local name=$1 p pid
    shift
    p=$(bench_free_port)
    taskset -c "$SERVER_CPU" "$BUILD/$name" --threads 1 --port "$p" "$@" \
        2>"$tmp/$name.log" &
    pid=$!
    pids+=("$pid")
    wait_port "$p"
    port[$name]=$p
    cpu_pid[$name]=$pid
}
servers=(async-server)
run_ours async-server
if [ "$ACTOR" = 1 ]; then
    run_ours actor-server --workers 0
    servers+=(actor-server)
fi
p=$(bench_free_port)
bench_nginx_conf "$tmp/nginx" "$p"
taskset -c "$SERVER_CPU" "$NGINX" -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" 2>"$tmp/nginx.log" &
master=$!
pids+=("$master")
wait_port "$p"
port[nginx]=$p
cpu_pid[nginx]=$(bench_nginx_worker "$master")
servers+=(nginx)

ns=${#servers[@]}
for r in $(seq 1 "$ROUNDS"); do
    for i in $(seq 0 $((ns - 1))); do
        s=${servers[$(((i + r - 1) % ns))]} # rotated: each round starts with the next server
        measure "$s" "${cpu_pid[$s]}" "${port[$s]}" "$r"
    done
done

# --- report ---
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="$commit+dirty"; fi
nginx_v=$("$NGINX" -v 2>&1 | sed 's/^nginx version: //')
gcc_v=$(${CC:-cc} --version | head -n1)
mkdir -p "$(dirname "$OUT")"
jq -s --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --arg host "$(hostname)" \
    --argjson cores "$(nproc)" --arg kernel "$(uname -r)" --arg nginx "$nginx_v" \
    --arg cc "$gcc_v" --arg commit "$commit" --arg loadgen "$loadgen" \
    --argjson conns "$CONNECTIONS" --argjson pipe "$PIPELINE" --argjson dur "$DURATION" --argjson warm "$WARMUP" \
    --argjson min "$MIN_CPU_PCT" --arg loadavg "$loadavg" --arg busy "$busy_before" --argjson rounds "$ROUNDS" \
    'def median: sort | if length % 2 == 1 then .[length / 2 | floor]
                        else (.[length / 2 - 1] + .[length / 2]) / 2 end;
     {date: $date, loadavg_before: $loadavg, cpu_busy_before: $busy, host: $host, cores: $cores, kernel: $kernel, nginx: $nginx,
      compiler: $cc, commit: $commit, loadgen: $loadgen, connections: $conns, pipeline: $pipe,
      duration_s: $dur, warmup_s: $warm, rounds: $rounds, min_cpu_pct: $min, runs: .,
      results: (group_by(.server) | map({server: .[0].server,
          rps: (map(.rps) | median), server_cpu_pct: (map(.server_cpu_pct) | median),
          requests_per_cpu_s: (map(.requests_per_cpu_s // 0) | median),
          min_server_cpu_pct: (map(.server_cpu_pct) | min),
          loadgen_cpu_pct: (map(.loadgen_cpu_pct // 0) | median),
          errors: (map(.errors // 0) | add)})),
      saturated: (all(.[]; .server_cpu_pct >= $min))}
     | .ratios = ((.results | map({(.server): .requests_per_cpu_s}) | add) as $m |
          [("async-server", "actor-server") | select($m[.] and $m.nginx) |
           {(.): ($m[.] / $m.nginx)}] | add // {})' "$tmp/results.jsonl" >"$OUT"

echo "vs nginx, GET /ping: $(jq -r '.date' "$OUT")  host $(hostname)  $(nproc) cores  kernel $(uname -r)"
echo "nginx $nginx_v  |  $gcc_v  |  commit $commit  |  load average before: $loadavg  |  busy before start (2 s, nothing of ours running): $busy_before"
echo "load: $loadgen, $CONNECTIONS keep-alive connections, pipeline $PIPELINE, ${WARMUP}s warm-up (discarded) + ${DURATION}s measured;" \
    "servers on CPU $SERVER_CPU, load generator on CPU $LOADGEN_CPU; median of $ROUNDS rounds, order rotated per round"
echo "each round:"
printf '  %-5s %-14s %12s %14s %22s %14s\n' round server "req/s" "server CPU%" "req per server CPU-s" "loadgen CPU%"
jq -r '.runs | sort_by(.round) | .[] | [.round, .server, .rps, .server_cpu_pct, (.requests_per_cpu_s // 0),
        (.loadgen_cpu_pct // "-")] | @tsv' "$OUT" |
    awk -F'\t' '{ printf "  %-5s %-14s %12.0f %13.1f%% %22.0f %14s\n", $1, $2, $3, $4, $5,
                   ($6 == "-" ? "-" : sprintf("%.1f%%", $6)) }'
echo "median:"
printf '  %-20s %12s %14s %22s %14s %7s\n' server "req/s" "server CPU%" "req per server CPU-s" \
    "loadgen CPU%" errors
jq -r '.results[] | [.server, .rps, .server_cpu_pct, .requests_per_cpu_s, .loadgen_cpu_pct, .errors] | @tsv' "$OUT" |
    awk -F'\t' '{ printf "  %-20s %12.0f %13.1f%% %22.0f %13.1f%% %7s\n", $1, $2, $3, $4, $5, $6 }'
status=0
errs=$(jq -r '[.results[] | select(.errors > 0) | "\(.server) (\(.errors))"] | join(" ")' "$OUT")
if [ -n "$errs" ]; then
    echo "WARNING: the load generator counted errors: $errs" >&2
    status=3
fi
low=$(jq -r --argjson min "$MIN_CPU_PCT" \
    '.runs[] | select(.server_cpu_pct < $min) | "\(.server) round \(.round) (\(.server_cpu_pct | floor)%)"' "$OUT")
for s in async-server actor-server; do
    ratio=$(jq -r --arg s "$s" '.ratios[$s] // empty' "$OUT")
    [ -n "$ratio" ] || continue
    if [ -n "$low" ]; then
        printf '%s / nginx, requests per server CPU-second (medians): %.3fx  (NOT VALID, see warning)\n' "$s" "$ratio"
    else
        printf '%s / nginx, requests per server CPU-second (medians): %.3fx\n' "$s" "$ratio"
    fi
done
if [ -n "$low" ]; then
    echo "WARNING: server CPU below $MIN_CPU_PCT% during a measured window: $(echo "$low" | paste -sd' ')." \
        "That server was not saturated, so requests per CPU-second are not comparable and the" \
        "ratio is not a valid result." >&2
    busy_lg=$(jq -r --argjson min "$MIN_CPU_PCT" '[.runs[] | select(.server_cpu_pct < $min)
        | select((.loadgen_cpu_pct // 100) >= $min) | "\(.server) round \(.round)"] | join(", ")' "$OUT")
    if [ -n "$busy_lg" ]; then
        echo "  The load generator (one thread, one CPU) was CPU-bound in: $busy_lg: it cannot" \
            "saturate that server at pipeline $PIPELINE (PIPELINE=8 or more moves the bottleneck," \
            "and changes what is measured)." >&2
    else
        echo "  The load generator was not CPU-bound either: other work on the machine took the" \
            "CPUs (see the load average); re-run when it is idle." >&2
    fi
    status=3
fi
echo "results: $OUT"
exit "$status"
