#!/usr/bin/env bash
# it_loadgen.sh: behaviour tests of build/loadgen against the test servers in
# tests/helpers (stall_server, fault_server, silent_server) and, when built,
# build/async-server: usage errors, coordinated-omission correction, rate accuracy, send lag
# and connection waits, --tick, both I/O back-ends, exact error accounting, the connect
# timeout, the reconnect backoff, unanswered requests in the corrected latency, agents
# splitting one schedule (--agent, --start-at) and `loadgen merge`, mix fidelity (loadgen
# and wrk + wrk_mix.lua, checked with the server's /metrics). Prints TAP. Each loadgen run
# is 1-3 s; the whole script takes about 55 s.
set -euo pipefail

BUILD="${BUILD:-build}"
LOADGEN="${LOADGEN:-$BUILD/loadgen}"
HELPERS="${HELPERS:-$BUILD/tests/helpers}"
ASYNC_SERVER="${ASYNC_SERVER:-$BUILD/async-server}"
LOW_RATE_IO="${LOW_RATE_IO:-epoll}" # I/O back-ends of the low-rate send-lag check
WRK="${WRK:-wrk}"
STALL_MS="${STALL_MS:-500}"      # the one stall of stall_server
CO_RATE="${CO_RATE:-1000}"       # req/s for the coordinated-omission run
CO_SECS="${CO_SECS:-3}"
CO_CONNS="${CO_CONNS:-10}"
GEN_STALL_MS="${GEN_STALL_MS:-200}" # the load generator stopped this long (SIGSTOP)
RATE="${RATE:-2000}"             # req/s for the rate-accuracy run (far below capacity)
RATE_SECS="${RATE_SECS:-2}"
AUTO_RATE="${AUTO_RATE:-8000}"   # req/s of the --tick auto run (above 4,000: coarser tick)

usage() {
    cat <<USAGE
usage: tests/it_loadgen.sh [--help]
Integration tests of loadgen; prints TAP. Environment: BUILD ($BUILD), LOADGEN, HELPERS,
ASYNC_SERVER ($ASYNC_SERVER), WRK ($WRK), STALL_MS, CO_RATE, CO_SECS, CO_CONNS, RATE,
RATE_SECS, AUTO_RATE.
USAGE
}
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../bench/lib.sh"
bench_help_only "$@"

cd "$(dirname "$0")/.."
TMP=$(mktemp -d)
PIDS=()
cleanup() { bench_stop "${PIDS[@]}"; rm -rf "$TMP"; }
trap cleanup EXIT

N=0
ok() { N=$((N + 1)); echo "ok $N - $1"; }
not_ok() { N=$((N + 1)); echo "not ok $N - $1"; }
check() { # check NAME CONDITION-COMMAND...
    local name="$1"; shift
    if "$@"; then ok "$name"; else not_ok "$name"; fi
}
skip() { N=$((N + 1)); echo "ok $N - # SKIP $1"; }
jget() { jq -r "$2" "$1"; }
jtrue() { jq -e "$@" >/dev/null; } # jtrue [jq options] FILTER FILE: the filter holds
# float comparisons through awk: fcmp A OP B
fcmp() { awk -v a="$1" -v b="$3" "BEGIN { exit !(a $2 b) }"; }

# Starts a helper server on an ephemeral port; sets SERVER_PID and SERVER_PORT.
start_helper() {
    local name="$1"; shift
    local out="$TMP/$name.out"
    "$HELPERS/$name" "$@" >"$out" &
    SERVER_PID=$!
    PIDS+=("$SERVER_PID")
    for _ in $(seq 50); do
        SERVER_PORT=$(awk '/^port /{print $2}' "$out")
        [[ -n "$SERVER_PORT" ]] && return 0
        sleep 0.05
    done
    echo "# $name did not start" >&2
    return 1
}
# Stops it with SIGTERM and leaves its final counts line in $TMP/NAME.out.
stop_helper() {
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID" || true
}

# ---- usage ----
out=$("$LOADGEN" --help) && rc=0 || rc=$?
check "--help exits 0" test "$rc" -eq 0
missing=""
for f in url mix connections threads duration warmup rate arrivals pipeline timeout bearer seed \
         json hgrm quiet help tick io agent start-at hist-out connect-timeout version; do
    grep -q -- "--$f" <<<"$out" || missing="$missing $f"
done
check "--help documents every flag (missing:${missing:- none})" test -z "$missing"
rc=0; "$LOADGEN" --url http://127.0.0.1:1 --bogus 2>"$TMP/err" || rc=$?
check "unknown flag exits 2" test "$rc" -eq 2
check "a usage error is one line, then where the help is ($(head -n1 "$TMP/err"))" \
    bash -c "[[ \$(wc -l <'$TMP/err') -eq 2 ]] && grep -q -- '--bogus' '$TMP/err' && [[ \$(tail -n1 '$TMP/err') == \"try 'loadgen --help'\" ]]"
rc=0; "$LOADGEN" -h >"$TMP/out" || rc=$?
check "-h exits 0 and prints the usage" \
    bash -c "[[ $rc -eq 0 ]] && grep -q '^usage: loadgen' '$TMP/out'"
rc=0; "$LOADGEN" --version >"$TMP/out" || rc=$?
# the commit it was built from, as the servers' --version gives it ("unknown" only outside git)
want=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
check "--version exits 0 and names commit $want: '$(cat "$TMP/out")'" \
    bash -c "[[ $rc -eq 0 && \$(wc -l <'$TMP/out') -eq 1 ]] && grep -Eq '^loadgen $want(-dirty)? \(libuv [0-9.]+, llhttp [0-9.]+, jansson [0-9.]+\)$' '$TMP/out'"
rc=0; "$LOADGEN" --url=http://127.0.0.1:1 --duration= 2>"$TMP/err" || rc=$?
check "an empty value (--duration=) exits 2: $(head -n1 "$TMP/err")" \
    bash -c "[[ $rc -eq 2 ]] && grep -q 'empty' '$TMP/err'"
rc=0; "$LOADGEN" --url http://127.0.0.1:1 --json "$TMP/no/such/dir/out.json" 2>"$TMP/err" || rc=$?
check "--json into a missing folder exits 2 before connecting: $(head -n1 "$TMP/err")" \
    bash -c "[[ $rc -eq 2 ]] && grep -q -- '--json' '$TMP/err' && ! grep -q 'cannot connect' '$TMP/err'"
rc=0; "$LOADGEN" --url http://127.0.0.1:1 --json "$TMP" 2>"$TMP/err" || rc=$?
check "--json naming a folder exits 2: $(head -n1 "$TMP/err")" \
    bash -c "[[ $rc -eq 2 ]] && grep -q 'Is a directory' '$TMP/err'"
# an existing writable file in a folder the user cannot write (/dev/null for a user) is
# writable as fopen opens it: the check must not ask for the folder (as root, as nobody)
mkdir -p "$TMP/ro" && : >"$TMP/ro/out.json" && chmod 666 "$TMP/ro/out.json" && chmod 555 "$TMP/ro" && chmod 711 "$TMP"
as_user=()
if [[ $(id -u) -eq 0 ]]; then as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups); fi
# a copy in the temporary folder: the checkout may sit where uid 65534 cannot reach (/root)
lg_abs="$TMP/loadgen-copy"
cp "$LOADGEN" "$lg_abs" && chmod 755 "$lg_abs"
if "${as_user[@]}" test -x "$lg_abs"; then
    for out in "$TMP/ro/out.json" /dev/null; do
        rc=0; "${as_user[@]}" "$lg_abs" --url http://127.0.0.1:1 --duration 1 --json "$out" 2>"$TMP/err" || rc=$?
        check "--json $out (writable, its folder not) as uid $("${as_user[@]}" id -u): no usage error, the run starts: $(head -n1 "$TMP/err")" \
            bash -c "[[ $rc -ne 2 ]] && grep -q 'cannot connect' '$TMP/err'"
    done
else
    skip "--json into a writable file of a read-only folder: uid 65534 cannot run $lg_abs"
    skip "--json /dev/null as a user: uid 65534 cannot run $lg_abs"
fi
chmod 755 "$TMP/ro"
rc=0; "$LOADGEN" merge --bogus "$TMP/m.json" x 2>"$TMP/err" || rc=$?
check "merge: an unknown option exits 2 with one line and where the help is" \
    bash -c "[[ $rc -eq 2 && \$(wc -l <'$TMP/err') -eq 2 ]] && grep -q 'loadgen merge --help' '$TMP/err'"
rc=0; "$LOADGEN" --url http://127.0.0.1:1 --duration soon 2>"$TMP/err" || rc=$?
check "bad --duration exits 2 with a message" \
    bash -c "[[ $rc -eq 2 ]] && grep -q -- '--duration' '$TMP/err'"
rc=0; "$LOADGEN" 2>"$TMP/err" || rc=$?
check "missing --url exits 2" test "$rc" -eq 2
rc=0; "$LOADGEN" --url http://127.0.0.1:1 --tick 1s 2>"$TMP/err" || rc=$?
check "--tick above 100ms exits 2 with a message" \
    bash -c "[[ $rc -eq 2 ]] && grep -q -- '--tick' '$TMP/err'"
rc=0; "$LOADGEN" --url http://127.0.0.1:1 --agent 2/2 2>"$TMP/err" || rc=$?
check "--agent 2/2 exits 2" test "$rc" -eq 2
past=$(awk -v t="$(date +%s.%N)" 'BEGIN { printf "%.3f", t - 10 }')
rc=0; "$LOADGEN" --url http://127.0.0.1:1 --start-at "$past" 2>"$TMP/err" || rc=$?
check "--start-at 10 s in the past exits 2 and says so ($(head -c 90 "$TMP/err"))" \
    bash -c "[[ $rc -eq 2 ]] && grep -q 'in the past' '$TMP/err'"
rc=0; "$LOADGEN" merge "$TMP/m.json" 2>"$TMP/err" || rc=$?
check "merge without inputs exits 2" test "$rc" -eq 2
echo '{"format":"something-else"}' >"$TMP/bad.hist.json"
rc=0; "$LOADGEN" merge "$TMP/m.json" "$TMP/bad.hist.json" 2>"$TMP/err" || rc=$?
check "merge of a non --hist-out file exits 1 ($(head -c 100 "$TMP/err"))" \
    bash -c "[[ $rc -eq 1 ]] && grep -q 'hist-out' '$TMP/err'"
printf '# a comment\n80 GET /a - 200\n15 GET /b - 2000\n' >"$TMP/bad.mix"
rc=0; "$LOADGEN" --url http://127.0.0.1:1 --mix "$TMP/bad.mix" 2>"$TMP/err" || rc=$?
check "bad mix line exits 2 and names line 3 ($(head -c 120 "$TMP/err"))" \
    bash -c "[[ $rc -eq 2 ]] && grep -q 'line 3' '$TMP/err'"
# A port nobody listens on: bind one, note it, close it.
dead_port=$(bench_free_port)
rc=0; "$LOADGEN" --url "http://127.0.0.1:$dead_port" --duration 1 --connections 2 --quiet \
    2>"$TMP/err" || rc=$?
check "nothing listening: exit 1 ($(head -c 100 "$TMP/err"))" test "$rc" -eq 1

# ---- coordinated omission ----
start_helper stall_server --stall-ms "$STALL_MS" --stall-after-ms 1000
"$LOADGEN" --url "http://127.0.0.1:$SERVER_PORT" --rate "$CO_RATE" --duration "$CO_SECS" \
    --connections "$CO_CONNS" --json "$TMP/co.json" --hgrm "$TMP/co.hgrm" --quiet
stop_helper
c99=$(jget "$TMP/co.json" .latency_ms.p99)
s99=$(jget "$TMP/co.json" .service_time_ms.p99)
smax=$(jget "$TMP/co.json" .service_time_ms.max)
# During the stall R*S planned sends queue up; the k-th of them waits S - k/R. The top 1%
# (0.01*R*D requests) therefore waits at least S - 0.01*D s; allow 50 ms of slack.
lo=$(awk -v s="$STALL_MS" -v d="$CO_SECS" 'BEGIN { print s - 0.01 * d * 1000 - 50 }')
hi=$((STALL_MS * 5 / 4))   # loaded CI machines add their own pauses
check "corrected p99 reflects the stall: $c99 ms in [$lo, $hi]" \
    bash -c "fcmp() { awk -v a=\"\$1\" -v b=\"\$3\" \"BEGIN { exit !(a \$2 b) }\"; }; fcmp $c99 '>=' $lo && fcmp $c99 '<=' $hi"
# Only the <= connections requests on the wire when the stall begins see it in service
# time: fewer than 1% of R*D, so the uncorrected p99 stays far below the stall.
check "uncorrected p99 does not: $s99 ms < $((STALL_MS / 10)) ms (conns $CO_CONNS < 1% of $((CO_RATE * CO_SECS)))" \
    fcmp "$s99" '<' "$((STALL_MS / 10))"
check "uncorrected max still saw the stall: $smax ms >= $((STALL_MS * 8 / 10))" \
    fcmp "$smax" '>=' "$((STALL_MS * 8 / 10))"
check "--hgrm wrote a spectrum" grep -q 'Percentile' "$TMP/co.hgrm"
# --interval (default 1 s): the stall is one second's tail, not the run's
iv_sum=$(jq '[.latency_intervals.count[]] | add' "$TMP/co.json")
lat_n=$(jget "$TMP/co.json" .latency_ms.count)
check "intervals: $(jq -c '.latency_intervals.count' "$TMP/co.json") responses per 1 s interval add up to the latency count $lat_n" \
    bash -c "[[ '$(jget "$TMP/co.json" .latency_intervals.interval_s)' == 1 && \$(jq '.latency_intervals.count | length' '$TMP/co.json') -eq $CO_SECS && '$iv_sum' == '$lat_n' ]]"
iv_max=$(jq '[.latency_intervals.p99_ms[] | select(. != null)] | max' "$TMP/co.json")
iv_med=$(jq '[.latency_intervals.p99_ms[] | select(. != null)] | sort | .[length / 2 | floor]' "$TMP/co.json")
check "intervals: the stall's interval has p99 $iv_max ms >= $((STALL_MS / 2)) ms, the median interval $iv_med ms < $((STALL_MS / 10)) ms" \
    bash -c "fcmp() { awk -v a=\"\$1\" -v b=\"\$3\" \"BEGIN { exit !(a \$2 b) }\"; }; fcmp $iv_max '>=' $((STALL_MS / 2)) && fcmp $iv_med '<' $((STALL_MS / 10))"
# During the stall all CO_CONNS connections hold a request: the R*S - CO_CONNS requests
# planned meanwhile wait for a free connection (allow 20% for timing).
waited=$(jget "$TMP/co.json" .requests_waited_for_connection)
want_waited=$(awk -v r="$CO_RATE" -v s="$STALL_MS" -v c="$CO_CONNS" 'BEGIN { printf "%d", 0.8 * (r * s / 1000 - c) }')
check "stall: $waited requests waited for a free connection (>= $want_waited)" \
    test "$waited" -ge "$want_waited"
cw99=$(jget "$TMP/co.json" .connection_wait_ms.p99)
check "stall: their p99 wait $cw99 ms is most of the stall (>= $((STALL_MS / 2)) ms)" \
    fcmp "$cw99" '>=' "$((STALL_MS / 2))"
# That wait was the server's: every connection held a request it had not answered, so the
# generator's own part of the send lag stays small while the lag itself is the stall.
lag99=$(jget "$TMP/co.json" .send_lag_ms.p99)
own99=$(jget "$TMP/co.json" .send_lag_own_ms.p99)
check "server stall: the own send lag is reported (send_lag_own_ms.p99 $own99)" \
    jtrue '.send_lag_own_ms.p99 | type == "number"' "$TMP/co.json"
check "server stall: send lag p99 $lag99 ms >= $((STALL_MS / 2)) ms, loadgen's own p99 $own99 ms < $((STALL_MS / 20)) ms" \
    bash -c "fcmp() { awk -v a=\"\$1\" -v b=\"\$3\" \"BEGIN { exit !(a \$2 b) }\"; }; fcmp $lag99 '>=' $((STALL_MS / 2)) && fcmp $own99 '<' $((STALL_MS / 20))"

# ---- the generator's own stall ----
# The same schedule against a server that never stalls, with the load generator stopped
# (SIGSTOP) for GEN_STALL_MS: the requests due meanwhile wait for it, not for the server,
# though more than 1% of them then wait for a connection (the backlog is larger than the
# connections), which is what made the old rule excuse such a lag as the server's.
# stopped_run AFTER_S FOR_S OUT: the coordinated-omission schedule against the helper
# server, with the load generator stopped (SIGSTOP) AFTER_S seconds in for FOR_S seconds.
stopped_run() {
    "$LOADGEN" --url "http://127.0.0.1:$SERVER_PORT" --rate "$CO_RATE" --duration "$CO_SECS" \
        --connections "$CO_CONNS" --json "$3" --quiet &
    local gen=$!
    PIDS+=("$gen")
    sleep "$1"
    kill -STOP "$gen"
    sleep "$2"
    kill -CONT "$gen"
    wait "$gen"
}
start_helper stall_server --stall-ms 0
stopped_run 1.5 "$(awk -v s="$GEN_STALL_MS" 'BEGIN { print s / 1000 }')" "$TMP/gstall.json"
stop_helper
lag99=$(jget "$TMP/gstall.json" .send_lag_ms.p99)
own99=$(jget "$TMP/gstall.json" .send_lag_own_ms.p99)
gwaited=$(jget "$TMP/gstall.json" .requests_waited_for_connection)
gdone=$(jget "$TMP/gstall.json" .requests_completed)
check "generator stall: $gwaited of $gdone requests waited for a connection (> 1%)" \
    fcmp "$gwaited" '>' "$(awk -v d="$gdone" 'BEGIN { print d / 100 }')"
check "generator stall: loadgen's own send lag p99 $own99 ms >= $((GEN_STALL_MS / 2)) ms (lag p99 $lag99 ms)" \
    fcmp "$own99" '>=' "$((GEN_STALL_MS / 2))"

# ---- the generator stopped while the server held every connection, past the server's stall ----
# The server freezes for STALL_MS from about 1 s on and holds every connection; the load
# generator is stopped a quarter of the way into that freeze and resumed STALL_MS after
# the freeze ends. The server answered everything when its freeze ended: from then on the
# wait is the generator's, though its connections still looked busy to it (it had not read
# the responses). The hold ends at the receive time of the server's last answer, so the
# requests due in that last STALL_MS have it in their own lag (an earlier build counted it
# all as the server's: own p99 under 1 ms).
start_helper stall_server --stall-ms "$STALL_MS" --stall-after-ms 1000
stopped_run "$(awk -v s="$STALL_MS" 'BEGIN { print 1 + s / 4000 }')" \
    "$(awk -v s="$STALL_MS" 'BEGIN { print s * 7 / 4000 }')" "$TMP/both.json"
stop_helper
lag99=$(jget "$TMP/both.json" .send_lag_ms.p99)
own99=$(jget "$TMP/both.json" .send_lag_own_ms.p99)
check "generator stopped past a server stall: own send lag p99 $own99 ms >= $((STALL_MS / 4)) ms (lag p99 $lag99 ms)" \
    fcmp "$own99" '>=' "$((STALL_MS / 4))"

# ---- rate accuracy ----
start_helper stall_server --stall-ms 0
"$LOADGEN" --url "http://127.0.0.1:$SERVER_PORT" --rate "$RATE" --duration "$RATE_SECS" \
    --connections 8 --json "$TMP/rate.json" --quiet
# (its worker threads are named, for a runner reading /proc/PID/task/TID/{comm,stat})
"$LOADGEN" --url "http://127.0.0.1:$SERVER_PORT" --rate "$RATE" --duration "$RATE_SECS" \
    --arrivals poisson --threads 2 --connections 8 --json "$TMP/poisson.json" --quiet &
lg_pid=$!
PIDS+=("$lg_pid")
sleep 0.5
thread_names=$(cat "/proc/$lg_pid/task/"*/comm 2>/dev/null | sort | tr '\n' ' ')
wait "$lg_pid"
"$LOADGEN" --url "http://127.0.0.1:$SERVER_PORT" --duration 1 --threads 2 --connections 4 \
    --pipeline 8 --interval 250ms --json "$TMP/pipe.json" --quiet
# A low rate against a fast server: the send lag must be small against the 100 ms interval,
# with the default I/O (epoll); --tick 1ms and
# --tick 0 hold the rate too.
# (io_uring is left out here: its low-rate send lag is a known defect, bench/NOTES.md.)
for io in $LOW_RATE_IO; do
    "$LOADGEN" --url "http://127.0.0.1:$SERVER_PORT" --rate 10 --duration 4 --connections 4 \
        --io "$io" --json "$TMP/low-$io.json" --quiet
done
"$LOADGEN" --url "http://127.0.0.1:$SERVER_PORT" --rate "$RATE" --duration "$RATE_SECS" \
    --connections 8 --tick 1ms --json "$TMP/tick1ms.json" --quiet
"$LOADGEN" --url "http://127.0.0.1:$SERVER_PORT" --rate "$RATE" --duration "$RATE_SECS" \
    --connections 8 --tick 0 --io epoll --interval 0 --json "$TMP/tick0.json" --quiet
# --tick auto (the default) at AUTO_RATE req/s on one thread: 16 / AUTO_RATE capped at
# 500 us, with either I/O (--io auto: epoll where io_uring is not usable).
"$LOADGEN" --url "http://127.0.0.1:$SERVER_PORT" --rate "$AUTO_RATE" --duration "$RATE_SECS" \
    --connections 8 --io auto --json "$TMP/tickauto.json" --quiet
"$LOADGEN" --url "http://127.0.0.1:$SERVER_PORT" --rate "$AUTO_RATE" --duration "$RATE_SECS" \
    --connections 8 --io epoll --json "$TMP/tickauto-epoll.json" --quiet
# A response is timed when it arrived, not when the loop reads it: with a 5 ms tick the
# loop reads a response up to 5 ms after it came, the receive timestamp says when it came.
"$LOADGEN" --url "http://127.0.0.1:$SERVER_PORT" --rate 200 --duration 2 --tick 5ms \
    --connections 4 --io epoll --json "$TMP/tick5ms.json" --quiet
# The schedule is binned to the tick grid: planned every 6.7 ms, sent at the next 10 ms
# grid point, which is when they were due (unbinned, the lag would be 0, 3.3 or 6.7 ms).
"$LOADGEN" --url "http://127.0.0.1:$SERVER_PORT" --rate 150 --duration 2 --tick 10ms \
    --connections 4 --io epoll --json "$TMP/tick10ms.json" --quiet
# The io_uring back end (--io uring), closed loop and at RATE on two threads: every request
# answered, none in error, the schedule kept. Skipped only where the kernel refuses io_uring.
rc=0
"$LOADGEN" --url "http://127.0.0.1:$SERVER_PORT" --duration 1 --threads 2 --connections 8 \
    --io uring --json "$TMP/uring-closed.json" --quiet 2>"$TMP/uring.err" || rc=$?
if [[ $rc -ne 0 ]] && grep -q 'io_uring is not usable here' "$TMP/uring.err"; then
    skip "--io uring: $(head -n 1 "$TMP/uring.err")"
    skip "--io uring at a constant rate: the kernel refuses io_uring"
else
    # shellcheck disable=SC2016  # jq variables
    check "--io uring, closed loop: exit 0, io_uring recorded, requests answered, no errors (exit $rc: $(head -c 200 "$TMP/uring.err"))" \
        jtrue --argjson rc "$rc" '$rc == 0 and .io == "io_uring" and .requests_completed > 100 and .errors_total == 0
            and .requests_completed == (.status_counts | to_entries | map(.value) | add)' "$TMP/uring-closed.json"
    rc=0
    "$LOADGEN" --url "http://127.0.0.1:$SERVER_PORT" --rate "$RATE" --duration "$RATE_SECS" --threads 2 \
        --connections 8 --io uring --json "$TMP/uring-rate.json" --quiet 2>"$TMP/uring.err" || rc=$?
    # shellcheck disable=SC2016  # jq variables
    check "--io uring at $RATE req/s: exit 0, sent RATE x the window within 1%, all answered, no errors (exit $rc)" \
        jtrue --argjson rc "$rc" --argjson r "$RATE" '$rc == 0 and .io == "io_uring" and .errors_total == 0
            and ((.requests_sent - $r * .duration_s) | fabs) <= 0.01 * $r * .duration_s
            and .requests_completed == .requests_sent' "$TMP/uring-rate.json"
fi
# Two agents splitting one schedule at RATE, started together by --start-at.
start_at=$(awk -v t="$(date +%s.%N)" 'BEGIN { printf "%.3f", t + 1.5 }')
agent_pids=()
for i in 0 1; do
    "$LOADGEN" --url "http://127.0.0.1:$SERVER_PORT" --rate "$RATE" --duration "$RATE_SECS" \
        --connections 4 --agent "$i/2" --start-at "$start_at" --json "$TMP/agent$i.json" \
        --hist-out "$TMP/agent$i.hist.json" --quiet &
    PIDS+=("$!")
    agent_pids+=("$!")
done
wait "${agent_pids[@]}"
"$LOADGEN" merge --quiet --hgrm "$TMP/merged.hgrm" "$TMP/merged.json" "$TMP/agent0.hist.json" \
    "$TMP/agent1.hist.json"
stop_helper
for io in $LOW_RATE_IO; do
    L="$TMP/low-$io.json"
    # The median is the claim (p99 of 40 sends is their worst, which a host whose CPUs other
    # work holds delays by tens of ms: 38 ms seen beside CPU hogs); p99 stays within the interval.
    check "rate 10/s, io $(jget "$L" .io): send lag p50 $(jget "$L" .send_lag_ms.p50) ms < 1 ms, p99 $(jget "$L" .send_lag_ms.p99) ms < the 100 ms interval" \
        jtrue '.send_lag_ms.p50 < 1 and .send_lag_ms.p99 < 100' "$L"
done
check "--interval 250ms over 1 s of closed loop: 4 intervals whose counts add up to the latency count" \
    jtrue '.latency_intervals.interval_s == 0.25 and (.latency_intervals.count | length) == 4
           and (.latency_intervals.count | add) == .latency_ms.count
           and (.latency_intervals.p99_ms | length) == 4' "$TMP/pipe.json"
check "--interval 0: latency_intervals is null" jtrue '.latency_intervals == null' "$TMP/tick0.json"
check "a merge of agents' --hist-out (which do not carry intervals): latency_intervals is null" \
    jtrue '.latency_intervals == null' "$TMP/merged.json"
for t in tick1ms tick0; do
    got=$(jget "$TMP/$t.json" .requests_completed)
    check "$t: tick_us $(jget "$TMP/$t.json" .tick_us), completed $got within 1% of $((RATE * RATE_SECS))" \
        fcmp "$(awk -v g="$got" -v w="$((RATE * RATE_SECS))" 'BEGIN { d = g - w; if (d < 0) d = -d; print d / w }')" '<=' 0.01
done
check "--tick 1ms: send lag p50 $(jget "$TMP/tick1ms.json" .send_lag_ms.p50) ms within the tick (+ 1 ms for a loaded host)" \
    fcmp "$(jget "$TMP/tick1ms.json" .send_lag_ms.p50)" '<' 2
check "--tick 1ms and 0: tick_auto false in --json" \
    jtrue -s 'all(.[]; .tick_auto == false)' "$TMP/tick1ms.json" "$TMP/tick0.json"
A="$TMP/tickauto.json"
want_tick=$(awk -v r="$AUTO_RATE" 'BEGIN { t = 16e6 / r; if (t > 500) t = 500; if (t < 50 || r < 4000) t = 50; printf "%d", t + 0.5 }')
for f in "$A" "$TMP/tickauto-epoll.json"; do
    # shellcheck disable=SC2016 # $t is jq's
    check "--tick auto, io $(jget "$f" .io), $AUTO_RATE req/s: tick_us $(jget "$f" .tick_us) = $want_tick (16 requests per tick, within 50-500 us), tick_auto $(jget "$f" .tick_auto)" \
        jtrue --argjson t "$want_tick" '.tick_auto == true and .tick_us == $t and .tick_us >= 50 and .tick_us <= 500' "$f"
done
T5="$TMP/tick5ms.json"
T10="$TMP/tick10ms.json"
check "--tick 10ms at 150 req/s: send lag p50 $(jget "$T10" .send_lag_ms.p50) ms < 1.5 ms and latency p50 $(jget "$T10" .latency_ms.p50) ms < 1.5 ms (due at the grid point), $(jget "$T10" .requests_completed) completed" \
    jtrue '.send_lag_ms.p50 < 1.5 and .latency_ms.p50 < 1.5 and .requests_completed >= 290 and .requests_not_sent == 0' "$T10"
check "--tick 5ms, epoll: service time p50 $(jget "$T5" .service_time_ms.p50) ms < 2.5 ms (responses timed on arrival, not at the next tick), $(jget "$T5" .requests_completed) completed, no errors" \
    jtrue '.service_time_ms.p50 < 2.5 and .requests_completed >= 380 and .errors_total == 0 and .io == "epoll"' "$T5"
got=$(jget "$A" .requests_completed)
check "--tick auto: completed $got within 1% of $((AUTO_RATE * RATE_SECS)), no errors" \
    bash -c "[[ $(jget "$A" .errors_total) -eq 0 ]] && awk -v g=$got -v w=$((AUTO_RATE * RATE_SECS)) 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d <= 0.01 * w) }'"
# Each request waits at most one tick for the timer (less when a response wakes the loop):
# the median lag is within the tick, + 1 ms for a loaded host.
check "--tick auto: send lag p50 $(jget "$A" .send_lag_ms.p50) ms within the tick ($(jget "$A" .tick_us) us) + 1 ms" \
    jtrue '.send_lag_ms.p50 < .tick_us / 1000 + 1' "$A"
a0=$(jget "$TMP/agent0.json" .requests_completed); a1=$(jget "$TMP/agent1.json" .requests_completed)
M="$TMP/merged.json"
half=$((RATE * RATE_SECS / 2))
check "agents 0/2 and 1/2 each sent R/N x D: $a0 and $a1 within 1% of $half" \
    bash -c "fcmp() { awk -v a=\"\$1\" -v b=\"\$3\" \"BEGIN { exit !(a \$2 b) }\"; }; fcmp $(( a0 > half ? a0 - half : half - a0 )) '<=' $((half / 100)) && fcmp $(( a1 > half ? a1 - half : half - a1 )) '<=' $((half / 100))"
check "merge: requests_completed $(jget "$M" .requests_completed) = $a0 + $a1" \
    test "$(jget "$M" .requests_completed)" -eq $((a0 + a1))
check "merge: achieved $(jget "$M" .achieved_rps) req/s within 1% of $RATE" \
    fcmp "$(awk -v g="$(jget "$M" .achieved_rps)" -v w="$RATE" 'BEGIN { d = g - w; if (d < 0) d = -d; print d / w }')" '<=' 0.01
# shellcheck disable=SC2016 # $a and $b are jq variables
check "merge: latency count, send-lag count and status 200 are the agents' sums" \
    jtrue --slurpfile a "$TMP/agent0.json" --slurpfile b "$TMP/agent1.json" \
    '.latency_ms.count == $a[0].latency_ms.count + $b[0].latency_ms.count and
     .send_lag_ms.count == $a[0].send_lag_ms.count + $b[0].send_lag_ms.count and
     .status_counts["200"] == $a[0].status_counts["200"] + $b[0].status_counts["200"] and
     .errors_total == $a[0].errors_total + $b[0].errors_total' "$M"
# shellcheck disable=SC2016 # $a and $b are jq variables
check "merge: max is the agents' max; p99 lies between theirs (recomputed, not averaged)" \
    jtrue --slurpfile a "$TMP/agent0.json" --slurpfile b "$TMP/agent1.json" \
    '.latency_ms.max == ([$a[0].latency_ms.max, $b[0].latency_ms.max] | max) and
     .latency_ms.p99 >= ([$a[0].latency_ms.p99, $b[0].latency_ms.p99] | min) and
     .latency_ms.p99 <= ([$a[0].latency_ms.p99, $b[0].latency_ms.p99] | max)' "$M"
# shellcheck disable=SC2016 # $a and $b are jq variables
check "merge: answered latency count and unanswered requests are the agents' sums" \
    jtrue --slurpfile a "$TMP/agent0.json" --slurpfile b "$TMP/agent1.json" \
    '.latency_answered_ms.count == $a[0].latency_answered_ms.count + $b[0].latency_answered_ms.count and
     .requests_unanswered == $a[0].requests_unanswered + $b[0].requests_unanswered and
     .latency_ms.count == .latency_answered_ms.count + .requests_unanswered' "$M"
check "merge: 2 agents listed, connections summed, --hgrm written" \
    bash -c "jq -e '.merged_from == 2 and (.agents | length) == 2 and .connections == 8' '$M' >/dev/null && grep -q Percentile '$TMP/merged.hgrm'"
want=$((RATE * RATE_SECS))
got=$(jget "$TMP/rate.json" .requests_completed)
check "even arrivals: completed $got within 1% of $want" \
    fcmp "$(awk -v g="$got" -v w="$want" 'BEGIN { d = g - w; if (d < 0) d = -d; print d }')" \
    '<=' "$(awk -v w="$want" 'BEGIN { print w * 0.01 }')"
got=$(jget "$TMP/poisson.json" .requests_completed)
# Poisson counts have sd sqrt(n) (about 1.6% here): 5 sd is 8%.
check "poisson arrivals, 2 threads: completed $got within 8% of $want" \
    fcmp "$(awk -v g="$got" -v w="$want" 'BEGIN { d = g - w; if (d < 0) d = -d; print d }')" \
    '<=' "$(awk -v w="$want" 'BEGIN { print w * 0.08 }')"
check "constant rate: no errors" test "$(jget "$TMP/rate.json" .errors_total)" -eq 0
check "--threads 2: the threads are named '$thread_names' (lg-0 lg-1 beside main's loadgen)" \
    test "$thread_names" = "lg-0 lg-1 loadgen "
R="$TMP/rate.json"
check "send lag present and ordered: 0 <= p50 $(jget "$R" .send_lag_ms.p50) <= p99 $(jget "$R" .send_lag_ms.p99) <= max $(jget "$R" .send_lag_ms.max) ms" \
    jtrue '.send_lag_ms | (.p50 >= 0 and .p50 <= .p99 and .p99 <= .max and .mean >= 0)' "$R"
check "send lag counts every request sent ($(jget "$R" .send_lag_ms.count) = $(jget "$R" .requests_sent))" \
    jtrue '.send_lag_ms.count == .requests_sent' "$R"
check "constant-rate facts: tick_us 50 (auto, $RATE req/s batches too little), requests_not_sent $(jget "$R" .requests_not_sent) <= 1%, loadgen_cpu_pct $(jget "$R" .loadgen_cpu_pct) in (0, 100*threads]" \
    jtrue '.tick_us == 50 and .tick_auto == true and .requests_not_sent <= 0.01 * .requests_sent and .loadgen_cpu_pct > 0 and .loadgen_cpu_pct <= 100 * .threads and (.io == "io_uring" or .io == "epoll")' "$R"
check "closed loop: send lag, connection waits and tick are null (no planned times)" \
    jtrue '.send_lag_ms == null and .requests_waited_for_connection == null and .connection_wait_ms == null and .tick_us == null and .tick_auto == null and .requests_not_sent == null' "$TMP/pipe.json"
pc=$(jget "$TMP/pipe.json" .requests_completed)
check "closed loop, pipeline 8, 2 threads: $pc completed, no errors" \
    bash -c "[[ $pc -gt 1000 && $(jget "$TMP/pipe.json" .errors_total) -eq 0 ]]"
keys_missing=$(jq -r '[ "url","mix","threads","connections","pipeline","mode","arrivals",
    "target_rps","warmup_s","duration_s","elapsed_s","requests_sent","requests_completed",
    "achieved_rps","in_flight_at_end","connections_established","connections_failed","errors",
    "status_counts","unexpected_status_counts","latency_ms","service_time_ms","out_of_range",
    "loadgen_cpu_s","latency_answered_ms","requests_unanswered","connect_timeout_s" ] - keys
    | join(",")' "$TMP/rate.json")
check "--json has every contract key (missing: ${keys_missing:-none})" test -z "$keys_missing"

# ---- error accounting ----
start_helper fault_server --status-every 7 --close-every 5 --hang-every 53 --garbage-every 41
"$LOADGEN" --url "http://127.0.0.1:$SERVER_PORT" --rate 500 --duration 2 --connections 8 \
    --timeout 300ms --json "$TMP/fault.json" --quiet
stop_helper
read -r s_req s_ok s_500 s_closed s_hung s_garbage < <(sed -n 's/^requests=\([0-9]*\) ok=\([0-9]*\) status500=\([0-9]*\) closed=\([0-9]*\) hung=\([0-9]*\) garbage=\([0-9]*\)$/\1 \2 \3 \4 \5 \6/p' "$TMP/fault_server.out")
F="$TMP/fault.json"
inflight=$(jget "$F" .in_flight_at_end)
echo "# server: requests=$s_req ok=$s_ok 500=$s_500 closed=$s_closed hung=$s_hung garbage=$s_garbage; loadgen: $(jq -c '{errors,status_counts,in_flight_at_end,requests_sent}' "$F")"
# A response still in flight when the window closed is in_flight_at_end, not counted:
# each class must equal the server's count, less at most what was in flight.
within() { local lg="$1" srv="$2"; [[ "$lg" -le "$srv" && "$lg" -ge $((srv - inflight)) ]]; }
check "200s: loadgen $(jget "$F" '.status_counts["200"]') = server $s_ok" within "$(jget "$F" '.status_counts["200"] // 0')" "$s_ok"
check "500s: status errors $(jget "$F" .errors.status) = server $s_500" within "$(jget "$F" .errors.status)" "$s_500"
check "500s: unexpected_status_counts[500] = server $s_500" within "$(jget "$F" '.unexpected_status_counts["500"] // 0')" "$s_500"
check "closed connections: read errors $(jget "$F" .errors.read) = server $s_closed" within "$(jget "$F" .errors.read)" "$s_closed"
check "malformed responses: parse errors $(jget "$F" .errors.parse) = server $s_garbage" within "$(jget "$F" .errors.parse)" "$s_garbage"
check "unanswered: timeouts $(jget "$F" .errors.timeout) = server $s_hung" within "$(jget "$F" .errors.timeout)" "$s_hung"
check "no connect/write errors" test "$(jget "$F" '.errors.connect + .errors.write')" -eq 0
acct=$(jget "$F" '.requests_completed + .errors.read + .errors.parse + .errors.timeout + .in_flight_at_end')
check "every request sent is accounted once: $acct = sent $(jget "$F" .requests_sent)" \
    test "$acct" -eq "$(jget "$F" .requests_sent)"
# The hung requests timed out at 300 ms: in the corrected latency at that age, beside the
# answered ones; the answered-only histogram is the completed requests.
check "timed-out requests are in the latency: count $(jget "$F" .latency_ms.count) = completed + timeouts + in flight at end + not sent, max $(jget "$F" .latency_ms.max) ms >= the 300 ms timeout; answered only: $(jget "$F" .latency_answered_ms.count)" \
    jtrue '.errors.timeout > 0 and .latency_ms.max >= 300 and
           .latency_ms.count == .requests_completed + .errors.timeout + .in_flight_at_end + .requests_not_sent and
           .requests_unanswered == .errors.timeout + .in_flight_at_end + .requests_not_sent and
           .latency_answered_ms.count == .requests_completed and
           .latency_answered_ms.max <= .latency_ms.max' "$F"
# The end of an overloaded run where every response closes its connection: requests lost
# around the window's end are counted once (an error, or in flight at the end, not both),
# and what was due in the window is sent or not_sent. Three runs: the defect this guards
# against showed in 4 of 6.
start_helper fault_server --close-every 1
for i in 1 2 3; do
    "$LOADGEN" --url "http://127.0.0.1:$SERVER_PORT" --rate 30000 --duration 1 \
        --connections 128 --json "$TMP/closeall$i.json" --quiet
done
stop_helper
for i in 1 2 3; do
    C="$TMP/closeall$i.json"
    acct=$(jget "$C" '.requests_completed + .errors.read + .errors.parse + .errors.timeout + .errors.write + .errors.status + .in_flight_at_end')
    check "every response closes, 30,000 req/s, run $i: accounted $acct = sent $(jget "$C" .requests_sent) (not sent $(jget "$C" .requests_not_sent))" \
        test "$acct" -eq "$(jget "$C" .requests_sent)"
done

# ---- connect timeout, reconnect backoff, unanswered requests (silent_server) ----
# A listener whose accept queue is full drops every SYN: without a connect timeout the
# connect hangs for the kernel's ~2 minutes (bounded here by `timeout`).
start_helper silent_server --no-accept 1
t0=$(date +%s%N)
rc=0; timeout -k 1 15 "$LOADGEN" --url "http://127.0.0.1:$SERVER_PORT" --duration 1 \
    --connections 2 --connect-timeout 300ms --quiet 2>"$TMP/err" || rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
stop_helper
check "SYNs dropped, --connect-timeout 300ms: exit $rc (want 1) after $ms ms (< 5,000), '$(head -c 90 "$TMP/err")'" \
    bash -c "[[ $rc -eq 1 && $ms -lt 5000 ]] && grep -q 'timed out' '$TMP/err'"
# A server that accepts and closes each connection at once (ours past --max-conns): the
# reconnects back off (25-50 ms, doubling to 0.5-1 s), about 7 connects per connection
# in 2 s rather than thousands.
start_helper silent_server --accept-close 1
"$LOADGEN" --url "http://127.0.0.1:$SERVER_PORT" --duration 2 --connections 4 \
    --json "$TMP/acceptclose.json" --quiet
stop_helper
accepted=$(sed -n 's/^accepted=//p' "$TMP/silent_server.out")
AC="$TMP/acceptclose.json"
check "accept-and-close server, 4 connections, 2 s: $accepted connects (12..48: backoff), $(jget "$AC" .connections_established) established, read+write errors $(jget "$AC" '.errors.read + .errors.write')" \
    bash -c "[[ $accepted -ge 12 && $accepted -le 48 && $(jget "$AC" .connections_established) -eq $accepted && $(jget "$AC" '.errors.read + .errors.write') -ge 4 ]]"
# A server that never answers, at 200 req/s for 1 s on 4 connections: 4 requests in flight
# at the end and 196 due but not sent, all of them in the corrected latency at the age
# they had reached at the end (the k-th due at k x 5 ms: 1,000 ms down to 5 ms), none in
# the answered one; --hgrm, --hist-out and a merge of it agree.
start_helper silent_server
"$LOADGEN" --url="http://127.0.0.1:$SERVER_PORT" --rate=200 --duration=1 --connections=4 \
    --json="$TMP/mute.json" --hgrm="$TMP/mute.hgrm" --hist-out="$TMP/mute.hist.json" --quiet
stop_helper
U="$TMP/mute.json"
check "never answered: latency count $(jget "$U" .latency_ms.count) = 200 (in flight $(jget "$U" .in_flight_at_end) + not sent $(jget "$U" .requests_not_sent)), p50 $(jget "$U" .latency_ms.p50) ms in [400, 600], max $(jget "$U" .latency_ms.max) ms in [950, 1050]; answered $(jget "$U" .latency_answered_ms.count)" \
    jtrue '.latency_ms.count == 200 and .requests_unanswered == 200 and .in_flight_at_end == 4 and
           .requests_not_sent == 196 and .latency_answered_ms.count == 0 and .requests_completed == 0 and
           .latency_ms.p50 >= 400 and .latency_ms.p50 <= 600 and
           .latency_ms.max >= 950 and .latency_ms.max <= 1050' "$U"
check "never answered: the intervals hold them too ($(jq -c .latency_intervals.count "$U"))" \
    jtrue '(.latency_intervals.count | add) == .latency_ms.count' "$U"
check "never answered: --hgrm spectrum of the same 200 ($(grep -o 'Total count *= *[0-9]*' "$TMP/mute.hgrm"))" \
    grep -Eq 'Total count *= *200\b' "$TMP/mute.hgrm"
check "never answered: --hist-out latency_us total 200, latency_answered_us total 0" \
    jtrue '.histograms.latency_us.total == 200 and .histograms.latency_answered_us.total == 0' \
    "$TMP/mute.hist.json"
"$LOADGEN" merge --quiet --hgrm="$TMP/mute-merged.hgrm" "$TMP/mute-merged.json" "$TMP/mute.hist.json"
# shellcheck disable=SC2016 # $u is jq's
check "never answered: loadgen merge (--hgrm=FILE) keeps both histograms and the count" \
    jtrue --slurpfile u "$U" '.latency_ms == $u[0].latency_ms and
           .latency_answered_ms == $u[0].latency_answered_ms and .requests_unanswered == 200' \
    "$TMP/mute-merged.json"
check "never answered: the merge's --hgrm spectrum is the run's" \
    cmp -s "$TMP/mute.hgrm" "$TMP/mute-merged.hgrm"

# ---- mix fidelity against the real server ----
route_counts() { # prints "user_get user_list user_create" totals over all statuses
    curl -s -m 5 "http://127.0.0.1:$1/metrics" | awk '
        /^http_requests_total\{/ {
            if (match($0, /route="[a-z_]+"/)) { r = substr($0, RSTART + 7, RLENGTH - 8); c[r] += $NF }
        }
        END { printf "%d %d %d\n", c["user_get"], c["user_list"], c["user_create"] }'
}
fidelity() { # fidelity NAME BEFORE AFTER
    local name="$1" g0 l0 c0 g1 l1 c1
    read -r g0 l0 c0 <<<"$2"
    read -r g1 l1 c1 <<<"$3"
    local g=$((g1 - g0)) l=$((l1 - l0)) c=$((c1 - c0))
    local t=$((g + l + c))
    local msg
    msg=$(awk -v g="$g" -v l="$l" -v c="$c" -v t="$t" 'BEGIN {
        if (t < 1000) { printf "only %d requests", t; exit 1 }
        pg = 100 * g / t; pl = 100 * l / t; pc = 100 * c / t
        printf "%.2f/%.2f/%.2f%% of %d", pg, pl, pc, t
        d1 = pg - 80; d2 = pl - 15; d3 = pc - 5
        if (d1 < 0) d1 = -d1; if (d2 < 0) d2 = -d2; if (d3 < 0) d3 = -d3
        exit !(d1 <= 1 && d2 <= 1 && d3 <= 1) }') && rc=0 || rc=$?
    check "$name: routes user_get/user_list/user_create $msg within 1 point of 80/15/5" test "$rc" -eq 0
}
if [[ -x "$ASYNC_SERVER" ]]; then
    port=$(bench_free_port)
    BEARER_TOKEN="it-loadgen-token-bbbbbbbbbbbbbbbb"
    "$ASYNC_SERVER" --store=memory --host 127.0.0.1 --port "$port" --threads 1 \
        --seed-users 10000 --bearer "$BEARER_TOKEN" >"$TMP/async.log" 2>&1 &
    SERVER_PID=$!
    PIDS+=("$SERVER_PID")
    for _ in $(seq 100); do
        curl -s -m 1 "http://127.0.0.1:$port/ping" >/dev/null 2>&1 && break
        sleep 0.05
    done
    before=$(route_counts "$port")
    "$LOADGEN" --url "http://127.0.0.1:$port" --mix loadgen-scripts/s3_mixed.mix \
        --bearer "$BEARER_TOKEN" --duration 2 --connections 8 --json "$TMP/s3.json" --quiet
    after=$(route_counts "$port")
    fidelity "loadgen s3" "$before" "$after"
    check "loadgen s3: every status as expected ($(jq -c .status_counts "$TMP/s3.json"))" \
        test "$(jget "$TMP/s3.json" .errors_total)" -eq 0
    if command -v "$WRK" >/dev/null; then
        before=$after
        "$WRK" -t1 -c8 -d2s -s loadgen-scripts/wrk_mix.lua "http://127.0.0.1:$port" \
            -- loadgen-scripts/s3_mixed.mix "$BEARER_TOKEN" >"$TMP/wrk.out" 2>&1
        after=$(route_counts "$port")
        fidelity "wrk + wrk_mix.lua s3" "$before" "$after"
        check "wrk + wrk_mix.lua: no non-2xx responses" bash -c "! grep -q 'Non-2xx' '$TMP/wrk.out'"
    else
        skip "wrk not installed"
        skip "wrk not installed"
    fi
    stop_helper
else
    skip "$ASYNC_SERVER absent: mix fidelity (loadgen)"
    skip "$ASYNC_SERVER absent: every status as expected"
    skip "$ASYNC_SERVER absent: mix fidelity (wrk)"
    skip "$ASYNC_SERVER absent: wrk statuses"
fi

# At a constant rate every connection carries its share (the longest idle connection takes
# the next request), as N clients would, not the few that answered last: a server that
# counts requests per connection, 16 connections at 1,000 req/s, and pipelined (4 deep).
spread() { # ARGS...: loadgen flags; prints "connections min max" of requests per connection
    python3 - "$LOADGEN" "$@" <<'PY'
import socket, subprocess, sys, threading
counts, lock = {}, threading.Lock()
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(64)
def serve(c, i):
    buf = b""
    while True:
        d = c.recv(65536)
        if not d:
            break
        buf += d
        n = buf.count(b"\r\n\r\n")
        if n:
            buf = buf[buf.rindex(b"\r\n\r\n") + 4:]
            with lock:
                counts[i] = counts.get(i, 0) + n
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npong" * n)
def accept():
    i = 0
    while True:
        c, _ = srv.accept()
        i += 1
        threading.Thread(target=serve, args=(c, i), daemon=True).start()
threading.Thread(target=accept, daemon=True).start()
url = "http://127.0.0.1:%d/ping" % srv.getsockname()[1]
subprocess.run([sys.argv[1], "--url", url, "--quiet", "--json", "/dev/null"] + sys.argv[2:], check=True)
with lock:
    v = sorted(counts.values())
print(len(v), v[0] if v else 0, v[-1] if v else 0)
PY
}
for args in "--pipeline 1" "--pipeline 4"; do
    # shellcheck disable=SC2086 # word-split flags
    read -r nc lo hi < <(spread --rate 1000 --duration 1 --connections 16 $args)
    check "constant rate, 16 connections, $args: all $nc carried requests, $lo to $hi each (within 20% of one another)" \
        awk -v n="$nc" -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(n == 16 && lo > 0 && hi <= 1.2 * lo) }'
done

# A thread that cannot start (its stack does not fit the address space allowed): exit 1
# with the reason, the threads already started end, no abort and no hang. 8 GiB stacks:
# not even the first; 256 MiB stacks in 4 GiB: some start, a later one fails.
if grep -q -e __asan_init -e __tsan_init "$LOADGEN"; then
    skip "thread start failures: a sanitizer runtime needs more address space than the limit leaves"
    skip "thread start failures: a sanitizer runtime needs more address space than the limit leaves"
else
    for spec in "8388608 1" "262144 64"; do
        read -r stack_kib threads <<<"$spec"
        rc=0
        (ulimit -s "$stack_kib" && ulimit -v 4194304 &&
            exec timeout 20 "$LOADGEN" --url http://127.0.0.1:1 --threads "$threads" \
                --connections 64 --duration 1) 2>"$TMP/thread.err" || rc=$?
        check "--threads $threads with $((stack_kib / 1024)) MiB stacks in 4 GiB: exit $rc (want 1), '$(head -c 80 "$TMP/thread.err")'" \
            bash -c "[[ $rc -eq 1 ]] && grep -q 'cannot start thread' '$TMP/thread.err'"
    done
fi

echo "1..$N"
