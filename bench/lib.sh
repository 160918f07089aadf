# shellcheck shell=bash
# lib.sh: helpers shared by the bench/ scripts and the tests that start servers the same
# way (tests/it_loadgen.sh): argument check of a script that takes only --help, stopping
# the processes a script started, picking a free loopback port, waiting for a listener,
# a process's CPU ticks, and the nginx peer's config and worker pid.
# Sourced, never executed; defines functions only (no state, no traps).

# bench_help_only ARGS...: for a script whose only argument is --help: with no ARGS returns;
# with -h/--help prints the caller's usage() and exits 0; anything else: a line naming it
# and usage() on stderr, exit 2.
bench_help_only() {
    if [[ $# -gt 0 ]]; then
        case "$1" in
            -h|--help) usage; exit 0 ;;
            *) echo "$(basename "$0"): unknown argument '$1'" >&2; usage >&2; exit 2 ;;
        esac
    fi
}

# bench_stop PID...: sends SIGTERM to each PID (own children only), then reaps them all.
# Never fails: a PID that already exited is ignored.
bench_stop() {
    local p
    for p in "$@"; do kill "$p" 2>/dev/null || true; done
    for p in "$@"; do wait "$p" 2>/dev/null || true; done
}

# bench_free_port: prints a TCP port on 127.0.0.1 that was free a moment ago.
bench_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# bench_cpu_ticks PID: utime + stime of PID (all its threads), in clock ticks (fields 14
# and 15 of /proc/PID/stat; comm may contain spaces, so cut after the last ')').
bench_cpu_ticks() {
    local stat
    stat=$(cat "/proc/$1/stat")
    stat=${stat##*) }
    # shellcheck disable=SC2086 # split into fields on purpose
    set -- $stat
    echo $((${12} + ${13}))
}

# bench_wait_port PORT: waits (up to 10 s) until something accepts on 127.0.0.1:PORT.
bench_wait_port() {
    local _
    for _ in $(seq 1 200); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
        sleep 0.05
    done
    echo "nothing listening on port $1" >&2
    return 1
}

# bench_nginx_conf DIR PORT [WORKER_CONNECTIONS] [MAIN_DIRECTIVES] [HOST] [WORKERS]: writes
# DIR/nginx.conf for the peer server of the comparisons: WORKERS workers (1), daemon off, own
# prefix and pid file, access_log off, `location = /ping { return 200 "pong"; }`, keep-alive
# connections never closed for their request count (as our servers), listening on HOST
# (127.0.0.1); MAIN_DIRECTIVES go first (e.g. "master_process off;"). Run it with:
# nginx -p DIR -c DIR/nginx.conf (servers/nginx/run.sh: the runner's nginx-ping)
bench_nginx_conf() {
    mkdir -p "$1/logs"
    cat >"$1/nginx.conf" <<EOC
${4:-}
worker_processes ${6:-1};
worker_rlimit_nofile ${3:-4096};
daemon off;
pid $1/nginx.pid;
error_log $1/logs/error.log;
events { worker_connections ${3:-4096}; }
http {
    access_log off;
    keepalive_timeout 65;
    keepalive_requests 100000000;
    client_body_temp_path $1/body;
    proxy_temp_path $1/proxy;
    fastcgi_temp_path $1/fastcgi;
    uwsgi_temp_path $1/uwsgi;
    scgi_temp_path $1/scgi;
    server {
        listen ${5:-127.0.0.1}:$2 backlog=4096;
        location = /ping { return 200 "pong"; }
    }
}
EOC
}

# bench_nginx_worker MASTER_PID: prints the pid of the nginx worker under MASTER_PID.
bench_nginx_worker() {
    local _ w
    for _ in $(seq 1 100); do
        w=$(ps -o pid= --ppid "$1" | tr -d ' ' | head -n1)
        if [ -n "$w" ]; then echo "$w"; return 0; fi
        sleep 0.05
    done
    echo "no nginx worker under pid $1" >&2
    return 1
}

# bench_cpu_busy SECONDS CPU...: prints "cpuN=P%" for each CPU: its busy share (user, nice,
# system, irq, softirq, steal) over SECONDS, from /proc/stat. Run before a timed benchmark
# to show how much other work the machine had.
bench_cpu_busy() {
    local secs=$1 a b c out=""
    shift
    a=$(cat /proc/stat)
    sleep "$secs"
    b=$(cat /proc/stat)
    for c in "$@"; do
        out+=$(printf '%s\n%s\n' "$a" "$b" | awk -v c="cpu$c" '$1 == c {
            busy = $2 + $3 + $4 + $7 + $8 + $9; tot = busy + $5 + $6
            if (n++) printf "%s=%.0f%% ", c, 100 * (busy - b0) / (tot - t0); else { b0 = busy; t0 = tot } }')
    done
    echo "${out% }"
}
