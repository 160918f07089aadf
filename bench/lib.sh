# shellcheck shell=bash
# lib.sh: helpers shared by the bench/ scripts and the tests that start servers the same
# way (tests/it_loadgen.sh): argument check of a script that takes only --help, stopping
# the processes a script started, and picking a free loopback port.
# Sourced, never executed; defines functions only (no state, no traps).

# bench_help_only ARGS...: for a script whose only argument is --help: with no ARGS returns;
# with -h/--help prints the caller's usage() and exits 0; anything else: usage() on stderr,
# exit 2.
bench_help_only() {
    if [[ $# -gt 0 ]]; then
        case "$1" in
            -h|--help) usage; exit 0 ;;
            *) usage >&2; exit 2 ;;
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
