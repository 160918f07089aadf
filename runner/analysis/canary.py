"""canary: how fast the host is right now, in what it actually varies (issue 35: on the
2-vCPU development VM a compute loop stayed within 27.5-29.5 ms while a pipe round trip
between the server CPU and the load generator CPU ranged 7.9-15.4 us and tracked the
servers' req/s, r = -0.72). measure() times that round trip; mark() compares each run's
canary with the batch's median and flags a run "host slow" (rules.py, rounds.py re-run it).
measure() forks one child and pins both processes; mark() is pure.
"""
import os
import statistics
import time

from .rules import is_num

# A run whose canary (the slower of the one before and the one after it) is more than this
# share above the batch's median canary ran on a slow host: the 30 alternations
# ranged 7.9-15.4 us around a median near 10 us, and req/s fell by about a third at the top
# of that range; 25% above the median is past the middle half of the quiet spread.
HOST_SLOW_SHARE = 0.25
# Round trips per canary: about 20-40 ms of a shared host's time in Python.
ROUND_TRIPS = 2000
METHOD = "pipe round trip between a server CPU and a load generator CPU, median of 2000 (us)"


def cpus_of(text):
    """The first CPU of a list like '0-3,6' (None for empty or unreadable)."""
    head = (text or "").split(",")[0].split("-")[0].strip()
    return int(head) if head.isdigit() else None


def pick_cpus(server_cpus=None, loadgen_cpus=None):
    """(server CPU, load generator CPU): the first of SERVER_CPUS and LOADGEN_CPUS when given,
    else the first two CPUs this process may use (one CPU twice on a 1-CPU host)."""
    allowed = sorted(os.sched_getaffinity(0))
    a, b = cpus_of(server_cpus), cpus_of(loadgen_cpus)
    a = a if a in allowed else allowed[0]
    b = b if b in allowed and b != a else next((c for c in allowed if c != a), a)
    return a, b


def measure(cpu_a, cpu_b, n=ROUND_TRIPS):
    """The median round trip, in microseconds, of one byte sent from a process on CPU_A to a
    child on CPU_B and back, N times. Raises OSError when a CPU cannot be used."""
    ping_r, ping_w = os.pipe()
    pong_r, pong_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.sched_setaffinity(0, {cpu_b})
            for _ in range(n):
                os.read(ping_r, 1)
                os.write(pong_w, b"x")
        finally:
            os._exit(0)
    try:
        old = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {cpu_a})
        times = []
        for _ in range(n):
            t0 = time.perf_counter_ns()
            os.write(ping_w, b"x")
            os.read(pong_r, 1)
            times.append(time.perf_counter_ns() - t0)
        os.sched_setaffinity(0, old)
    finally:
        for fd in (ping_r, ping_w, pong_r, pong_w):
            os.close(fd)
        os.waitpid(pid, 0)
    return round(statistics.median(times) / 1000.0, 3)


def canary_of(run):
    """The run's canary in us: the slower of before and after (a slow host at either end
    counts), or None when not measured."""
    hs = (run or {}).get("host_speed") or {}
    vals = [v for v in (hs.get("canary_before_us"), hs.get("canary_after_us")) if is_num(v)]
    return max(vals) if vals else None


def mark(runs, share=HOST_SLOW_SHARE):
    """Sets each run's host_speed {canary_us, batch_median_us, off_share (canary / median - 1),
    slow (above SHARE), share} against the median canary of RUNS (in place); runs without a
    canary are left as they are. Returns the batch's median (None when no run has one)."""
    vals = [c for c in (canary_of(r) for r in runs) if c is not None]
    if not vals:
        return None
    med = statistics.median(vals)
    for r in runs:
        c = canary_of(r)
        if c is None:
            continue
        off = c / med - 1 if med > 0 else 0.0
        r["host_speed"] = dict(r["host_speed"], canary_us=c, batch_median_us=med, off_share=round(off, 3),
                               slow=off > share, share=share)
    return med
