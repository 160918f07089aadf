# shellcheck shell=bash
# it.sh: the preamble the bash integration tests share (sourced, never run): the command
# line (only --help), a temporary folder removed at exit, and the TAP helpers of tap.sh.
# The sourcing script defines usage() first; KEEP_RESULTS=1 keeps the folder.

# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

# it_args ARGS...: none: go on; -h or --help: usage on stdout, exit 0; anything else: usage
# on stderr, exit 2.
it_args() {
    case "${1:-}" in
        -h|--help) usage; exit 0 ;;
        "") ;;
        *) usage >&2; exit 2 ;;
    esac
}

# it_tmpdir NAME: sets TMP to a new folder $TMPDIR/NAME.XXXXXX (TMPDIR: /tmp by default)
# and traps EXIT: it_on_exit first when the script defines it (to end what it started, by
# pid), then the folder is removed unless KEEP_RESULTS is 1 (then its path is printed).
it_tmpdir() {
    TMP=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
    trap it_cleanup EXIT
}

# shellcheck disable=SC2317  # invoked by the EXIT trap
it_cleanup() {
    if declare -F it_on_exit >/dev/null; then it_on_exit; fi
    if [[ "${KEEP_RESULTS:-0}" == 1 ]]; then echo "# kept in $TMP"; else rm -rf "$TMP"; fi
}
