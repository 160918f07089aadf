#!/usr/bin/env bash
# it_running.sh: a server already running (a definition with url and no command; servers/
# README.md), with tests/helpers/contract_server.py started here as that server: ./runner.sh
# --verify checks it without starting or stopping it (it still answers afterwards) and
# records its url; a measured run of it is refused with the reason (its CPU is not read);
# once it is gone, --verify fails within READY_TIMEOUT_SEC naming the url. Loopback only;
# a few seconds.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KEEP_RESULTS="${KEEP_RESULTS:-0}"     # 1: keep the temporary folder

usage() {
    cat <<USAGE
usage: tests/it_running.sh [--help]
Environment: KEEP_RESULTS ($KEEP_RESULTS).
USAGE
}
# shellcheck source=tests/lib/it.sh
. "$ROOT/tests/lib/it.sh"
it_args "$@"
it_tmpdir it_running
export RESULTS_DIR="$TMP/results" SERVER_DEFS="$TMP/defs"
BEARER=test-token-aaaaaaaaaaaaaaaaaaaa
HELPER_PID=""
# shellcheck disable=SC2317  # called by it_cleanup
it_on_exit() {
    if [[ -n "$HELPER_PID" ]]; then kill "$HELPER_PID" 2>/dev/null || true; wait "$HELPER_PID" 2>/dev/null || true; fi
}

n=0
check() { # check NAME COMMAND...: one TAP line
    n=$((n + 1))
    if "${@:2}"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}

python3 "$ROOT/tests/helpers/contract_server.py" --port 0 --bearer "$BEARER" 2>"$TMP/helper.err" &
HELPER_PID=$!
port=""
for _ in $(seq 100); do
    port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$TMP/helper.err")
    [[ -n "$port" ]] && break
    sleep 0.05
done
mkdir -p "$SERVER_DEFS"
printf 'description = "started by the test"\nscenarios = ["s1", "s2"]\nurl = "http://127.0.0.1:%s"\n' \
    "$port" >"$SERVER_DEFS/running.toml"

rc=0
BEARER=$BEARER "$ROOT/runner.sh" --verify running s2 --batch=b >"$TMP/out" 2>&1 || rc=$?
check "--verify of a server already running passes" test "$rc" = 0
check "its run records the url and says its CPU is not measured" bash -c \
    "jq -e '.config.server_definition.url == \"http://127.0.0.1:$port\" and .failure == null' \
        '$RESULTS_DIR/b/running-s2-verify/result.json' >/dev/null &&
     grep -q 'already running at http://127.0.0.1:$port (not started here; its CPU is not measured)' '$TMP/out'"
check "it was neither started nor stopped: it still answers" \
    bash -c "curl -sf 'http://127.0.0.1:$port/ping' | grep -qx pong"

rc=0
"$ROOT/runner.sh" running s2 --quick >"$TMP/out" 2>&1 || rc=$?
check "a measured run of it is refused (exit 2) with the reason" \
    bash -c "test $rc = 2 && grep -q 'only --verify checks it yet' '$TMP/out'"

kill "$HELPER_PID"; wait "$HELPER_PID" 2>/dev/null || true; HELPER_PID=""
rc=0
READY_TIMEOUT_SEC=1 "$ROOT/runner.sh" --verify running s1 --batch=b >"$TMP/out" 2>&1 || rc=$?
check "once it is gone, --verify fails naming its url" bash -c \
    "test $rc = 1 && jq -e '.failure | test(\"at http://127.0.0.1:$port did not answer /ping\")' \
        '$RESULTS_DIR/b/running-s1-verify/result.json' >/dev/null"
echo "1..$n"
