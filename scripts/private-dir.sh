# shellcheck shell=bash
# private-dir.sh: a folder a root script may work in (mount, chroot, write what root then
# runs) only when no other user could have prepared it or can change it. Sourced by
# scripts/fresh-check.sh; defines functions only. Linux (stat -c).

# private_dir_claim DIR: makes DIR (mode 0700, owned by root) when it is absent, then
# checks it: a real folder (not a symbolic link), owned by root, mode 0700, and every
# folder above it (links above it resolved) owned by root and writable by nobody else
# unless sticky (/var/tmp, /tmp: there another user cannot rename or remove root's
# folder). Returns 0 when DIR is usable; otherwise prints one line saying why to stderr
# and returns 1. DIR's parent must exist. Never changes an existing folder's owner or
# mode, and never follows a link at DIR itself.
private_dir_claim() {
    local dir=$1 parent mode owner
    [[ "$dir" == /* ]] || { echo "$dir: not an absolute path" >&2; return 1; }
    while [[ "$dir" == */ && "$dir" != / ]]; do dir=${dir%/}; done
    # the folders above, with no link left in them (the last part is checked as it is)
    parent=$(cd -P -- "$(dirname -- "$dir")" 2>/dev/null && pwd -P) ||
        { echo "$(dirname -- "$dir"): no such folder" >&2; return 1; }
    dir=${parent%/}/$(basename -- "$dir")
    mkdir -m 0700 -- "$dir" 2>/dev/null || true # fails when it exists: then it is checked
    if [[ -L "$dir" || ! -d "$dir" ]]; then
        echo "$dir: not a folder (or a symbolic link): refusing it" >&2
        return 1
    fi
    read -r owner mode < <(stat -c '%u %a' -- "$dir")
    if [[ "$owner" != 0 || "$mode" != 700 ]]; then
        echo "$dir exists, owned by uid $owner with mode $mode, not root's with mode 0700" \
            "(another user may have prepared it): remove it or choose another folder" >&2
        return 1
    fi
    parent=$dir
    while [[ "$parent" != / ]]; do
        parent=$(dirname -- "$parent")
        read -r owner mode < <(stat -c '%u %a' -- "$parent")
        # group or others may write, and the sticky bit (01000) is not set
        if [[ "$owner" != 0 ]] || (( (8#$mode & 8#022) != 0 && (8#$mode & 8#1000) == 0 )); then
            echo "$parent (above $dir) is owned by uid $owner with mode $mode:" \
                "another user could replace $dir: refusing it" >&2
            return 1
        fi
    done
    return 0
}
