# shellcheck shell=bash
# sanity.sh: curl against the server under test: before any load, check that it answers
# every route a scenario uses with the right status and body shape, and 401 without the
# bearer; and the /metrics scrapes at the edges of a measured window.
# Sends a handful of requests (one POST on s3/s4); does not measure anything.
# Invariant: prints nothing on success; on failure prints one line saying what failed.

# http_call METHOD URL BODYFILE [CURL_ARGS...]: prints the status code (000 when the
# connection failed); the body goes to BODYFILE.
http_call() {
    local method=$1 url=$2 body=$3
    shift 3
    curl -sS -X "$method" -o "$body" -w '%{http_code}' --max-time 5 "$@" "$url" 2>/dev/null || true
}

# ping_wait URL PID TIMEOUT_S: waits until URL/ping answers 200 while PID lives.
# Returns 0 when it answered, 1 when PID exited, 2 on timeout.
ping_wait() {
    local url=$1 pid=$2 deadline body code
    deadline=$(awk -v t="$(clock_s)" -v d="$3" 'BEGIN { print t + d }')
    body=$(mktemp)
    while :; do
        if ! kill -0 "$pid" 2>/dev/null; then rm -f "$body"; return 1; fi
        code=$(curl -s -o "$body" -w '%{http_code}' --max-time 1 "$url/ping" 2>/dev/null || true)
        if [[ "$code" == 200 ]]; then rm -f "$body"; return 0; fi
        if awk -v t="$(clock_s)" -v d="$deadline" 'BEGIN { exit !(t > d) }'; then
            rm -f "$body"; return 2
        fi
        sleep 0.05
    done
}

# sanity_check URL SCENARIO BEARER: checks the routes SCENARIO uses (see SPEC.md).
sanity_check() {
    local url=$1 scenario=$2 bearer=$3 body code auth
    body=$(mktemp)
    auth="Authorization: Bearer $bearer"
    # _expect CODE DESC [grep -E pattern for the body]; uses $code and $body.
    _expect() {
        if [[ "$code" != "$1" ]]; then
            echo "$2: expected $1, got $code"
            return 1
        fi
        if [[ -n "${3:-}" ]] && ! grep -Eq -- "$3" "$body"; then
            echo "$2: body does not match /$3/: $(head -c 200 "$body")"
            return 1
        fi
    }
    local rc=0
    {
        code=$(http_call GET "$url/ping" "$body") && _expect 200 "GET /ping" '^pong' &&
        code=$(http_call GET "$url/metrics" "$body") && _expect 200 "GET /metrics" 'http_requests_total' &&
        if [[ "$scenario" != s1 ]]; then
            code=$(http_call GET "$url/users/1" "$body" -H "$auth") &&
                _expect 200 "GET /users/1" '"id":1[,}]' &&
            code=$(http_call GET "$url/users/1" "$body") &&
                _expect 401 "GET /users/1 without the bearer" &&
            code=$(http_call GET "$url/users/1" "$body" -H "Authorization: Bearer wrong-$bearer") &&
                _expect 401 "GET /users/1 with a wrong bearer"
        fi &&
        if [[ "$scenario" == s3 || "$scenario" == s4 ]]; then
            code=$(http_call GET "$url/users?limit=10&after=0" "$body" -H "$auth") &&
                _expect 200 "GET /users?limit=10&after=0" '"users":\[' &&
            code=$(http_call POST "$url/users" "$body" -H "$auth" \
                -H 'Content-Type: application/json' \
                --data '{"name":"sanity","email":"sanity@example.com"}') &&
                _expect 201 "POST /users" '"id":[0-9]+' &&
            code=$(http_call GET "$url/users?limit=10&after=0" "$body") &&
                _expect 401 "GET /users without the bearer"
        fi
    } || rc=1
    rm -f "$body"
    unset -f _expect
    return "$rc"
}

# metrics_scrape URL FILE: GETs URL/metrics into FILE. Returns non-zero on failure
# or a non-200 answer.
metrics_scrape() {
    local code
    code=$(curl -sS -o "$2" -w '%{http_code}' --max-time 5 "$1/metrics") || return 1
    [[ "$code" == 200 ]]
}
