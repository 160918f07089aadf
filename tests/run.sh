#!/usr/bin/env bash
# run.sh: runs every test: the cmocka unit binaries in $BUILD/tests/test_*, the Python unit
# tests tests/test_*.py and the integration scripts tests/it_*.{sh,py}, each in its own
# process with a timeout.
# Every test program speaks TAP ("ok N - name" / "not ok N - name", one plan line "1..N");
# this script counts those lines across all programs and ends with "N passed, N failed",
# then ", N skipped" when some lines carried "# SKIP" (counted as skipped, neither passed
# nor failed). A plan "1..0 # SKIP reason" and a program left out by TEST_SKIP each count
# one skipped line. A program that exits non-zero, times out, or whose plan line is missing,
# repeated or does not match its count of test lines, counts one failure when it printed
# no "not ok" line. A TEST_FILTER that selects no program is a usage error (exit 2).
# Raises the open-file soft limit to the hard one first (every test inherits it).
# A script may ask for a longer budget with a line "# test-timeout: SECONDS" in its first
# 20 lines (the runner's batch tests run whole smoke batches); TEST_TIMEOUT is the default.
set -euo pipefail

BUILD="${BUILD:-build}"
TEST_TIMEOUT="${TEST_TIMEOUT:-300}"     # seconds per test program
TEST_FILTER="${TEST_FILTER:-}"          # substring a program's name must contain
TEST_SKIP="${TEST_SKIP:-}"              # space-separated substrings of programs to skip
LOG_DIR="${LOG_DIR:-$BUILD/test-logs}"

usage() {
    cat <<USAGE
usage: tests/run.sh [--unit-only] [--it-only] [--help]
Runs unit tests ($BUILD/tests/test_*, tests/test_*.py) and integration tests (tests/it_*).
Environment: BUILD ($BUILD), TEST_TIMEOUT ($TEST_TIMEOUT s), TEST_FILTER (a substring of the
programs to run; one that selects none exits 2), TEST_SKIP (substrings of programs left out,
each counted as one skipped line), LOG_DIR.
USAGE
}

unit=1 it=1
for arg in "$@"; do
    case "$arg" in
        --unit-only) it=0 ;;
        --it-only) unit=0 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "run.sh: unknown option '$arg'" >&2; usage >&2; exit 2 ;;
    esac
done

cd "$(dirname "$0")/.."
mkdir -p "$LOG_DIR"
# Some tests hold thousands of connections: every test program inherits the hard open-file
# limit as its soft one (a login's soft limit is often 1024).
nofile_hard=$(ulimit -Hn)
if [[ "$nofile_hard" == unlimited ]]; then
    nofile_hard=$(cat /proc/sys/fs/nr_open 2>/dev/null || echo 1048576)
fi
ulimit -Sn "$nofile_hard" 2>/dev/null || true
echo "run.sh: open files limit $(ulimit -Sn) (hard $(ulimit -Hn))" >&2
export BUILD CMOCKA_MESSAGE_OUTPUT=TAP
# The interpreter behind python3 found once for every script the tests start (runner/lib.sh
# would look it up in each: a version manager's shim costs 0.3 s a time).
# shellcheck source=runner/lib.sh
. runner/lib.sh

progs=()
if [[ $unit -eq 1 ]]; then
    for p in "$BUILD"/tests/test_*; do
        [[ -x "$p" && "$p" != *.o && "$p" != *.d ]] && progs+=("$p")
    done
    for p in tests/test_*.py; do
        [[ -f "$p" ]] && progs+=("$p")
    done
fi
if [[ $it -eq 1 ]]; then
    for p in tests/it_*.sh tests/it_*.py; do
        [[ -f "$p" ]] && progs+=("$p")
    done
fi

# tap_count LOG: "OK SKIPPED NOT_OK PLANS PLAN_N PLAN_SKIP LINES" for a TAP log: test lines
# ok (not skipped), skipped (a "# SKIP" directive, ok or not ok: cmocka's skip() writes
# "not ok N # SKIP"), not ok; the number of plan lines, the last plan's N, 1 when that plan
# carries "# SKIP"; all test lines.
tap_count() {
    awk 'function plan_of(l) { sub(/^1\.\./, "", l); return l + 0 }
        /^(not )?ok( |$)/ { lines++
            if ($0 ~ /# *SKIP/) skip++; else if ($0 ~ /^ok/) ok++; else nok++
            next }
        /^1\.\.[0-9]+/ { plans++; pn = plan_of($0); ps = ($0 ~ /# *SKIP/) }
        END { printf "%d %d %d %d %d %d %d\n", ok, skip, nok, plans, pn, ps, lines }' "$1"
}

passed=0 failed=0 skipped=0 failed_progs=() selected=0
for p in "${progs[@]}"; do
    name=$(basename "$p")
    if [[ -n "$TEST_FILTER" && "$name" != *"$TEST_FILTER"* ]]; then
        continue
    fi
    selected=$((selected + 1))
    skip=""
    for pat in $TEST_SKIP; do
        [[ "$name" != *"$pat"* ]] || skip=$pat
    done
    if [[ -n "$skip" ]]; then
        skipped=$((skipped + 1))
        printf '%-34s    0 passed            (0s) (1 skipped: TEST_SKIP %s)\n' "$name" "$skip" >&2
        continue
    fi
    log="$LOG_DIR/$name.log"
    start=$(date +%s)
    rc=0 budget=$TEST_TIMEOUT
    if [[ "$p" != "$BUILD"/* ]]; then
        b=$(head -n 20 "$p" | sed -n 's/^# test-timeout: \([1-9][0-9]*\)$/\1/p' | head -n 1)
        [[ -z "$b" || "$b" -le "$budget" ]] || budget=$b
    fi
    timeout --kill-after=10 "$budget" "$p" >"$log" 2>&1 || rc=$?
    secs=$(( $(date +%s) - start ))
    read -r ok nskip nok plans plan_n plan_skip lines < <(tap_count "$log")
    bad_plan=""
    if [[ $plans -eq 0 ]]; then
        bad_plan="no plan line (1..N)"
    elif [[ $plans -gt 1 ]]; then
        bad_plan="$plans plan lines"
    elif [[ $plan_n -ne $lines ]]; then
        bad_plan="plan 1..$plan_n but $lines test lines"
    elif [[ $lines -eq 0 && $plan_skip -eq 1 ]]; then
        nskip=1             # "1..0 # SKIP reason": the whole program skipped, one line
    elif [[ $lines -eq 0 ]]; then
        bad_plan="plan 1..0 without a SKIP directive"
    fi
    [[ -z "$bad_plan" ]] || echo "not ok - $name: $bad_plan" >>"$log"
    if [[ ($rc -ne 0 || -n "$bad_plan") && $nok -eq 0 ]]; then
        nok=1
        if [[ $rc -eq 124 || $rc -eq 137 ]]; then
            echo "not ok - $name timed out after ${budget}s" >>"$log"
        elif [[ $rc -ne 0 ]]; then
            echo "not ok - $name exited $rc" >>"$log"
        fi
    fi
    passed=$((passed + ok))
    skipped=$((skipped + nskip))
    skip_note=""
    [[ $nskip -eq 0 ]] || skip_note=" ($nskip skipped)"
    failed=$((failed + nok))
    if [[ $nok -gt 0 ]]; then
        failed_progs+=("$name")
        printf '%-34s %4d passed %3d FAILED  (%ds)%s  log: %s\n' "$name" "$ok" "$nok" "$secs" "$skip_note" "$log" >&2
        grep -E '^not ok ' "$log" | grep -vE '# *SKIP' | head -20 | sed 's/^/    /' >&2 || true
    else
        printf '%-34s %4d passed            (%ds)%s\n' "$name" "$ok" "$secs" "$skip_note" >&2
    fi
done

if [[ $selected -eq 0 ]]; then
    echo "run.sh: TEST_FILTER='$TEST_FILTER' selects no test program" >&2
    exit 2
fi
if [[ ${#failed_progs[@]} -gt 0 ]]; then
    echo "failed programs: ${failed_progs[*]}" >&2
fi
if [[ $skipped -gt 0 ]]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[[ $failed -eq 0 ]]
