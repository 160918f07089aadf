#!/usr/bin/env bash
# it_testrun.sh: tests of the test harness itself (TAP): tests/run.sh counts every skip
# (a "# SKIP" line, a "1..0 # SKIP" plan, a TEST_SKIP exclusion), fails a program whose plan
# is missing, repeated or does not match its test lines, and refuses a TEST_FILTER that
# selects nothing; tests/tap_unittest.py prints a SKIP line for a unittest skip. Runs fake
# test programs from a temporary BUILD folder only; no server, no benchmark.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() {
    echo "usage: tests/it_testrun.sh [--help]   (env: KEEP_RESULTS=0)"
}
# shellcheck source=tests/lib/it.sh
. "$ROOT/tests/lib/it.sh"
it_args "$@"
it_tmpdir it_testrun
mkdir -p "$TMP/tests"

# fake NAME BODY: a fake unit test program $TMP/tests/test_fake_NAME that prints BODY.
fake() {
    printf '#!/bin/sh\ncat <<"TAP"\n%s\nTAP\n' "$2" >"$TMP/tests/test_fake_$1"
    chmod +x "$TMP/tests/test_fake_$1"
}
# harness FILTER [VAR=VALUE...]: runs tests/run.sh --unit-only on the fake programs whose
# name holds FILTER; sets out (its last stdout line), errs (stderr) and rc.
harness() {
    local filter=$1
    shift
    rc=0
    out=$(cd "$ROOT" && env TEST_SKIP= "$@" BUILD="$TMP" LOG_DIR="$TMP/logs" \
        TEST_FILTER="$filter" tests/run.sh --unit-only 2>"$TMP/stderr" | tail -n 1) || rc=$?
    errs=$(<"$TMP/stderr")
}

fake good $'1..2\nok 1 - a\nok 2 - b'
fake skipline $'ok 1 - a\nok 2 - b # SKIP no gnuplot\nnot ok 3 # SKIP no threads\n1..3'
fake skipplan '1..0 # SKIP server not built'
fake noplan $'ok 1 - a\nok 2 - b'
fake shortplan $'1..3\nok 1 - a\nok 2 - b'
fake twoplans $'1..1\nok 1 - a\n1..1\nok 1 - b'
fake emptyplan '1..0'

harness fake_good
is "a program whose plan matches: passed" "$rc $out" "0 2 passed, 0 failed"
harness fake_skipline
is "ok and not ok lines with a SKIP directive: skipped, not passed or failed" "$rc $out" "0 1 passed, 0 failed, 2 skipped"
harness fake_skipplan
is "a plan 1..0 with a SKIP directive counts one skipped line" "$rc $out" "0 0 passed, 0 failed, 1 skipped"
harness fake_good TEST_SKIP=good
is "a program left out by TEST_SKIP counts one skipped line" "$rc $out" "0 0 passed, 0 failed, 1 skipped"
ok "the TEST_SKIP line names the pattern" grep -q 'test_fake_good.*TEST_SKIP good' <<<"$errs"
harness fake_noplan
is "no plan line: a failure" "$rc $out" "1 2 passed, 1 failed"
ok "no plan line: said" grep -q 'test_fake_noplan: no plan line' <<<"$errs"
harness fake_shortplan
is "plan 1..3 with 2 test lines: a failure" "$rc $out" "1 2 passed, 1 failed"
ok "plan mismatch: said with both counts" grep -q 'plan 1..3 but 2 test lines' <<<"$errs"
harness fake_twoplans
is "two plan lines: a failure" "$rc $out" "1 2 passed, 1 failed"
harness fake_emptyplan
is "plan 1..0 without a reason: a failure" "$rc $out" "1 0 passed, 1 failed"
harness no_such_program_anywhere
is "a TEST_FILTER that selects nothing: usage error (exit 2), no closing count" "$rc $out" "2 "
ok "the empty filter is said" grep -q "selects no test program" <<<"$errs"

# tap_unittest.py: a skipped unittest case is a counted "# SKIP" line; expectedFailure fails.
cat >"$TMP/unit_fake.py" <<'PY'
import sys
import unittest
sys.path.insert(0, sys.argv[1])
import tap_unittest


class T(unittest.TestCase):
    def test_pass(self):
        pass

    @unittest.skip("no gnuplot here")
    def test_skipped(self):
        pass

    @unittest.expectedFailure
    def test_expected(self):
        self.fail("x")


tap_unittest.main(__name__)
PY
urc=0
python3 "$TMP/unit_fake.py" "$ROOT/tests" >"$TMP/unit.out" 2>/dev/null || urc=$?
ok "tap_unittest: a skipped case prints ok N - name, a SKIP directive and the reason" \
    grep -qE '^ok [0-9]+ - T\.test_skipped # SKIP no gnuplot here$' "$TMP/unit.out"
ok "tap_unittest: an expectedFailure case is not ok" grep -qE '^not ok [0-9]+ - T\.test_expected' "$TMP/unit.out"
is "tap_unittest: the plan counts every line" "$(grep -c '^\(not \)\?ok ' "$TMP/unit.out") $(tail -n 1 "$TMP/unit.out")" "3 1..3"
is "tap_unittest: exit 1 with an expectedFailure" "$urc" 1
tap_finish
