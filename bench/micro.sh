#!/usr/bin/env bash
# micro.sh: runs build/bench/micro (median ns/op over RUNS timed runs per case) and, unless
# --no-callgrind, the same cases under callgrind for instructions/op; saves or compares
# baselines (bench/baselines/NAME.json). Instructions/op are the repeatable signal on a
# shared machine; ns/op changes are flagged only above TIME_NOISE_PCT.
# Writes the merged results as JSON to OUT; the human report goes to stdout.
set -euo pipefail

BUILD=${BUILD:-build}
RUNS=${RUNS:-15}                       # timed runs per case (median reported)
MIN_RUN_MS=${MIN_RUN_MS:-20}           # calibration: one run lasts at least this long
CALLGRIND_ITERS=${CALLGRIND_ITERS:-10000} # iterations per case under callgrind
TIME_NOISE_PCT=${TIME_NOISE_PCT:-10}   # ns/op changes within +-this are "within noise"
INSTR_NOISE_PCT=${INSTR_NOISE_PCT:-0.5} # instructions/op changes within +-this likewise
BASELINE_DIR=${BASELINE_DIR:-bench/baselines}
OUT=${OUT:-$BUILD/bench/micro-latest.json}
MICRO_CPU=${MICRO_CPU:-}               # pin the timed runs to this CPU (taskset) if set
PROFILE_DIR=${PROFILE_DIR:-$BUILD/bench/callgrind} # --profile keeps the dumps here

usage() {
    cat <<EOF
usage: bench/micro.sh [--save-baseline NAME] [--baseline NAME] [--no-callgrind]
                      [--filter CASE]...
  --save-baseline NAME  store this run as $BASELINE_DIR/NAME.json
  --baseline NAME       compare this run (current) against $BASELINE_DIR/NAME.json
  --no-callgrind        skip the instructions/op measurement
  --filter CASE         only cases whose name contains CASE (repeatable)
  --profile             also print each case's most expensive functions (callgrind self
                        cost) and keep the dumps in PROFILE_DIR for callgrind_annotate
Environment: BUILD=$BUILD RUNS=$RUNS MIN_RUN_MS=$MIN_RUN_MS CALLGRIND_ITERS=$CALLGRIND_ITERS
  TIME_NOISE_PCT=$TIME_NOISE_PCT INSTR_NOISE_PCT=$INSTR_NOISE_PCT OUT=$OUT
  MICRO_CPU=$MICRO_CPU PROFILE_DIR=$PROFILE_DIR
EOF
}

save_name=""
base_name=""
callgrind=1
profile=0
filters=()
while [ $# -gt 0 ]; do
    case "$1" in
    --save-baseline) [ $# -ge 2 ] || { usage >&2; exit 2; }; save_name=$2; shift 2 ;;
    --baseline) [ $# -ge 2 ] || { usage >&2; exit 2; }; base_name=$2; shift 2 ;;
    --no-callgrind) callgrind=0; shift ;;
    --profile) profile=1; shift ;;
    --filter) [ $# -ge 2 ] || { usage >&2; exit 2; }; filters+=(--filter "$2"); shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "micro.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
for n in "$save_name" "$base_name"; do
    if [[ -n $n && ! $n =~ ^[A-Za-z0-9._-]+$ ]]; then
        echo "micro.sh: baseline names are [A-Za-z0-9._-]+" >&2
        exit 2
    fi
done
if [ "$profile" = 1 ] && [ "$callgrind" = 0 ]; then
    echo "micro.sh: --profile needs callgrind" >&2
    exit 2
fi
if [ -n "$base_name" ] && [ ! -f "$BASELINE_DIR/$base_name.json" ]; then
    echo "micro.sh: no baseline $BASELINE_DIR/$base_name.json" >&2
    exit 2
fi
command -v jq >/dev/null || { echo "micro.sh: needs jq" >&2; exit 1; }

bin=$BUILD/bench/micro
if [ ! -x "$bin" ]; then
    make --no-print-directory "$bin" >&2
fi

tmp=$(mktemp -d)
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT

loadavg=$(cut -d' ' -f1-3 /proc/loadavg) # other work on the machine, before we start
echo "micro.sh: timing ($RUNS runs per case, >= $MIN_RUN_MS ms each)..." >&2
pin=()
[ -z "$MICRO_CPU" ] || pin=(taskset -c "$MICRO_CPU")
"${pin[@]}" "$bin" --runs "$RUNS" --min-run-ms "$MIN_RUN_MS" "${filters[@]}" >"$tmp/time.json" \
    2>"$tmp/time.log" || { cat "$tmp/time.log" >&2; exit 1; }

# instructions/op: per case, one collected run of CALLGRIND_ITERS iterations and one of
# twice that (each after an uncollected warm-up), collection toggled by callgrind client
# requests around the loop and dumped as CASE@1 / CASE@2; (Ir@2 - Ir@1) / CALLGRIND_ITERS
# cancels the fixed cost around the loop.
echo '{}' >"$tmp/instr.json"
if [ "$callgrind" = 1 ]; then
    command -v valgrind >/dev/null || { echo "micro.sh: needs valgrind (or --no-callgrind)" >&2; exit 1; }
    echo "micro.sh: callgrind ($CALLGRIND_ITERS and $((2 * CALLGRIND_ITERS)) iterations per case)..." >&2
    valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$tmp/cg.out" \
        "$bin" --callgrind "$CALLGRIND_ITERS" "${filters[@]}" >/dev/null 2>"$tmp/cg.log" || {
        cat "$tmp/cg.log" >&2
        exit 1
    }
    for f in "$tmp"/cg.out.*; do
        dump=$(sed -n 's/^desc: Trigger: Client Request: //p' "$f")
        [ -n "$dump" ] || continue
        ir=$(sed -n 's/^totals: \([0-9]*\).*/\1/p' "$f")
        jq --arg d "$dump" --argjson ir "$ir" '. + {($d): $ir}' "$tmp/instr.json" >"$tmp/i2.json"
        mv "$tmp/i2.json" "$tmp/instr.json"
    done
    jq --argjson it "$CALLGRIND_ITERS" \
        '. as $raw | [keys[] | select(endswith("@1")) | rtrimstr("@1")] |
         map({key: ., value: ((($raw[. + "@2"] - $raw[. + "@1"]) / $it) * 10 | round / 10)}) |
         from_entries' "$tmp/instr.json" >"$tmp/i2.json"
    mv "$tmp/i2.json" "$tmp/instr.json"
fi

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git status --porcelain -- common async-server bench 2>/dev/null | grep -c . || true)
mkdir -p "$(dirname "$OUT")"
jq --slurpfile instr "$tmp/instr.json" \
    --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --arg host "$(hostname)" \
    --argjson cores "$(nproc)" --arg commit "$commit" --argjson dirty "$dirty" \
    --arg cc "$(${CC:-cc} --version | head -n1)" --arg loadavg "$loadavg" --argjson it "$CALLGRIND_ITERS" \
    '{date: $date, loadavg_before: $loadavg, host: $host, cores: $cores, commit: $commit,
      uncommitted_files_in_request_path: $dirty, compiler: $cc, runs: .runs,
      callgrind_iters: (if ($instr[0] | length) > 0 then $it else null end),
      cases: [.cases[] | . + {instr_per_op: ($instr[0][.name] // null)}]}' \
    "$tmp/time.json" >"$OUT"

printf '%s  %s  %s cores  commit %s  load average before: %s\n' "$(jq -r .date "$OUT")" \
    "$(hostname)" "$(nproc)" "$commit" "$loadavg"
printf '%-18s %12s %12s %12s %14s\n' case "median ns/op" "min ns/op" "max ns/op" "instr/op"
jq -r '.cases[] | [.name, .ns_per_op_median, .ns_per_op_min, .ns_per_op_max,
        (.instr_per_op // "-")] | @tsv' "$OUT" |
    awk -F'\t' '{ printf "%-18s %12.1f %12.1f %12.1f %14s\n", $1, $2, $3, $4,
                   ($5 == "-" ? "-" : sprintf("%.1f", $5)) }'
echo "results: $OUT"

if [ -n "$base_name" ]; then
    base=$BASELINE_DIR/$base_name.json
    echo
    echo "Current run compared with baseline $base_name ($(jq -r '.date + ", commit " + .commit' "$base")):"
    echo "(time changes within +-$TIME_NOISE_PCT% and instruction changes within +-$INSTR_NOISE_PCT% are reported as noise)"
    jq -r --slurpfile b "$base" \
        '.cases[] as $c | ($b[0].cases[] | select(.name == $c.name)) as $o |
         [$c.name, $c.ns_per_op_median, $o.ns_per_op_median,
          ($c.instr_per_op // "-"), ($o.instr_per_op // "-")] | @tsv' "$OUT" |
        awk -F'\t' -v bn="$base_name" -v tn="$TIME_NOISE_PCT" -v inn="$INSTR_NOISE_PCT" '
        function abs(x) { return x < 0 ? -x : x }
        {
            pct = ($2 - $3) / $3 * 100
            ip = ($4 != "-" && $5 != "-") ? ($4 - $5) / $5 * 100 : "-"
            note = (ip != "-" && abs(ip) <= inn) ? " [instructions unchanged: probably machine noise]" : ""
            if (abs(pct) <= tn)
                printf "%s: time within noise of baseline %s (%+.1f%%; current %.1f ns/op vs %.1f ns/op)\n", $1, bn, pct, $2, $3
            else
                printf "%s is %.1f%% %s than baseline %s (current %.1f ns/op vs %.1f ns/op)%s\n", $1, abs(pct), (pct > 0 ? "SLOWER" : "FASTER"), bn, $2, $3, note
            if (ip != "-") {
                if (abs(ip) <= inn)
                    printf "%s: instructions within noise of baseline %s (%+.2f%%; current %.1f vs %.1f instr/op)\n", $1, bn, ip, $4, $5
                else
                    printf "%s executes %.1f%% %s instructions than baseline %s (current %.1f vs %.1f instr/op)\n", $1, abs(ip), (ip > 0 ? "MORE" : "FEWER"), bn, $4, $5
            }
        }'
    missing=$(jq -r --slurpfile b "$base" '[.cases[].name] - [$b[0].cases[].name] | join(" ")' "$OUT")
    [ -z "$missing" ] || echo "not in baseline $base_name: $missing"
fi

if [ "$profile" = 1 ]; then
    rm -rf "$PROFILE_DIR"
    mkdir -p "$PROFILE_DIR"
    echo
    for f in "$tmp"/cg.out.*; do
        dump=$(sed -n 's/^desc: Trigger: Client Request: //p' "$f")
        case "$dump" in *@1) ;; *) continue ;; esac
        name=${dump%@1}
        cp "$f" "$PROFILE_DIR/$name.callgrind"
        echo "$name: functions by self cost over $CALLGRIND_ITERS iterations ($PROFILE_DIR/$name.callgrind)"
        callgrind_annotate --threshold=100 --auto=no "$PROFILE_DIR/$name.callgrind" 2>/dev/null |
            grep -E '^ *[0-9,]+ \( *[0-9.]+%\) ' | grep -v -e 'PROGRAM TOTALS' -e '(100.0%)' |
            sed 's/ \[.*\]$//' | head -n 15
        echo
    done
fi

if [ -n "$save_name" ]; then
    mkdir -p "$BASELINE_DIR"
    cp "$OUT" "$BASELINE_DIR/$save_name.json"
    echo "saved baseline $BASELINE_DIR/$save_name.json"
fi
