#!/usr/bin/env bash
# shellcheck disable=SC2016  # the bash -c checks take their values as arguments
# test-timeout: 1500
# check_bundle.sh: the bundle (make bundle, scripts/bundle.py) on a bare system, cut off from the
# network (TAP): unpacked into a fresh Debian 12 minbase root with python3 and nothing of the
# suite's packages (scripts/root-lib.sh makes the root; the root with python3 is cached as a
# tarball, BUNDLE_ROOT_CACHE, so that reruns skip debootstrap), run in a network namespace
# of its own (only loopback, brought up), where `./run_all.sh --smoke` must exit 0 with a
# verdict, the bundled tools on PATH and no install tried; then scripts/campaign.sh --smoke
# from inside the bundle (a 2-minute target): exit 0, its files, its headline last.
# Skipped, with the reason counted, when not root or without debootstrap, unshare or ip.
# Takes minutes (debootstrap the first time, then a smoke batch): run it under the CPU lock.
set -euo pipefail

PROJECT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)   # (ROOT is root-lib.sh's: the fresh root)
BUNDLE_ROOT_CACHE="${BUNDLE_ROOT_CACHE:-/var/cache/actor-vs-async/bookworm-minbase-python3.tar.gz}"
BUNDLE_TARBALL="${BUNDLE_TARBALL:-}"     # a bundle to test (default: make bundle's, built first)
BUNDLE_SMOKE_ARGS="${BUNDLE_SMOKE_ARGS:---smoke}"   # run_all.sh's arguments in the root
FRESH_SUITE="${FRESH_SUITE:-bookworm}"
FRESH_MIRROR="${FRESH_MIRROR:-http://deb.debian.org/debian}"

usage() {
    cat <<USAGE
usage: sudo tests/check_bundle.sh [--help]
Builds the bundle (make bundle) unless BUNDLE_TARBALL names one, unpacks it into a fresh
Debian $FRESH_SUITE minbase root with python3 (debootstrap, cached in BUNDLE_ROOT_CACHE), and
runs ./run_all.sh $BUNDLE_SMOKE_ARGS there in a network namespace with loopback only.
Environment: BUNDLE_ROOT_CACHE ($BUNDLE_ROOT_CACHE), BUNDLE_TARBALL, BUNDLE_SMOKE_ARGS,
  FRESH_SUITE, FRESH_MIRROR, KEEP_RESULTS (1: keep the root, unmounted).
USAGE
}
# shellcheck source=tests/lib/it.sh
. "$PROJECT/tests/lib/it.sh"
it_args "$@"

skip_all() { n=$((n + 1)); echo "ok $n - it_bundle # SKIP $1"; tap_finish; }
[[ $(id -u) -eq 0 ]] || skip_all "needs root (debootstrap, chroot, mounts)"
for tool in debootstrap unshare ip chroot; do
    command -v "$tool" >/dev/null || skip_all "no $tool here (apt-get install debootstrap iproute2)"
done

die() { echo "check_bundle.sh: $*" >&2; echo "not ok $((n + 1)) - setup: $*"; n=$((n + 1)); failed=$((failed + 1)); tap_finish; }
it_tmpdir it_bundle
LOGS=$TMP keep=${KEEP_RESULTS:-0} FRESH_BASE_CACHE=""
# shellcheck source=scripts/root-lib.sh
. "$PROJECT/scripts/root-lib.sh"
# shellcheck disable=SC2317  # invoked by it.sh's EXIT trap
it_on_exit() { root_release; }

if [[ -z "$BUNDLE_TARBALL" ]]; then
    make -C "$PROJECT" --no-print-directory bundle >"$TMP/make-bundle.log" 2>&1 || die "make bundle failed (see $TMP/make-bundle.log)"
    BUNDLE_TARBALL=$(tail -n 1 "$TMP/make-bundle.log")
fi
[[ -s "$BUNDLE_TARBALL" ]] || die "no bundle at '$BUNDLE_TARBALL'"
name=$(basename "$BUNDLE_TARBALL" .tar.gz)
echo "# bundle $name: $(( $(stat -c %s "$BUNDLE_TARBALL") / 1048576 )) MiB"

# the root: minbase + python3, from the cache when there is one
if [[ -s "$BUNDLE_ROOT_CACHE" ]]; then
    FRESH_BASE_CACHE=$BUNDLE_ROOT_CACHE
    root_make "$TMP/root"
else
    echo "# no cached root at $BUNDLE_ROOT_CACHE: debootstrap $FRESH_SUITE (minutes)"
    root_make "$TMP/root"
    chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin sh -c \
        'apt-get -qq update && DEBIAN_FRONTEND=noninteractive apt-get -qq install -y --no-install-recommends python3 && apt-get clean' \
        >"$TMP/python3.log" 2>&1 || die "installing python3 in the root failed (see $TMP/python3.log)"
    mkdir -p "$(dirname "$BUNDLE_ROOT_CACHE")"
    tar -C "$ROOT" --exclude=./proc/* --exclude=./sys/* --exclude=./dev/pts/* --exclude=./dev/shm/* \
        -czf "$BUNDLE_ROOT_CACHE.tmp" . && mv -f "$BUNDLE_ROOT_CACHE.tmp" "$BUNDLE_ROOT_CACHE" ||
        echo "# could not cache the root in $BUNDLE_ROOT_CACHE"
fi
# what the root lacks: the point of the test (none of the suite's packages, not even jq)
missing=()
for tool in jq curl gnuplot pkill ps strace valgrind make cc pkg-config git; do
    chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin sh -c "command -v $tool" >/dev/null 2>&1 || missing+=("$tool")
done
echo "# the root lacks: ${missing[*]}"
ok "the root has no jq, make or cc (the suite's packages are not installed)" \
    bash -c '[[ " $1 " == *" jq "* && " $1 " == *" make "* && " $1 " == *" cc "* ]]' _ "${missing[*]}"
ok "the root has python3" chroot "$ROOT" /usr/bin/python3 -c 'import sys; assert sys.version_info >= (3, 9)'

mkdir -p "$ROOT/opt"
tar -C "$ROOT/opt" -xzf "$BUNDLE_TARBALL" || die "cannot unpack $BUNDLE_TARBALL"
ok "the bundle unpacks into one folder with its marker" test -f "$ROOT/opt/$name/BUNDLE"

# in_netns_root CMD: CMD in the bundle's folder in the root, as root with a clean
# environment, in a new network namespace whose only interface is loopback (brought up).
in_netns_root() {
    unshare -n sh -c 'ip link set lo up && exec "$@"' _ \
        chroot "$ROOT" /usr/bin/env -i HOME=/root TERM=dumb PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        bash -c "cd /opt/$name && $1"
}
ok "no route out of the namespace" bash -c "! unshare -n sh -c 'ip link set lo up && ip route get 1.1.1.1' >/dev/null 2>&1"
ver=$(in_netns_root './run_all.sh --version' 2>&1 || true)
echo "# --version: $ver"
commit=$(sed -n 's/^commit=//p' "$ROOT/opt/$name/BUNDLE")
ok "--version names the bundle's commit and libraries" bash -c '[[ "$1" == *"${2:0:12}"* && "$1" == *"libuv 1."* ]]' _ "$ver" "$commit"

rc=0
t0=$(date +%s)
in_netns_root "./run_all.sh $BUNDLE_SMOKE_ARGS --batch=bundle-check" >"$TMP/smoke.log" 2>&1 || rc=$?
echo "# run_all.sh $BUNDLE_SMOKE_ARGS in the root: exit $rc after $(( $(date +%s) - t0 )) s; last lines:"
tail -n 5 "$TMP/smoke.log" | sed 's/^/#   /'
is "./run_all.sh $BUNDLE_SMOKE_ARGS exits 0 in the bare root, offline" "$rc" 0
batch="$ROOT/opt/$name/results/bundle-check"
ok "summary.md has a verdict" grep -qE 'PASS|FAIL|INCONCLUSIVE' "$batch/summary.md"
ok "each run's result.json names the bundle's commit" bash -c 'grep -q "\"git_commit\": *\"$2\"" "$1"/*/result.json' _ "$batch" "$commit"
ok "report.html was written" test -s "$batch/report.html"
ok "nothing was installed or built (no deps.sh step, no make)" \
    bash -c '! grep -qE "deps.sh: (installing|missing)|Reading package lists|make(\[[0-9]+\])?: |build failed" "$1"' _ "$TMP/smoke.log"
if [[ " ${missing[*]} " == *" gnuplot "* ]]; then
    is "a missing gnuplot is said once" "$(grep -c 'gnuplot not found' "$TMP/smoke.log" || true)" 1
fi

# the campaign as it will be run on a borrowed host: from inside the bundle, offline; here a
# smoke campaign on this host's shape (the vm2 fixture topology) with a 2-minute target
fixture="/opt/$name/tests/fixtures/topology/vm2"
rc=0
t0=$(date +%s)
in_netns_root "CPU_TOPOLOGY_ROOT=$fixture CPU_MASK=0,1 ./scripts/campaign.sh --smoke --min-cpus=1 --target=2m /tmp/campaign-out" \
    >"$TMP/campaign.log" 2>&1 || rc=$?
echo "# scripts/campaign.sh --smoke in the root: exit $rc after $(( $(date +%s) - t0 )) s; last line:"
tail -n 1 "$TMP/campaign.log" | sed 's/^/#   /'
is "scripts/campaign.sh exits 0 in the bare root, offline, from the bundle" "$rc" 0
ok "the campaign wrote its files (summary, index, report, runs, log, plan), at most 8" \
    bash -c 'cd "$1" && ls summary.md index.json report.html runs.tar.gz campaign.log plan.txt >/dev/null && (( $(ls | wc -l) <= 8 ))' _ "$ROOT/tmp/campaign-out"
ok "the campaign's last line is its headline" bash -c '[[ "$(tail -n 1 "$1")" =~ ^campaign:\ (PASS|FAIL|INCONCLUSIVE): ]]' _ "$TMP/campaign.log"
tap_finish
