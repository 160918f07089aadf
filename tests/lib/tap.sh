# shellcheck shell=bash
# tap.sh: TAP helpers shared by the bash integration tests (sourced, never run; tests/run.sh
# only runs tests/it_* files). Keeps the counters n (tests so far) and failed (failures so far)
# in the sourcing shell; tap_finish prints the plan and exits non-zero if anything failed.

n=0 failed=0

# ok NAME CMD...: one TAP line for whether CMD succeeds.
ok() {
    local name=$1
    shift
    n=$((n + 1))
    if "$@"; then
        echo "ok $n - $name"
    else
        echo "not ok $n - $name"
        failed=$((failed + 1))
    fi
}

# is NAME GOT WANT: equality, printing both values on failure.
is() {
    n=$((n + 1))
    if [[ "$2" == "$3" ]]; then
        echo "ok $n - $1"
    else
        echo "not ok $n - $1: got '$2', want '$3'"
        failed=$((failed + 1))
    fi
}

# tap_finish: prints the plan line "1..n" and exits 1 if any test failed, else 0.
tap_finish() {
    echo "1..$n"
    exit $(( failed > 0 ))
}
