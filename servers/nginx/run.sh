#!/usr/bin/env bash
# run.sh: the nginx-ping server of servers/nginx-ping.toml: writes RUN_DIR/nginx.conf (the
# peer configuration of bench/vs-nginx.sh: keep-alive, access_log off, `return 200 "pong"`
# on /ping, one worker per server CPU) and execs nginx in the foreground with RUN_DIR as its
# prefix (pid file, temp paths and error log inside it), as root or as any other user.
# One worker runs as a single process (master_process off: the one process that serves, as
# vs-nginx.sh measured the worker alone, and its RSS is the server's); more run under a
# master (the runner counts the whole tree). Does not install nginx: scripts/deps.sh bench
# does (Debian's nginx-light).
set -euo pipefail

NGINX="${NGINX:-nginx}"   # the nginx binary

usage() {
    cat <<USAGE
usage: servers/nginx/run.sh RUN_DIR HOST PORT WORKERS
Writes RUN_DIR/nginx.conf and runs '$NGINX -p RUN_DIR/ -c RUN_DIR/nginx.conf' in the
foreground (exec): GET /ping answers 200 "pong" on HOST:PORT with WORKERS worker processes.
Environment: NGINX ($NGINX). Exit: nginx's, 1 when nginx is missing, 2 usage.
USAGE
}

case "${1:-}" in -h|--help) usage; exit 0 ;; esac
if [[ $# -ne 4 || ! -d "$1" || ! "$3" =~ ^[0-9]+$ || ! "$4" =~ ^[1-9][0-9]*$ ]]; then
    echo "run.sh: expected RUN_DIR (a folder) HOST PORT WORKERS, got: $*" >&2
    usage >&2
    exit 2
fi
if ! command -v "$NGINX" >/dev/null; then
    echo "nginx-ping: error: '$NGINX' not found: install it with scripts/deps.sh bench (Debian's nginx-light)" >&2
    exit 1
fi
dir=$(cd "$1" && pwd)
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../bench/lib.sh"
master=on
[[ "$4" != 1 ]] || master=off
bench_nginx_conf "$dir" "$3" 4096 "master_process $master;" "$2" "$4"
exec "$NGINX" -p "$dir/" -c "$dir/nginx.conf" -e stderr
