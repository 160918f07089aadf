#!/usr/bin/env bash
# deps.sh: installs the Debian packages the suite needs, with apt-get, when missing.
# A no-op (one dpkg query) when everything is present. Runs apt-get through sudo
# when not root. Does not download anything outside Debian's archive.
set -euo pipefail

PACKAGES="${DEPS_PACKAGES:-build-essential pkg-config libuv1-dev libck-dev libsqlite3-dev node-llhttp libjansson-dev libcmocka-dev curl jq gnuplot-nox wrk nginx-light util-linux clang libclang-rt-14-dev sqlite3 python3 shellcheck}"

usage() {
    cat <<USAGE
usage: scripts/deps.sh [--check] [--help]
Installs what is missing of: $PACKAGES
  --check   only report missing packages; exit 1 when any is missing
USAGE
}

check_only=0
for arg in "$@"; do
    case "$arg" in
        --check) check_only=1 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "deps.sh: unknown option '$arg'" >&2; usage >&2; exit 2 ;;
    esac
done

missing=()
for pkg in $PACKAGES; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    if [[ "$status" != *"install ok installed"* ]]; then
        missing+=("$pkg")
    fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
    exit 0
fi
if [[ $check_only -eq 1 ]]; then
    echo "deps.sh: missing: ${missing[*]}" >&2
    exit 1
fi

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
    sudo_cmd=(sudo)
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq >&2
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
