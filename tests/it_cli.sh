#!/usr/bin/env bash
# it_cli.sh: run_all.sh's command line (TAP): --help and --version, --opt value and
# --opt=value, and every bad input (an empty value, an unknown name, a bad duration, a value
# runner.sh refuses for one of the planned runs) answered by a message naming it, exit status
# 2, and nothing created in RESULTS_DIR; runner.sh --check-only. Starts no server and no load
# (every case stops before the first run). Writes only to a temporary folder.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KEEP_RESULTS="${KEEP_RESULTS:-0}"     # 1: keep the temporary folder

usage() {
    cat <<USAGE
usage: tests/it_cli.sh [--help]
Environment: KEEP_RESULTS (0).
USAGE
}
# shellcheck source=tests/lib/it.sh
. "$ROOT/tests/lib/it.sh"
it_args "$@"
it_tmpdir it_cli
export RESULTS_DIR="$TMP/results" DEPS_SKIP=1
mkdir -p "$RESULTS_DIR"
# the runs' own variables must not leak in from the caller's environment
unset BATCH SEED BUDGET REPEATS MIN_VALID_PAIRS WRK_CONNS PROBE_SEC SERVER_CPUS LOADGEN_CPUS

# refused NAME WANT_TEXT [ENV=VALUE...] -- ARGS...: run_all.sh with ARGS (and the environment)
# exits 2, says WANT_TEXT (a fixed string) on stderr, and leaves RESULTS_DIR empty.
refused() {
    local name=$1 want=$2 rc=0 envs=()
    shift 2
    while [[ "$1" != -- ]]; do envs+=("$1"); shift; done
    shift
    env "${envs[@]}" "$ROOT/run_all.sh" "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
    n=$((n + 1))
    if (( rc == 2 )) && grep -qF -- "$want" "$TMP/err" && grep -q "^run_all.sh: " "$TMP/err" &&
        [[ -z "$(find "$RESULTS_DIR" -mindepth 1)" ]]; then
        echo "ok $n - $name: exit 2, '$want', nothing created"
    else
        echo "not ok $n - $name: exit $rc (want 2), stderr: $(head -c 300 "$TMP/err" | tr '\n' ' '), results: $(find "$RESULTS_DIR" -mindepth 1 | tr '\n' ' ')"
        failed=$((failed + 1))
        rm -rf "${RESULTS_DIR:?}"/* "${RESULTS_DIR:?}"/.[!.]* 2>/dev/null || true
    fi
}

# ---- help and version ----------------------------------------------------------------------
rc=0
"$ROOT/run_all.sh" --help >"$TMP/help" 2>&1 || rc=$?
is "--help exits 0" "$rc" 0
ok "--help documents --pair, --budget, --seed and MIN_VALID_PAIRS" \
    bash -c "grep -q -- '--pair=C,B' '$TMP/help' && grep -q -- '--budget=DURATION' '$TMP/help' &&
             grep -q -- '--seed=N' '$TMP/help' && grep -q MIN_VALID_PAIRS '$TMP/help'"
rc=0
out=$("$ROOT/run_all.sh" --version 2>&1) || rc=$?
is "--version exits 0" "$rc" 0
want=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
ok "--version names the checkout's commit ($want)" grep -q "^run_all.sh ${want}" <<<"$out"
is "--help and --version created nothing" "$(find "$RESULTS_DIR" -mindepth 1 | wc -l)" 0

# ---- empty and missing values ----------------------------------------------------------------
refused "--batch= (empty)" "--batch needs a value, got an empty one" -- --smoke --batch=
refused "--batch at the end" "--batch needs a value" -- --smoke --batch
refused "--batch followed by an option" "--batch needs a value, got the option '--smoke'" -- --batch --smoke
refused "--scenarios= (empty)" "--scenarios needs a value" -- --smoke --scenarios=
refused "--pair= (empty)" "--pair needs a value" -- --smoke --pair=
refused "--seed '' (empty, space form)" "--seed needs a value, got an empty one" -- --smoke --seed ""
refused "--budget= (empty)" "--budget needs a value" -- --smoke --budget=
refused "--smoke=1 (a flag with a value)" "--smoke takes no value" -- --smoke=1

# ---- bad values --------------------------------------------------------------------------------
refused "unknown option" "unknown argument '--bogus'" -- --smoke --bogus
refused "--quick and --smoke" "--quick and --smoke exclude each other" -- --quick --smoke
refused "unknown scenario" "unknown scenario 's9'" -- --smoke --scenarios=s9
refused "unknown server in --pair" "unknown server 'nope'" -- --smoke --pair=actor-mem,nope
refused "--pair with one name" "--pair: CANDIDATE,BASELINE, got 'actor-mem'" -- --smoke --pair actor-mem
refused "--pairs file missing" "$TMP/none.toml" -- --smoke "--pairs=$TMP/none.toml"
refused "--pair with --baseline" "exclude each other" -- --smoke --pair=actor-mem,async-mem --servers=actor-mem --baseline=async-mem
refused "--repeats=0" "repeats must be a whole number in 1..20, got '0'" -- --smoke --repeats=0
refused "--repeats=21" "got '21'" -- --smoke --repeats 21
refused "--seed=x" "--seed must be a whole number" -- --smoke --seed=x
refused "--budget=0" "--budget must be a duration > 0" -- --smoke --budget=0
refused "--budget=15x" "got '15x'" -- --smoke --budget 15x
refused "--rates without --sweep" "--rates needs --sweep" -- --smoke --rates=1000
refused "--batch=.." "batch id may hold only" -- --smoke --batch=..
refused "MIN_VALID_PAIRS=0" "MIN_VALID_PAIRS must be a whole number in 1..20, got '0'" MIN_VALID_PAIRS=0 -- --smoke
refused "BUDGET=soon" "--budget must be a duration" BUDGET=soon -- --smoke
refused "TARGET_RATIO=abc" "TARGET_RATIO must be a decimal number > 0" TARGET_RATIO=abc -- --smoke
refused "EQUAL_MEASURE_SEC=0" "EQUAL_MEASURE_SEC must be whole seconds > 0" EQUAL_MEASURE_SEC=0 -- --smoke

# ---- runner.sh's own checks of the planned runs ---------------------------------------------
refused "WRK_CONNS=0 (runner.sh's check)" "actor-mem s1: connections must be > 0, got '0'" WRK_CONNS=0 -- --smoke
refused "PROBE_SEC=0 (runner.sh's check)" "probe must be whole seconds > 0, got '0'" PROBE_SEC=0 -- --smoke --scenarios=s2
refused "SERVER_CPUS=x (runner.sh's check)" "SERVER_CPUS: bad CPU list 'x'" SERVER_CPUS=x -- --smoke --pair async-mem,actor-mem --scenarios s1
refused "SERVER_CPUS outside the affinity mask (runner.sh's check)" "SERVER_CPUS '4096' is not within this shell's CPU affinity" \
    SERVER_CPUS=4096 -- --smoke --scenarios s1
refused "GROUP_COMMIT=65 (runner.sh's check: the servers take 1..64)" "GROUP_COMMIT must be a whole number in 1..64, got '65'" \
    GROUP_COMMIT=65 -- --smoke --scenarios s4

# ---- both value forms reach their check (a later bad value stops the run) -------------------
refused "--batch ID --seed N --budget D parsed (space form): the repeats are what is refused" \
    "got '0'" -- --smoke --batch it-cli-ok --seed 7 --budget 10m --repeats 0
refused "--pair=C,B --scenarios S parsed: the scenario is what is refused" "unknown scenario 's7'" \
    -- --smoke --pair=actor-mem,async-mem --scenarios s7

# ---- runner.sh --check-only -------------------------------------------------------------------
rc=0
"$ROOT/runner.sh" async-mem s1 --smoke --check-only --batch=it-cli-check >"$TMP/out" 2>&1 || rc=$?
is "runner.sh --check-only of a good run exits 0" "$rc" 0
is "runner.sh --check-only created nothing" "$(find "$RESULTS_DIR" -mindepth 1 | wc -l)" 0
rc=0
ROUND=x "$ROOT/runner.sh" async-mem s1 --smoke --check-only >"$TMP/out" 2>&1 || rc=$?
is "runner.sh --check-only with ROUND=x exits 2" "$rc" 2
ok "... saying why" grep -q "ROUND must be a whole number > 0, got 'x'" "$TMP/out"

tap_finish
