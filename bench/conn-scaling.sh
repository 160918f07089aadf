#!/usr/bin/env bash
# conn-scaling.sh: requests per server CPU-second on GET /ping of nginx, async-server and
# actor-server at several keep-alive connection counts (default 64 256 1024 4096), on one
# host in one run: every server pinned to SERVER_CPU with one thread / one worker, the load
# generator (build/loadgen, closed loop, one thread) on LOADGEN_CPU. For each connection
# count, ROUNDS rounds with the server order rotated each round, so drift hits every
# server alike; the figure is the median of the rounds. Closed loop (the default): a
# figure is valid only when in every round the server was saturated (CPU >= MIN_CPU_PCT)
# and the load generator was not (CPU < MAX_LOADGEN_PCT) and counted no errors. RATE=R:
# every server gets the same offered load, R req/s at a constant rate spread over all the
# connections (the load generator's CPU per request at a constant rate is what it is in
# closed loop, so a host whose one load-generator CPU cannot saturate a server can still
# compare servers at equal load); valid when in every round the rate was held (at least
# 99% of R), the load generator was below MAX_LOADGEN_PCT and sent on time (send lag p99
# <= 1 ms, unless more than 1% of requests waited for a free connection, i.e. the server
# held them), with no errors and every connection open.
set -euo pipefail

BUILD=${BUILD:-build}
CONNS=${CONNS:-64 256 1024 4096}  # keep-alive connection counts
ROUNDS=${ROUNDS:-3}               # rounds per connection count (median reported)
DURATION=${DURATION:-5}           # measured seconds per run
WARMUP=${WARMUP:-2}               # seconds of load before measuring (connections open)
SERVERS=${SERVERS:-nginx async-server actor-server}
SERVER_CPU=${SERVER_CPU:-0}
LOADGEN_CPU=${LOADGEN_CPU:-1}
MIN_CPU_PCT=${MIN_CPU_PCT:-90}    # server below this: not saturated, figure not valid
MAX_LOADGEN_PCT=${MAX_LOADGEN_PCT:-90} # load generator at or above this: it may be the limit
RATE=${RATE:-}                    # empty: closed loop; R: constant rate, R req/s for every server
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
OUT=${OUT:-$BUILD/bench/conn-scaling-latest.json}

here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

usage() {
    cat <<EOF
usage: bench/conn-scaling.sh [--help]
Environment: CONNS="$CONNS" ROUNDS=$ROUNDS DURATION=$DURATION WARMUP=$WARMUP
  RATE=${RATE:-(closed loop)} (req/s: every server at the same constant rate)
  SERVERS="$SERVERS" SERVER_CPU=$SERVER_CPU LOADGEN_CPU=$LOADGEN_CPU
  MIN_CPU_PCT=$MIN_CPU_PCT MAX_LOADGEN_PCT=$MAX_LOADGEN_PCT NGINX=$NGINX BUILD=$BUILD OUT=$OUT
A timed benchmark: run it with nothing else on the machine.
Raises the open-file limit to the hard limit (it needs more than the largest CONNS).
Results: a table on stdout, JSON in OUT. Exit 0 when every figure is valid, 3 when some
is not (the table says which and why), 1 on failure, 2 usage.
EOF
}
bench_help_only "$@"
# nginx-light and wrk, installed on demand (no system nginx is started)
"$here/../scripts/deps.sh" bench

for c in $CONNS $ROUNDS $DURATION $WARMUP ${RATE:+"$RATE"}; do
    [[ $c =~ ^[1-9][0-9]*$ ]] || { echo "conn-scaling.sh: '$c' is not a positive integer" >&2; exit 2; }
done
for s in $SERVERS; do
    case "$s" in
    nginx) [ -x "$NGINX" ] || { echo "conn-scaling.sh: missing $NGINX (apt-get install nginx-light)" >&2; exit 1; } ;;
    async-server | actor-server) [ -x "$BUILD/$s" ] || { echo "conn-scaling.sh: missing $BUILD/$s (make)" >&2; exit 1; } ;;
    *) echo "conn-scaling.sh: unknown server '$s'" >&2; exit 2 ;;
    esac
done
for tool in "$BUILD/loadgen" taskset jq; do
    command -v "$tool" >/dev/null || { echo "conn-scaling.sh: missing $tool" >&2; exit 1; }
done

max_conns=0
for c in $CONNS; do [ "$c" -le "$max_conns" ] || max_conns=$c; done
need=$((max_conns + 256))
hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -lt "$need" ]; then
    echo "conn-scaling.sh: the open-file hard limit ($hard) is below $need; raise it (limits.conf) or lower CONNS" >&2
    exit 1
fi
ulimit -n "$hard"

tmp=$(mktemp -d)
pids=()
# shellcheck disable=SC2317 # invoked by the trap
cleanup() { bench_stop "${pids[@]}"; rm -rf "$tmp"; }
trap cleanup EXIT

# --- the servers: started once, idle between runs (an idle server costs nothing) ---
declare -A port cpu_pid
start_server() {
    local s=$1 p pid
    p=$(bench_free_port)
    case "$s" in
    nginx)
        bench_nginx_conf "$tmp/nginx" "$p" $((max_conns + 1024))
        taskset -c "$SERVER_CPU" "$NGINX" -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" \
            2>"$tmp/nginx.log" &
        pid=$!
        pids+=("$pid")
        bench_wait_port "$p"
        cpu_pid[$s]=$(bench_nginx_worker "$pid")
        ;;
    async-server | actor-server)
        local extra=()
        [ "$s" = async-server ] || extra=(--workers 0)
        taskset -c "$SERVER_CPU" "$BUILD/$s" --threads 1 --port "$p" \
            --max-conns $((max_conns + 1024)) "${extra[@]}" 2>"$tmp/$s.log" &
        pid=$!
        pids+=("$pid")
        bench_wait_port "$p"
        cpu_pid[$s]=$pid
        ;;
    esac
    port[$s]=$p
}
for s in $SERVERS; do start_server "$s"; done

# /proc/stat's cpuN line: busy and total jiffies of the server's CPU (other load shows here)
cpu_line() { awk -v c="cpu$SERVER_CPU" '$1 == c { b = $2 + $3 + $4 + $7 + $8 + $9; print b, b + $5 + $6 }' /proc/stat; }

# measure SERVER CONNS ROUND: one loadgen run; appends a JSON line to results.jsonl
measure() {
    local s=$1 c=$2 r=$3 lg=$tmp/lg.json c0 c1 t0 t1 s0 s1 lgpid
    rm -f "$lg"
    taskset -c "$LOADGEN_CPU" "$BUILD/loadgen" --url "http://127.0.0.1:${port[$s]}/ping" \
        --connections "$c" --threads 1 --warmup "$WARMUP" --duration "$DURATION" \
        --rate "${RATE:-0}" --quiet --json "$lg" 2>"$tmp/lg.err" &
    lgpid=$!
    # The server's CPU over (about) the load generator's measured window: after the
    # warm-up (connections open) until its end, before the connections close.
    sleep "$WARMUP"
    c0=$(bench_cpu_ticks "${cpu_pid[$s]}")
    s0=$(cpu_line)
    t0=$(date +%s%N)
    sleep "$DURATION"
    c1=$(bench_cpu_ticks "${cpu_pid[$s]}")
    s1=$(cpu_line)
    t1=$(date +%s%N)
    if ! wait "$lgpid"; then
        echo "conn-scaling.sh: loadgen failed against $s at $c connections:" >&2
        cat "$tmp/lg.err" >&2
        exit 1
    fi
    jq -c --arg s "$s" --argjson c "$c" --argjson r "$r" --argjson ticks "$((c1 - c0))" \
        --argjson tck "$(getconf CLK_TCK)" --argjson wall "$((t1 - t0))" \
        --arg sys0 "$s0" --arg sys1 "$s1" --argjson minc "$MIN_CPU_PCT" \
        --argjson maxl "$MAX_LOADGEN_PCT" --argjson rate "${RATE:-0}" \
        '($sys0 | split(" ") | map(tonumber)) as $a | ($sys1 | split(" ") | map(tonumber)) as $b |
         {server: $s, connections: $c, round: $r,
          rps: (.requests_completed / .elapsed_s),
          server_cpu_pct: (100 * ($ticks / $tck) / ($wall / 1e9)),
          cpu_busy_pct: (if $b[1] > $a[1] then 100 * ($b[0] - $a[0]) / ($b[1] - $a[1]) else null end),
          loadgen_cpu_pct: (100 * .loadgen_cpu_s.total / .elapsed_s),
          errors: .errors_total, established: .connections_established,
          send_lag_p99_ms: .send_lag_ms.p99,
          waited_pct: (if $rate > 0 then 100 * .requests_waited_for_connection / ([.requests_sent, 1] | max) else null end)}
         | . + {req_per_cpu_s: (if .server_cpu_pct > 0 then .rps / (.server_cpu_pct / 100) else null end)}
         | . + {why_invalid: ([
               (if $rate == 0 and .server_cpu_pct < $minc then "server \(.server_cpu_pct | floor)% CPU" else empty end),
               (if $rate > 0 and .rps < 0.99 * $rate then "rate not held (\(.rps | floor) of \($rate) req/s)" else empty end),
               (if $rate > 0 and .send_lag_p99_ms > 1 and .waited_pct <= 1 then "loadgen late: send lag p99 \(.send_lag_p99_ms) ms" else empty end),
               (if .loadgen_cpu_pct >= $maxl then "loadgen \(.loadgen_cpu_pct | floor)% CPU" else empty end),
               (if .errors > 0 then "\(.errors) errors" else empty end),
               (if .established < $c then "\(.established) of \($c) connections" else empty end)
             ] | join(", "))}' "$lg" >>"$tmp/results.jsonl"
}

loadavg=$(cut -d' ' -f1-3 /proc/loadavg)
busy_before=$(bench_cpu_busy 2 "$SERVER_CPU" "$LOADGEN_CPU") # other work, before we start
read -r -a servers <<<"$SERVERS"
ns=${#servers[@]}
for c in $CONNS; do
    for r in $(seq 1 "$ROUNDS"); do
        for i in $(seq 0 $((ns - 1))); do
            s=${servers[$(((i + r - 1) % ns))]} # rotated: each round starts with the next server
            echo "conn-scaling.sh: $c connections, round $r/$ROUNDS: $s" >&2
            measure "$s" "$c" "$r"
        done
    done
done

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=""
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then dirty="+dirty"; fi
nginx_v=$("$NGINX" -v 2>&1 | sed 's/^nginx version: //') || nginx_v=none
mkdir -p "$(dirname "$OUT")"
jq -s --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --arg host "$(hostname)" \
    --argjson cores "$(nproc)" --arg kernel "$(uname -r)" --arg commit "$commit$dirty" \
    --arg nginx "$nginx_v" --arg loadavg "$loadavg" --arg busy "$busy_before" --argjson rounds "$ROUNDS" \
    --argjson dur "$DURATION" --argjson warm "$WARMUP" --argjson minc "$MIN_CPU_PCT" \
    --argjson maxl "$MAX_LOADGEN_PCT" --arg scpu "$SERVER_CPU" --arg lcpu "$LOADGEN_CPU" \
    --argjson rate "${RATE:-0}" \
    'def median: sort | if length % 2 == 1 then .[length / 2 | floor]
                        else (.[length / 2 - 1] + .[length / 2]) / 2 end;
     {date: $date, host: $host, cores: $cores, kernel: $kernel, commit: $commit,
      nginx: $nginx, loadavg_before: $loadavg, cpu_busy_before: $busy, rounds: $rounds, duration_s: $dur,
      warmup_s: $warm, min_server_cpu_pct: $minc, max_loadgen_cpu_pct: $maxl,
      mode: (if $rate > 0 then "constant rate" else "closed loop" end),
      rate_rps: (if $rate > 0 then $rate else null end),
      server_cpu: $scpu, loadgen_cpu: $lcpu, runs: .,
      figures: (group_by([.connections, .server]) | map({
          connections: .[0].connections, server: .[0].server,
          req_per_cpu_s: (map(.req_per_cpu_s) | median), rps: (map(.rps) | median),
          server_cpu_pct: (map(.server_cpu_pct) | median),
          loadgen_cpu_pct: (map(.loadgen_cpu_pct) | median),
          cpu_busy_pct: (map(.cpu_busy_pct // 0) | median),
          valid: all(.[]; .why_invalid == ""),
          why_invalid: (map(select(.why_invalid != "") | "round \(.round): \(.why_invalid)") | join("; "))}))}
     | .ratios = (.figures | group_by(.connections) | map(
          (map({(.server): .}) | add) as $f | {connections: .[0].connections} +
          (if $f.nginx then
              ([("async-server", "actor-server") | select($f[.]) |
                {(.): {ratio: ($f[.].req_per_cpu_s / $f.nginx.req_per_cpu_s),
                       valid: ($f[.].valid and $f.nginx.valid)}}] | add // {})
           else {} end)))' \
    "$tmp/results.jsonl" >"$OUT"

echo "conn-scaling, GET /ping: $(jq -r .date "$OUT")  host $(hostname)  $(nproc) cores  kernel $(uname -r)  commit $commit$dirty"
echo "nginx $nginx_v  |  load average before: $loadavg  |  busy before start (2 s): $busy_before  |  servers on CPU $SERVER_CPU (1 thread / 1 worker), loadgen on CPU $LOADGEN_CPU"
if [ -n "$RATE" ]; then
    echo "build/loadgen at a constant $RATE req/s (every server the same), 1 thread; ${WARMUP}s warm-up + ${DURATION}s measured per run; median of $ROUNDS interleaved rounds"
    echo "valid: rate held (>= 99%), loadgen CPU < $MAX_LOADGEN_PCT% and send lag p99 <= 1 ms (unless > 1% of requests waited for a connection), no errors, every connection open, in every round"
else
    echo "build/loadgen closed loop, 1 thread; ${WARMUP}s warm-up + ${DURATION}s measured per run; median of $ROUNDS interleaved rounds"
    echo "valid: server CPU >= $MIN_CPU_PCT%, loadgen CPU < $MAX_LOADGEN_PCT%, no errors, every connection open, in every round"
fi
printf '%6s %-13s %11s %12s %9s %9s %9s %9s  %s\n' conns server "req/s" "req/CPU-s" "srv CPU" "cpu$SERVER_CPU" "loadgen" "/nginx" validity
jq -r '.ratios as $r | .figures[] | . as $f |
    ([$r[] | select(.connections == $f.connections)][0][$f.server].ratio // "-") as $ratio |
    [.connections, .server, .rps, .req_per_cpu_s, .server_cpu_pct, .cpu_busy_pct,
     .loadgen_cpu_pct, $ratio, (if .valid then "valid" else "NOT VALID (\(.why_invalid))" end)] | @tsv' "$OUT" |
    awk -F'\t' '{ printf "%6d %-13s %11.0f %12.0f %8.1f%% %8.1f%% %8.1f%% %9s  %s\n",
                  $1, $2, $3, $4, $5, $6, $7, ($8 == "-" ? "-" : sprintf("%.3f", $8)), $9 }'
echo "(cpu$SERVER_CPU: the whole CPU's busy share, softirq included; well above the server's own share means other work ran there)"
echo "results: $OUT"
if jq -e '[.figures[] | select(.valid | not)] | length > 0' "$OUT" >/dev/null; then
    echo "WARNING: some figures are NOT VALID (see the last column); their ratios are not results." >&2
    exit 3
fi
