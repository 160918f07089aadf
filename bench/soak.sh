#!/usr/bin/env bash
# soak.sh: each server in turn under the s3 mix at LOAD_PCT% of its saturation for
# DURATION_S, sampling its RSS, open descriptors and the corrected p99 every SAMPLE_S:
# RSS flat after warm-up (less the store's own growth: each 201 adds one user), no
# descriptor growth, no error. Saturation is measured first (closed loop, SAT_S). Server
# on SERVER_CPU (--threads 1), load generator on LOADGEN_CPU. Not part of ./test.sh; run
# it under the CPU lock (flock /tmp/cpu.lock bench/soak.sh). Exit 0 when every check
# holds, 1 when one fails, 2 on a usage error. JSON per server in OUT_DIR.
set -euo pipefail

BUILD=${BUILD:-build}
SERVERS=${SERVERS:-"async-server actor-server"}
DURATION_S=${DURATION_S:-600}          # the soak window, per server
SAMPLE_S=${SAMPLE_S:-10}               # RSS, descriptors and p99 sampled this often
WARMUP_S=${WARMUP_S:-60}               # samples before this are not held to flatness
SAT_S=${SAT_S:-10}                     # closed-loop saturation probe, per server
LOAD_PCT=${LOAD_PCT:-70}               # the soak's rate, % of the probe's throughput
CONNECTIONS=${CONNECTIONS:-64}
SERVER_CPU=${SERVER_CPU:-0}
LOADGEN_CPU=${LOADGEN_CPU:-1}
MIX=${MIX:-loadgen-scripts/s3_mixed.mix}
USER_BYTES=${USER_BYTES:-s3}           # memory store bytes per 201: s3 = a 16-byte slot plus
                                       # the s3 mix's lg-<seq> and lg-<seq>@example.com, i.e.
                                       # 34 + 2 x the digits of {seq}; or a fixed number
ANALYZE_ONLY=${ANALYZE_ONLY:-0}        # 1: only redo the checks on OUT_DIR's last run
RSS_BOUND_KIB=${RSS_BOUND_KIB:-2048}   # allowed rise of RSS less the store after warm-up
OUT_DIR=${OUT_DIR:-$BUILD/bench/soak}

here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

usage() {
    cat <<EOF
usage: bench/soak.sh [--help]
Each of SERVERS under MIX at LOAD_PCT% of its closed-loop saturation for DURATION_S,
sampled every SAMPLE_S: RSS (KiB) less the store's growth (each 201 adds a user:
USER_BYTES=s3 counts 34 + 2 x the digits of its {seq}, which grows with the request
count) must not rise more than RSS_BOUND_KIB after WARMUP_S, open descriptors must not
grow, and the load generator must see no error. Results: OUT_DIR/soak-<server>.json; a
summary on stderr. ANALYZE_ONLY=1 redoes the checks on OUT_DIR's last run. Run under the
CPU lock: flock /tmp/cpu.lock bench/soak.sh
Environment: BUILD=$BUILD SERVERS="$SERVERS" DURATION_S=$DURATION_S SAMPLE_S=$SAMPLE_S
  WARMUP_S=$WARMUP_S SAT_S=$SAT_S LOAD_PCT=$LOAD_PCT CONNECTIONS=$CONNECTIONS
  SERVER_CPU=$SERVER_CPU LOADGEN_CPU=$LOADGEN_CPU MIX=$MIX USER_BYTES=$USER_BYTES
  RSS_BOUND_KIB=$RSS_BOUND_KIB OUT_DIR=$OUT_DIR ANALYZE_ONLY=$ANALYZE_ONLY
EOF
}
bench_help_only "$@"

if [ "$USER_BYTES" != s3 ] && ! [[ $USER_BYTES =~ ^[1-9][0-9]*$ ]]; then
    echo "soak.sh: USER_BYTES must be s3 or a positive integer, got '$USER_BYTES'" >&2
    exit 2
fi
for v in DURATION_S SAMPLE_S WARMUP_S SAT_S LOAD_PCT CONNECTIONS RSS_BOUND_KIB; do
    if ! [[ ${!v} =~ ^[1-9][0-9]*$ ]]; then
        echo "soak.sh: $v must be a positive integer, got '${!v}'" >&2
        exit 2
    fi
done
if [ "$WARMUP_S" -ge "$DURATION_S" ] || [ "$LOAD_PCT" -gt 100 ]; then
    echo "soak.sh: WARMUP_S must be under DURATION_S and LOAD_PCT at most 100" >&2
    exit 2
fi
for bin in loadgen $SERVERS; do
    [ -x "$BUILD/$bin" ] || { echo "soak.sh: missing $BUILD/$bin (make)" >&2; exit 1; }
done
[ -r "$MIX" ] || { echo "soak.sh: cannot read $MIX" >&2; exit 1; }
mkdir -p "$OUT_DIR"

pids=()
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    if [ ${#pids[@]} -gt 0 ]; then bench_stop "${pids[@]}"; fi
}
trap cleanup EXIT

failed=0
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)

# analyze SERVER SATURATION RATE: the checks on OUT_DIR's files of SERVER's run; writes
# OUT_DIR/soak-SERVER.json, a summary line on stderr; returns 1 when a check fails.
analyze() {
    python3 - "$1" "$OUT_DIR" "$OUT_DIR/samples-$1.tsv" "$USER_BYTES" "$WARMUP_S" \
        "$RSS_BOUND_KIB" "$2" "$3" "$commit" <<'EOF'
import json, socket, sys, time
server, out_dir, samples, user_bytes, warmup_s, bound_kib, sat, rate, commit = sys.argv[1:]
warmup_s, bound_kib = int(warmup_s), int(bound_kib)
load = json.load(open("%s/load-%s.json" % (out_dir, server)))
rows = [l.split("\t") for l in open(samples).read().splitlines()[1:]]
rows = [(int(t), int(r), int(f)) for t, r, f in rows]
created = load.get("status_counts", {}).get("201", 0)
dur = load["elapsed_s"]
iv = load.get("latency_intervals") or {}
p99s = iv.get("p99_ms") or []
step = iv.get("interval_s") or 0
per_s = created / dur  # POSTs arrive at a constant rate
achieved = load["achieved_rps"]


def store_kib(t):
    """The store's growth by t: each created user costs a fixed USER_BYTES, or (s3) a
    16-byte slot plus lg-<seq> and lg-<seq>@example.com, seq being the request count."""
    if user_bytes != "s3":
        return per_s * min(t, dur) * int(user_bytes) / 1024
    total = 0.0
    for k in range(int(min(t, dur))):
        seq = int(achieved * (k + 0.5)) + 1
        total += per_s * (34 + 2 * len(str(seq)))
    return total / 1024


out = []
for t, rss, fds in rows:
    k = int(t / step) - 1 if step else -1
    p99 = p99s[k] if 0 <= k < len(p99s) else None
    out.append({"t_s": t, "rss_kib": rss, "rss_less_store_kib": round(rss - store_kib(t)),
                "fds": fds, "p99_ms": p99})
after = [s for s in out if s["t_s"] >= warmup_s]
base = after[0]["rss_less_store_kib"] if after else None
rise = max(s["rss_less_store_kib"] for s in after) - base if after else None
fd_span = (max(s["fds"] for s in after) - min(s["fds"] for s in after)) if after else None
errors = load.get("errors_total", 0) + sum((load.get("unexpected_status_counts") or {}).values())
not_sent = load.get("requests_not_sent") or 0
ok_rss = rise is not None and rise <= bound_kib
ok_fds = fd_span == 0
ok_err = errors == 0
res = {"server": server, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
       "host": socket.gethostname(), "commit": commit, "saturation_rps": float(sat),
       "rate_rps": float(rate), "achieved_rps": load["achieved_rps"], "elapsed_s": dur,
       "users_created": created, "user_bytes": user_bytes, "rss_bound_kib": bound_kib,
       "warmup_s": warmup_s,
       "rss_rise_after_warmup_kib": rise, "fd_span_after_warmup": fd_span,
       "errors": errors, "requests_not_sent": not_sent,
       "p99_ms_max": max((p for p in p99s if p is not None), default=None),
       "checks": {"rss_flat": ok_rss, "fds_flat": ok_fds, "no_errors": ok_err},
       "samples": out}
json.dump(res, open("%s/soak-%s.json" % (out_dir, server), "w"), indent=1)
first, last = (after[0], after[-1]) if after else ({}, {})
sys.stderr.write(
    "soak.sh: %s: %.0f req/s for %.0f s, %d users created; RSS %s -> %s KiB (less the store: "
    "%s -> %s, rise %s KiB, bound %d): %s; fds %s..%s: %s; errors %d, not sent %d: %s; "
    "p99 max %s ms\n" % (server, load["achieved_rps"], dur, created, first.get("rss_kib"),
    last.get("rss_kib"), first.get("rss_less_store_kib"), last.get("rss_less_store_kib"), rise,
    bound_kib, "flat" if ok_rss else "GROWS", min(s["fds"] for s in after) if after else "?",
    max(s["fds"] for s in after) if after else "?", "flat" if ok_fds else "GROW", errors,
    not_sent, "none" if ok_err else "ERRORS", res["p99_ms_max"]))
sys.exit(0 if ok_rss and ok_fds and ok_err else 1)
EOF
}

if [ "$ANALYZE_ONLY" = 1 ]; then
    for server in $SERVERS; do
        read -r commit sat rate < <(python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
print(d["commit"], d["saturation_rps"], d["rate_rps"])' "$OUT_DIR/soak-$server.json")
        analyze "$server" "$sat" "$rate" || failed=1
    done
    exit "$failed"
fi
echo "soak.sh: $(date -u +%Y-%m-%dT%H:%M:%SZ), host $(hostname), $(nproc) cores, commit" \
     "$commit; $DURATION_S s per server at $LOAD_PCT% of saturation, samples every" \
     "$SAMPLE_S s" >&2

for server in $SERVERS; do
    port=$(bench_free_port)
    taskset -c "$SERVER_CPU" "$BUILD/$server" --threads 1 --store memory --seed-users 10000 \
        --port "$port" 2>"$OUT_DIR/$server.log" &
    spid=$!
    pids=("$spid")
    bench_wait_port "$port"

    # saturation: closed loop
    taskset -c "$LOADGEN_CPU" "$BUILD/loadgen" --url "http://127.0.0.1:$port" --mix "$MIX" \
        --connections "$CONNECTIONS" --warmup 2s --duration "${SAT_S}s" --quiet \
        --json "$OUT_DIR/sat-$server.json"
    sat=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["achieved_rps"])' \
        "$OUT_DIR/sat-$server.json")
    rate=$(python3 -c 'import sys; print("%.0f" % (float(sys.argv[1]) * int(sys.argv[2]) / 100))' \
        "$sat" "$LOAD_PCT")
    echo "soak.sh: $server: saturation $sat req/s (closed loop, $CONNECTIONS connections);" \
         "soak at $rate req/s" >&2

    samples="$OUT_DIR/samples-$server.tsv"
    printf 't_s\trss_kib\tfds\n' >"$samples"
    taskset -c "$LOADGEN_CPU" "$BUILD/loadgen" --url "http://127.0.0.1:$port" --mix "$MIX" \
        --connections "$CONNECTIONS" --rate "$rate" --duration "${DURATION_S}s" \
        --interval "${SAMPLE_S}s" --quiet --json "$OUT_DIR/load-$server.json" &
    lpid=$!
    pids=("$spid" "$lpid")
    t0=$(date +%s)
    next=$((t0 + SAMPLE_S))
    while kill -0 "$lpid" 2>/dev/null; do
        now=$(date +%s)
        # inside the window only (its end closes the load generator's connections)
        if [ "$now" -ge "$next" ] && [ $((now - t0)) -lt "$DURATION_S" ]; then
            rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$spid/status")
            fds=$(find "/proc/$spid/fd" -mindepth 1 -maxdepth 1 | wc -l)
            printf '%d\t%d\t%d\n' $((now - t0)) "$rss" "$fds" >>"$samples"
            next=$((next + SAMPLE_S))
        fi
        sleep 1
    done
    wait "$lpid" || { echo "soak.sh: $server: the load generator failed" >&2; failed=1; }
    bench_stop "$spid"
    pids=()

    analyze "$server" "$sat" "$rate" || failed=1
done
exit "$failed"
