#!/usr/bin/env bash
# it_interim.sh: build/loadgen against tests/helpers/interim_server.py, a server that sends 1xx
# interim responses (RFC 9110 15.2): 103 Early Hints before every answer, now and then, 102
# and 103 before every answer, 100 Continue before reading a request's body, each with one
# request in flight and with four pipelined, and an unasked-for 101 Switching Protocols. A
# request completes on its final response only: no status error, no 1xx status counted,
# every request of the window completed or in flight at its end; the 101 is a parse error.
# Prints TAP. Seven runs of 1 s each against a loopback server (about 12 s in all).
# shellcheck disable=SC2016  # single-quoted jq filters bind their own $variables
set -euo pipefail

BUILD="${BUILD:-build}"
LOADGEN="${LOADGEN:-$BUILD/loadgen}"
SECS="${SECS:-1}"

usage() {
    cat <<USAGE
usage: tests/it_interim.sh [--help]
The load generator against a server that sends 1xx interim responses; prints TAP.
Environment: BUILD ($BUILD), LOADGEN, SECS ($SECS, each run's duration).
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
check() { # check NAME CONDITION-COMMAND...
    local name="$1"; shift
    N=$((N + 1))
    if "$@"; then echo "ok $N - $name"; else echo "not ok $N - $name"; fi
}
jtrue() { jq -e "$@" >/dev/null; }

if [[ ! -x "$LOADGEN" ]] || ! command -v jq >/dev/null; then
    echo "1..0 # SKIP $LOADGEN not built or jq missing"
    exit 0
fi

cat >"$TMP/post.mix" <<'MIX'
1 POST /users {"name":"i-{seq}","email":"i-{seq}@example.com"} 201
1 GET /ping - 200
MIX

# run MODE PIPELINE: the server in MODE, the load generator closed loop over 4 connections
# with PIPELINE requests in flight each; leaves $TMP/MODE-PIPELINE.{json,server}.
run() {
    local mode="$1" pipeline="$2" out="$TMP/$1-$2" port=""
    python3 tests/helpers/interim_server.py --mode "$mode" >"$out.server" &
    local pid=$!
    PIDS+=("$pid")
    for _ in $(seq 100); do
        port=$(awk '/^port /{print $2}' "$out.server")
        [[ -n "$port" ]] && break
        sleep 0.05
    done
    "$LOADGEN" --url "http://127.0.0.1:$port" --mix "$TMP/post.mix" --connections 4 \
        --pipeline "$pipeline" --duration "$SECS" --json "$out.json" >"$out.log" 2>&1 || true
    kill -TERM "$pid"
    wait "$pid" || true
}

# Each request of the window answered once, on its final response: no error, only final
# statuses, completed + in flight at the end = sent, and the server's interim answers many.
final_only() {
    local f="$TMP/$1.json" interim
    interim=$(awk '/^final /{print $4}' "$TMP/$1.server")
    [[ -s "$f" ]] && jtrue '.requests_completed > 100
        and ([.errors[]] | add) == 0
        and (.unexpected_status_counts | length) == 0
        and ([.status_counts | keys[] | tonumber | select(. < 200)] | length) == 0
        and .requests_completed + .in_flight_at_end == .requests_sent' "$f" &&
        [[ "${interim:-0}" -gt 100 ]]
}
# The load generator completed no more requests than the server answered finally.
not_above_server() {
    local final
    final=$(awk '/^final /{print $2}' "$TMP/$1.server")
    [[ -n "$final" ]] && jtrue --argjson f "$final" '.requests_completed <= $f' "$TMP/$1.json"
}

for spec in hints-1 hints-4 some-4 many-4 continue-1 continue-4; do
    run "${spec%-*}" "${spec#*-}"
    check "$spec: every request completes on its final response, 1xx skipped" final_only "$spec"
    check "$spec: completed <= the server's final responses" not_above_server "$spec"
done

# An unasked-for 101 ends the connection as a parse error (each of its requests lost),
# is never counted as a status, and the other requests still complete.
run switch 4
check "switch-4: an unasked-for 101 is a parse error, not a status" \
    jtrue '.errors.parse > 0 and .errors.status == 0 and .requests_completed > 100
        and (.status_counts | has("101") | not)' "$TMP/switch-4.json"

echo "1..$N"
