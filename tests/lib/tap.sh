# shellcheck shell=bash
# tap.sh: TAP helpers shared by the bash integration tests (sourced, never run; tests/run.sh
# only runs tests/it_* files). Keeps the counters n (tests so far) and failed (failures so far)
# in the sourcing shell; tap_finish prints the plan and exits non-zero if anything failed.

n=0 failed=0
JQ_ARGS=()   # extra jq arguments for jqok (e.g. --argjson n_srv 1)

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

# jqfile NAME FILE FILTER [JQ_ARG...]: one TAP line for whether the jq FILTER is true on the
# JSON FILE (with the extra jq arguments); prints the filter and what it gave on failure.
jqfile() {
    local name=$1 file=$2 filter=$3 got
    shift 3
    n=$((n + 1))
    if jq -e "$@" "$filter" "$file" >/dev/null 2>&1; then
        echo "ok $n - $name"
    else
        got=$(jq -c "$@" "$filter" "$file" 2>&1 | head -c 400 || true)
        echo "not ok $n - $name (filter: $filter; got: $got)"
        failed=$((failed + 1))
    fi
}

# jqok NAME FILTER: jqfile on the JSON file $res with the arguments in JQ_ARGS.
# shellcheck disable=SC2154  # res is the caller's
jqok() {
    jqfile "$1" "${res:?jqok needs the variable res}" "$2" "${JQ_ARGS[@]}"
}

# tap_finish: prints the plan line "1..n" and exits 1 if any test failed, else 0.
tap_finish() {
    echo "1..$n"
    exit $(( failed > 0 ))
}
