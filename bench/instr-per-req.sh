#!/usr/bin/env bash
# instr-per-req.sh: whole-server user-space instructions per request, counted by callgrind,
# for async-server and actor-server (--threads 1, actor --workers 0) on s1 (GET /ping), s2
# (GET /users/{id} with the bearer) and the s3 mix, plus nginx on /ping when installed.
# Each figure is a 2N-N difference: a fresh server answers N requests, another fresh one
# 2N, and (Ir(2N) - Ir(N)) / N is the cost of one request with start-up, seeding and
# shutdown cancelled. Saves or compares baselines like bench/micro.sh.
set -euo pipefail

BUILD=${BUILD:-build}
N=${N:-20000}                   # requests of the short run; the long run sends 2N
CONNECTIONS=${CONNECTIONS:-8}   # keep-alive connections
MODE=${MODE:-burst}             # burst, serial or closed (see bench/README.md)
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
ACTOR_ARGS=${ACTOR_ARGS:---workers 0}
INSTR_NOISE_PCT=${INSTR_NOISE_PCT:-0.5} # changes within +-this are "within noise"
BASELINE_DIR=${BASELINE_DIR:-bench/baselines}
OUT=${OUT:-$BUILD/bench/instr-latest.json}
KEEP_DIR=${KEEP_DIR:-}          # if set, keep the callgrind dumps here

here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

usage() {
    cat <<EOF
usage: bench/instr-per-req.sh [--save-baseline NAME] [--baseline NAME] [--repeat K]
                              [--filter ROW]...
  --save-baseline NAME  store this run as $BASELINE_DIR/instr-NAME.json
  --baseline NAME       compare this run (current) against $BASELINE_DIR/instr-NAME.json
  --repeat K            measure everything K times (default 1) and report the spread;
                        the figures compared and saved are those of the last round
  --filter ROW          only rows whose name (e.g. s2/actor-server) contains ROW
Environment: BUILD=$BUILD N=$N CONNECTIONS=$CONNECTIONS MODE=$MODE (serial|burst|closed)
  NGINX=$NGINX ACTOR_ARGS="$ACTOR_ARGS" INSTR_NOISE_PCT=$INSTR_NOISE_PCT OUT=$OUT
  KEEP_DIR=$KEEP_DIR
BUILD may be the build/ of another worktree (e.g. an older commit checked out with
git worktree add): the commit recorded is that tree's.
Rows: s1 (GET /ping), s2 (GET /users/{id}), s3 (loadgen-scripts/s3_mixed.mix), each for
async-server and actor-server; s1 for nginx (master_process off, 1 worker) if installed.
Not timed: instruction counts do not need a quiet machine. Exit 0, 1 on failure,
2 usage.
EOF
}

save_name=""
base_name=""
repeat=1
filters=()
while [ $# -gt 0 ]; do
    case "$1" in
    --save-baseline) [ $# -ge 2 ] || { usage >&2; exit 2; }; save_name=$2; shift 2 ;;
    --baseline) [ $# -ge 2 ] || { usage >&2; exit 2; }; base_name=$2; shift 2 ;;
    --repeat)
        if [ $# -lt 2 ] || [[ ! $2 =~ ^[1-9][0-9]*$ ]]; then usage >&2; exit 2; fi
        repeat=$2
        shift 2
        ;;
    --filter) [ $# -ge 2 ] || { usage >&2; exit 2; }; filters+=("$2"); shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "instr-per-req.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
for n in "$save_name" "$base_name"; do
    if [[ -n $n && ! $n =~ ^[A-Za-z0-9._-]+$ ]]; then
        echo "instr-per-req.sh: baseline names are [A-Za-z0-9._-]+" >&2
        exit 2
    fi
done
if [ -n "$base_name" ] && [ ! -f "$BASELINE_DIR/instr-$base_name.json" ]; then
    echo "instr-per-req.sh: no baseline $BASELINE_DIR/instr-$base_name.json" >&2
    exit 2
fi
case "$MODE" in serial | closed | burst) ;; *) echo "instr-per-req.sh: MODE must be serial, closed or burst" >&2; exit 2 ;; esac
[[ $N =~ ^[1-9][0-9]*$ ]] || { echo "instr-per-req.sh: N must be a positive integer" >&2; exit 2; }
for tool in valgrind jq python3; do
    command -v "$tool" >/dev/null || { echo "instr-per-req.sh: needs $tool" >&2; exit 1; }
done
for bin in async-server actor-server; do
    [ -x "$BUILD/$bin" ] || { echo "instr-per-req.sh: missing $BUILD/$bin (make)" >&2; exit 1; }
done
have_nginx=0
[ -x "$NGINX" ] && have_nginx=1

tmp=$(mktemp -d)
pids=()
# shellcheck disable=SC2317 # invoked by the trap
cleanup() { bench_stop "${pids[@]}"; rm -rf "$tmp"; }
trap cleanup EXIT

# wait_ready PID LOG PORT: the server printed "listening on" (ours) or accepts (nginx)
wait_ready() {
    local _
    for _ in $(seq 1 600); do
        kill -0 "$1" 2>/dev/null || { echo "instr-per-req.sh: server exited:" >&2; cat "$2" >&2; return 1; }
        if [ "$3" = nginx ]; then
            (exec 3<>"/dev/tcp/127.0.0.1/$4") 2>/dev/null && return 0
        elif grep -q "listening on" "$2" 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    echo "instr-per-req.sh: server not ready after 60 s" >&2
    return 1
}

# ir_of SERVER MIX REQUESTS: total Ir of a fresh server that answered REQUESTS requests
ir_of() {
    local server=$1 mix=$2 n=$3 port pid log out cmd=()
    port=$(bench_free_port)
    log=$tmp/$server.log
    out=$tmp/cg.$server.$(basename "$mix" .mix).$n
    local actor_args
    read -r -a actor_args <<<"$ACTOR_ARGS" # a word list on purpose
    case "$server" in
    async-server) cmd=("$BUILD/async-server" --threads 1 --port "$port") ;;
    actor-server) cmd=("$BUILD/actor-server" --threads 1 --port "$port" "${actor_args[@]}") ;;
    nginx)
        # one process: callgrind follows no children
        bench_nginx_conf "$tmp/nginx" "$port" 1024 "master_process off;"
        cmd=("$NGINX" -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf")
        ;;
    esac
    valgrind --tool=callgrind --callgrind-out-file="$out" "${cmd[@]}" >"$log" 2>&1 &
    pid=$!
    pids+=("$pid")
    wait_ready "$pid" "$log" "$server" "$port"
    if ! python3 "$here/instr_client.py" --port "$port" --mix "$mix" --requests "$n" \
        --connections "$CONNECTIONS" --mode "$MODE" --pid "$pid" >"$tmp/client.json"; then
        echo "instr-per-req.sh: $server: the client failed ($(cat "$tmp/client.json"))" >&2
        return 1
    fi
    kill -TERM "$pid"
    wait "$pid" || true
    # "summary: N" (valgrind 3.19) or "totals: N": Ir over every thread of the process
    local ir
    ir=$(sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' "$out" | head -n1)
    [ -n "$ir" ] || { echo "instr-per-req.sh: no total in $out" >&2; return 1; }
    if [ -n "$KEEP_DIR" ]; then
        mkdir -p "$KEEP_DIR"
        cp "$out" "$KEEP_DIR/"
    fi
    rm -f "$out"
    echo "$ir"
}

rows=()
for sc in s1 s2 s3; do
    for srv in async-server actor-server; do rows+=("$sc/$srv"); done
done
[ "$have_nginx" = 0 ] || rows+=("s1/nginx")
selected=()
for r in "${rows[@]}"; do
    keep=1
    if [ "${#filters[@]}" -gt 0 ]; then
        keep=0
        for f in "${filters[@]}"; do [[ $r == *"$f"* ]] && keep=1; done
    fi
    [ "$keep" = 0 ] || selected+=("$r")
done
[ "${#selected[@]}" -gt 0 ] || { echo "instr-per-req.sh: no row matches the filter" >&2; exit 2; }

mix_of() {
    case "$1" in
    s1) echo loadgen-scripts/s1_ping.mix ;;
    s2) echo loadgen-scripts/s2_user_get.mix ;;
    s3) echo loadgen-scripts/s3_mixed.mix ;;
    esac
}

# The commit of the tree BUILD was built from (BUILD may be another worktree's build/, to
# measure an older commit with this script's client and mixes).
src=$(dirname "$BUILD")
commit=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=""
if [ -n "$(git -C "$src" status --porcelain --untracked-files=no 2>/dev/null)" ]; then dirty="+dirty"; fi
for round in $(seq 1 "$repeat"); do
    for r in "${selected[@]}"; do
        sc=${r%%/*}
        srv=${r#*/}
        echo "instr-per-req.sh: round $round/$repeat: $r: $N and $((2 * N)) requests under callgrind..." >&2
        i1=$(ir_of "$srv" "$(mix_of "$sc")" "$N")
        i2=$(ir_of "$srv" "$(mix_of "$sc")" "$((2 * N))")
        jq -nc --arg row "$r" --arg sc "$sc" --arg srv "$srv" --argjson round "$round" \
            --argjson i1 "$i1" --argjson i2 "$i2" --argjson n "$N" \
            '{row: $row, scenario: $sc, server: $srv, round: $round, ir_n: $i1, ir_2n: $i2,
              instr_per_req: (($i2 - $i1) / $n)}' >>"$tmp/results.jsonl"
    done
done

mkdir -p "$(dirname "$OUT")"
jq -s --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --arg host "$(hostname)" \
    --argjson cores "$(nproc)" --arg commit "$commit$dirty" --arg mode "$MODE" \
    --argjson n "$N" --argjson conns "$CONNECTIONS" --arg actor_args "$ACTOR_ARGS" \
    --arg valgrind "$(valgrind --version)" --argjson repeat "$repeat" \
    '{date: $date, host: $host, cores: $cores, commit: $commit, mode: $mode, n: $n,
      connections: $conns, actor_args: $actor_args, valgrind: $valgrind, repeat: $repeat,
      runs: .,
      rows: (map(select(.round == $repeat)) | map({row, scenario, server, instr_per_req})),
      spread_pct: (group_by(.row) | map({key: .[0].row, value:
          ((map(.instr_per_req) | (max - min) / min * 100))}) | from_entries)}' \
    "$tmp/results.jsonl" >"$OUT"

echo "instructions per request (callgrind, user space, whole process), $(jq -r .date "$OUT")"
echo "host $(hostname), $(nproc) cores, commit $commit$dirty, $(valgrind --version);" \
    "$CONNECTIONS keep-alive connections, mode $MODE, (Ir(2N) - Ir(N)) / N with N = $N"
printf '%-8s %14s %14s %12s %14s\n' request async-server actor-server actor/async nginx
for sc in s1 s2 s3; do
    jq -r --arg sc "$sc" '[.rows[] | select(.scenario == $sc) | {(.server): .instr_per_req}] | add // {}
        | [$sc, (.["async-server"] // "-"), (.["actor-server"] // "-"),
           (if .["async-server"] and .["actor-server"] then .["actor-server"] / .["async-server"]
            else "-" end), (.nginx // "-")] | @tsv' "$OUT" |
        awk -F'\t' 'function f(x, d) { return x == "-" ? "-" : sprintf("%." d "f", x) }
            { if ($2 == "-" && $3 == "-" && $5 == "-") next
              printf "%-8s %14s %14s %12s %14s\n", $1, f($2, 1), f($3, 1), f($4, 3), f($5, 1) }'
done
if [ "$repeat" -gt 1 ]; then
    echo "spread over $repeat rounds ((max - min) / min of instructions per request):"
    jq -r '.spread_pct | to_entries[] | "  \(.key): \(.value * 1000 | round / 1000)%"' "$OUT"
fi
echo "results: $OUT"

if [ -n "$base_name" ]; then
    base=$BASELINE_DIR/instr-$base_name.json
    echo
    echo "Current run compared with baseline $base_name ($(jq -r '.date + ", commit " + .commit + ", mode " + .mode' "$base")):"
    [ "$(jq -r .mode "$base")" = "$MODE" ] ||
        echo "WARNING: the baseline was measured in mode $(jq -r .mode "$base"), this run in $MODE" >&2
    jq -r --slurpfile b "$base" '.rows[] as $c | ($b[0].rows[] | select(.row == $c.row)) as $o |
        [$c.row, $c.instr_per_req, $o.instr_per_req] | @tsv' "$OUT" |
        awk -F'\t' -v bn="$base_name" -v inn="$INSTR_NOISE_PCT" '
        function abs(x) { return x < 0 ? -x : x }
        { ip = ($2 - $3) / $3 * 100
          if (abs(ip) <= inn)
              printf "%s: within noise of baseline %s (%+.2f%%; current %.1f vs %.1f instr/req)\n", $1, bn, ip, $2, $3
          else
              printf "%s executes %.1f%% %s instructions than baseline %s (current %.1f vs %.1f instr/req)\n", $1, abs(ip), (ip > 0 ? "MORE" : "FEWER"), bn, $2, $3 }'
    missing=$(jq -r --slurpfile b "$base" '[.rows[].row] - [$b[0].rows[].row] | join(" ")' "$OUT")
    [ -z "$missing" ] || echo "not in baseline $base_name: $missing"
fi

if [ -n "$save_name" ]; then
    mkdir -p "$BASELINE_DIR"
    cp "$OUT" "$BASELINE_DIR/instr-$save_name.json"
    echo "saved baseline $BASELINE_DIR/instr-$save_name.json"
fi
