#!/usr/bin/env bash
# test.sh: the README's test command. Installs what building and testing need when it is
# missing (scripts/deps.sh test: make and the compiler too, which a fresh Debian lacks, so
# this cannot be a make target), then runs `make test`: builds everything, runs every
# test, and ends with "N passed, N failed". Exit status: make's (0 when all passed).
set -euo pipefail

MAKE="${MAKE:-make}"    # the make to run once it is installed

usage() {
    cat <<USAGE
usage: ./test.sh [--help] [--version] [VAR=value...]
Installs the missing packages of scripts/deps.sh's test profile (apt-get, through sudo
when not root; a no-op when everything is there), then runs '$MAKE test' with the
VAR=value arguments (e.g. WERROR=1). The last line is
"N passed, N failed". Environment: MAKE ($MAKE), DEPS_SKIP=1 (install nothing), and what
tests/run.sh reads (TEST_FILTER, TEST_SKIP, TEST_TIMEOUT, BUILD). --version prints the
checkout's commit and the libraries' versions.
USAGE
}

for arg in "$@"; do
    case "$arg" in
        -h|--help) usage; exit 0 ;;
        --version)
            # shellcheck source=runner/lib.sh
            . "$(dirname "${BASH_SOURCE[0]}")/runner/lib.sh"
            suite_version test.sh
            exit 0 ;;
        [A-Za-z_]*=*) ;;
        *) echo "test.sh: unknown argument '$arg' (only VAR=value, passed to make)" >&2
           echo "run ./test.sh --help for usage" >&2
           exit 2 ;;
    esac
done

cd "$(dirname "${BASH_SOURCE[0]}")"
scripts/deps.sh test
exec "$MAKE" --no-print-directory test "$@"
