#!/usr/bin/env bash
# it_cost.sh: the cost account and the ladder end to end (TAP): `./run_all.sh --smoke --ladder`
# must generate a definition per rung, run them with async-mem as a league on s2, end with
# index.json's `cost` (every agreed key in every row; the hops of /users/{id}: 6 with
# placement=local, every hop crossing with spread; a contended row per binary: four server
# threads, actor hops crossing threads, async store acquisitions) and `ladder` (every rung,
# its flags, ratio and interval keys), summary.md's three sections and report.html's ladder
# chart; `--no-cost` must leave all of it out; a usage error with --ladder creates nothing.
# Needs the binaries in build/ with the actor server's ladder flags; results go to a
# temporary folder, removed at the end. Takes minutes: run it under `flock /tmp/cpu.lock`
# on a shared host.
# test-timeout: 900
# shellcheck disable=SC2016  # jq filters bind their own $vars
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KEEP_RESULTS="${KEEP_RESULTS:-0}"     # 1: keep the temporary results folder

usage() {
    cat <<USAGE
usage: tests/it_cost.sh [--help]
Environment: BUILD (build), KEEP_RESULTS (0).
USAGE
}
# shellcheck source=tests/lib/it.sh
. "$ROOT/tests/lib/it.sh"
it_args "$@"
it_tmpdir it_cost
export RESULTS_DIR="$TMP/results"
unset BUDGET SEED REPEATS SERVER_DEFS SERVER_THREADS

# ---- --ladder under --smoke -------------------------------------------------------------------
rc=0
"$ROOT/run_all.sh" --smoke --ladder --repeats=1 --batch=it-ladder >"$TMP/out" 2>"$TMP/err" || rc=$?
is "run_all.sh --smoke --ladder exits 0" "$rc" 0
if [[ $rc -ne 0 ]]; then grep -E '^\[run_all\]|^cost:' "$TMP/err" | sed 's/^/# /' | tail -n 30; fi
b="$RESULTS_DIR/it-ladder"
[[ -f "$b/index.json" ]] || echo '{}' >"$b/index.json"
res="$b/index.json"
rungs='["default","spread","malloc","copy","ring","mutex","all"]'
JQ_ARGS=(--argjson rungs "$rungs")
jqok "the league: async-mem and a server per rung on s2 only" \
    '[.groups[] | .scenario] == ["s2"] and (.groups[0].servers | sort) == (["async-mem"] + ($rungs | map("actor-mem-" + .)) | sort)'
jqok "index.json cost: a row per server on s2, every agreed key in every row" \
    '(.cost | map(select(.contended | not)) | length) == 8 and all(.cost[];
        has("server") and has("scenario") and has("instructions_per_request") and has("syscalls_per_request")
        and has("syscalls_by_kind_per_request") and has("context_switches_per_request")
        and has("voluntary_context_switches_per_request") and has("involuntary_context_switches_per_request")
        and has("hops_per_request") and has("cross_thread_hops_per_request") and has("wakeups_per_request")
        and has("lock_waits_per_request") and has("server_threads") and has("flags") and has("requests")
        and has("method") and has("unmeasured"))'
jqok "cost: /users/{id} is 6 hops at every rung, none crossing with placement=local at one thread" \
    'all(.cost[] | select(.server | startswith("actor-mem-")); (.hops_per_request - 6 | fabs) < 0.001)
     and all(.cost[] | select(.server == "actor-mem-default" and (.contended | not)); .cross_thread_hops_per_request == 0)'
jqok "cost: with spread every hop crosses a thread" \
    'all(.cost[] | select(.server == "actor-mem-spread" or .server == "actor-mem-all"); (.cross_thread_hops_per_request - 6 | fabs) < 0.001)'
jqok "cost: the rung's flags come from the server (actor_runtime_info)" \
    '(.cost[] | select(.server == "actor-mem-copy") | .flags.message) == "copy"
     and (.cost[] | select(.server == "actor-mem-spread") | .flags.placement) == "spread"'
jqok "cost: instructions and system calls counted (valgrind and strace present), or the reason given" \
    'all(.cost[]; (.instructions_per_request != null or (.unmeasured.instructions_per_request | type) == "string")
                  and (.syscalls_per_request != null or (.unmeasured.syscalls_per_request | type) == "string"))'
jqok "the contended run: 4 server threads, the actor hops crossing threads, the async store locked" \
    '[.cost[] | select(.contended)] | length == 2
     and all(.[]; .server_threads == 4)
     and any(.[]; .server == "actor-mem-default" and .cross_thread_hops_per_request > 0)
     and any(.[]; .server == "async-mem" and .lock_acquisitions_per_request >= 1)'
jqok "index.json ladder: every rung in order with its flags, ratio and interval keys" \
    '[.ladder[].rung] == $rungs and all(.ladder[]; has("flags") and has("ratio") and has("ci_low") and has("ci_high")
     and has("instructions_per_request") and has("hops_per_request"))
     and (.ladder[] | select(.rung == "all") | .flags) == {"placement": "spread", "message": "copy", "mailbox": "mutex"}'
ok "summary.md: the cost account, the contended run and the ladder" \
    bash -c 'grep -q "^## Cost account: per request, counted" "$1" && grep -q "^## Contended run" "$1" && grep -q "^## The ladder" "$1"' _ "$b/summary.md"
ok "summary.md: the extra cost beside the ratio, per request and per hop" \
    grep -Eq 'actor-mem-default / async-mem: throughput ratio .*instructions a request over 6 hops: -?[0-9,]+ a hop' "$b/summary.md"
ok "report.html: the ladder's chart and the cost table" \
    bash -c 'grep -q "id=\"ladder\"" "$1" && grep -q "id=\"cost\"" "$1" && grep -q "<svg" "$1"' _ "$b/report.html"
ok "result.json names the rung's flags (the command of its definition)" \
    jq -e '.config.server_definition.command | index("--placement") != null' "$b/actor-mem-spread-s2/result.json"

# ---- --no-cost --------------------------------------------------------------------------------
rc=0
"$ROOT/run_all.sh" --smoke --no-cost --servers=async-mem --scenarios=s1 --repeats=1 --batch=it-nocost \
    >"$TMP/out2" 2>"$TMP/err2" || rc=$?
is "run_all.sh --smoke --no-cost exits 0" "$rc" 0
b="$RESULTS_DIR/it-nocost"
ok "--no-cost: no cost.json, index.json's cost null, no cost section" \
    bash -c '[[ ! -e "$1/cost.json" ]] && jq -e ".cost == null" "$1/index.json" >/dev/null && ! grep -q "Cost account" "$1/summary.md"' _ "$b"
ok "--no-cost: the stage never started" bash -c '! grep -q "cost account" "$1"' _ "$TMP/err2"

# ---- --ladder's usage errors create nothing ----------------------------------------------------
rc=0
RESULTS_DIR="$TMP/refused" "$ROOT/run_all.sh" --smoke --ladder --repeats=99 >/dev/null 2>"$TMP/err3" || rc=$?
is "--ladder with a bad value: exit 2" "$rc" 2
ok "--ladder with a bad value: nothing created" bash -c '[[ ! -e "$1" ]]' _ "$TMP/refused"
rc=0
"$ROOT/run_all.sh" --smoke --ladder --servers=async-mem >/dev/null 2>"$TMP/err4" || rc=$?
is "--ladder refuses --servers (it chooses its own): exit 2" "$rc" 2
rc=0
RESULTS_DIR="$TMP/refused" "$ROOT/run_all.sh" --smoke --ladder=default,fast >/dev/null 2>"$TMP/err5" || rc=$?
is "--ladder=default,fast (an unknown rung): exit 2" "$rc" 2
ok "--ladder=default,fast: names the known rungs" grep -q "unknown rung(s) fast: the rungs are default, spread," "$TMP/err5"
ok "--ladder=default,fast: nothing created" bash -c '[[ ! -e "$1" ]]' _ "$TMP/refused"
tap_finish
