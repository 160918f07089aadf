# shellcheck shell=bash
# remote.sh: load generators on other hosts (LOADGEN_HOSTS) for runner.sh, over OpenSSH only:
# each host's facts and architecture, build/loadgen and the mix file copied there (scp), each
# host's clock offset (ssh round trips), the agents of one phase (--agent I/N --start-at T)
# run with a deadline, their outputs collected and merged exactly (loadgen merge).
# Sourced by runner.sh after lib.sh. The remote_* phase functions use runner.sh's fail, fact,
# log_info and settings and end the run through fail; the helpers (ssh_*, sh_quote,
# clock_offset, agents_merge, agent_split) only return. Nothing of ours stays on a host.
# runner.sh's globals used here: run_dir, url, loadgen_bin, mix_file, wrk_conns, LOG_FILE.
# shellcheck disable=SC2154

REMOTE_DESTS=()      # ssh destinations, in LOADGEN_HOSTS order (agent i runs on REMOTE_DESTS[i])
REMOTE_DIRS=()       # each host's temporary folder (physical path), "" until created
REMOTE_CPUS=()       # CPUs each agent may use (AGENT_CPUS, else the host's usable CPUs)
REMOTE_THREADS=()    # loadgen threads per agent
REMOTE_CONNS=()      # connections per agent (WRK_CONNS split as evenly as possible)
AGENT_PIDS=()        # the local ssh process of each agent of the running phase, "" when reaped
AGENT_EXITS=()       # each agent's exit status in the last phase
AGENT_PHASE=""       # the phase whose agents were started last
START_AT=""          # --start-at of the current phase, seconds since the epoch
CLOCK_JSON="[]"      # the clock measures before the current phase (JSON array)

# remote_enabled: true when the load comes from other hosts.
remote_enabled() { [[ -n "$LOADGEN_HOSTS" ]]; }

# sh_quote WORD...: the words quoted for a POSIX shell (single quotes), space-separated, for
# a command line that ssh hands to the remote login shell.
sh_quote() {
    local w out=""
    for w in "$@"; do
        out+="'${w//\'/\'\\\'\'}' "
    done
    printf '%s' "${out% }"
}

# ssh_argv: sets SSH_ARGV to the ssh options every call uses: BatchMode (never a password
# prompt), SSH_CONNECT_TIMEOUT_SEC, keep-alives (a dead host is noticed within 15 s), then
# SSH_OPTS (extra words, e.g. "-F FILE" or "-i KEY -o Port=2222"; scp takes the same).
ssh_argv() {
    local opts=()
    read -ra opts <<<"$SSH_OPTS"
    SSH_ARGV=(-o BatchMode=yes -o ConnectTimeout="$SSH_CONNECT_TIMEOUT_SEC" -o ServerAliveInterval=5
        -o ServerAliveCountMax=3 "${opts[@]}")
}

# ssh_run DEST COMMAND: runs COMMAND (a shell command line) on DEST with ssh (ssh_argv).
# Returns ssh's status: the remote command's, or 255 when ssh itself failed.
ssh_run() {
    local SSH_ARGV
    ssh_argv
    ssh "${SSH_ARGV[@]}" -- "$1" "$2"
}

# ssh_copy SRC... DEST: scp (quiet) with the options of ssh_run; remote paths are HOST:PATH.
ssh_copy() {
    local SSH_ARGV
    ssh_argv
    scp -q "${SSH_ARGV[@]}" -- "$@"
}

# agent_split TOTAL N I: agent I's share of TOTAL split N ways as evenly as possible (the
# first TOTAL mod N agents get one more).
agent_split() {
    local total=$1 n=$2 i=$3
    echo $(( total / n + (i < total % n ? 1 : 0) ))
}

# remote_parse: checks LOADGEN_HOSTS, SERVER_ADDR, AGENT_CPUS and the other remote settings
# (runner.sh's parse_args calls it after the CPUs are known); usage_error on bad values.
remote_parse() {
    local d dest_re='^[][A-Za-z0-9_.@%:-]+$' ip4='^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$'
    [[ "$SERVER_ADDR" =~ $ip4 ]] || usage_error "SERVER_ADDR must be an IPv4 address the server can listen on, got '$SERVER_ADDR'"
    is_pos_int "$SSH_CONNECT_TIMEOUT_SEC" || usage_error "SSH_CONNECT_TIMEOUT_SEC must be whole seconds > 0, got '$SSH_CONNECT_TIMEOUT_SEC'"
    if [[ ! "$MAX_START_SKEW_MS" =~ ^[0-9]+(\.[0-9]+)?$ ]] || ! awk -v v="$MAX_START_SKEW_MS" 'BEGIN { exit !(v > 0) }'; then
        usage_error "MAX_START_SKEW_MS must be a number of ms > 0, got '$MAX_START_SKEW_MS'"
    fi
    is_pos_int "$AGENT_START_LEAD_SEC" || usage_error "AGENT_START_LEAD_SEC must be whole seconds > 0, got '$AGENT_START_LEAD_SEC'"
    is_pos_int "$CLOCK_SAMPLES" || usage_error "CLOCK_SAMPLES must be a whole number > 0, got '$CLOCK_SAMPLES'"
    REMOTE_DESTS=()
    [[ -n "$LOADGEN_HOSTS" ]] || return 0
    local IFS=,
    for d in $LOADGEN_HOSTS; do
        [[ -n "$d" ]] || continue
        [[ "$d" =~ $dest_re && "$d" != -* ]] ||
            usage_error "LOADGEN_HOSTS: '$d' is not an ssh destination ([user@]host)"
        REMOTE_DESTS+=("$d")
    done
    unset IFS
    (( ${#REMOTE_DESTS[@]} > 0 )) || usage_error "LOADGEN_HOSTS holds no destination: '$LOADGEN_HOSTS'"
    if [[ -z "$SERVER_ADDR_SET" ]]; then
        usage_error "LOADGEN_HOSTS needs SERVER_ADDR: an IPv4 address of this host that the load hosts reach (the server listens on it)"
    fi
    if [[ -n "$AGENT_CPUS" ]]; then
        cpulist_count "$AGENT_CPUS" >/dev/null || usage_error "bad AGENT_CPUS '$AGENT_CPUS'"
    fi
    (( wrk_conns >= ${#REMOTE_DESTS[@]} )) ||
        usage_error "connections ($wrk_conns) must be at least the number of load hosts (${#REMOTE_DESTS[@]})"
}

# remote_prepare DEST [CPUS]: one ssh session to DEST that prints key=value lines: its facts
# (arch, kernel, hostname, cores, cores_usable, cpu_model, libc), whether taskset can pin to
# CPUS (pin=ok|no, when CPUS is given), and dir=, a new temporary folder (physical path).
remote_prepare() {
    ssh_run "$1" "sh -s -- $(sh_quote "${2:-}")" <<'PREPARE'
printf 'arch=%s\n' "$(uname -m)"
printf 'kernel=%s\n' "$(uname -r)"
printf 'hostname=%s\n' "$(hostname 2>/dev/null || uname -n)"
printf 'cores=%s\n' "$(nproc --all 2>/dev/null || getconf _NPROCESSORS_CONF)"
printf 'cores_usable=%s\n' "$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)"
printf 'cpu_model=%s\n' "$(awk -F: '/^model name/ { sub(/^[ \t]+/, "", $2); print $2; exit }' /proc/cpuinfo 2>/dev/null)"
printf 'libc=%s\n' "$(ldd --version 2>&1 | head -n 1)"
if [ -n "$1" ]; then
    if taskset -c "$1" true 2>/dev/null; then echo pin=ok; else echo pin=no; fi
fi
d=$(mktemp -d "${TMPDIR:-/tmp}/actor-bench-loadgen.XXXXXX") && cd "$d" && printf 'dir=%s\n' "$(pwd -P)"
PREPARE
}

# remote_setup: for every load host: its facts (recorded in facts.json .loadgen_hosts), the
# architecture check, a temporary folder, build/loadgen and the mix file copied there (scp), a
# check that the copy runs with every symbol bound (LD_BIND_NOW: its libraries are there and
# recent enough), AGENT_CPUS checked, and the agent's
# connections and threads. Three ssh sessions per host. Fails the run with the reason.
remote_setup() {
    local n=${#REMOTE_DESTS[@]} i dest kv arch local_arch dir why cpus threads conns hosts_json="[]" host_json
    local sha mix_name
    local_arch=$(uname -m)
    sha=$(sha256sum "$loadgen_bin" | cut -d' ' -f1)
    mix_name=$(basename "$mix_file")
    for ((i = 0; i < n; i++)); do
        dest=${REMOTE_DESTS[i]}
        kv=$(remote_prepare "$dest" "$AGENT_CPUS" 2>&1) ||
            fail "load host $dest: ssh failed (BatchMode: key authentication only): $(tail -n 2 <<<"$kv" | tr '\n' ' ')"
        host_json=$(jq -Rn --arg dest "$dest" '[inputs | capture("^(?<key>[a-z_]+)=(?<value>.*)$")] | from_entries
            | {destination: $dest, hostname, arch, cpu_model: (if (.cpu_model // "") == "" then null else .cpu_model end),
               cores: (.cores | tonumber? // null), cores_usable: (.cores_usable | tonumber? // null),
               kernel, libc, pin, remote_dir: .dir}' <<<"$kv")
        dir=$(jq -r '.remote_dir // ""' <<<"$host_json")
        [[ "$dir" == /*/actor-bench-loadgen.* ]] || fail "load host $dest: cannot create a temporary folder: $(tail -n 2 <<<"$kv" | tr '\n' ' ')"
        REMOTE_DIRS[i]=$dir
        arch=$(jq -r '.arch // ""' <<<"$host_json")
        [[ "$arch" == "$local_arch" ]] ||
            fail "load host $dest is ${arch:-of an unknown architecture}, this host is $local_arch: the loadgen built here cannot run there (use load hosts of the same architecture)"
        why=$(ssh_copy "$loadgen_bin" "$mix_file" "$dest:$dir/" 2>&1) ||
            fail "copying build/loadgen and $mix_name to $dest:$dir failed: $why"
        why=$(ssh_run "$dest" "cd $(sh_quote "$dir") && if LD_BIND_NOW=1 ./loadgen --help >/dev/null 2>&1; then exit 0; fi; echo 'it does not start:'; LD_BIND_NOW=1 ./loadgen --help 2>&1 | head -n 2; ldd ./loadgen 2>&1 | grep -E 'not found|version' | head -n 5; exit 1" 2>&1) ||
            fail "build/loadgen copied to $dest does not run there ($(tr '\n' ' ' <<<"$why")): it needs what 'ldd build/loadgen' lists here (glibc, libuv1, libjansson4), no older than this host's"
        if [[ -n "$AGENT_CPUS" ]]; then
            jq -e '.pin == "ok"' <<<"$host_json" >/dev/null ||
                fail "load host $dest cannot pin to AGENT_CPUS=$AGENT_CPUS (taskset missing, or no such CPUs there: $(jq -r '.cores_usable' <<<"$host_json") usable)"
            cpus=$(cpulist_count "$AGENT_CPUS")
        else
            cpus=$(jq -r '.cores_usable // 1' <<<"$host_json")
        fi
        conns=$(agent_split "$wrk_conns" "$n" "$i")
        threads=${wrk_threads_given:-$cpus}
        (( threads <= conns )) || threads=$conns
        REMOTE_CPUS[i]=$cpus REMOTE_THREADS[i]=$threads REMOTE_CONNS[i]=$conns
        hosts_json=$(jq --argjson h "$host_json" --arg cpus "$AGENT_CPUS" --argjson ncpu "$cpus" \
            --argjson threads "$threads" --argjson conns "$conns" --arg sha "$sha" --arg mix "$mix_name" --argjson i "$i" \
            '. + [($h | del(.pin)) + {agent_index: $i, agent_cpus: (if $cpus == "" then null else $cpus end),
                        agent_cpu_count: $ncpu, threads: $threads, connections: $conns,
                        copied: [{file: "build/loadgen", sha256: $sha}, {file: ("loadgen-scripts/" + $mix)}]}]' <<<"$hosts_json")
        log_info "hosts: $dest ($(jq -r '"\(.hostname), \(.arch), \(.cores) cores, kernel \(.kernel)"' <<<"$host_json")): copied build/loadgen (sha256 ${sha:0:12}) and $mix_name to $dir; agent $i/$n: $conns connections, $threads thread(s) on ${AGENT_CPUS:-all its $cpus} CPU(s)"
    done
    fact .loadgen_hosts "$hosts_json"
}

# The remote side of clock_offset: for each line read, the time in seconds since the epoch
# with at least microseconds; bash's $EPOCHREALTIME (bash >= 5) when there is one, as it
# costs no process (a fork of `date` would add its start-up time to one side of the round
# trip), else `date +%s.%N`.
# shellcheck disable=SC2016  # expanded there
CLOCK_LOOP='if command -v bash >/dev/null 2>&1 && bash -c '"'"'[ -n "${EPOCHREALTIME:-}" ]'"'"'; then
exec bash -c '"'"'while read -r _; do t=$EPOCHREALTIME; echo "${t/,/.}"; done'"'"'; fi
while read -r _; do date +%s.%N; done'

# clock_offset DEST: measures DEST's clock against this host's over one ssh session: each of
# CLOCK_SAMPLES round trips sends a line and reads the remote time back (CLOCK_LOOP); with t0
# and t1 the local send and receive times, offset = remote - (t0 + t1) / 2, and as the remote
# time was read between t0 and t1 its error is at most (t1 - t0) / 2. Prints "OFFSET_MS
# RTT_MS" of the sample with the smallest round trip. Returns 1 (message on stderr) when the
# host does not answer or its time has no fraction of a second.
clock_offset() {
    local dest=$1 i t0 t1 r samples=() in out pid
    coproc CLOCK_SSH { ssh_run "$dest" "$CLOCK_LOOP" 2>/dev/null; }
    in=${CLOCK_SSH[1]} out=${CLOCK_SSH[0]} pid=$CLOCK_SSH_PID
    # the first answer arrives once the session is up: it is not a sample
    if echo >&"$in" && read -r -t $((SSH_CONNECT_TIMEOUT_SEC + 5)) r <&"$out" && [[ "$r" =~ ^[0-9]+\.[0-9]{6,9}$ ]]; then
        for ((i = 0; i < CLOCK_SAMPLES; i++)); do
            t0=${EPOCHREALTIME/,/.}
            echo >&"$in"
            read -r -t 5 r <&"$out" || break
            t1=${EPOCHREALTIME/,/.}
            [[ "$r" =~ ^[0-9]+\.[0-9]+$ ]] || break
            samples+=("$t0 $r $t1")
        done
    else
        echo "clock_offset: $dest did not answer with the time in seconds and a fraction (got '${r:-nothing}')" >&2
    fi
    # end of input ends the loop there, and so the session
    exec {in}>&- || true
    wait "$pid" 2>/dev/null || true
    (( ${#samples[@]} > 0 )) || return 1
    printf '%s\n' "${samples[@]}" | awk '
        NR == 1 { base = int($1) }
        { rtt = $3 - $1; off = ($2 - base) - (($1 - base) + ($3 - base)) / 2
          if (NR == 1 || rtt < best) { best = rtt; boff = off } }
        END { printf "%.3f %.3f\n", boff * 1000, best * 1000 }'
}

# remote_clock_check PHASE: every load host's clock offset before PHASE, into CLOCK_JSON;
# fails the run when a host's start skew, |offset| + round trip / 2, exceeds MAX_START_SKEW_MS.
remote_clock_check() {
    local phase=$1 i dest m off rtt skew
    CLOCK_JSON="[]"
    for ((i = 0; i < ${#REMOTE_DESTS[@]}; i++)); do
        dest=${REMOTE_DESTS[i]}
        m=$(clock_offset "$dest" 2>>"$LOG_FILE") || fail "cannot measure the clock of load host $dest before the $phase (ssh; see runner.log)"
        read -r off rtt <<<"$m"
        skew=$(awk -v o="$off" -v r="$rtt" 'BEGIN { printf "%.3f", (o < 0 ? -o : o) + r / 2 }')
        CLOCK_JSON=$(jq --arg dest "$dest" --argjson off "$off" --argjson rtt "$rtt" --argjson skew "$skew" \
            --argjson i "$i" --argjson bound "$MAX_START_SKEW_MS" \
            '. + [{agent_index: $i, destination: $dest, offset_ms: $off, rtt_ms: $rtt, start_skew_ms: $skew, bound_ms: $bound}]' <<<"$CLOCK_JSON")
        log_info "clock: $dest is ${off} ms from this host's clock (ssh round trip $rtt ms): start skew <= $skew ms (bound $MAX_START_SKEW_MS ms)"
        if awk -v s="$skew" -v b="$MAX_START_SKEW_MS" 'BEGIN { exit !(s > b) }'; then
            fail "the clock of load host $dest is $off ms off this host's (ssh round trip $rtt ms): start skew up to $skew ms > MAX_START_SKEW_MS $MAX_START_SKEW_MS ms; synchronise the clocks (chrony or NTP) or use load hosts closer to this one"
        fi
    done
}

# remote_start_at: sets START_AT to AGENT_START_LEAD_SEC from now (seconds since the epoch, to the ms).
remote_start_at() {
    START_AT=$(awk -v t="${EPOCHREALTIME/,/.}" -v l="$AGENT_START_LEAD_SEC" 'BEGIN { printf "%.3f", t + l }')
}

# remote_seconds_until T: seconds from now to T (seconds since the epoch), at least 0.
remote_seconds_until() {
    awk -v t="${EPOCHREALTIME/,/.}" -v at="$1" 'BEGIN { d = at - t; printf "%.3f", (d > 0 ? d : 0) }'
}

# remote_agents_start PHASE RATE WARMUP DURATION EXTRA...: starts agent i of N on every load
# host over ssh (pinned to AGENT_CPUS when set), --agent i/N --start-at START_AT, writing
# loadgen-PHASE-agentI.json and .hist.json in its folder and its pid in agent-PHASE.pid; the
# agents' output goes to loadgen-PHASE-agentI.log in the run folder.
remote_agents_start() {
    local phase=$1 rate=$2 warm=$3 dur=$4 n=${#REMOTE_DESTS[@]} i pin cmd args
    shift 4
    AGENT_PHASE=$phase AGENT_PIDS=() AGENT_EXITS=()
    for ((i = 0; i < n; i++)); do
        pin=()
        [[ -z "$AGENT_CPUS" ]] || pin=(taskset -c "$AGENT_CPUS")
        args=("${pin[@]}" ./loadgen --url "$url" --mix "./$(basename "$mix_file")"
            --connections "${REMOTE_CONNS[i]}" --threads "${REMOTE_THREADS[i]}" --duration "$dur"
            --warmup "$warm" --rate "$rate" --timeout "$REQ_TIMEOUT_SEC" --bearer "$BEARER" "$@"
            --agent "$i/$n" --start-at "$START_AT"
            --json "loadgen-$phase-agent$i.json" --hist-out "loadgen-$phase-agent$i.hist.json")
        # the shell there keeps the loadgen's pid (for remote_cleanup) and exits with its status
        cmd="cd $(sh_quote "${REMOTE_DIRS[i]}") && rm -f loadgen-$phase-agent$i.json loadgen-$phase-agent$i.hist.json && { $(sh_quote "${args[@]}") </dev/null & echo \$! >agent-$phase.pid; wait \$!; }"
        (ssh_argv; exec ssh "${SSH_ARGV[@]}" -- "${REMOTE_DESTS[i]}" "$cmd") >"$run_dir/loadgen-$phase-agent$i.log" 2>&1 </dev/null &
        AGENT_PIDS[i]=$!
        AGENT_EXITS[i]=""
    done
}

# remote_agents_wait PHASE WARMUP DURATION: waits for every agent of PHASE; fails the run as
# soon as one exits non-zero (the EXIT trap stops the others) or when any is still running
# REQ_TIMEOUT_SEC + AGENT_GRACE_SEC after the phase should have ended.
remote_agents_wait() {
    local phase=$1 warm=$2 dur=$3 i pid st running deadline how
    # whole seconds since the epoch, so that the poll below needs no process
    deadline=$(( ${START_AT%.*} + 1 + warm + dur + REQ_TIMEOUT_SEC + AGENT_GRACE_SEC ))
    while :; do
        running=0
        for i in "${!AGENT_PIDS[@]}"; do
            pid=${AGENT_PIDS[i]}
            [[ -n "$pid" ]] || continue
            if kill -0 "$pid" 2>/dev/null; then
                running=$((running + 1))
                continue
            fi
            st=0
            wait "$pid" 2>/dev/null || st=$?
            AGENT_PIDS[i]="" AGENT_EXITS[i]=$st
            if (( st != 0 )); then
                how="exited $st"
                (( st == 255 )) && how="lost its ssh connection or failed to start (ssh exit 255)"
                (( st > 128 && st < 255 )) && how="was killed by signal $((st - 128)) (exit $st)"
                fail "load agent $i of ${#REMOTE_DESTS[@]} on ${REMOTE_DESTS[i]} $how during the $phase: $(tail -n 3 "$run_dir/loadgen-$phase-agent$i.log" | tr '\n' ' ')"
            fi
        done
        (( running > 0 )) || return 0
        if (( ${EPOCHREALTIME%[.,]*} > deadline )); then
            fail "$running load agent(s) of the $phase still running $((REQ_TIMEOUT_SEC + AGENT_GRACE_SEC)) s after the phase should have ended (stopped)"
        fi
        sleep 0.2
    done
}

# agents_merge LOADGEN OUT HGRM HIST IN...: the exact merge of the agents' --hist-out files IN
# (loadgen merge): OUT in the single-run --json shape, HGRM the corrected-latency spectrum,
# HIST the merged lossless file. Returns loadgen merge's status (its message on stderr).
agents_merge() {
    local lg=$1 out=$2 hgrm=$3 hist=$4
    shift 4
    "$lg" merge --quiet --hgrm "$hgrm" --hist-out "$hist" "$out" "$@"
}

# remote_agents_collect PHASE DURATION JSON HGRM: copies every agent's JSON and lossless
# histograms back (scp), checks that each measured its whole window, and merges them into
# JSON and HGRM (and PHASE.hist.json) where a local run writes its own.
remote_agents_collect() {
    local phase=$1 dur=$2 json=$3 hgrm=$4 i dest dir why el ins=()
    for ((i = 0; i < ${#REMOTE_DESTS[@]}; i++)); do
        dest=${REMOTE_DESTS[i]} dir=${REMOTE_DIRS[i]}
        rm -f "$run_dir/loadgen-$phase-agent$i.json" "$run_dir/loadgen-$phase-agent$i.hist.json"
        why=$(ssh_copy "$dest:$dir/loadgen-$phase-agent$i.json" "$dest:$dir/loadgen-$phase-agent$i.hist.json" "$run_dir/" 2>&1) ||
            fail "collecting agent $i's results of the $phase from $dest failed: $why"
        el=$(jq -r '.elapsed_s // 0' "$run_dir/loadgen-$phase-agent$i.json" 2>/dev/null || echo 0)
        if awk -v e="$el" -v d="$dur" 'BEGIN { exit !(e < 0.99 * d) }'; then
            fail "load agent $i on $dest measured $el s of the $phase's $dur s window (stopped early: interrupted?)"
        fi
        ins+=("$run_dir/loadgen-$phase-agent$i.hist.json")
    done
    why=$(agents_merge "$loadgen_bin" "$json" "$hgrm" "$run_dir/$(basename "$json" .json).hist.json" "${ins[@]}" 2>&1) ||
        fail "merging the agents' histograms of the $phase failed: $why"
}

# remote_phase_json PHASE: the facts of PHASE's agents ({} for a local run): start_at_unix_s,
# clock (offset, round trip, start skew per host) and agents[] (destination, files, CPUs,
# connections, threads, exit status).
remote_phase_json() {
    local phase=$1 i agents="[]"
    remote_enabled || { echo '{}'; return 0; }
    for ((i = 0; i < ${#REMOTE_DESTS[@]}; i++)); do
        agents=$(jq --argjson i "$i" --arg dest "${REMOTE_DESTS[i]}" --arg phase "$phase" \
            --argjson cpus "${REMOTE_CPUS[i]}" --argjson threads "${REMOTE_THREADS[i]}" \
            --argjson conns "${REMOTE_CONNS[i]}" --arg exit "${AGENT_EXITS[i]:-}" \
            '. + [{agent_index: $i, destination: $dest, cpu_count: $cpus, threads: $threads, connections: $conns,
                   json: "loadgen-\($phase)-agent\($i).json", hist: "loadgen-\($phase)-agent\($i).hist.json",
                   log: "loadgen-\($phase)-agent\($i).log", exit: (if $exit == "" then null else ($exit | tonumber) end)}]' \
            <<<"$agents")
    done
    jq -n --argjson agents "$agents" --argjson clock "$CLOCK_JSON" --argjson at "$START_AT" \
        '{start_at_unix_s: $at, clock: $clock, agents: $agents}'
}

# remote_cleanup: for runner.sh's EXIT trap: stops agents still running (the local ssh and,
# by the pid it wrote, the loadgen on its host) and removes every host's temporary folder;
# each ssh bounded by SSH_CONNECT_TIMEOUT_SEC + 5 s. Never fails.
remote_cleanup() {
    local i pid dir cmd SSH_ARGV
    ssh_argv
    for i in "${!REMOTE_DIRS[@]}"; do
        dir=${REMOTE_DIRS[i]}
        [[ -n "$dir" ]] || continue
        pid=${AGENT_PIDS[i]:-}
        cmd="cd $(sh_quote "$dir") || exit 0"
        if [[ -n "$pid" ]]; then
            kill -TERM "$pid" 2>/dev/null || true
            # the loadgen is ours when its working folder is ours
            cmd+="; p=\$(cat agent-$AGENT_PHASE.pid 2>/dev/null); if [ -n \"\$p\" ] && [ \"\$(readlink /proc/\$p/cwd 2>/dev/null)\" = $(sh_quote "$dir") ]; then kill -KILL \"\$p\"; fi"
        fi
        cmd+="; cd / && rm -rf $(sh_quote "$dir")"
        timeout $((SSH_CONNECT_TIMEOUT_SEC + 5)) ssh "${SSH_ARGV[@]}" -- "${REMOTE_DESTS[i]}" "$cmd" >/dev/null 2>&1 </dev/null || true
        if [[ -n "$pid" ]]; then wait "$pid" 2>/dev/null || true; fi
        REMOTE_DIRS[i]="" AGENT_PIDS[i]=""
    done
}
