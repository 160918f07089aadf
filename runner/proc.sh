# shellcheck shell=bash
# proc.sh: a process's (or a process tree's) accounting from /proc: CPU time (utime+stime,
# from /proc/PID/stat), each thread's CPU time and name (/proc/PID/task/TID/stat), and peak
# RSS (VmHWM, from /proc/PID/status). The tree samplers use shell builtins only (no fork per
# thread or per process), so that sampling costs the CPUs it runs on next to nothing.
# Samples only: the analysis package (runner/analysis/result.py) turns them into percentages.
# Invariant: the stat line is split after the LAST ')', since comm may hold spaces and ')'.

# proc_clk_tck: clock ticks per second for /proc/PID/stat times.
proc_clk_tck() {
    getconf CLK_TCK
}

# proc_stat_ticks_file FILE: prints utime+stime in clock ticks parsed from a
# /proc/PID/stat-format FILE. Returns 1 when FILE is unreadable or malformed.
proc_stat_ticks_file() {
    local line rest
    { line=$(<"$1"); } 2>/dev/null || return 1
    [[ "$line" == *")"* ]] || return 1
    rest=${line##*)}               # after the last ')': " S ppid pgrp ..."
    # Fields after comm: 1 state ... 12 utime, 13 stime (stat(5) fields 14 and 15).
    awk '{ if (NF < 13 || $12 !~ /^[0-9]+$/ || $13 !~ /^[0-9]+$/) exit 1; print $12 + $13 }' <<<"$rest"
}

# proc_cpu_ticks PID: utime+stime of process PID (all threads) in clock ticks.
# Returns 1 when the process is gone.
proc_cpu_ticks() {
    proc_stat_ticks_file "/proc/$1/stat"
}

# proc_hwm_kb_file FILE: prints VmHWM in kB from a /proc/PID/status-format FILE.
proc_hwm_kb_file() {
    awk '$1 == "VmHWM:" { if ($3 != "kB") exit 1; print $2; found = 1 } END { if (!found) exit 1 }' "$1"
}

# proc_hwm_kb PID: peak resident set size of PID in kB.
proc_hwm_kb() {
    proc_hwm_kb_file "/proc/$1/status"
}

# cpustat_sample LIST: "BUSY TOTAL STEAL" ticks summed over the CPUs of LIST (a
# cpulist_expand list) from /proc/stat: busy = user+nice+system+irq+softirq+steal,
# total = busy+idle+iowait. Whoever ran there counts: the server, the suite, or anything else.
cpustat_sample() {
    local cpus
    cpus=$(cpulist_expand "$1" | paste -sd' ' -) || return 1
    awk -v cpus="$cpus" 'BEGIN { n = split(cpus, c, " "); for (i = 1; i <= n; i++) want["cpu" c[i]] = 1 }
        $1 in want { b = $2 + $3 + $4 + $7 + $8 + $9; busy += b; total += b + $5 + $6; steal += $9 }
        END { printf "%d %d %d\n", busy, total, steal }' /proc/stat
}

# proc_tree_pids PID [live]: sets the array PROC_TREE_PIDS to the pids of PID's tree, PID
# first: every process descended from it (breadth first, by the parent pid of every
# /proc/N/stat), then every other process of the session PID leads (runner.sh starts the
# server with setsid: a child whose parent exited is reparented away but keeps the
# session). With "live": zombies are left out, and a PID that is gone still gives what is
# left of its session (the stop uses this: runner/server.sh server_tree_pids); without it,
# zombies count (their CPU until they are reaped) and a PID that is gone returns 1 with the
# array empty (the samplers use this). Builtins only, no subshell, no fork.
PROC_TREE_PIDS=()
proc_tree_pids() {
    local root=$1 live=${2:-} f line rest ppid sid pid p i=0
    local -a queue=() fields session=()
    local -A kids_of=() in_tree=()
    PROC_TREE_PIDS=()
    if [[ ! -r "/proc/$root/stat" ]]; then
        [[ "$live" == live ]] || return 1
    fi
    for f in /proc/[0-9]*/stat; do
        { read -r line <"$f"; } 2>/dev/null || continue
        rest=${line##*) }           # "S ppid pgrp session ..."
        read -r -a fields <<<"$rest"
        [[ "$live" != live || "${fields[0]}" != Z ]] || continue
        ppid=${fields[1]} sid=${fields[3]}
        pid=${f#/proc/}
        pid=${pid%/stat}
        kids_of[$ppid]+=" $pid"
        [[ "$sid" != "$root" || "$pid" == "$root" ]] || session+=("$pid")
        [[ "$pid" != "$root" ]] || in_tree[$root]=1
    done
    # the root first when it is there (a zombie root under "live" is not)
    if [[ -n "${in_tree[$root]:-}" ]]; then queue=("$root"); fi
    while :; do
        while (( i < ${#queue[@]} )); do
            p=${queue[i]}
            i=$((i + 1))
            for pid in ${kids_of[$p]:-}; do
                [[ -n "${in_tree[$pid]:-}" ]] || { in_tree[$pid]=1; queue+=("$pid"); }
            done
        done
        (( ${#session[@]} > 0 )) || break
        for pid in "${session[@]}"; do
            [[ -n "${in_tree[$pid]:-}" ]] || { in_tree[$pid]=1; queue+=("$pid"); }
        done
        session=()
    done
    PROC_TREE_PIDS=("${queue[@]}")
}

# proc_tree_sample PID [self]: one sample of the process tree under PID (only PID with
# "self"): a first line "CLOCK_S TICKS PROCESSES" (clock_s; utime+stime+cutime+cstime of
# every process of the tree, so that a child reaped during the window still counts; the
# number of processes), then one line per thread "PID TID TICKS NAME" (utime+stime of the
# thread; NAME its comm, which may hold spaces, last). Builtins only (no fork); a thread or
# process that ends while it is read is left out. Returns 1 when PID is gone.
proc_tree_sample() {
    local root=$1 mode=${2:-tree} t line rest name p tid total=0 n=0
    local -a pids f out
    read -r t _ </proc/uptime
    if [[ "$mode" == self ]]; then
        [[ -r "/proc/$root/stat" ]] || return 1
        pids=("$root")
    else
        proc_tree_pids "$root" || return 1
        pids=("${PROC_TREE_PIDS[@]}")
    fi
    for p in "${pids[@]}"; do
        { read -r line <"/proc/$p/stat"; } 2>/dev/null || { [[ "$p" != "$root" ]] && continue; return 1; }
        rest=${line##*) }
        # shellcheck disable=SC2206  # after comm: numbers and a state letter only
        f=($rest)
        # state is f[0]: utime f[11], stime f[12], cutime f[13], cstime f[14]
        total=$((total + f[11] + f[12] + f[13] + f[14]))
        n=$((n + 1))
        for tid in "/proc/$p/task/"*; do
            { read -r line <"$tid/stat"; } 2>/dev/null || continue
            rest=${line##*) }
            name=${line#*(}
            name=${name%)*}
            name=${name//[$'\n\t']/?}
            # shellcheck disable=SC2206
            f=($rest)
            out+=("$p ${tid##*/} $((f[11] + f[12])) $name")
        done
    done
    printf '%s %s %s\n' "$t" "$total" "$n"
    printf '%s\n' "${out[@]}"
}

# proc_tree_hwm_kb PID: the peak resident set (VmHWM, kB) summed over PID and every process
# descended from it: each process's own peak, so an upper bound of the tree's peak at any
# one moment (the two are equal for one process). Returns 1 when PID is gone.
proc_tree_hwm_kb() {
    local p kb sum=0
    local -a pids
    proc_tree_pids "$1" || return 1
    pids=("${PROC_TREE_PIDS[@]}")
    for p in "${pids[@]}"; do
        if kb=$(proc_hwm_kb "$p" 2>/dev/null); then
            sum=$((sum + kb))
        elif [[ "$p" == "$1" ]]; then
            return 1
        fi
    done
    printf '%s\n' "$sum"
}
