# shellcheck shell=bash
# host.sh: what a figure must carry to be checkable: the host (CPU model, cores, kernel,
# hostname) and the versions of everything in the request path, as JSON objects.
# Reads only local files and tools (pkg-config, cc, git); never the network.
# Invariant: a value that cannot be found is null, never a guess.

# host_json: {"cpu_model","cores","kernel","hostname"}.
host_json() {
    local model
    model=$(awk -F: '/^model name/ { sub(/^[ \t]+/, "", $2); print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
    if [[ -z "$model" ]] && command -v lscpu >/dev/null; then
        model=$(lscpu 2>/dev/null | awk -F: '/^Model name/ { sub(/^[ \t]+/, "", $2); print $2; exit }' || true)
    fi
    jq -n --arg model "$model" --argjson cores "$(nproc --all)" \
        --argjson cores_usable "$(nproc)" \
        --arg kernel "$(uname -r)" --arg host "$(hostname)" \
        '{cpu_model: (if $model == "" then null else $model end), cores: $cores,
          cores_usable: $cores_usable, kernel: $kernel, hostname: $host}'
}

# pkg_version NAME: pkg-config's version of NAME (in a bundle: BUNDLE's), or empty.
pkg_version() {
    if [[ -n "${BUNDLE_ROOT:-}" ]]; then bundle_value "$1"; return 0; fi
    pkg-config --modversion "$1" 2>/dev/null || true
}

# llhttp_version: from the installed header's LLHTTP_VERSION_* macros, or empty.
llhttp_version() {
    local h=${LLHTTP_HEADER:-/usr/share/include/llhttp/llhttp.h}
    if [[ -n "${BUNDLE_ROOT:-}" ]]; then bundle_value llhttp; return 0; fi
    [[ -r "$h" ]] || return 0
    awk '/#define LLHTTP_VERSION_MAJOR/ { ma = $3 } /#define LLHTTP_VERSION_MINOR/ { mi = $3 }
         /#define LLHTTP_VERSION_PATCH/ { pa = $3 }
         END { if (ma != "") printf "%s.%s.%s\n", ma, mi, pa }' "$h"
}

# versions_json REPO_DIR: {"compiler","libuv","llhttp","sqlite","ck","jansson",
# "git_commit","git_dirty"}; git_dirty counts tracked files only.
versions_json() {
    local repo=$1 cc_ver commit dirty
    cc_ver=$("${CC:-cc}" --version 2>/dev/null | head -n1 || true)
    commit="" dirty=null
    if [[ -n "${BUNDLE_ROOT:-}" ]]; then   # a bundle (runner/bundle.sh): as it was built
        commit=$(bundle_value commit) dirty=$(bundle_value dirty) cc_ver=$(bundle_value compiler)
        [[ -n "$commit" && -n "$dirty" ]] || dirty=null
    elif commit=$(git -C "$repo" rev-parse HEAD 2>/dev/null); then
        if [[ -n "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
            dirty=true
        else
            dirty=false
        fi
    fi
    jq -n --arg cc "$cc_ver" --arg uv "$(pkg_version libuv)" --arg llhttp "$(llhttp_version)" \
        --arg sqlite "$(pkg_version sqlite3)" --arg ck "$(pkg_version ck)" \
        --arg jansson "$(pkg_version jansson)" --arg commit "$commit" --argjson dirty "$dirty" \
        'def n: if . == "" then null else . end;
         {compiler: ($cc | n), libuv: ($uv | n), llhttp: ($llhttp | n), sqlite: ($sqlite | n),
          ck: ($ck | n), jansson: ($jansson | n), git_commit: ($commit | n), git_dirty: $dirty}'
}
