# shellcheck shell=bash
# metrics.sh: scraping a server's Prometheus /metrics and diffing two scrapes: the
# handler-latency p99 of the window between them and counter deltas.
# Knows the sparse-bucket convention of our servers: a cumulative bucket that is not
# emitted equals the largest emitted bucket below it, so scrapes are compared on the
# union of their edges. Portable awk (mawk): no gawk extensions.

# metrics_scrape URL FILE: GETs URL/metrics into FILE. Returns non-zero on failure
# or a non-200 answer.
metrics_scrape() {
    local code
    code=$(curl -sS -o "$2" -w '%{http_code}' --max-time 5 "$1/metrics") || return 1
    [[ "$code" == 200 ]]
}

# metrics_handler_p99_us BEFORE AFTER: p99 in microseconds of the requests handled
# between two scrapes of http_handler_latency_us_bucket: the smallest bucket edge whose
# cumulative count difference is >= 0.99 x the total difference (no interpolation).
# Prints null when no request was handled in between or the p99 is in the +Inf bucket.
metrics_handler_p99_us() {
    metrics_handler_quantile_us 0.99 "$1" "$2"
}

# metrics_handler_quantile_us Q BEFORE AFTER: as metrics_handler_p99_us for quantile Q.
metrics_handler_quantile_us() {
    awk -v q="$1" '
    function le_of(line,    s) {
        s = line
        if (!sub(/.*le="/, "", s)) return ""
        sub(/".*/, "", s)
        return s
    }
    # cum(f, e): the cumulative count of file f at edge e (step function).
    function cum(f, e,    i, best, found) {
        found = 0
        for (i = 1; i <= n[f]; i++)
            if (edge[f, i] + 0 <= e + 0 && (!found || edge[f, i] + 0 > best + 0)) {
                best = edge[f, i]; found = i
            }
        return found ? cnt[f, found] : 0
    }
    { f = (FILENAME == ARGV[1]) ? 1 : 2 }
    /^http_handler_latency_us_bucket[{]/ {
        le = le_of($0)
        if (le == "") next
        if (le == "+Inf") { inf[f] = $NF; next }
        n[f]++; edge[f, n[f]] = le; cnt[f, n[f]] = $NF
        if (!(le in seen)) { seen[le] = 1; u[++nu] = le }
        next
    }
    /^http_handler_latency_us_count[ {]/ { total[f] = $NF }
    END {
        for (k = 1; k <= 2; k++) {
            if (!(k in inf)) inf[k] = (k in total) ? total[k] : 0
        }
        d = inf[2] - inf[1]
        if (d <= 0) { print "null"; exit }
        # insertion sort of the union of finite edges, numerically
        for (i = 2; i <= nu; i++) {
            v = u[i]; j = i - 1
            while (j >= 1 && u[j] + 0 > v + 0) { u[j + 1] = u[j]; j-- }
            u[j + 1] = v
        }
        for (i = 1; i <= nu; i++) {
            if (cum(2, u[i]) - cum(1, u[i]) >= q * d) { print u[i] + 0; exit }
        }
        print "null"
    }' "$2" "$3"
}

# metrics_sum FILE NAME [LABEL_SUBSTRING]: the sum of all samples of metric NAME (with
# any labels, or only those whose line contains LABEL_SUBSTRING). 0 when absent.
metrics_sum() {
    awk -v name="$2" -v sub_="${3:-}" '
    substr($0, 1, 1) == "#" { next }
    {
        m = $1; sub(/[{].*/, "", m)
        if (m != name) next
        if (sub_ != "" && index($0, sub_) == 0) next
        s += $NF
    }
    END { printf "%.0f\n", s + 0 }' "$1"
}

# metrics_delta BEFORE AFTER NAME [LABEL_SUBSTRING]: AFTER's sum minus BEFORE's.
metrics_delta() {
    local a b
    a=$(metrics_sum "$1" "$3" "${4:-}") || return 1
    b=$(metrics_sum "$2" "$3" "${4:-}") || return 1
    echo $(( b - a ))
}

# metrics_routes_json BEFORE AFTER: {"<route>": requests in the window, ...} from
# http_requests_total, summed over statuses.
metrics_routes_json() {
    awk '
    { f = (FILENAME == ARGV[1]) ? 1 : 2 }
    /^http_requests_total[{]/ {
        r = $0
        if (!sub(/.*route="/, "", r)) next
        sub(/".*/, "", r)
        if (f == 1) a[r] += $NF; else b[r] += $NF
        seen[r] = 1
    }
    END {
        printf "{"; sep = ""
        for (r in seen) { printf "%s\"%s\":%.0f", sep, r, b[r] - a[r]; sep = "," }
        printf "}\n"
    }' "$1" "$2"
}
