# shellcheck shell=bash
# server.sh: the server under test as a process tree: its session (setsid makes the command
# the leader of a session and process group of its own), readiness on its ready_path, the
# listening-socket check that it is this tree that owns the port, the stop signal sent to
# every process of the tree, and the /metrics scrapes at the edges of a measured window.
# Sourced by runner.sh; defines functions only. Never signals a process outside the tree.
# The contract checks themselves are runner/analysis/verify.py (CONTRACT.md).

# server_tree_pids LEADER: the live processes of LEADER's tree, one pid a line: every
# process descended from LEADER and every process of the session LEADER leads (its
# children keep it after the leader exits, or after their parent did). Zombies are left
# out. The same set the samplers measure (runner/proc.sh proc_tree_pids).
server_tree_pids() {
    proc_tree_pids "$1" live
    (( ${#PROC_TREE_PIDS[@]} == 0 )) || printf '%s\n' "${PROC_TREE_PIDS[@]}"
}

# server_signal SIG LEADER: sends SIG (a name: TERM, KILL, ...) to LEADER first, then to
# every other process of its tree (each once: a single-process server gets one signal).
server_signal() {
    local sig=$1 leader=$2 pid
    kill -s "$sig" "$leader" 2>/dev/null || true
    for pid in $(server_tree_pids "$leader"); do
        [[ "$pid" == "$leader" ]] || kill -s "$sig" "$pid" 2>/dev/null || true
    done
}

# server_tree_wait LEADER DEADLINE_S: waits (polling every 50 ms) until no process of
# LEADER's tree lives or clock_s passes DEADLINE_S. Returns 0 when the tree is gone.
server_tree_wait() {
    while [[ -n "$(server_tree_pids "$1")" ]]; do
        awk -v t="$(clock_s)" -v d="$2" 'BEGIN { exit !(t < d) }' || return 1
        sleep 0.05
    done
}

# server_ready_wait URL PID TIMEOUT_S: waits until URL answers 200 while PID lives.
# Returns 0 when it answered, 1 when PID exited, 2 on timeout.
server_ready_wait() {
    local url=$1 pid=$2 deadline code
    deadline=$(awk -v t="$(clock_s)" -v d="$3" 'BEGIN { print t + d }')
    while :; do
        if ! kill -0 "$pid" 2>/dev/null; then return 1; fi
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$url" 2>/dev/null || true)
        if [[ "$code" == 200 ]]; then return 0; fi
        if awk -v t="$(clock_s)" -v d="$deadline" 'BEGIN { exit !(t > d) }'; then return 2; fi
        sleep 0.05
    done
}

# port_listeners PORT: the socket inodes listening on TCP port PORT (any address, IPv4 and
# IPv6), one a line, from /proc/net/tcp and tcp6; nothing when the port is free.
port_listeners() {
    local hex f files=()
    hex=$(printf '%04X' "$1")
    for f in /proc/net/tcp /proc/net/tcp6; do [[ -r "$f" ]] && files+=("$f"); done
    (( ${#files[@]} > 0 )) || return 0
    awk -v p="$hex" 'FNR > 1 && $4 == "0A" { split($2, a, ":"); if (toupper(a[2]) == p) print $10 }' "${files[@]}"
}

# server_owns_port LEADER PORT: 0 when at least one socket listens on PORT and every such
# socket is held by a process of LEADER's tree (so no other process on the port is measured,
# not even one sharing it with SO_REUSEPORT). Otherwise 1, and says why on stdout.
server_owns_port() {
    local leader=$1 port=$2 inode pid found held
    local -a inodes pids
    mapfile -t inodes < <(port_listeners "$port")
    if (( ${#inodes[@]} == 0 )); then
        echo "no socket listens on port $port"
        return 1
    fi
    mapfile -t pids < <(server_tree_pids "$leader")
    held=""
    for pid in "${pids[@]}"; do
        held+=$(find "/proc/$pid/fd" -maxdepth 1 -type l -printf '%l\n' 2>/dev/null | grep -E '^socket:\[[0-9]+\]$' || true)
        held+=$'\n'
    done
    for inode in "${inodes[@]}"; do
        found=0
        if grep -qxF "socket:[$inode]" <<<"$held"; then found=1; fi
        if (( found == 0 )); then
            echo "a socket listening on port $port (inode $inode) belongs to no process of the server's tree (pids: ${pids[*]:-none}): another process shares the port"
            return 1
        fi
    done
}

# server_log_error FILE: the first line of FILE that reads like an error, else its last
# line (for "exited before it was ready" messages).
server_log_error() {
    local line
    line=$(grep -m1 -iE "error|fatal|fail|cannot|can't|unable|usage|denied|not found|no such|invalid|refused|in use|emerg|panic|exception|abort" "$1" 2>/dev/null) ||
        line=$(tail -n 1 "$1" 2>/dev/null) || line=""
    printf '%s\n' "${line:-(server.log is empty)}" | cut -c1-300
}

# metrics_scrape URL FILE: GETs URL/metrics into FILE, at most 4 MiB (a benchmarked
# server's answer is not trusted for size: curl refuses a larger Content-Length, the file
# size limit stops any other). Returns non-zero on failure, a non-200 answer or a larger
# body (said on stderr).
metrics_scrape() {
    local code rc=0
    code=$(ulimit -f 4096; exec curl -sS -o "$2" -w '%{http_code}' --max-time 5 --max-filesize 4194304 "$1/metrics") || rc=$?
    (( rc != 63 && rc != 128 + 25 )) || echo "runner: $1/metrics sent more than 4 MiB: refused" >&2
    (( rc == 0 )) && [[ "$code" == 200 ]]
}
