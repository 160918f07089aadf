# shellcheck shell=bash
# bundle.sh: what changes when the suite runs from an unpacked bundle (make bundle,
# scripts/bundle.py): the marker file BUNDLE at the top of the folder. Sourced by lib.sh,
# and only there. In a bundle: the bundled programs (bin/: jq, curl, ps, pkill, strace,
# valgrind, each with the bundled libraries; taskset, setsid, hostname) come first on PATH, scripts/deps.sh installs
# nothing (DEPS_SKIP=1: no package manager, no network), runner.sh never runs make
# (RUNNER_BUILD=0: build/ holds the bundled binaries, which find lib/ through their run
# path), and the versions and commit come from BUNDLE (no git, no pkg-config there).
# Outside a bundle: defines the functions and changes nothing.

# bundle_value KEY: the value of KEY in the bundle's BUNDLE file (empty when none, or when
# not in a bundle).
bundle_value() {
    [[ -n "${BUNDLE_ROOT:-}" && -r "$BUNDLE_ROOT/BUNDLE" ]] || return 0
    sed -n "s/^$1=//p" "$BUNDLE_ROOT/BUNDLE" | head -n 1
}

# bundle_env DIR: when DIR (the suite's top folder) holds BUNDLE, exports BUNDLE_ROOT and
# the bundle's environment (once per process tree: PATH is not prepended twice).
bundle_env() {
    [[ -f "$1/BUNDLE" ]] || return 0
    if [[ "${BUNDLE_ROOT:-}" != "$1" ]]; then
        export BUNDLE_ROOT=$1
        export PATH="$1/bin:$PATH"
    fi
    export DEPS_SKIP=1 RUNNER_BUILD=0
}
