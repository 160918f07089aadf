#!/usr/bin/env bash
# fresh-check.sh: replays the README's two commands on a fresh Debian 12 (debootstrap
# minbase, then only git, and sudo for the user): as root (test command, then the main
# one) and as a user with sudo and `ulimit -n 1024` (main, then test), each in its own
# fresh root, on a terminal (a pty). Prints each command's exit status, time and last line.
# Run by hand as root, not in CI. Unmounts and deletes its roots on exit (unless --keep).
set -euo pipefail

FRESH_DIR="${FRESH_DIR:-/var/tmp/fresh-check}"       # roots, logs and the bundle go here
FRESH_SUITE="${FRESH_SUITE:-bookworm}"               # Debian 12
FRESH_MIRROR="${FRESH_MIRROR:-http://deb.debian.org/debian}"
FRESH_BASE_CACHE="${FRESH_BASE_CACHE:-}"             # tarball of the debootstrapped base: made when missing, reused after
FRESH_USER_ULIMIT="${FRESH_USER_ULIMIT:--n 1024}"    # the user's `ulimit` arguments (-Sn 1024: soft only)
FRESH_TIMEOUT="${FRESH_TIMEOUT:-5400}"               # seconds per command (a prompt would hang)
MAIN_ARGS="${MAIN_ARGS:-}"                           # run_all.sh's arguments instead of the README's
SOURCE="${SOURCE:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"  # the repository under test (its HEAD)
# shellcheck source=scripts/private-dir.sh
source "$(dirname "${BASH_SOURCE[0]}")/private-dir.sh"

usage() {
    cat <<USAGE
usage: sudo scripts/fresh-check.sh [--help] [--smoke] [--main-args=ARGS] [--cases=root,user]
                                   [--keep] [--source=REPO] [--base-cache=FILE]
Clones REPO's HEAD (committed work only) into a fresh Debian $FRESH_SUITE root and runs the
README's two commands (the first sh block under README.md's heading that says "two commands"):
  root   as root: the test command, then the main one
  user   as a user with passwordless sudo and 'ulimit $FRESH_USER_ULIMIT': main, then test
each case in a root of its own, built with debootstrap (minbase) + git (+ sudo).
  --smoke            the main command with --smoke instead of the README's arguments
  --main-args=ARGS   the main command with ARGS instead of the README's arguments
  --cases=LIST       which cases, in order (default: root,user)
  --keep             keep the roots (FRESH_DIR/root-CASE) after the run, unmounted
                     (the batch's summary.md and the tests' logs are copied to the logs)
  --source=REPO      the repository to clone (default: this one, $SOURCE)
  --base-cache=FILE  reuse FILE (a tarball of the bare debootstrapped root), making it first
                     when missing: saves the debootstrap per case
Environment: FRESH_DIR ($FRESH_DIR) FRESH_SUITE ($FRESH_SUITE) FRESH_MIRROR
  ($FRESH_MIRROR) FRESH_BASE_CACHE FRESH_USER_ULIMIT ($FRESH_USER_ULIMIT) FRESH_TIMEOUT
  ($FRESH_TIMEOUT s) MAIN_ARGS SOURCE. Logs: FRESH_DIR/logs/. Needs root, debootstrap
  (installed with apt-get when missing) and about 2 GB free in FRESH_DIR. FRESH_DIR is made
  root's with mode 0700 when absent; one that exists must be root's with mode 0700, in
  folders only root can change (else exit 3 before anything is done).
Exit status: 0 every command exited 0, 1 a command failed, 2 usage, 3 setup failed.
USAGE
}

usage_error() {
    echo "fresh-check.sh: $*" >&2
    echo "run scripts/fresh-check.sh --help for usage" >&2
    exit 2
}

die() {
    echo "fresh-check.sh: $*" >&2
    exit 3
}

keep=0 cases="root user"
for arg in "$@"; do
    case "$arg" in
        -h|--help) usage; exit 0 ;;
        --smoke) MAIN_ARGS=--smoke ;;
        --main-args=*) MAIN_ARGS=${arg#*=} ;;
        --cases=*) cases=$(tr ',' ' ' <<<"${arg#*=}") ;;
        --keep) keep=1 ;;
        --source=*) SOURCE=${arg#*=} ;;
        --base-cache=*) FRESH_BASE_CACHE=${arg#*=} ;;
        *) usage_error "unknown argument '$arg'" ;;
    esac
done
for c in $cases; do
    [[ "$c" == root || "$c" == user ]] || usage_error "unknown case '$c' (root or user)"
done
[[ -n "$cases" ]] || usage_error "no case given"
[[ "$FRESH_TIMEOUT" =~ ^[1-9][0-9]*$ ]] || usage_error "FRESH_TIMEOUT must be a positive number of seconds"
[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, chroot, mounts): run it with sudo"
git -C "$SOURCE" rev-parse --verify -q HEAD >/dev/null || die "$SOURCE is not a git repository with a commit"
# FRESH_DIR holds what root mounts, chroots into and runs: root's own, or nothing is done
[[ "$FRESH_DIR" == /* ]] || FRESH_DIR="$PWD/$FRESH_DIR"
private_dir_claim "$FRESH_DIR" || die "FRESH_DIR refused (made by root with mode 0700 when absent)"

# ---- the README's two commands -------------------------------------------------------
# The first sh block under the README heading that says "two commands", comments dropped.
mapfile -t readme_cmds < <(git -C "$SOURCE" show HEAD:README.md | awk '
    /^## .*[Tt]wo commands/ { sec = 1; next }
    sec && /^## / { exit }
    sec && /^```sh/ { inblock = 1; next }
    sec && inblock && /^```/ { exit }
    sec && inblock { sub(/#.*/, ""); sub(/[ \t]+$/, ""); if ($0 != "") print }')
[[ ${#readme_cmds[@]} -eq 2 ]] || die "expected two commands in README.md's \"two commands\" block, found ${#readme_cmds[@]}"
main_cmd="" test_cmd=""
for c in "${readme_cmds[@]}"; do
    if [[ "$c" == ./run_all.sh* ]]; then main_cmd=$c; else test_cmd=$c; fi
done
[[ -n "$main_cmd" && -n "$test_cmd" ]] || die "README's commands are not a ./run_all.sh one and a test one: ${readme_cmds[*]}"
if [[ -n "$MAIN_ARGS" ]]; then
    main_cmd="./run_all.sh $MAIN_ARGS"
fi

commit=$(git -C "$SOURCE" rev-parse HEAD)
dirty=""
if [[ -n "$(git -C "$SOURCE" status --porcelain --untracked-files=no)" ]]; then
    dirty=" (the work tree has uncommitted changes: they are NOT part of the check)"
fi

if ! command -v debootstrap >/dev/null; then
    echo "fresh-check.sh: installing debootstrap" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >&2 ||
        die "could not install debootstrap"
fi

mkdir -p "$FRESH_DIR/logs"
FRESH_DIR=$(cd "$FRESH_DIR" && pwd -P)
LOGS="$FRESH_DIR/logs"
BUNDLE="$FRESH_DIR/src.bundle"
git -C "$SOURCE" bundle create "$BUNDLE" HEAD 2>/dev/null || die "git bundle failed"

# ---- one root: create, mount, tear down ----------------------------------------------
ROOT=""          # the root being worked on
MOUNTS=()        # mount points under ROOT, in mount order

# mounts_under DIR: the mount points at or below DIR, deepest first.
mounts_under() {
    awk -v d="$1" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r
}

# root_kill: ends the processes whose root is ROOT (left over by a command), by pid.
root_kill() {
    local pid link sig
    for sig in TERM KILL; do
        for link in /proc/[0-9]*/root; do
            pid=${link#/proc/}; pid=${pid%/root}
            if [[ "$(readlink "$link" 2>/dev/null)" == "$ROOT" ]]; then
                kill "-$sig" "$pid" 2>/dev/null || true
            fi
        done
        [[ $sig == TERM ]] && sleep 1
    done
    return 0
}

# root_release: ends leftover processes, unmounts everything under ROOT, and deletes ROOT
# unless --keep; never deletes while anything is still mounted there.
root_release() {
    [[ -n "$ROOT" && -d "$ROOT" ]] || return 0
    root_kill
    local m
    for m in $(mounts_under "$ROOT"); do
        umount "$m" 2>/dev/null || umount -l "$m" || true
    done
    MOUNTS=()
    if [[ -n "$(mounts_under "$ROOT")" ]]; then
        echo "fresh-check.sh: still mounted under $ROOT, not deleting it: $(mounts_under "$ROOT" | tr '\n' ' ')" >&2
    elif [[ $keep -eq 1 ]]; then
        echo "fresh-check.sh: kept $ROOT (unmounted; delete it with rm -rf --one-file-system $ROOT)" >&2
    else
        rm -rf --one-file-system "$ROOT"
    fi
    ROOT=""
}
# shellcheck disable=SC2317  # invoked by the trap
on_exit() {
    root_release
    rm -f "$BUNDLE"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# root_make DIR: a fresh Debian root in DIR: debootstrap (or the base cache), host name
# resolution, the virtual file systems mounted.
root_make() {
    ROOT=$1
    if [[ -e "$ROOT" ]]; then
        [[ -z "$(mounts_under "$ROOT")" ]] || die "$ROOT has mounts: unmount them first"
        rm -rf --one-file-system "$ROOT"
    fi
    mkdir -p "$ROOT"
    if [[ -n "$FRESH_BASE_CACHE" && -s "$FRESH_BASE_CACHE" ]]; then
        tar -C "$ROOT" -xzf "$FRESH_BASE_CACHE" || die "cannot unpack $FRESH_BASE_CACHE"
    else
        debootstrap --variant=minbase "$FRESH_SUITE" "$ROOT" "$FRESH_MIRROR" >"$LOGS/debootstrap.log" 2>&1 ||
            die "debootstrap failed (see $LOGS/debootstrap.log)"
        if [[ -n "$FRESH_BASE_CACHE" ]]; then
            tar -C "$ROOT" -czf "$FRESH_BASE_CACHE" . || die "cannot write $FRESH_BASE_CACHE"
        fi
    fi
    cp /etc/hosts "$ROOT/etc/hosts"
    cp /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
    mkdir -p "$ROOT/proc" "$ROOT/sys" "$ROOT/dev/pts" "$ROOT/dev/shm"
    mount -t proc proc "$ROOT/proc" && MOUNTS+=("$ROOT/proc")
    mount -t sysfs sysfs "$ROOT/sys" && MOUNTS+=("$ROOT/sys")
    mount --bind /dev/pts "$ROOT/dev/pts" && MOUNTS+=("$ROOT/dev/pts")
    mount -t tmpfs -o mode=1777,nosuid,nodev shm "$ROOT/dev/shm" && MOUNTS+=("$ROOT/dev/shm")
}

# in_root CMD...: runs CMD as root in ROOT with a clean environment.
in_root() {
    chroot "$ROOT" /usr/bin/env -i HOME=/root TERM=xterm \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

# ---- the cases -------------------------------------------------------------------------
results=()       # "case|command|exit|seconds|last line"
failed=0

# run_cmd CASE N CMD: runs CMD in the clone, as CASE (root or the user "fresh") from a
# login shell on a pty; records its exit status, time and last line.
run_cmd() {
    local who=$1 n=$2 cmd=$3 log rc=0 t0 t1 secs last inner
    log="$LOGS/$who-$n-$(tr -c 'A-Za-z0-9_.-' '_' <<<"${cmd#./}" | sed 's/_*$//').log"
    if [[ $who == root ]]; then
        inner="cd /root/project && $cmd"
    else
        inner="ulimit $FRESH_USER_ULIMIT && cd ~/project && $cmd"
    fi
    echo "fresh-check.sh: [$who] \$ $cmd   (log: $log)" >&2
    t0=$(date +%s.%N)
    if [[ $who == root ]]; then
        timeout --kill-after=30 "$FRESH_TIMEOUT" chroot "$ROOT" /usr/bin/env -i HOME=/root TERM=xterm \
            PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            script -qec "bash -lc $(printf %q "$inner")" /dev/null </dev/null >"$log" 2>&1 || rc=$?
    else
        timeout --kill-after=30 "$FRESH_TIMEOUT" chroot "$ROOT" /usr/bin/env -i TERM=xterm \
            PATH=/usr/sbin:/usr/bin:/sbin:/bin \
            script -qec "runuser -l fresh -c $(printf %q "$inner")" /dev/null </dev/null >"$log" 2>&1 || rc=$?
    fi
    t1=$(date +%s.%N)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }')
    last=$(tr -d '\r' <"$log" | sed 's/\x1b\[[0-9;]*[A-Za-z]//g' | awk 'NF { l = $0 } END { print l }')
    [[ $rc -eq 124 ]] && last="(timed out after $FRESH_TIMEOUT s) $last"
    results+=("$who|$cmd|$rc|$secs|$last")
    [[ $rc -eq 0 ]] || failed=1
    echo "fresh-check.sh: [$who] exit $rc after $secs s: $last" >&2
}

# run_case CASE: a fresh root, git (+ sudo and the user), the clone, the two commands.
run_case() {
    local who=$1 t0
    t0=$(date +%s)
    echo "fresh-check.sh: [$who] making a fresh $FRESH_SUITE root in $FRESH_DIR/root-$who" >&2
    root_make "$FRESH_DIR/root-$who"
    local pkgs=(git)
    [[ $who == user ]] && pkgs+=(sudo)
    in_root sh -c "apt-get -qq update && DEBIAN_FRONTEND=noninteractive apt-get -qq install -y --no-install-recommends ${pkgs[*]}" \
        >"$LOGS/$who-setup.log" 2>&1 || die "installing ${pkgs[*]} in the root failed (see $LOGS/$who-setup.log)"
    cp "$BUNDLE" "$ROOT/tmp/src.bundle"
    chmod 644 "$ROOT/tmp/src.bundle"
    if [[ $who == root ]]; then
        in_root git clone -q /tmp/src.bundle /root/project >>"$LOGS/$who-setup.log" 2>&1 ||
            die "git clone failed (see $LOGS/$who-setup.log)"
    else
        in_root useradd -m -s /bin/bash fresh
        echo 'fresh ALL=(ALL) NOPASSWD: ALL' >"$ROOT/etc/sudoers.d/fresh"
        chmod 440 "$ROOT/etc/sudoers.d/fresh"
        in_root runuser -l fresh -c 'git clone -q /tmp/src.bundle ~/project' >>"$LOGS/$who-setup.log" 2>&1 ||
            die "git clone failed (see $LOGS/$who-setup.log)"
    fi
    local pkgs_before
    pkgs_before=$(in_root dpkg-query -W -f='.\n' | wc -l)
    echo "fresh-check.sh: [$who] root ready in $(( $(date +%s) - t0 )) s: $pkgs_before packages (minbase + ${pkgs[*]})" >&2
    touch "$ROOT/tmp/commands-start"
    if [[ $who == root ]]; then
        run_cmd root 1 "$test_cmd"
        run_cmd root 2 "$main_cmd"
    else
        run_cmd user 1 "$main_cmd"
        run_cmd user 2 "$test_cmd"
    fi
    echo "fresh-check.sh: [$who] $(( $(in_root dpkg-query -W -f='.\n' | wc -l) - pkgs_before )) packages installed by the commands" >&2
    # for the record (the root goes away): the batch's summary and the tests' logs
    local home=/root/project
    [[ $who == user ]] && home=/home/fresh/project
    find "$ROOT$home/results" -name summary.md -newer "$ROOT/tmp/commands-start" \
        -exec cp {} "$LOGS/$who-summary.md" \; 2>/dev/null || true
    rm -rf "$LOGS/$who-test-logs"
    cp -r "$ROOT$home/build/test-logs" "$LOGS/$who-test-logs" 2>/dev/null || true
    root_release
}

echo "fresh-check.sh: commit $commit$dirty; Debian $FRESH_SUITE; commands: '$test_cmd' and '$main_cmd'" >&2
for c in $cases; do
    run_case "$c"
done

printf '\nfresh-check: commit %s, Debian %s (debootstrap minbase + git), %s UTC, host %s\n' \
    "${commit:0:12}" "$FRESH_SUITE" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(hostname)"
printf '%-5s %-24s %5s %8s  %s\n' case command exit time "last line"
for r in "${results[@]}"; do
    IFS='|' read -r who cmd rc secs last <<<"$r"
    printf '%-5s %-24s %5s %7ss  %s\n' "$who" "$cmd" "$rc" "$secs" "$last"
done
exit "$failed"
