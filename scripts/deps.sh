#!/usr/bin/env bash
# deps.sh: installs the Debian packages one command of the suite needs, with apt-get, when
# missing: one profile per command (build, test, run, bench, ci, dev, peers). A no-op (one
# dpkg-query) when everything is there. apt-get runs as root, else through sudo, with
# DEBIAN_FRONTEND=noninteractive kept; with neither it says what to run as root, exit 1.
# Installs nothing outside Debian's archive, and starts no service (nginx and sshd stay off).
set -euo pipefail

DEPS_SKIP="${DEPS_SKIP:-0}"             # 1: check nothing, install nothing (packagers, offline)
DEPS_EXTRA="${DEPS_EXTRA:-}"            # more packages to require, space-separated
APT_LOCK_TIMEOUT="${APT_LOCK_TIMEOUT:-300}"  # seconds to wait for another apt/dpkg to finish

# The profiles. node-llhttp is where Debian ships llhttp's C sources and header
# (/usr/share/llhttp/*.c, /usr/share/include/llhttp/llhttp.h); it depends on nodejs
# (through node-semver), so building installs node too (nodejs, libnode108, libicu72:
# about 90 MB on Debian 12), recommends or not.
BUILD_PKGS="gcc libc6-dev make pkg-config libuv1-dev libck-dev libsqlite3-dev libjansson-dev libcmocka-dev node-llhttp"
# make test: the python and shell tests, the runner and report tests (curl, jq, gnuplot,
# taskset, pkill, git for the recorded commit, shellcheck over the runner's scripts), the
# sqlite3 CLI (durability checks), ip, ab and wrk (real clients for the conformance tests,
# used when installed; small), and sshd/ssh (tests/it_distributed.sh: load hosts in network
# namespaces; it starts its own sshd, the system's stays off), valgrind and strace
# (tests/test_cost.py: the cost account's counts).
TEST_PKGS="$BUILD_PKGS python3 curl jq sqlite3 gnuplot-nox git shellcheck procps iproute2 util-linux apache2-utils wrk openssh-server openssh-client valgrind strace"
# run_all.sh / runner.sh: build, then run, sample and report; valgrind and strace for the
# batch's cost account (runner/analysis/cost.py: callgrind, strace -c; null without them).
RUN_PKGS="$BUILD_PKGS python3 curl jq gnuplot-nox procps util-linux valgrind strace"
# bench/vs-nginx.sh, bench/loadgen-vs-wrk.sh: the cross-checks against nginx and wrk.
BENCH_PKGS="$RUN_PKGS nginx-light wrk"
# .ci/run: make test, the sanitizer builds (gcc's), and make fuzz-ci (clang's libFuzzer);
# nginx-light (it_servers' nginx definition) and prometheus (promtool, for the contract
# suite's /metrics lint: 19 MB to fetch, 96 MB installed) so that CI skips none of their checks.
CI_PKGS="$TEST_PKGS clang libclang-rt-14-dev nginx-light prometheus"
# contributors: what CI has, and valgrind for bench/micro.sh's instruction counts.
DEV_PKGS="$CI_PKGS valgrind"
# servers/go-*.toml, erl-*.toml, rust-*.toml: the question asked in Go (net/http), Erlang/OTP
# (gen_tcp) and Rust (hyper 0.14 + tokio 1 from Debian's crates), built offline (go build,
# erlc, Debian's cargo and rustc).
PEERS_PKGS="$RUN_PKGS golang-go erlang-base cargo rustc librust-hyper-dev librust-tokio-dev"
PROFILES="build test run bench ci dev peers"
# Packages whose install would start a system service: installed with services held off.
SERVICE_PKGS="nginx-light nginx nginx-common openssh-server prometheus"

usage() {
    cat <<USAGE
usage: scripts/deps.sh [--check] [--list] [--help] PROFILE...
Installs the Debian packages of each PROFILE that are missing (apt-get, through sudo when
not root; a no-op when everything is there). Profiles:
  build   make (the servers, loadgen, test programs): $BUILD_PKGS
  test    ./test.sh (make test): build + ${TEST_PKGS#"$BUILD_PKGS "}
  run     ./run_all.sh, ./runner.sh: build + ${RUN_PKGS#"$BUILD_PKGS "}
  bench   bench/vs-nginx.sh, loadgen-vs-wrk.sh: run + ${BENCH_PKGS#"$RUN_PKGS "}
  ci      .ci/run: test + ${CI_PKGS#"$TEST_PKGS "}
  dev     ci + ${DEV_PKGS#"$CI_PKGS "}
  peers   the peer servers of other runtimes (servers/go-*, erl-*, rust-*): run + ${PEERS_PKGS#"$RUN_PKGS "}
  --check   only report what is missing (exit 1 when anything is)
  --list    print the packages of the profiles, one a line, and exit
Environment: DEPS_SKIP=1 (do nothing), DEPS_EXTRA (more packages),
  APT_LOCK_TIMEOUT ($APT_LOCK_TIMEOUT s).
Installing nginx-light or openssh-server does not start a system nginx or sshd.
Exit status: 0 everything present (or installed), 1 missing and not installed, 2 usage.
USAGE
}

usage_error() {
    echo "deps.sh: $*" >&2
    echo "run scripts/deps.sh --help for usage" >&2
    exit 2
}

check_only=0 list_only=0 profiles=()
for arg in "$@"; do
    case "$arg" in
        --check) check_only=1 ;;
        --list) list_only=1 ;;
        -h|--help) usage; exit 0 ;;
        -*) usage_error "unknown option '$arg'" ;;
        *) [[ " $PROFILES " == *" $arg "* ]] || usage_error "unknown profile '$arg' (one of: $PROFILES)"
           profiles+=("$arg") ;;
    esac
done
[[ ${#profiles[@]} -gt 0 ]] || usage_error "name a profile (one of: $PROFILES)"

# wanted: the packages of the profiles named, each once, in order.
wanted=()
for p in "${profiles[@]}"; do
    var="${p^^}_PKGS"
    for pkg in ${!var} $DEPS_EXTRA; do
        [[ " ${wanted[*]} " == *" $pkg "* ]] || wanted+=("$pkg")
    done
done
if [[ $list_only -eq 1 ]]; then
    printf '%s\n' "${wanted[@]}"
    exit 0
fi
[[ "$DEPS_SKIP" == 1 ]] && exit 0

if ! command -v dpkg-query >/dev/null; then
    echo "deps.sh: not a Debian system (no dpkg-query): make sure the equivalents of these are installed: ${wanted[*]}" >&2
    exit 0
fi

# missing_packages: the wanted packages dpkg does not list as installed (one dpkg-query).
missing_packages() {
    local installed
    installed=$(dpkg-query -W -f='${Package} ${Status}\n' "${wanted[@]}" 2>/dev/null |
        awk '$NF == "installed" && $(NF - 1) == "ok" { sub(/:.*/, "", $1); print $1 }' || true)
    local pkg
    local -A have=()
    for pkg in $installed; do have[$pkg]=1; done
    for pkg in "${wanted[@]}"; do
        [[ -n "${have[$pkg]:-}" ]] || printf '%s\n' "$pkg"
    done
}

mapfile -t missing < <(missing_packages)
[[ ${#missing[@]} -eq 0 ]] && exit 0
if [[ $check_only -eq 1 ]]; then
    echo "deps.sh: missing (profile ${profiles[*]}): ${missing[*]}" >&2
    exit 1
fi

install_cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
# as_root: a command prefix that runs as root with the noninteractive frontend (sudo
# resets the environment, so it goes on the command line through env).
as_root=(env DEBIAN_FRONTEND=noninteractive)
if [[ $(id -u) -ne 0 ]]; then
    why=""
    if ! command -v sudo >/dev/null; then
        why="sudo is not installed"
    elif ! sudo -v; then
        why="sudo refused $(id -un)"
    fi
    if [[ -n "$why" ]]; then
        cat >&2 <<MSG
deps.sh: missing packages: ${missing[*]}
deps.sh: installing them needs root, and $why. As root, run:
  $install_cmd
then run this command again.
MSG
        exit 1
    fi
    as_root=(sudo env DEBIAN_FRONTEND=noninteractive)
fi

# Services: Debian's nginx packages start nginx on port 80 when installed, openssh-server
# starts sshd on port 22 (invoke-rc.d, or deb-systemd-invoke on systemd). A policy-rc.d that denies every action (101) holds
# them off while apt runs; afterwards the service is disabled so that no boot starts it.
policy=/usr/sbin/policy-rc.d
own_policy=0 service_pkgs=()
for pkg in "${missing[@]}"; do
    [[ " $SERVICE_PKGS " == *" $pkg "* ]] && service_pkgs+=("$pkg")
done
# shellcheck disable=SC2317  # invoked by the EXIT trap
drop_policy() {
    if [[ $own_policy -eq 1 ]]; then "${as_root[@]}" rm -f "$policy"; fi
}
trap drop_policy EXIT
if [[ ${#service_pkgs[@]} -gt 0 && ! -e "$policy" ]]; then
    "${as_root[@]}" sh -c "printf '#!/bin/sh\n# deps.sh: no service starts while it installs\nexit 101\n' >'$policy' && chmod 755 '$policy'"
    own_policy=1
fi

echo "deps.sh: installing (profile ${profiles[*]}): ${missing[*]}" >&2
lock=(-o "DPkg::Lock::Timeout=$APT_LOCK_TIMEOUT")
if ! "${as_root[@]}" apt-get -qq "${lock[@]}" update >&2 ||
   ! "${as_root[@]}" apt-get -q "${lock[@]}" install -y --no-install-recommends "${missing[@]}" >&2; then
    echo "deps.sh: apt-get failed; the command was: $install_cmd" >&2
    exit 1
fi

# service_of PKG: the system service a package in SERVICE_PKGS would start.
service_of() { case "$1" in openssh-server) echo ssh ;; prometheus) echo prometheus ;; *) echo nginx ;; esac; }
done_svcs=" "
for pkg in "${service_pkgs[@]}"; do
    svc=$(service_of "$pkg")
    [[ "$done_svcs" == *" $svc "* ]] && continue
    done_svcs+="$svc "
    if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null; then
        "${as_root[@]}" systemctl disable --now "$svc.service" >/dev/null 2>&1 || true
    elif [[ -x "/etc/init.d/$svc" ]] && command -v update-rc.d >/dev/null; then
        "${as_root[@]}" update-rc.d "$svc" disable >/dev/null 2>&1 || true
    fi
    echo "deps.sh: $pkg installed for bench/ or tests only: the system $svc service is not started and is disabled" >&2
done

mapfile -t missing < <(missing_packages)
if [[ ${#missing[@]} -gt 0 ]]; then
    echo "deps.sh: still missing after apt-get: ${missing[*]}" >&2
    exit 1
fi
