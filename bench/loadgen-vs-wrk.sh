#!/usr/bin/env bash
# loadgen-vs-wrk.sh: what the load generator costs per request. (1) Closed loop: requests
# per generator CPU-second of build/loadgen and of wrk, GET /ping, same connections, one
# thread each pinned to LOADGEN_CPU, against one server pinned to SERVER_CPU
# (build/async-server, or with SERVER=nginx nginx with one worker, `return 200 "pong"`, in
# its own temp prefix); target: loadgen >= 1.3x wrk (median of REPEAT interleaved pairs).
# The server must keep up with both tools (see below), so the default is the faster of the
# two on one CPU: async-server (nginx needs about 1.2x its CPU per /ping, bench/NOTES.md).
# (2) Constant rate at 30%, 50% and 90% of loadgen's closed-loop rate: generator CPU per
# request; target: <= 1.1x the closed loop's (medians). CPU is user+sys of the whole
# generator process (GNU time); server CPU from /proc/PID/stat over each run. A closed-loop
# run with the server at >= 90% of its CPU may have made the generator wait, and waiting
# (sleeping, being woken for a few responses) is charged to the generator's CPU per
# request: that run's cost is an upper bound. So with loadgen's runs server-limited the
# ratio to wrk is a lower bound (it can PASS, not FAIL), with wrk's an upper bound (it can
# FAIL, not PASS), and the constant-rate ratios, over an inflated closed loop, are lower
# bounds (they can FAIL, not PASS); otherwise the verdict is NOT VALID, as it is when other
# processes used more than OTHER_PCT% of a CPU (/proc/stat busy time minus the generator's
# and the server's). A benchmark, not a test.
set -euo pipefail

CONNECTIONS="${CONNECTIONS:-64}"
DURATION="${DURATION:-10}"          # seconds per run
REPEAT="${REPEAT:-3}"               # runs per tool and per rate; medians are reported
SERVER="${SERVER:-async}"           # async | nginx
LOADGEN_CPU="${LOADGEN_CPU:-1}"
SERVER_CPU="${SERVER_CPU:-0}"
LOADGEN="${LOADGEN:-build/loadgen}"
LOADGEN_ARGS="${LOADGEN_ARGS:-}"    # extra loadgen flags for every run, e.g. "--io epoll"
TICK="${TICK:-}"                    # --tick for the constant-rate runs (empty: loadgen's default)
FRACTIONS="${FRACTIONS:-0.3 0.5 0.9}"
ASYNC_SERVER="${ASYNC_SERVER:-build/async-server}"
WRK="${WRK:-wrk}"
WRK_TARGET="${WRK_TARGET:-1.3}"     # loadgen req/CPU-s over wrk's, closed loop
RATE_TARGET="${RATE_TARGET:-1.1}"   # constant-rate CPU/request over closed loop's
BOUND_PCT="${BOUND_PCT:-90}"        # a process at or above this % of its CPU is saturated
OTHER_PCT="${OTHER_PCT:-10}"        # others' use of the two CPUs above this % of one CPU: not quiet

usage() {
    cat <<USAGE
usage: bench/loadgen-vs-wrk.sh [--help]
Load-generator cost per request: closed loop vs wrk (target >= ${WRK_TARGET}x wrk's req per
CPU-second) and constant rate at ${FRACTIONS// /, } of the closed-loop rate (target <=
${RATE_TARGET}x the closed loop's CPU per request). GET /ping, 1 generator thread.
Environment: CONNECTIONS ($CONNECTIONS), DURATION ($DURATION s), REPEAT ($REPEAT),
SERVER ($SERVER: async|nginx), LOADGEN_CPU ($LOADGEN_CPU), SERVER_CPU ($SERVER_CPU),
LOADGEN ($LOADGEN), LOADGEN_ARGS, TICK (loadgen --tick; default loadgen's),
FRACTIONS ($FRACTIONS), ASYNC_SERVER ($ASYNC_SERVER), WRK ($WRK), WRK_TARGET,
RATE_TARGET, BOUND_PCT ($BOUND_PCT), OTHER_PCT ($OTHER_PCT).
Run it alone: other load invalidates it.
USAGE
}
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_help_only "$@"
case "$SERVER" in
    async | nginx) ;;
    *) echo "loadgen-vs-wrk.sh: SERVER must be async or nginx, not '$SERVER'" >&2; exit 2 ;;
esac
# nginx-light and wrk, installed on demand (no system nginx is started)
"$(dirname "${BASH_SOURCE[0]}")/../scripts/deps.sh" bench

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
HZ=$(getconf CLK_TCK)

server_ticks() { awk '{ print $14 + $15 }' "/proc/$SERVER_PID/stat"; }
# busy ticks (user nice system irq softirq steal) of the generator's and the server's CPUs
cpus_busy_ticks() {
    awk -v a="cpu$LOADGEN_CPU" -v b="cpu$SERVER_CPU" \
        '$1 == a || $1 == b { t += $2 + $3 + $4 + $7 + $8 + $9 } END { print t }' /proc/stat
}
# others_pct BUSY0 BUSY1 SRV0 SRV1 GEN_CPU_S WALL_S: % of one CPU used by anyone else
others_pct() {
    awk -v b0="$1" -v b1="$2" -v s0="$3" -v s1="$4" -v g="$5" -v w="$6" -v hz="$HZ" \
        'BEGIN { o = 100 * ((b1 - b0) - (s1 - s0) - g * hz) / hz / w; printf "%.1f", o < 0 ? 0 : o }'
}
# Each run prints: requests gen_cpu_s server_cpu_pct wall_s others_pct
#                  [send_lag_p99_ms achieved_rps]
run_wrk() {
    local t0 s0 s1 t1 b0 b1
    b0=$(cpus_busy_ticks); s0=$(server_ticks); t0=$(date +%s.%N)
    taskset -c "$LOADGEN_CPU" /usr/bin/time -o "$TMP/time" -f '%U %S' \
        "$WRK" -t1 -c"$CONNECTIONS" -d"${DURATION}s" "$URL/ping" >"$TMP/wrk.out" 2>&1
    s1=$(server_ticks); t1=$(date +%s.%N); b1=$(cpus_busy_ticks)
    local req g w
    req=$(awk '/requests in/ { print $1 }' "$TMP/wrk.out")
    g=$(awk '{ printf "%.3f", $1 + $2 }' "$TMP/time")
    w=$(awk -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.3f", t1 - t0 }')
    awk -v r="$req" -v g="$g" -v s0="$s0" -v s1="$s1" -v w="$w" -v hz="$HZ" \
        -v o="$(others_pct "$b0" "$b1" "$s0" "$s1" "$g" "$w")" \
        'BEGIN { printf "%s %s %.1f %s %s\n", r, g, 100 * (s1 - s0) / hz / w, w, o }'
}
run_loadgen() { # run_loadgen [extra flags...]
    local t0 s0 s1 t1 b0 b1
    b0=$(cpus_busy_ticks); s0=$(server_ticks); t0=$(date +%s.%N)
    # shellcheck disable=SC2086 # LOADGEN_ARGS is a list of flags
    taskset -c "$LOADGEN_CPU" /usr/bin/time -o "$TMP/time" -f '%U %S' \
        "$LOADGEN" --url "$URL" --connections "$CONNECTIONS" --threads 1 \
        --duration "$DURATION" --quiet --json "$TMP/lg.json" $LOADGEN_ARGS "$@"
    s1=$(server_ticks); t1=$(date +%s.%N); b1=$(cpus_busy_ticks)
    local req lag rps g w
    req=$(jq -r '.requests_completed' "$TMP/lg.json")
    lag=$(jq -r '.send_lag_ms.p99 // "-"' "$TMP/lg.json")
    rps=$(jq -r '.achieved_rps' "$TMP/lg.json")
    g=$(awk '{ printf "%.3f", $1 + $2 }' "$TMP/time")
    w=$(awk -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.3f", t1 - t0 }')
    awk -v r="$req" -v g="$g" -v s0="$s0" -v s1="$s1" -v w="$w" -v hz="$HZ" -v lag="$lag" \
        -v rps="$rps" -v o="$(others_pct "$b0" "$b1" "$s0" "$s1" "$g" "$w")" \
        'BEGIN { printf "%s %s %.1f %s %s %s %s\n", r, g, 100 * (s1 - s0) / hz / w, w, o, lag, rps }'
}
# not_quiet OTHERS_PCT: true when others used more than OTHER_PCT% of a CPU
not_quiet() { awk -v o="$1" -v t="$OTHER_PCT" 'BEGIN { exit !(o > t) }'; }
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
span() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s", lo, hi }'; }
# server_limited SERVER_PCT: true when the server ran at its limit, so the generator may
# have waited for it (and paid for the waiting)
server_limited() { awk -v s="$1" -v b="$BOUND_PCT" 'BEGIN { exit !(s >= b) }'; }

echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  host: $(hostname)  cores: $(nproc)  kernel: $(uname -r)"
echo "loadgen: $(git rev-parse --short HEAD 2>/dev/null || echo '?') ${LOADGEN_ARGS:+($LOADGEN_ARGS) }wrk: $("$WRK" -v 2>&1 | head -1 | awk '{print $1, $2}')  server: $server_version"
echo "GET /ping, 1 generator thread, $CONNECTIONS connections, ${DURATION} s per run, $REPEAT runs each; generator on CPU $LOADGEN_CPU, server on CPU $SERVER_CPU"
echo
echo "== closed loop: loadgen vs wrk (interleaved) =="
printf '%-4s %-8s %10s %8s %9s %9s %8s %14s\n' run tool requests cpu_s gen_cpu% srv_cpu% others% req_per_cpu_s
ratios=() lg_rates=() lg_us=() lg_limited=0 wrk_limited=0 noisy=0
for i in $(seq "$REPEAT"); do
    read -r wr wc ws ww wo < <(run_wrk)
    read -r lr lc ls lw lo _ lrps < <(run_loadgen)
    wrate=$(awk -v r="$wr" -v c="$wc" 'BEGIN { printf "%.0f", r / c }')
    lrate=$(awk -v r="$lr" -v c="$lc" 'BEGIN { printf "%.0f", r / c }')
    printf '%-4s %-8s %10s %8s %9.1f %9s %8s %14s\n' "$i" wrk "$wr" "$wc" "$(awk -v c="$wc" -v w="$ww" 'BEGIN { print 100 * c / w }')" "$ws" "$wo" "$wrate"
    printf '%-4s %-8s %10s %8s %9.1f %9s %8s %14s\n' "$i" loadgen "$lr" "$lc" "$(awk -v c="$lc" -v w="$lw" 'BEGIN { print 100 * c / w }')" "$ls" "$lo" "$lrate"
    if server_limited "$ws"; then wrk_limited=1; fi
    if server_limited "$ls"; then lg_limited=1; fi
    if not_quiet "$wo" || not_quiet "$lo"; then noisy=1; fi
    ratios+=("$(awk -v a="$lrate" -v b="$wrate" 'BEGIN { printf "%.3f", a / b }')")
    lg_rates+=("$lrps")
    lg_us+=("$(awk -v r="$lr" -v c="$lc" 'BEGIN { printf "%.3f", 1e6 * c / r }')")
done
ratio=$(printf '%s\n' "${ratios[@]}" | median)
closed_rps=$(printf '%s\n' "${lg_rates[@]}" | median)
closed_us=$(printf '%s\n' "${lg_us[@]}" | median)
echo "loadgen io: $(jq -r .io "$TMP/lg.json")"
echo "ratio loadgen/wrk in req per generator CPU-second, per run: ${ratios[*]}; median $ratio (target >= $WRK_TARGET)"
echo "loadgen closed loop: median $closed_rps req/s, $closed_us us of generator CPU per request (range $(printf '%s\n' "${lg_us[@]}" | span))"
verdicts=()
if [[ $noisy -eq 1 ]]; then
    verdicts+=("closed loop vs wrk: NOT VALID (not quiet: others used > $OTHER_PCT% of a CPU in at least one run): ${ratio}x")
elif [[ $lg_limited -eq 1 && $wrk_limited -eq 1 ]]; then
    verdicts+=("closed loop vs wrk: NOT VALID (the server was at >= $BOUND_PCT% CPU in runs of both tools, so both may have waited for it): ${ratio}x")
elif awk -v r="$ratio" -v t="$WRK_TARGET" 'BEGIN { exit !(r >= t) }'; then
    if [[ $wrk_limited -eq 1 ]]; then
        verdicts+=("closed loop vs wrk: NOT VALID (an upper bound: the server was at >= $BOUND_PCT% CPU in a wrk run, so wrk may have waited for it): ${ratio}x")
    elif [[ $lg_limited -eq 1 ]]; then
        verdicts+=("closed loop vs wrk: PASS (${ratio}x >= ${WRK_TARGET}x, a lower bound: the server was at >= $BOUND_PCT% CPU in a loadgen run)")
    else
        verdicts+=("closed loop vs wrk: PASS (${ratio}x >= ${WRK_TARGET}x)")
    fi
elif [[ $lg_limited -eq 1 ]]; then
    verdicts+=("closed loop vs wrk: NOT VALID (a lower bound: the server was at >= $BOUND_PCT% CPU in a loadgen run, so loadgen may have waited for it): ${ratio}x")
elif [[ $wrk_limited -eq 1 ]]; then
    verdicts+=("closed loop vs wrk: FAIL (${ratio}x < ${WRK_TARGET}x, an upper bound: the server was at >= $BOUND_PCT% CPU in a wrk run)")
else
    verdicts+=("closed loop vs wrk: FAIL (${ratio}x < ${WRK_TARGET}x)")
fi

echo
echo "== constant rate: generator CPU per request vs closed loop ($closed_us us/request) =="
tick_flag=()
if [[ -n "$TICK" ]]; then tick_flag=(--tick "$TICK"); fi
echo "loadgen --tick ${TICK:-default (auto)}"
printf '%-9s %-4s %10s %10s %8s %9s %8s %8s %12s %12s\n' fraction run rate_rps achieved cpu_s srv_cpu% others% tick_us us_per_req lag_p99_ms
for f in $FRACTIONS; do
    rate=$(awk -v f="$f" -v r="$closed_rps" 'BEGIN { printf "%.0f", f * r }')
    us=() held=1 rnoisy=0
    for i in $(seq "$REPEAT"); do
        read -r r c s _ o lag rps < <(run_loadgen --rate "$rate" "${tick_flag[@]}")
        u=$(awk -v r="$r" -v c="$c" 'BEGIN { printf "%.3f", 1e6 * c / r }')
        printf '%-9s %-4s %10s %10.0f %8s %9s %8s %8s %12s %12s\n' "$f" "$i" "$rate" "$rps" "$c" "$s" "$o" \
            "$(jq -r .tick_us "$TMP/lg.json")" "$u" "$lag"
        us+=("$u")
        if ! awk -v a="$rps" -v t="$rate" 'BEGIN { exit !(a >= 0.99 * t) }'; then held=0; fi
        if not_quiet "$o"; then rnoisy=1; fi
    done
    m=$(printf '%s\n' "${us[@]}" | median)
    x=$(awk -v m="$m" -v c="$closed_us" 'BEGIN { printf "%.3f", m / c }')
    rng=$(printf '%s\n' "${us[@]}" | span)
    if [[ $noisy -eq 1 || $rnoisy -eq 1 ]]; then
        verdicts+=("constant rate at $f ($rate req/s): NOT VALID (not quiet: others used > $OTHER_PCT% of a CPU): ${m} us/request (range $rng) = ${x}x")
    elif [[ $held -eq 0 ]]; then
        verdicts+=("constant rate at $f ($rate req/s): NOT VALID (rate not held within 1%): ${m} us/request = ${x}x")
    elif awk -v x="$x" -v t="$RATE_TARGET" 'BEGIN { exit !(x <= t) }'; then
        if [[ $lg_limited -eq 1 ]]; then
            verdicts+=("constant rate at $f ($rate req/s): NOT VALID (a lower bound: the closed-loop reference ran with the server at >= $BOUND_PCT% CPU, so its cost may include waiting): ${m} us/request = ${x}x")
        else
            verdicts+=("constant rate at $f ($rate req/s): PASS (${m} us/request (range $rng) = ${x}x closed loop <= ${RATE_TARGET}x)")
        fi
    else
        bound=""
        if [[ $lg_limited -eq 1 ]]; then bound=", a lower bound: the closed-loop reference ran with the server at >= $BOUND_PCT% CPU"; fi
        verdicts+=("constant rate at $f ($rate req/s): FAIL (${m} us/request (range $rng) = ${x}x closed loop > ${RATE_TARGET}x$bound)")
    fi
done
echo
printf '%s\n' "${verdicts[@]}"
