#!/usr/bin/env bash
# it_distributed.sh: runner.sh with the load from other hosts (LOADGEN_HOSTS), without other
# machines (TAP): network namespaces joined by veth pairs on a bridge in a hub namespace, sshd
# (keys made here) in two agent namespaces, the runner and the server in a third. Checks the
# exact merge (counts add up, percentiles equal those of the concatenated samples), the rate
# held across agents, clock offsets and host facts recorded, and that killing an agent fails
# the run quickly. Traffic stays in the namespaces; a trap removes them, the sshd processes
# (by pid) and the temporary folder. Prints one SKIP line where it cannot run (not root, no
# `ip netns`, no sshd); fails (never skips) without build/loadgen or build/async-server.
# shellcheck disable=SC2016,SC2317  # jq filters bind their own $vars; functions run through ok
# test-timeout: 600
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="${BUILD:-build}"
DIST_RATE="${DIST_RATE:-2000}"            # the constant rate of the merged run, req/s
DIST_MEASURE_SEC="${DIST_MEASURE_SEC:-4}" # its measured window
DIST_CONNS="${DIST_CONNS:-64}"            # connections in all (half per agent)
DIST_TIMEOUT_SEC="${DIST_TIMEOUT_SEC:-60}"   # bound on each runner.sh
SSHD="${SSHD:-/usr/sbin/sshd}"
KEEP_TMP="${KEEP_TMP:-0}"                 # 1: keep the temporary folder (results, logs)
NET="${NET:-10.77.0}"                     # the namespaces' /24 (not routed anywhere)

usage() {
    cat <<USAGE
usage: tests/it_distributed.sh [--help]
Needs root, iproute2 (ip netns), openssh-server and openssh-client; build/loadgen and
build/async-server (make). Environment: BUILD ($BUILD), DIST_RATE ($DIST_RATE req/s),
DIST_MEASURE_SEC ($DIST_MEASURE_SEC), DIST_CONNS ($DIST_CONNS), DIST_TIMEOUT_SEC ($DIST_TIMEOUT_SEC), SSHD ($SSHD),
KEEP_TMP ($KEEP_TMP), NET ($NET: the namespaces' /24).
USAGE
}
case "${1:-}" in
    -h|--help) usage; exit 0 ;;
    "") ;;
    *) usage >&2; exit 2 ;;
esac

# shellcheck source=tests/lib/tap.sh
. "$ROOT/tests/lib/tap.sh"

# ---- usage errors (no network needed) ------------------------------------------------------------
# usage_is NAME PATTERN ENV...: runner.sh with ENV exits 2 and says PATTERN on stderr.
usage_is() {
    local name=$1 pat=$2 rc=0 err
    shift 2
    err=$(env "$@" "$ROOT/runner.sh" async-mem s1 --smoke 2>&1 >/dev/null) || rc=$?
    is "$name: exit 2, '$pat'" "$rc $(grep -c -- "$pat" <<<"$err")" "2 1"
}
usage_is "LOADGEN_HOSTS without SERVER_ADDR" "needs SERVER_ADDR" LOADGEN_HOSTS=u@h1
usage_is "SERVER_ADDR not IPv4" "must be an IPv4 address" LOADGEN_HOSTS=u@h1 SERVER_ADDR=host.example
usage_is "an ssh destination starting with '-'" "is not an ssh destination" LOADGEN_HOSTS=-oProxyCommand=x SERVER_ADDR=10.0.0.1
usage_is "fewer connections than load hosts" "at least the number of load hosts" LOADGEN_HOSTS=a,b,c SERVER_ADDR=10.0.0.1 WRK_CONNS=2
usage_is "a bad AGENT_CPUS" "bad AGENT_CPUS" LOADGEN_HOSTS=a SERVER_ADDR=10.0.0.1 AGENT_CPUS=1-x
usage_is "MAX_START_SKEW_MS 0" "MAX_START_SKEW_MS must be" LOADGEN_HOSTS=a SERVER_ADDR=10.0.0.1 MAX_START_SKEW_MS=0

skip_all() { n=$((n + 1)); echo "ok $n - it_distributed # SKIP $1"; tap_finish; }
[[ $EUID -eq 0 ]] || skip_all "needs root (network namespaces)"
command -v ip >/dev/null || skip_all "no ip (iproute2)"
[[ -x "$SSHD" ]] || skip_all "no sshd at $SSHD (Debian: openssh-server)"
for t in ssh scp ssh-keygen; do command -v "$t" >/dev/null || skip_all "no $t (openssh-client)"; done

P="dt$$"                                   # namespace and interface prefix (<= 11 characters)
NS_HUB="${P}hub" NS_S="${P}s" NS_A="${P}a" NS_B="${P}b"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/it_distributed.XXXXXX")
SSHD_PIDS=() RUNNER_PID="" NS_MADE=() MADE_RUN_SSHD=0
# shellcheck disable=SC2317  # invoked by the EXIT trap
teardown() {
    local pid ns
    if [[ -n "$RUNNER_PID" ]]; then kill -TERM "$RUNNER_PID" 2>/dev/null || true; wait "$RUNNER_PID" 2>/dev/null || true; fi
    for pid in "${SSHD_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    for ns in "${NS_MADE[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
    if [[ "$MADE_RUN_SSHD" == 1 ]]; then rmdir /run/sshd 2>/dev/null || true; fi
    if [[ "$KEEP_TMP" == 1 ]]; then echo "# kept $TMP"; else rm -rf "$TMP"; fi
}
trap teardown EXIT

if ! ip netns add "$NS_HUB" 2>"$TMP/netns.err"; then
    skip_all "ip netns does not work here: $(head -c 120 "$TMP/netns.err")"
fi
NS_MADE+=("$NS_HUB")
LG="$ROOT/$BUILD/loadgen"
[[ "$BUILD" != /* ]] || LG="$BUILD/loadgen"
ok "build/loadgen and build/async-server exist (make)" test -x "$LG" -a -x "$(dirname "$LG")/async-server"

# ---- the network: a bridge in the hub, one veth pair per namespace ----------------------------
net_up() {
    local ns i=1
    ip -n "$NS_HUB" link add br0 type bridge
    ip -n "$NS_HUB" link set br0 up
    for ns in "$NS_S" "$NS_A" "$NS_B"; do
        ip netns add "$ns"
        NS_MADE+=("$ns")
        ip -n "$NS_HUB" link add "${P}v$i" type veth peer name eth0 netns "$ns"
        ip -n "$NS_HUB" link set "${P}v$i" master br0 up
        ip -n "$ns" addr add "$NET.$i/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$ns" link set lo up
        i=$((i + 1))
    done
}
ok "namespaces $NS_S ($NET.1), $NS_A ($NET.2), $NS_B ($NET.3) on a bridge in $NS_HUB" net_up
# `ip netns exec` remounts /sys in a mount namespace of its own, which fails where / is not
# a mount point (a chroot): nothing below can run there
if ! nsx_err=$(ip netns exec "$NS_S" true 2>&1); then
    skip_all "ip netns exec does not work here (${nsx_err%%$'\n'*}; e.g. a chroot whose / is not a mount point)"
fi

# ---- sshd in the agent namespaces, keys made here ---------------------------------------------
ssh-keygen -q -t ed25519 -N '' -f "$TMP/host_key" -C it-host
ssh-keygen -q -t ed25519 -N '' -f "$TMP/id" -C it-client
cp "$TMP/id.pub" "$TMP/authorized_keys"
cat >"$TMP/sshd_config" <<CONF
Port 22
ListenAddress 0.0.0.0
HostKey $TMP/host_key
AuthorizedKeysFile $TMP/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
PidFile none
PrintMotd no
Subsystem sftp internal-sftp
LogLevel ERROR
# bash run by sshd with SHLVL < 2 sources ~/.bashrc even for commands; a slow one (pyenv
# here) would add seconds to every ssh session
SetEnv SHLVL=1
CONF
cat >"$TMP/ssh_config" <<CONF
Host *
    User root
    IdentityFile $TMP/id
    IdentitiesOnly yes
    UserKnownHostsFile $TMP/known_hosts
    StrictHostKeyChecking accept-new
    LogLevel ERROR
CONF
if [[ ! -d /run/sshd ]]; then mkdir -p /run/sshd && MADE_RUN_SSHD=1; fi
for ns in "$NS_A" "$NS_B"; do
    ip netns exec "$ns" "$SSHD" -D -e -f "$TMP/sshd_config" >"$TMP/sshd-$ns.log" 2>&1 &
    SSHD_PIDS+=("$!")
done
sshd_ready() {
    local host deadline=$((SECONDS + 10))
    for host in "$NET.2" "$NET.3"; do
        until ip netns exec "$NS_S" ssh -F "$TMP/ssh_config" -o BatchMode=yes -o ConnectTimeout=2 "$host" true 2>/dev/null; do
            (( SECONDS < deadline )) || return 1
            sleep 0.2
        done
    done
}
ok "sshd answers in both agent namespaces (key authentication)" sshd_ready

# in_s CMD...: CMD in the server's namespace, bounded by DIST_TIMEOUT_SEC, with the settings
# every run shares (two load hosts, the server on $NET.1, agents on CPU 1 of this host).
export RESULTS_DIR="$TMP/results" RUNNER_BUILD=0 BUILD
in_s() {
    ip netns exec "$NS_S" env LOADGEN_HOSTS="root@$NET.2,root@$NET.3" SERVER_ADDR="$NET.1" \
        SSH_OPTS="-F $TMP/ssh_config" AGENT_CPUS="${AGENT_CPUS:-$(nproc --all | awk '{ print ($1 > 1) ? 1 : 0 }')}" \
        AGENT_START_LEAD_SEC=2 timeout --kill-after=5 "$DIST_TIMEOUT_SEC" "$@"
}

# ---- 1. a constant rate from two hosts, merged ------------------------------------------------
rc=0
in_s env TARGET_RPS="$DIST_RATE" WARMUP_SEC=1 MEASURE_SEC="$DIST_MEASURE_SEC" WRK_CONNS="$DIST_CONNS" \
    "$ROOT/runner.sh" async-mem s1 --smoke --batch=dist >"$TMP/run1.out" 2>"$TMP/run1.err" || rc=$?
is "runner.sh with LOADGEN_HOSTS (2 agents, $DIST_RATE req/s) exits 0" "$rc" 0
if [[ $rc -ne 0 ]]; then sed 's/^/# /' "$TMP/run1.err" | tail -n 15; fi
run="$RESULTS_DIR/dist/async-mem-s1"
res="$run/result.json"
mkdir -p "$run"
[[ -f "$res" ]] || echo '{}' >"$res"
ok "the server listened on $NET.1" grep -q "listening on http://$NET.1:" "$run/server.log"
a0="$run/loadgen-sustain-agent0.json" a1="$run/loadgen-sustain-agent1.json"
[[ -f "$a0" ]] || echo '{}' >"$a0"
[[ -f "$a1" ]] || echo '{}' >"$a1"
half=$((DIST_CONNS / 2))
jqfile "each agent had its share: agent 0/2 and 1/2 of the total rate, $half connections each" "$a0" \
    '.agent_index == 0 and .agent_count == 2 and .connections == $h and $b[0].agent_index == 1 and $b[0].connections == $h
     and all(., $b[0]; .target_rps == $r and .mode == "constant")' \
    --slurpfile b "$a1" --argjson h "$half" --argjson r "$DIST_RATE"
jqfile "merged requests_completed = the sum of the agents'" "$run/loadgen.json" \
    '.requests_completed > 0 and .requests_completed == $a[0].requests_completed + $b[0].requests_completed
     and .merged_from == 2' --slurpfile a "$a0" --slurpfile b "$a1"
jqfile "merged status 200 count and latency count = the agents' sums" "$run/loadgen.json" \
    '.status_counts["200"] == $a[0].status_counts["200"] + $b[0].status_counts["200"]
     and .latency_ms.count == $a[0].latency_ms.count + $b[0].latency_ms.count' --slurpfile a "$a0" --slurpfile b "$a1"
jqfile "merged max is the larger agent max; merged p99 lies between the agents' p99" "$run/loadgen.json" \
    '.latency_ms.max == ([$a[0].latency_ms.max, $b[0].latency_ms.max] | max)
     and .latency_ms.p99 >= ([$a[0].latency_ms.p99, $b[0].latency_ms.p99] | min)
     and .latency_ms.p99 <= ([$a[0].latency_ms.p99, $b[0].latency_ms.p99] | max)' --slurpfile a "$a0" --slurpfile b "$a1"
# The achieved rate is the server's as much as the agents': on a crowded host (others on more
# than half of the server CPU, or sends 100 ms late) it may miss, and then these checks fail,
# with the crowding printed first (a skip on a figure the product measured, the send lag a
# symptom of the load generator itself, would let them never fail). (The namespaces' own
# bridge traffic is about 10% of the server CPU here, which `quiet` counts as other load.)
busy=$(jq -r 'if (.server_cpus_other_pct // 0) > 50 or (.send_lag_p99_ms // 0) > 100 then
    "other load on the server CPU \(.server_cpus_other_pct)%, send lag p99 \(.send_lag_p99_ms) ms" else "" end' "$res" 2>/dev/null || true)
[[ -z "$busy" ]] || echo "# host crowded: $busy (run it on a quiet host)"
jqfile "each agent sent R/2 x the window within 1%" "$a0" \
    'all(., $b[0]; ((.requests_sent - $r / 2 * .duration_s) | fabs) <= 0.01 * $r / 2 * .duration_s)' \
    --slurpfile b "$a1" --argjson r "$DIST_RATE"
jqfile "result.json: sustained_rps (merged) within 1% of the target $DIST_RATE req/s" "$res" \
    '.failure == null and .target_rps == $r and ((.sustained_rps - $r) | fabs) <= 0.01 * $r and .validity.rate_held == true' \
    --argjson r "$DIST_RATE"
jqfile "result.json: requests_completed is the merged count" "$res" '.requests_completed == $m[0].requests_completed' \
    --slurpfile m "$run/loadgen.json"
jqfile "result.json: loadgen_agents[] has both agents' CPU, CPU count, send lag, completions and errors" "$res" \
    '(.loadgen_agents | length) == 2 and ([.loadgen_agents[].agent_index] == [0, 1])
     and all(.loadgen_agents[]; (.loadgen_cpu_pct | type) == "number" and .cpu_count >= 1
         and (.send_lag_p99_ms | type) == "number" and .requests_completed > 0 and .errors_total == 0
         and (.destination | startswith("root@")) and (.loadgen_bound | type) == "boolean")
     and ([.loadgen_agents[].requests_completed] | add) == .requests_completed'
jqfile "result.json: loadgen_hosts[] with CPU model, cores, kernel, hostname and what was copied" "$res" \
    '(.loadgen_hosts | length) == 2 and all(.loadgen_hosts[]; .cores >= 1 and (.kernel | length) > 0
         and (.hostname | length) > 0 and .arch == $arch and (.copied | map(.file)) == ["build/loadgen", "loadgen-scripts/s1_ping.mix"])' \
    --arg arch "$(uname -m)"
jqfile "clock offsets recorded, within +-round trip/2 of 0 (one clock here), start skew within its bound" "$res" \
    'all(.loadgen_agents[]; (.clock_rtt_ms > 0) and ((.clock_offset_ms | fabs) <= .clock_rtt_ms / 2 + 0.002)
         and .start_skew_ms <= .start_skew_bound_ms)'
jqfile "sustain_loadgen_bound is any agent's" "$res" \
    '.validity.sustain_loadgen_bound == any(.loadgen_agents[]; .loadgen_bound)'
ok "merged histogram.txt is an HdrHistogram spectrum, loadgen.hist.json kept" \
    bash -c "grep -q Percentile '$run/histogram.txt' && jq -e '.format == \"loadgen-hist-1\"' '$run/loadgen.hist.json' >/dev/null"
gone() { local d; for d in $(jq -r '.loadgen_hosts[].remote_dir' "$res"); do [[ ! -e "$d" ]] || return 1; done; }
ok "the hosts' temporary folders are removed" gone

# ---- 2. the exact merge through the runner's merge path (agents_merge) ---------------------------
# Synthetic samples in us: A and B merged must equal C = A + B concatenated, and both must
# give exactly the percentiles of the concatenated samples under HdrHistogram's rules
# (rank = ceil(p x N), value = the highest equivalent of its bucket, at most the max).
python3 - "$run/loadgen-sustain-agent0.hist.json" "$TMP" <<'PY'
import json, random, sys
tmpl = json.load(open(sys.argv[1]))
rnd = random.Random(17)
def samples(n, scale):
    return [max(1, int(rnd.lognormvariate(0, 1.2) * scale)) for _ in range(n)]
parts = {"A": samples(7001, 400), "B": samples(3999, 2500)}
parts["C"] = parts["A"] + parts["B"]
for name, xs in parts.items():
    counts = {}
    for x in xs:
        counts[x] = counts.get(x, 0) + 1
    h = {"lowest": 1, "highest": 60000000, "sig_figs": 3, "unit": "us", "total": len(xs), "min": min(xs),
         "max": max(xs), "sum": sum(xs), "out_of_range": 0, "buckets": sorted([v, c] for v, c in counts.items())}
    doc = dict(tmpl)
    run = dict(tmpl["run"], requests_sent=len(xs), requests_completed=len(xs), in_flight_at_end=0,
               status_counts={"200": len(xs)}, unexpected_status_counts={},
               errors={k: 0 for k in ("connect", "read", "write", "timeout", "parse", "status")})
    doc["run"] = run
    doc["histograms"] = {k: h for k in ("latency_us", "service_time_us", "send_lag_us", "connection_wait_us")}
    json.dump(doc, open(f"{sys.argv[2]}/syn-{name}.hist.json", "w"))
def heq(v):  # highest equivalent value of v's bucket, lowest 1, 3 significant figures
    shift = max(0, v.bit_length() - 11)
    return ((v >> shift) << shift) + (1 << shift) - 1
xs = sorted(parts["C"])
want = {}
for key, p in (("p50", 50), ("p75", 75), ("p90", 90), ("p99", 99), ("p99_9", 99.9), ("p99_99", 99.99)):
    w = p / 100 * len(xs)
    rank = max(1, min(len(xs), -int(-(w - w * 1e-12) // 1)))
    want[key] = round(min(heq(xs[rank - 1]), xs[-1]) / 1000, 3)
want["max"] = round(xs[-1] / 1000, 3)
want["count"] = len(xs)
json.dump(want, open(f"{sys.argv[2]}/syn-want.json", "w"))
PY
merge_via_runner() {
    # shellcheck source=runner/remote.sh
    . "$ROOT/runner/remote.sh"
    agents_merge "$LG" "$TMP/syn-AB.json" "$TMP/syn-AB.hgrm" "$TMP/syn-AB.hist.json" "$TMP/syn-A.hist.json" "$TMP/syn-B.hist.json" &&
        agents_merge "$LG" "$TMP/syn-C.json" "$TMP/syn-C.hgrm" "$TMP/syn-CC.hist.json" "$TMP/syn-C.hist.json"
}
ok "agents_merge (runner/remote.sh) merges the synthetic A and B, and C alone" merge_via_runner
jqfile "merge(A, B) = merge(C): every latency figure and the counters" "$TMP/syn-AB.json" \
    '.latency_ms == $c[0].latency_ms and .requests_completed == $c[0].requests_completed and .send_lag_ms == $c[0].send_lag_ms' \
    --slurpfile c "$TMP/syn-C.json"
jqfile "merge(A, B): p50..p99.99, max and count equal those of the concatenated samples" "$TMP/syn-AB.json" \
    '.latency_ms as $l | all($w[0] | to_entries[]; $l[.key] == .value)' --slurpfile w "$TMP/syn-want.json"
ok "merge(A, B) and merge(C) write the same --hgrm spectrum" cmp -s "$TMP/syn-AB.hgrm" "$TMP/syn-C.hgrm"

# ---- 3. closed loop (the probe) from two hosts ------------------------------------------------
rc=0
in_s env PROBE_SEC=2 PROBE_WARMUP_SEC=1 "$ROOT/runner.sh" async-mem s1 --smoke --probe-only --batch=dist-probe \
    >"$TMP/run2.out" 2>"$TMP/run2.err" || rc=$?
is "runner.sh --probe-only with LOADGEN_HOSTS exits 0" "$rc" 0
if [[ $rc -ne 0 ]]; then sed 's/^/# /' "$TMP/run2.err" | tail -n 15; fi
res2="$RESULTS_DIR/dist-probe/async-mem-s1/result.json"
mkdir -p "$(dirname "$res2")"
[[ -f "$res2" ]] || echo '{}' >"$res2"
jqfile "probe: saturation_rps > 0, both agents in probe.loadgen_agents, completions add up" "$res2" \
    '.saturation_rps > 0 and (.probe.loadgen_agents | length) == 2
     and ([.probe.loadgen_agents[].requests_completed] | add) == .probe.requests_completed'
jqfile "probe: loadgen-bound only when an agent is and the server was not saturated" "$res2" \
    '.validity.probe_loadgen_bound == (any(.probe.loadgen_agents[]; .loadgen_bound) and .validity.saturated == false)'

# ---- 4. an agent killed mid-run fails the run, quickly ----------------------------------------
in_s env TARGET_RPS=1000 WARMUP_SEC=1 MEASURE_SEC=30 "$ROOT/runner.sh" async-mem s1 --smoke --batch=dist-kill \
    >"$TMP/run3.out" 2>"$TMP/run3.err" &
RUNNER_PID=$!
kill_run="$RESULTS_DIR/dist-kill/async-mem-s1"
victim="" survivor=""
deadline=$((SECONDS + 30))
while (( SECONDS < deadline )) && kill -0 "$RUNNER_PID" 2>/dev/null; do
    dir=$(jq -r '.loadgen_hosts[1].remote_dir // empty' "$kill_run/facts.json" 2>/dev/null || true)
    other_dir=$(jq -r '.loadgen_hosts[0].remote_dir // empty' "$kill_run/facts.json" 2>/dev/null || true)
    if [[ -n "$dir" && -s "$dir/agent-sustain.pid" && -s "$other_dir/agent-sustain.pid" ]]; then
        victim=$(<"$dir/agent-sustain.pid") survivor=$(<"$other_dir/agent-sustain.pid")
        grep -q 'loadgen' "/proc/$victim/cmdline" 2>/dev/null && break
    fi
    sleep 0.1
done
ok "agent 1's loadgen found running (pid ${victim:-none})" test -n "$victim"
sleep 4   # past --start-at (2 s after the launch) and the 1 s warm-up: mid-window
t_kill=$SECONDS
if [[ -n "$victim" ]]; then kill -KILL "$victim" 2>/dev/null || true; fi
rc=0
wait "$RUNNER_PID" || rc=$?
RUNNER_PID=""
took=$((SECONDS - t_kill))
is "the run with a killed agent exits 1" "$rc" 1
ok "it ended ${took} s after the kill (< 15 s, not the 30 s window)" test "$took" -lt 15
jqfile "result.json says which agent died and how" "$kill_run/result.json" \
    '.failure | test("load agent 1 of 2 on root@[0-9.]+ was killed by signal 9")'
ok "the other agent (pid ${survivor:-none}) was stopped and both temporary folders removed" \
    bash -c "[[ -n '$survivor' ]] && ! grep -q loadgen /proc/$survivor/cmdline 2>/dev/null && [[ ! -e '${other_dir:-/nonexistent}' && ! -e '${dir:-/nonexistent}' ]]"

# ---- 5. a load host whose clock is 50 ms ahead fails the run before any load --------------------
# A second sshd in the last agent namespace (port 2222) answers the runner's clock loop with
# its time + 50 ms and runs every other command as asked.
cat >"$TMP/skewed.sh" <<'SKEW'
#!/bin/sh
case "$SSH_ORIGINAL_COMMAND" in
    *EPOCHREALTIME*)
        exec bash -c 'while read -r _; do t=$EPOCHREALTIME; s=${t%[.,]*}; u=${t#*[.,]}; u=$((10#$u + 50000));
            printf "%d.%06d\n" $((s + u / 1000000)) $((u % 1000000)); done' ;;
    sftp|internal-sftp) exec /usr/lib/openssh/sftp-server ;;   # scp's subsystem
    *) exec sh -c "$SSH_ORIGINAL_COMMAND" ;;
esac
SKEW
chmod +x "$TMP/skewed.sh"
sed -e 's/^Port 22$/Port 2222/' "$TMP/sshd_config" >"$TMP/sshd_skewed_config"
echo "ForceCommand $TMP/skewed.sh" >>"$TMP/sshd_skewed_config"
ip netns exec "$NS_B" "$SSHD" -D -e -f "$TMP/sshd_skewed_config" >"$TMP/sshd-skewed.log" 2>&1 &
SSHD_PIDS+=("$!")
rc=0
for _ in $(seq 50); do
    ip netns exec "$NS_S" ssh -F "$TMP/ssh_config" -o BatchMode=yes -o ConnectTimeout=2 -o Port=2222 "$NET.3" true 2>/dev/null && break
    sleep 0.2
done
ip netns exec "$NS_S" env LOADGEN_HOSTS="root@$NET.3" SERVER_ADDR="$NET.1" SSH_OPTS="-F $TMP/ssh_config -o Port=2222" \
    PROBE_SEC=2 PROBE_WARMUP_SEC=1 timeout --kill-after=5 "$DIST_TIMEOUT_SEC" \
    "$ROOT/runner.sh" async-mem s1 --smoke --probe-only --batch=dist-skew >"$TMP/run4.out" 2>"$TMP/run4.err" || rc=$?
is "a load host 50 ms ahead: the run exits 1" "$rc" 1
skew_res="$RESULTS_DIR/dist-skew/async-mem-s1/result.json"
mkdir -p "$(dirname "$skew_res")"
[[ -f "$skew_res" ]] || echo '{}' >"$skew_res"
jqfile "its failure names the host, an offset of 50 ms +- 5 and the bound, before the probe ran" "$skew_res" \
    '(.failure | test("clock of load host root@[0-9.]+ is ([0-9.]+) ms off .* > MAX_START_SKEW_MS 10 ms"))
     and (.failure | capture("is (?<o>[0-9.]+) ms off").o | tonumber | . > 45 and . < 55) and .saturation_rps == null'

echo "# took $SECONDS s"
tap_finish
