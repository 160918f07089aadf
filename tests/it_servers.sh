#!/usr/bin/env bash
# it_servers.sh: runner.sh with server definitions from elsewhere (TAP), in a temporary
# SERVER_DEFS folder: a wrapper script that starts build/async-server as its child without
# exec (every placeholder filled, run in the run folder, measured, stopped, nothing left
# behind); a server that lies on /users (refused by verify, the case named, no figure
# measured); one that never becomes ready (refused within READY_TIMEOUT_SEC); one that exits
# at once (its error line quoted); one that ignores SIGTERM (killed at STOP_TIMEOUT_SEC); a
# port taken by another process; --list-servers and a name defined twice; and the shipped
# peers through --verify: node-users, and nginx-ping when nginx is installed; and a pair of
# two servers this project did not build (the wrapper and node-users) through run_all.sh --smoke.
# Needs build/async-server and build/loadgen (fails without them). Loopback only.
# shellcheck disable=SC2016  # single-quoted jq filters bind their own $variables
# test-timeout: 300
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="${BUILD:-build}"
KEEP_RESULTS="${KEEP_RESULTS:-0}"     # 1: keep the temporary folder

usage() {
    cat <<USAGE
usage: tests/it_servers.sh [--help]
Environment: BUILD ($BUILD), KEEP_RESULTS ($KEEP_RESULTS).
USAGE
}
# shellcheck source=tests/lib/it.sh
. "$ROOT/tests/lib/it.sh"
it_args "$@"
it_tmpdir it_servers

BUILD_ABS=$BUILD
[[ "$BUILD_ABS" == /* ]] || BUILD_ABS="$ROOT/$BUILD_ABS"
export RESULTS_DIR="$TMP/results" SERVER_DEFS="$TMP/defs" RUNNER_BUILD=0 BUILD="$BUILD_ABS"
mkdir -p "$SERVER_DEFS"
LISTENER_PID=""
# shellcheck disable=SC2317  # called by it_cleanup
it_on_exit() {
    if [[ -n "$LISTENER_PID" ]]; then kill "$LISTENER_PID" 2>/dev/null || true; wait "$LISTENER_PID" 2>/dev/null || true; fi
}

# left PATTERN: the processes whose command line matches PATTERN (pgrep -f), one a line.
left() { pgrep -f -- "$1" || true; }
# run_rc ARGS...: runner.sh's exit status, its stderr in $TMP/err.
run_rc() { local rc=0; "$ROOT/runner.sh" "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?; echo "$rc"; }
show_err() { sed 's/^/# /' "$TMP/err" | tail -n 8; }

for b in async-server loadgen; do
    [[ -x "$BUILD_ABS/$b" ]] || { echo "not ok 1 - $BUILD_ABS/$b is not built (make)"; echo "1..1"; exit 1; }
done

# ---- definitions ---------------------------------------------------------------------------
# A wrapper that does not exec: its child does the work; it writes what it was given (the
# placeholders, the env and its working directory) into the run folder first.
cat >"$TMP/wrap.sh" <<'EOF'
#!/bin/sh
printf '%s\n' "$@" >wrap-args.txt
printf 'cwd=%s\nWRAP_RUN_DIR=%s\nWRAP_DB=%s\nWRAP_ROOT=%s\n' "$(pwd)" "$WRAP_RUN_DIR" "$WRAP_DB" "$WRAP_ROOT" >wrap-env.txt
echo "wrapper: starting $1"
"$@"
echo "wrapper: the child exited $?"
EOF
chmod +x "$TMP/wrap.sh"
cat >"$SERVER_DEFS/wrapped.toml" <<EOF
description = "async-server behind a wrapper script that does not exec"
scenarios = ["s1"]
command = ["$TMP/wrap.sh", "{build}/async-server", "--store=memory", "--host", "{host}", "--port", "{port}",
           "--threads", "{threads}", "--bearer", "{bearer}", "--seed-users", "{seed_users}",
           "--access-log", "{access_log}"]
[env]
WRAP_RUN_DIR = "{run_dir}"
WRAP_DB = "{db}"
WRAP_ROOT = "{root}"
EOF
helper_def() {  # helper_def NAME SCENARIOS LIE: contract_server.py with one breach
    cat >"$SERVER_DEFS/$1.toml" <<EOF
scenarios = [$2]
command = ["python3", "{root}/tests/helpers/contract_server.py", "--host", "{host}", "--port", "{port}",
           "--bearer", "{bearer}", "--seed-users", "{seed_users}", "--lie", "$3"]
EOF
}
helper_def liar '"s2"' user-email
helper_def stubborn '"s1"' ignore-term
cat >"$SERVER_DEFS/sleeper.toml" <<'EOF'
scenarios = ["s1"]
command = ["sleep", "{port}"]
EOF
cat >"$SERVER_DEFS/quitter.toml" <<'EOF'
scenarios = ["s1"]
command = ["sh", "-c", "echo 'quitter: starting'; echo 'quitter: error: cannot open /etc/quitter.conf' >&2; exit 3"]
EOF

# ---- --list-servers, a duplicate name, an unlisted scenario ---------------------------------
is "--list-servers exits 0" "$(run_rc --list-servers)" 0
ok "--list-servers lists a SERVER_DEFS definition with its file" grep -Eq "^liar +s2 +$SERVER_DEFS/liar.toml" "$TMP/out"
ok "--list-servers lists the built-in and shipped ones" bash -c "grep -Eq '^async-mem +s1,s2,s3 +servers/async-mem.toml' '$TMP/out' && grep -Eq '^nginx-ping +s1 ' '$TMP/out' && grep -Eq '^node-users +s1,s2,s3 ' '$TMP/out'"
mkdir -p "$TMP/dup"
cp "$SERVER_DEFS/liar.toml" "$TMP/dup/liar.toml"
is "a name defined twice: --list-servers exits 2" "$(SERVER_DEFS="$SERVER_DEFS:$TMP/dup" run_rc --list-servers)" 2
ok "... naming both files" bash -c "grep -qF '$SERVER_DEFS/liar.toml' '$TMP/err' && grep -qF '$TMP/dup/liar.toml' '$TMP/err'"
is "a scenario the definition does not list: exit 2" "$(run_rc liar s1 --smoke)" 2
ok "... saying which it lists" grep -q "liar does not serve s1.*lists s2" "$TMP/err"
is "an unknown server: exit 2" "$(run_rc urus-mem s1 --smoke)" 2
is "no usage error left a run folder" "$(find "$RESULTS_DIR" -mindepth 1 2>/dev/null | head -3)" ""

# ---- a wrapper script whose child does the work ---------------------------------------------
rc=$(run_rc wrapped s1 --smoke --batch=wrap)
is "wrapper: ./runner.sh wrapped s1 --smoke exits 0" "$rc" 0
[[ "$rc" == 0 ]] || show_err
run="$RESULTS_DIR/wrap/wrapped-s1"
res="$run/result.json"
[[ -f "$res" ]] || echo '{}' >"$res"
port=$(jq -r '.config.port // 0' "$res")
jqok "wrapper: no failure, the probe and the sustain measured" \
    '.failure == null and .saturation_rps > 0 and .sustained_rps > 0'
jqfile "wrapper: config.server_definition names the file, its sha256 and the command as run" "$res" \
    '.config.server_definition | .name == "wrapped" and .file == $f and .sha256 == $sha and .ours == false
     and .command[0] == $wrap and (.command | index(["--port", $port])) != null and .env.WRAP_RUN_DIR != null' \
    --arg f "$SERVER_DEFS/wrapped.toml" --arg sha "$(sha256sum "$SERVER_DEFS/wrapped.toml" | cut -d' ' -f1)" \
    --arg wrap "$TMP/wrap.sh" --arg port "$port"
jqok "wrapper: /metrics found (ours behind the wrapper), the handler figures measured" \
    '.config.server_metrics == true and (.handler_p99_us | type) == "number"'
ok "wrapper: server.cmd holds setsid, taskset and the filled command" \
    grep -qE "^cd .* && setsid taskset -c [0-9,-]+ env WRAP_RUN_DIR=.* $TMP/wrap.sh .*--port $port " "$run/server.cmd"
want_args=$(printf '%s\n' "$BUILD_ABS/async-server" --store=memory --host 127.0.0.1 --port "$port" --threads \
    "$(jq -r '.config.server_threads' "$res")" --bearer test-token-aaaaaaaaaaaaaaaaaaaa --seed-users 10000 \
    --access-log /dev/null)
is "wrapper: every placeholder of the command filled ({build} {host} {port} {threads} {bearer} {seed_users} {access_log})" \
    "$(cat "$run/wrap-args.txt" 2>/dev/null)" "$want_args"
is "wrapper: run in the run folder, with the env's {run_dir} {db} {root}" "$(cat "$run/wrap-env.txt" 2>/dev/null)" \
    "$(printf 'cwd=%s\nWRAP_RUN_DIR=%s\nWRAP_DB=%s\nWRAP_ROOT=%s' "$run" "$run" "$run/server.db" "$ROOT")"
# the child does the work: its CPU must be counted (the wrapper alone would show ~0%)
jqok "wrapper: the child's CPU counted (probe and sustain: 2 processes, server CPU above 20% of one CPU)" \
    '.probe.server_processes == 2 and .server_processes == 2 and .probe.server_cpu_pct > 20 and .server_cpu_pct > 20'
jqok "wrapper: the child's threads listed (io-0 among them)" \
    '[.probe.server_threads[].name] | index("io-0") != null'
ok "wrapper: the start counted 2 processes in the tree (the wrapper and its child)" \
    grep -q "start: wrapped (wrap.sh) pid [0-9]*, 2 process(es)" "$run/runner.log"
jqok "wrapper: stopped by SIGTERM within the timeout (the wrapper ends by the signal or exits 0)" \
    '.server_exit.killed == false and (.server_exit.code == 0 or .server_exit.code == 143)'
ok "wrapper: the child was stopped too (SIGTERM to the tree), it said so" grep -q "async-server: SIGTERM received, stopping" "$run/server.log"
is "wrapper: no process of the tree left (async-server --port $port)" "$(left "async-server.*--port $port( |\$)")" ""

# ---- a server that lies on /users -----------------------------------------------------------
rc=$(run_rc liar s2 --smoke --batch=liar)
is "liar: refused, exit 1" "$rc" 1
res="$RESULTS_DIR/liar/liar-s2/result.json"
[[ -f "$res" ]] || echo '{}' >"$res"
port=$(jq -r '.config.port // 0' "$res")
jqok "liar: failure names the verify stage and the case (the seeded users, GET /users/10000)" \
    '.failure | test("^verify: 2 of 8 contract cases failed") and test("seeded users") and test("GET /users/10000")'
jqok "liar: nothing measured" \
    '.saturation_rps == null and .sustained_rps == null and .probe == null and .req_per_cpu_sec == null'
ok "liar: no load generator output" bash -c "! ls '$RESULTS_DIR/liar/liar-s2/' | grep -Eq '^(probe|loadgen)'"
ok "liar: verify.log names the failing cases" grep -q "^FAIL - seeded users" "$RESULTS_DIR/liar/liar-s2/verify.log"
is "liar: no process left" "$(left "contract_server.py.*--port $port ")" ""

# ---- a server that never becomes ready ------------------------------------------------------
t0=$(date +%s%N)
rc=$(READY_TIMEOUT_SEC=2 run_rc sleeper s1 --smoke --batch=sleeper)
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
is "never ready: exit 1" "$rc" 1
ok "never ready: refused within READY_TIMEOUT_SEC (2 s) plus the start and stop ($ms ms < 8000)" test "$ms" -lt 8000
res="$RESULTS_DIR/sleeper/sleeper-s1/result.json"
[[ -f "$res" ]] || echo '{}' >"$res"
port=$(jq -r '.config.port // 0' "$res")
jqok "never ready: failure says so" '.failure | test("did not answer /ping with 200 within 2 s")'
is "never ready: its process was ended (sleep $port)" "$(left "^sleep $port\$")" ""

# ---- a server that exits at once ------------------------------------------------------------
rc=$(run_rc quitter s1 --smoke --batch=quitter)
is "exits at once: exit 1" "$rc" 1
res="$RESULTS_DIR/quitter/quitter-s1/result.json"
[[ -f "$res" ]] || echo '{}' >"$res"
jqok "exits at once: its exit status and first error line in the failure" \
    '.failure | test("exited before /ping answered 200") and test("exit status 3") and test("error: cannot open /etc/quitter.conf")'

# ---- a server that ignores SIGTERM ----------------------------------------------------------
rc=$(STOP_TIMEOUT_SEC=1 run_rc --verify stubborn --batch=stubborn)
is "ignores SIGTERM: --verify exits 1" "$rc" 1
res="$RESULTS_DIR/stubborn/stubborn-s1-verify/result.json"
[[ -f "$res" ]] || echo '{}' >"$res"
port=$(jq -r '.config.port // 0' "$res")
jqok "ignores SIGTERM: killed at STOP_TIMEOUT_SEC, said so" \
    '.failure | test("did not exit within 1 s of SIGTERM: 1 process\\(es\\) of its tree killed")'
jqok "ignores SIGTERM: server_exit.killed" '.server_exit.killed == true'
is "ignores SIGTERM: no process left" "$(left "contract_server.py.*--port $port ")" ""

# ---- a port another process holds ------------------------------------------------------------
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -c 'import socket, sys, time; s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(60)' \
    "$port" &
LISTENER_PID=$!
for _ in $(seq 1 100); do ss -ltn | grep -q ":$port " && break; sleep 0.05; done
is "a port in use: exit 1" "$(PORT=$port run_rc async-mem s1 --smoke --batch=taken)" 1
ok "... saying so before anything starts" \
    bash -c "jq -e '.failure | test(\"port $port is already in use\")' '$RESULTS_DIR/taken/async-mem-s1/result.json' >/dev/null && [[ ! -s '$RESULTS_DIR/taken/async-mem-s1/server.log' ]]"
kill "$LISTENER_PID" 2>/dev/null || true
wait "$LISTENER_PID" 2>/dev/null || true
LISTENER_PID=""

# ---- the shipped peers pass verify -----------------------------------------------------------
rc=$(run_rc --verify node-users --batch=node)
is "node-users: ./runner.sh --verify node-users passes (s1, s2, s3)" "$rc" 0
[[ "$rc" == 0 ]] || { grep -h '^FAIL' "$RESULTS_DIR"/node/*/verify.log | sed 's/^/# /'; show_err; }
ok "node-users: a verify run per scenario, none failed, no /metrics (handler figures null)" \
    bash -c "for s in s1 s2 s3; do jq -e '.failure == null and .kind == \"verify\" and .config.server_metrics == false' \
        '$RESULTS_DIR/node/node-users-'\$s'-verify/result.json' >/dev/null || exit 1; done"
ok "node-users: the cases on stdout" grep -q "^ok - mix line 6 (POST /users" "$TMP/out"
if command -v nginx >/dev/null; then
    rc=$(run_rc --verify nginx-ping --batch=nginx)
    is "nginx-ping: ./runner.sh --verify nginx-ping passes" "$rc" 0
    [[ "$rc" == 0 ]] || show_err
    nt=$(jq -r '.config.server_threads // 0' "$RESULTS_DIR/nginx/nginx-ping-s1-verify/result.json")
    np=$(( nt == 1 ? 1 : nt + 1 ))   # one worker alone, else a master and a worker per CPU
    ok "nginx-ping: $np process(es) in the tree for $nt server CPU(s)" \
        grep -q "start: nginx-ping (run.sh) pid [0-9]*, $np process(es)" "$RESULTS_DIR/nginx/nginx-ping-s1-verify/runner.log"
else
    n=$((n + 1)); echo "ok $n - nginx-ping: --verify # SKIP nginx not installed (scripts/deps.sh bench)"
fi

# ---- a pair of two servers this project did not build, through run_all.sh --------------------
# the wrapper (async-server behind a script) against node-users on s1, the one scenario both
# serve here; a smoke batch checks the pipeline, not the figures (--budget=1: the planned
# rounds only, no re-runs; EQUAL_LOAD=0: the probes decide, for the suite's time)
rc=0
EQUAL_LOAD=0 "$ROOT/run_all.sh" --smoke --pair=wrapped,node-users --repeats=2 --budget=1 --batch=pair \
    >"$TMP/pair.out" 2>"$TMP/pair.err" || rc=$?
is "pair: ./run_all.sh --smoke --pair=wrapped,node-users exits 0" "$rc" 0
[[ "$rc" == 0 ]] || sed 's/^/# /' "$TMP/pair.err" | tail -n 12
pair="$RESULTS_DIR/pair"
[[ -f "$pair/index.json" ]] || echo '{}' >"$pair/index.json"
jqfile "pair: matrix.json plans one group, s1, with the pair as given" "$pair/matrix.json" \
    '.selection == "pairs" and (.groups | length) == 1 and .groups[0].scenario == "s1"
     and .groups[0].comparisons == [{"candidate": "wrapped", "baseline": "node-users", "decides": true}]'
jqfile "pair: index.json compares wrapped with node-users on s1, with a verdict its interval bears out (PASS: above the target, FAIL: below, else INCONCLUSIVE with reasons) and both servers' probes" "$pair/index.json" \
    '(.comparisons | length) == 1 and .comparisons[0].candidate == "wrapped" and .comparisons[0].baseline == "node-users"
     and (.comparisons[0] | (if .verdict == "PASS" then .ci_low >= .target_ratio elif .verdict == "FAIL" then .ci_high < .target_ratio
            elif .verdict == "INCONCLUSIVE" then (.reasons | length) > 0 else false end))
     and (.comparisons[0].probes.candidate | length) >= 2 and (.comparisons[0].probes.baseline | length) >= 2
     and all(.runs[]; .failure == null)'
jqfile "pair: the headline names the pair" "$pair/index.json" '.verdict.headline | test("wrapped/node-users")'
ok "pair: summary.md and report.html written" test -s "$pair/summary.md" -a -s "$pair/report.html"
ok "pair: summary.md's verdict table has the pair's row" grep -q '^| s1 | wrapped / node-users |' "$pair/summary.md"

ok "shellcheck: runner.sh, runner/server.sh, servers/nginx/run.sh, this test" \
    bash -c "cd '$ROOT' && shellcheck -x runner.sh runner/server.sh servers/nginx/run.sh tests/it_servers.sh >/dev/null"

tap_finish
