# shellcheck shell=bash
# root-lib.sh: fresh Debian roots for checks that need a bare system (scripts/fresh-check.sh,
# tests/check_bundle.sh): made with debootstrap (minbase) or from a cached tarball of one, the
# virtual file systems mounted, torn down (leftover processes ended by pid, unmounted,
# deleted) by root_release. Sourced, never executed; needs root.
# The caller defines die MSG (exits) and sets FRESH_SUITE, FRESH_MIRROR, FRESH_BASE_CACHE
# (a tarball of the bare root: made when missing, reused after; empty: none), LOGS (where
# debootstrap.log goes) and keep (1: root_release leaves the root, unmounted).
# State: ROOT (the root being worked on) and MOUNTS (its mount points, in mount order).

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
    elif [[ ${keep:-0} -eq 1 ]]; then
        echo "fresh-check.sh: kept $ROOT (unmounted; delete it with rm -rf --one-file-system $ROOT)" >&2
    else
        rm -rf --one-file-system "$ROOT"
    fi
    ROOT=""
}
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

