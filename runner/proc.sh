# shellcheck shell=bash
# proc.sh: a process's own accounting from /proc: CPU time (utime+stime of all its
# threads, from /proc/PID/stat) and peak RSS (VmHWM, from /proc/PID/status).
# Does not sample children or sum threads itself: the kernel's per-process totals are used.
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

# proc_sample PID: prints "CLOCK_S TICKS" (clock_s and CPU ticks read back to back),
# or returns 1 when the process is gone.
proc_sample() {
    local t ticks
    t=$(clock_s)
    ticks=$(proc_cpu_ticks "$1") || return 1
    printf '%s %s\n' "$t" "$ticks"
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
