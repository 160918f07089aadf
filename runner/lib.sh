# shellcheck shell=bash
# lib.sh: small helpers shared by runner.sh and run_all.sh: logging to stderr, clocks,
# CPU-list arithmetic and a JSON document edited in place with jq.
# Sourced, never executed; defines functions only (no state, no traps).
# Invariant: every function either succeeds or returns non-zero; none exits the caller.

# batch_dir_arg TAG ARGS...: the one results/<batch> argument of a batch tool (report.sh,
# summarize.sh), printed without its trailing '/'. Returns 2 when ARGS is not exactly one
# non-empty argument (after printing the caller's usage() on stderr) or when that folder does
# not exist (saying so on stderr, prefixed with TAG). The caller handles --help first.
batch_dir_arg() {
    local tag=$1
    shift
    if [[ $# -ne 1 || -z "$1" ]]; then
        usage >&2
        return 2
    fi
    [[ -d "${1%/}" ]] || { echo "$tag: no such batch folder '${1%/}'" >&2; return 2; }
    echo "${1%/}"
}

# log_info MSG...: one progress line on stderr, prefixed with the caller's tag
# ($LOG_TAG), and appended to $LOG_FILE when that is set.
log_info() {
    local line
    line=$(printf '[%s] %s' "${LOG_TAG:-runner}" "$*")
    printf '%s\n' "$line" >&2
    # a log that cannot be written (a full disk) loses the line there, not the caller's run
    if [[ -n "${LOG_FILE:-}" ]]; then { printf '%s %s\n' "$(now_iso)" "$line" >>"$LOG_FILE"; } 2>/dev/null || true; fi
}

# now_iso: the current time, ISO-8601 UTC to the second (for timestamps only).
now_iso() {
    date -u +%Y-%m-%dT%H:%M:%SZ
}

# batch_id_new: a fresh batch id, the UTC time (sortable, filesystem-safe).
batch_id_new() {
    date -u +%Y%m%dT%H%M%SZ
}

# batch_id_valid ID: true when ID names one folder under results/: [A-Za-z0-9._-] only and
# not "." or ".." (those name results/ itself or its parent, the project root).
batch_id_valid() {
    [[ "$1" =~ ^[A-Za-z0-9._-]+$ && "$1" != . && "$1" != .. ]]
}

# sat_ratio_valid R: true when R is a decimal in (0, 1] (SAT_RATIO: the sustained share of
# the saturation rate).
sat_ratio_valid() {
    [[ "$1" =~ ^(0?\.[0-9]+|1(\.0*)?)$ ]] && awk -v r="$1" 'BEGIN { exit !(r > 0 && r <= 1) }'
}

# clock_s: seconds since boot with 10 ms resolution (/proc/uptime, CLOCK_BOOTTIME):
# monotonic, so window lengths never depend on wall-clock steps.
clock_s() {
    local up _rest
    read -r up _rest </proc/uptime
    printf '%s\n' "$up"
}

# sleep_until T: sleeps until clock_s reaches T (at once when it has).
sleep_until() {
    local d
    d=$(calc "$1 - $(clock_s)")
    [[ "$d" == -* || "$d" == 0 ]] || sleep "$d"
}

# cpulist_expand LIST: prints the CPUs of a list like "0-3,8,10-11" one per line,
# in the order given. Returns 1 on a malformed list.
cpulist_expand() {
    local list=$1 part lo hi i
    [[ -n "$list" ]] || return 1
    local IFS=,
    for part in $list; do
        if [[ "$part" =~ ^([0-9]+)-([0-9]+)$ ]]; then
            lo=${BASH_REMATCH[1]} hi=${BASH_REMATCH[2]}
            (( lo <= hi )) || return 1
            for ((i = lo; i <= hi; i++)); do echo "$i"; done
        elif [[ "$part" =~ ^[0-9]+$ ]]; then
            echo "$part"
        else
            return 1
        fi
    done
}

# cpulist_count LIST: the number of CPUs in LIST (0 and status 1 when malformed).
cpulist_count() {
    local cpus
    if ! cpus=$(cpulist_expand "$1"); then
        echo 0
        return 1
    fi
    wc -l <<<"$cpus" | tr -d ' '
}

# cpus_within LIST MASK: true when every CPU of LIST is in MASK (both cpulist_expand lists).
cpus_within() {
    local c
    local -A in_mask=()
    for c in $(cpulist_expand "$2"); do in_mask[$c]=1; done
    for c in $(cpulist_expand "$1"); do [[ -n "${in_mask[$c]:-}" ]] || return 1; done
}

# cpu_plan_run ARGS...: the CPU planner (`analysis cpu-plan ARGS`, runner/analysis/cpuplan.py;
# SPEC.md section 4) with this shell's SERVER_CPUS, LOADGEN_CPUS and SMT (CPU_MASK and
# CPU_TOPOLOGY_ROOT from the environment). Says what is missing when python3 is (before
# scripts/deps.sh has run) and returns 1; returns the planner's status otherwise (2: a bad
# value, with the reason on stderr).
cpu_plan_run() {
    if ! command -v "${PYTHON:-python3}" >/dev/null 2>&1; then
        echo "the CPU plan needs python3 (scripts/deps.sh run installs it)" >&2
        return 1
    fi
    SERVER_CPUS="${SERVER_CPUS:-}" LOADGEN_CPUS="${LOADGEN_CPUS:-}" SMT="${SMT:-}" analysis cpu-plan "$@"
}

# cpu_plan_sides MASK: two lines, the server's and the load generator's CPUs of the default
# plan on MASK (what runner.sh picks when SERVER_CPUS and LOADGEN_CPUS are not given).
cpu_plan_sides() {
    local out
    out=$(SERVER_CPUS="" LOADGEN_CPUS="" cpu_plan_run --mask="$1") || return 1
    sed -n 's/^server_cpus=//p; s/^loadgen_cpus=//p' <<<"$out"
}

# conns_default POOL THREADS: the default connection count for a server with THREADS
# threads: a quarter of the mode's POOL per thread (64 of 256), at least POOL.
conns_default() {
    local per=$(( $1 / 4 )) n
    n=$(( per * $2 ))
    echo $(( n > $1 ? n : $1 ))
}

# affinity_cpus: the CPU list of this shell's affinity mask ("0,1").
affinity_cpus() {
    local out
    out=$(taskset -pc $$) || return 1
    printf '%s\n' "${out##*: }" | tr -d ' '
}

# json_set FILE PATH VALUE: sets the jq path PATH (".a.b") of FILE to VALUE, a JSON
# text ("12.5", "true", "null", "{...}"). Returns non-zero (FILE unchanged) when VALUE
# is not JSON. PATH comes from our code, never from input.
json_set() {
    local file=$1 path=$2 value=$3 tmp
    tmp=$(mktemp "$file.XXXXXX") || return 1
    if jq --argjson v "$value" "$path = \$v" "$file" >"$tmp"; then
        mv -f "$tmp" "$file"
    else
        rm -f "$tmp"
        return 1
    fi
}

# json_set_str FILE PATH STRING: sets PATH of FILE to STRING as a JSON string.
json_set_str() {
    json_set "$1" "$2" "$(jq -n --arg s "$3" '$s')"
}

# calc EXPR: evaluates an arithmetic expression in floating point with awk; prints the
# result with 3 decimals, trailing zeros dropped ("0.3", "12", "123456.789").
calc() {
    awk "BEGIN { v = ($1); s = sprintf(\"%.3f\", v); sub(/0+\$/, \"\", s); sub(/\\.\$/, \"\", s); print s }"
}

# fmt_num X [DECIMALS]: X with DECIMALS (0) decimals for progress lines; "null" stays.
fmt_num() {
    awk -v v="$1" -v d="${2:-0}" 'BEGIN { if (v == "null" || v == "") print "null"; else printf "%.*f\n", d, v }'
}

# analysis ARGS...: the analysis package's command line (runner/analysis, python3 stdlib).
# The interpreter's real path is looked up once, when this file is sourced, and exported to
# every script started from here: a version manager's shim costs a few shell processes per
# call (0.3 s on the 2-CPU host), and most calls run inside $(...), where a path looked up
# lazily would be lost with the subshell (1.4 s of a 12 s smoke run, 2026-12-02).
analysis() {
    if ! analysis_python_find; then
        echo "analysis: no ${PYTHON:-python3} here (scripts/deps.sh run installs it)" >&2
        return 1
    fi
    # -S: no site module (the package needs the standard library only; a site-packages .pth
    # can cost more than the command itself: 37 ms a call here)
    PYTHONPATH="$ANALYSIS_DIR${PYTHONPATH:+:$PYTHONPATH}" "$ANALYSIS_PYTHON" -S -m analysis "$@"
}

# analysis_python_find: sets and exports ANALYSIS_PYTHON, the interpreter behind python3
# (or $PYTHON), unless it is set. Returns 1 when there is none (yet: scripts/deps.sh may
# install it after this file is sourced; `analysis` then looks again).
analysis_python_find() {
    [[ -z "${ANALYSIS_PYTHON:-}" ]] || return 0
    ANALYSIS_PYTHON=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)' 2>/dev/null) ||
        ANALYSIS_PYTHON=""
    export ANALYSIS_PYTHON
    [[ -n "$ANALYSIS_PYTHON" ]]
}
ANALYSIS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)   # runner/, which holds the package
analysis_python_find || true
# shellcheck source=runner/bundle.sh
. "$ANALYSIS_DIR/bundle.sh"
bundle_env "$(dirname "$ANALYSIS_DIR")"   # in an unpacked bundle: its tools, no deps step, no make

# mode_durations MODE: the default durations of a run mode (full, quick or smoke) on one
# line: sustain warm-up, sustain measured, probe measured, probe warm-up (s), connections,
# sweep step warm-up, sweep step measured (s). Returns 1 for an unknown mode. The one table
# runner.sh's defaults and run_all.sh's time estimate read (SPEC.md sections 5 and 14).
mode_durations() {
    case "$1" in
        full) echo "30 60 30 5 256 5 20" ;;
        quick) echo "10 15 8 2 256 2 4" ;;
        smoke) echo "1 2 2 1 32 1 1" ;;
        *) return 1 ;;
    esac
}

# suite_version NAME: "NAME COMMIT[-dirty] (libuv X, sqlite Z, ck W, jansson V, llhttp Y)": the
# checkout's commit ("unknown" outside a git checkout; "-dirty" when tracked files are
# modified) and the libraries the build links, for --version: the versions as result.json
# records them (runner/host.sh's pkg_version and llhttp_version). Reads git, pkg-config and
# the llhttp header only (no jq: it works before scripts/deps.sh has run).
suite_version() {
    local root v libs="" lib ver
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    # shellcheck source=runner/host.sh
    . "$root/runner/host.sh"
    if [[ -n "$(bundle_value commit)" ]]; then   # a bundle (runner/bundle.sh): as it was built
        v=$(bundle_value commit) v=${v:0:12}
        [[ "$(bundle_value dirty)" != true ]] || v="$v-dirty"
    elif v=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null); then
        [[ -z "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ]] || v="$v-dirty"
    else
        v=unknown
    fi
    for lib in libuv sqlite3 ck jansson; do
        ver=$(pkg_version "$lib")
        libs+="${libs:+, }${lib%3} ${ver:-?}"
    done
    ver=$(llhttp_version)
    echo "$1 $v ($libs, llhttp ${ver:-?})"
}
