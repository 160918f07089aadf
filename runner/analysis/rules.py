"""rules: the validity thresholds (SPEC.md section 8) and the flags of one run, with the reason
for every flag that is not fine, in words and figures.

Every threshold is a named constant here and nowhere else; SPEC.md gives the reasons.
Works on result.json documents (dicts); never reads files.
"""
import math
import statistics

# A probe saturated the server when its CPU was at least this percent of its CPUs (rule a),
SATURATED_CPU_PCT = 90.0
# ... or when one server thread used at least this percent of a CPU (rule b: a serial
# bottleneck; a thread's CPU is read to a tick, 10 ms, so 95% over a 2 s smoke window is
# 190 of 200 ticks, and a thread that waits for nothing reads 97-100%),
SERIAL_THREAD_PCT = 95.0
# ... or by plateau (rule c): a second probe with twice the connections gained less than
# this fraction of req/s, and the server's CPU rose by less than this fraction either.
PLATEAU_GAIN = 0.05
# The load generator is the bottleneck of a phase when its CPU is at least this percent of
# its CPUs: at 91-99% the corrected latency was measured to equal connections / rate (every
# connection busy, requests queued inside the load generator), at 83-85% it was not.
LOADGEN_CPU_PCT = 90.0
# ... or when one of its threads used at least this percent of a CPU (a thread of the load
# generator drives its own connections only: at 90% it is where its total would be).
LOADGEN_THREAD_PCT = 90.0
# A probe counts only with headroom on the load generator, whatever the server's CPU (issue
# 35): its CPU below this percent of its CPUs and its busiest thread below
# LOADGEN_THREAD_PCT. A closed loop whose generator is at 90-97% measures the server and the
# generator together (ref-1's lowest s1 figure had the generator at 97.2% and the server at
# 92.1%): the server was "saturated" by the rule above while the generator co-paced it.
LOADGEN_HEADROOM_CPU_PCT = 85.0
# ... or, at a constant rate, when requests left the load generator late on its own account:
# the 99th percentile of its own send lag (actual write time minus due time, less the time
# every connection was held by the server) above this bound, in ms.
SEND_LAG_P99_MS = 1.0
# ... and above this fraction of the whole send lag's p99: the own lag also holds the
# generator's reaction in each round of a backlog the server made (it read the answers and
# sent the next round while the server sat idle), which adds up over a long stall's drain
# (it_loadgen: 1.25 ms of own lag in draining a 500 ms stall of a server that answers at
# once) without making the latency the generator's.
OWN_LAG_SHARE = 0.1
# Results from a load generator that did not report its own lag (built before a32ebbb) are
# judged on the whole lag, except when more than this fraction of the requests waited for a
# free connection (then the lag was taken for the server's; a generator stall with a backlog
# larger than its connections looks the same, which is why the own lag replaced it).
WAITED_FRACTION = 0.01
# A phase is crowded when processes other than the server used more than this percent of
# each server CPU (interrupts, steal and stray work count).
OTHER_LOAD_PCT = 10.0
# The rate was held when the achieved rate is within this fraction of the offered rate.
RATE_HELD_FRACTION = 0.01
# Stationarity of a measured window, judged on its seconds (the load generator's 1 s intervals):
# an episode is STATIONARY_RUN or more consecutive intervals whose corrected p99 exceeds
# STATIONARY_P99_FACTOR x the median interval's p99 (and STATIONARY_P99_FLOOR_MS), or whose
# completions per second fall below STATIONARY_RPS_FRACTION x the median interval's; an
# interval without any response counts against both. A window with fewer than
# STATIONARY_MIN_INTERVALS intervals is not judged: an episode must be shorter than half of
# the window for the median to stand for the rest of it.
STATIONARY_P99_FACTOR = 10.0
STATIONARY_P99_FLOOR_MS = 1.0
STATIONARY_RPS_FRACTION = 0.5
STATIONARY_RUN = 3
STATIONARY_MIN_INTERVALS = 2 * STATIONARY_RUN + 1


def is_num(v):
    """True for a finite number (NaN and infinities are unknown figures, never compared)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def json_null_constant(_name):
    """parse_constant for json.load: NaN, Infinity and -Infinity (not JSON, but Python's json
    writes them) are read as null, an unknown figure."""
    return None


def busiest(threads):
    """The entry of THREADS (a result's server_threads or loadgen_threads: [{tid, name,
    cpu_pct}]) with the highest cpu_pct, or None when none is known."""
    known = [t for t in threads or [] if isinstance(t, dict) and is_num(t.get("cpu_pct"))]
    return max(known, key=lambda t: (t["cpu_pct"], -(t.get("tid") or 0))) if known else None


def plateau_figures(probe):
    """(gain, cpu_gain) of PROBE's plateau probe against it: the relative change of req/s and
    of the server's CPU with twice the connections; (None, None) when unknown."""
    pl = (probe or {}).get("plateau") or {}
    r0, r1 = (probe or {}).get("rps"), pl.get("rps")
    c0, c1 = (probe or {}).get("server_cpu_pct"), pl.get("server_cpu_pct")
    gain = r1 / r0 - 1 if is_num(r0) and is_num(r1) and r0 > 0 else None
    cpu_gain = c1 / c0 - 1 if is_num(c0) and is_num(c1) and c0 > 0 else None
    return gain, cpu_gain


def plateau_usable(probe):
    """True when PROBE's plateau probe can judge: it ran clean and quiet (others used at most
    OTHER_LOAD_PCT of each server CPU: a crowded server loses throughput and CPU alike, which
    is no plateau) and its load generator did not limit it (CPU or a thread at
    LOADGEN_*_PCT)."""
    pl = (probe or {}).get("plateau") or {}
    return (bool(pl) and pl.get("clean") is True and pl.get("loadgen_bound") is False
            and pl.get("quiet") is not False)


def saturation(probe, n_server_cpus, role=None):
    """(saturated_by, reason) of a probe: ("cpu", why) when the server's CPU reached
    SATURATED_CPU_PCT of its CPUs (rule a); ("thread", why) when one server thread reached
    SERIAL_THREAD_PCT of a CPU (rule b, the reason names it and, through ROLE(thread) -> words
    or None, what it runs); ("plateau", why) when the plateau probe (twice the connections)
    gained less than PLATEAU_GAIN in req/s and in server CPU (rule c); (None, why not) when
    none holds; (None, None) when the server's CPU is unknown."""
    probe = probe or {}
    cpu = probe.get("server_cpu_pct")
    if not is_num(cpu):
        return None, None
    if cpu >= SATURATED_CPU_PCT * n_server_cpus:
        return "cpu", (f"server CPU {fmt_pct(cpu)} of {n_server_cpus} CPU(s) >= {SATURATED_CPU_PCT:g}% of "
                       f"{'it' if n_server_cpus == 1 else 'them'}")
    top = busiest(probe.get("server_threads"))
    what = ""
    if top is not None:
        r = role(top) if role else None
        what = f"thread {top.get('name')} (tid {top.get('tid')}{', ' + r if r else ''})"
        if top["cpu_pct"] >= SERIAL_THREAD_PCT:
            return "thread", (f"{what} at {fmt_pct(top['cpu_pct'])} of a CPU >= {SERIAL_THREAD_PCT:g}%: a serial "
                              f"bottleneck (server CPU {fmt_pct(cpu)} of {n_server_cpus} CPU(s))")
    busy = f"server CPU {fmt_pct(cpu)} of {n_server_cpus} CPU(s), below {SATURATED_CPU_PCT:g}%" + (
        f"; busiest {what} at {fmt_pct(top['cpu_pct'])}, below {SERIAL_THREAD_PCT:g}%" if top else "")
    pl = probe.get("plateau")
    if not pl:
        return None, busy
    gain, cpu_gain = plateau_figures(probe)
    twice = f"{pl.get('connections') or '2x'} connections"
    if not plateau_usable(probe):
        why = ("the load generator limited it" if pl.get("loadgen_bound") else
               "it had errors" if pl.get("clean") is False else
               f"others used the server CPUs ({fmt_pct(pl.get('server_cpus_other_pct'))} not the server)"
               if pl.get("quiet") is False else "its figures are unknown")
        return None, f"{busy}; the plateau probe with {twice} cannot judge: {why}"
    if gain is None or cpu_gain is None:
        return None, f"{busy}; the plateau probe with {twice} has no figure"
    moved = f"{twice} gave {gain:+.1%} req/s and {cpu_gain:+.1%} server CPU"
    if gain < PLATEAU_GAIN and cpu_gain < PLATEAU_GAIN:
        return "plateau", (f"plateau: {moved} (both under +{PLATEAU_GAIN:.0%}): more load found no more capacity, "
                           f"a lock or a serial section that sleeps ({busy})")
    return None, f"{busy}; {moved}: it was still rising"


def saturated(probe, n_server_cpus):
    """True when the probe saturated the server by any rule of saturation() (total CPU, one
    thread, plateau); False when none holds; None when its CPU is unknown."""
    by, why = saturation(probe, n_server_cpus)
    if by is None and why is None:
        return None
    return by is not None


def plateau_needed(probe, n_server_cpus):
    """True when a probe (with N_SERVER_CPUS) calls for the plateau probe: its CPU is known,
    neither rule a nor b holds, its load generator did not limit it, it had no errors, others
    did not crowd the server CPUs (quiet), it completed requests, and it has no plateau
    probe yet."""
    if not probe or probe.get("plateau"):
        return False
    val = probe.get("validity") or {}
    by, why = saturation(probe, n_server_cpus)
    return (by is None and why is not None and val.get("loadgen_bound") is False and val.get("clean") is True
            and val.get("quiet") is not False and is_num(probe.get("rps")) and probe["rps"] > 0)


def loadgen_thread_bound(phase):
    """The load generator thread of PHASE (loadgen_threads) at LOADGEN_THREAD_PCT of a CPU or
    more (the busiest), else None."""
    top = busiest(phase.get("loadgen_threads"))
    return top if top is not None and top["cpu_pct"] >= LOADGEN_THREAD_PCT else None


def loadgen_bound(phase, n_loadgen_cpus, closed_loop, server_saturated=None):
    """Whether the load generator, not the server, limited PHASE (a dict with loadgen_cpu_pct,
    send_lag_own_p99_ms, or for older results send_lag_p99_ms, requests_completed and
    requests_waited_for_connection).

    Closed loop (the probe): the load generator set the rate when its CPU reached
    LOADGEN_CPU_PCT of its CPUs, or one of its threads (loadgen_threads) LOADGEN_THREAD_PCT of
    a CPU, while the server was not saturated. Constant rate: when its CPU reached
    LOADGEN_CPU_PCT (it could not keep up with its own schedule), or when its own send lag
    p99 exceeded SEND_LAG_P99_MS and OWN_LAG_SHARE of the lag (see lag_bound). None when
    unknown."""
    cpu = phase.get("loadgen_cpu_pct")
    if not is_num(cpu):
        return None
    cpu_bound = cpu >= LOADGEN_CPU_PCT * n_loadgen_cpus or loadgen_thread_bound(phase) is not None
    if closed_loop:
        return cpu_bound and server_saturated is False
    return cpu_bound or lag_bound(phase)


def judge_agents(agents, closed_loop, server_saturated=None):
    """AGENTS (result.json's loadgen_agents entries) with each one's loadgen_bound set by the
    single-host rule (loadgen_bound) on its own figures and its own CPU count (cpu_count)."""
    return [dict(a, loadgen_bound=loadgen_bound(a, a.get("cpu_count") or 1, closed_loop, server_saturated))
            for a in agents]


def agents_loadgen_bound(agents):
    """A phase with several load agents is loadgen-bound when any agent is; None when no
    agent could be judged."""
    bounds = [a.get("loadgen_bound") for a in agents]
    if all(b is None for b in bounds):
        return None
    return any(b is True for b in bounds)


def agent_name(a):
    """'agent I (destination, hostname)' for reasons."""
    where = ", ".join(str(x) for x in (a.get("destination"), a.get("hostname")) if x)
    return f"agent {a.get('agent_index')}" + (f" ({where})" if where else "")


def agents_bound_reason(agents):
    """Why each loadgen-bound agent is, in figures: 'agent 1 (u@h, h) loadgen CPU 95.0% of
    1 CPU(s)' and/or 'send lag p99 3.000 ms > 1 ms'."""
    out = []
    for a in agents:
        if not a.get("loadgen_bound"):
            continue
        why = []
        n = a.get("cpu_count") or 1
        if is_num(a.get("loadgen_cpu_pct")) and a["loadgen_cpu_pct"] >= LOADGEN_CPU_PCT * n:
            why.append(f"loadgen CPU {fmt_pct(a['loadgen_cpu_pct'])} of {n} CPU(s)")
        if lag_bound(a):
            why.append(lag_reason(a))
        out.append(agent_name(a) + " " + ", ".join(why))
    return "; ".join(out)


def lag_bound(phase):
    """True when a constant-rate phase sent late on its own account: its own send lag p99
    (send_lag_own_p99_ms) above SEND_LAG_P99_MS and above OWN_LAG_SHARE of the whole lag's
    p99 (when known); for a result without it, the whole lag's p99 above SEND_LAG_P99_MS
    while at most WAITED_FRACTION of the requests waited for a connection."""
    own, lag = phase.get("send_lag_own_p99_ms"), phase.get("send_lag_p99_ms")
    if is_num(own):
        return own > SEND_LAG_P99_MS and not (is_num(lag) and own <= OWN_LAG_SHARE * lag)
    if not is_num(lag) or lag <= SEND_LAG_P99_MS:
        return False
    return not waited_much(phase)


def lag_reason(phase):
    """'own send lag p99 X ms > 1 ms and > 10% of the send lag p99 Y ms' (or the whole lag's,
    for an older result)."""
    own = phase.get("send_lag_own_p99_ms")
    if is_num(own):
        return (f"own send lag p99 {own:.3f} ms > {SEND_LAG_P99_MS:g} ms and > "
                f"{OWN_LAG_SHARE:.0%} of the send lag p99 {fmt_ms(phase.get('send_lag_p99_ms'))}")
    return f"send lag p99 {phase['send_lag_p99_ms']:.3f} ms > {SEND_LAG_P99_MS:g} ms"


def fmt_ms(v):
    return f"{v:.3f} ms" if is_num(v) else "unknown"


def waited_much(phase):
    """True when more than WAITED_FRACTION of the requests waited for a free connection."""
    waited, done = phase.get("requests_waited_for_connection"), phase.get("requests_completed")
    return is_num(waited) and is_num(done) and done > 0 and waited > WAITED_FRACTION * done


def quiet(phase, n_server_cpus):
    """True when others used at most OTHER_LOAD_PCT of each server CPU during PHASE."""
    other = phase.get("server_cpus_other_pct")
    if not is_num(other):
        return None
    return other <= OTHER_LOAD_PCT * n_server_cpus


def rate_held(achieved, target):
    if not is_num(achieved) or not is_num(target) or target <= 0:
        return None
    return abs(achieved - target) <= RATE_HELD_FRACTION * target


def clean(phase):
    """No error of any class and no unexpected status in PHASE (None when not measured)."""
    errors = phase.get("errors")
    if errors is None:
        return None
    total = sum(v for v in errors.values() if is_num(v))
    unexpected = sum(v for v in (phase.get("unexpected_status_counts") or {}).values() if is_num(v))
    return total == 0 and unexpected == 0


def loadgen_thread_words(phase):
    """', thread lg-0 at 97.0% of a CPU' when a load generator thread reached
    LOADGEN_THREAD_PCT in PHASE, else ''."""
    top = loadgen_thread_bound(phase)
    return "" if top is None else f", its thread {top.get('name')} at {fmt_pct(top['cpu_pct'])} of a CPU"


def fmt_pct(v):
    return "n/a" if not is_num(v) else f"{v:.1f}%"


def _long_runs(flags):
    """[(first, last)] index ranges of STATIONARY_RUN or more consecutive true FLAGS."""
    out, start = [], None
    for i, f in enumerate(list(flags) + [False]):
        if f and start is None:
            start = i
        elif not f and start is not None:
            if i - start >= STATIONARY_RUN:
                out.append((start, i - 1))
            start = None
    return out


def stationarity(phase):
    """Whether the measured window of PHASE (a result.json document for its constant-rate window,
    or its probe) was stationary, from its per-interval figures (latency_p99_intervals.p99_ms,
    throughput_intervals.rps). Returns {"stationary": True, False, or None when not judged (no
    per-interval figures, or fewer than STATIONARY_MIN_INTERVALS intervals), "intervals",
    "interval_s", "episodes": [{"rule": "p99" or "rate", "from_s", "to_s" (offsets into the
    window, s), "seconds", "median" (the median interval's p99 in ms, or rate in req/s),
    "bound" (the threshold an interval crossed), "low", "high" (the episode's range over its
    intervals with responses; None when none had any), "empty" (intervals without any
    response)}]}, episodes in time order."""
    out = {"stationary": None, "intervals": None, "interval_s": None, "episodes": []}
    lat = phase.get("latency_p99_intervals") if isinstance(phase, dict) else None
    thr = phase.get("throughput_intervals") if isinstance(phase, dict) else None
    judged = False
    for rule, doc, key in (("p99", lat, "p99_ms"), ("rate", thr, "rps")):
        if not isinstance(doc, dict) or not isinstance(doc.get(key), list) or not is_num(doc.get("interval_s")):
            continue
        series = [v if is_num(v) else None for v in doc[key]]
        known = sorted(v for v in series if v is not None)
        step = doc["interval_s"]
        out["intervals"], out["interval_s"] = len(series), step
        if len(series) < STATIONARY_MIN_INTERVALS or not known:
            continue
        judged = True
        med = statistics.median(known)
        if rule == "p99":
            bound = max(STATIONARY_P99_FACTOR * med, STATIONARY_P99_FLOOR_MS)
            bad = [v is None or v > bound for v in series]
        else:
            bound = STATIONARY_RPS_FRACTION * med
            bad = [v is None or v < bound for v in series]
        for first, last in _long_runs(bad):
            vals = [v for v in series[first:last + 1] if v is not None]
            out["episodes"].append({
                "rule": rule, "from_s": round(first * step, 3), "to_s": round((last + 1) * step, 3),
                "seconds": round((last + 1 - first) * step, 3), "median": med, "bound": bound,
                "low": min(vals) if vals else None, "high": max(vals) if vals else None,
                "empty": sum(1 for v in series[first:last + 1] if v is None)})
    out["episodes"].sort(key=lambda e: (e["from_s"], e["rule"]))
    if judged:
        out["stationary"] = not out["episodes"]
    return out


def stationarity_reason(st):
    """The episodes of a stationarity() result in words, e.g. 'p99 above 10 x the median
    second's 9.200 ms for 12 s, 37-49 s into the window (80.000-1,136.000 ms)'."""
    words = []
    for e in st.get("episodes") or []:
        span = f"for {e['seconds']:g} s, {e['from_s']:g}-{e['to_s']:g} s into the window"
        if e["rule"] == "p99":
            what = (f"p99 above {STATIONARY_P99_FACTOR:g} x the median second's {e['median']:,.3f} ms"
                    + (f" (and {STATIONARY_P99_FLOOR_MS:g} ms)" if e["bound"] == STATIONARY_P99_FLOOR_MS else ""))
            rng = f"{e['low']:,.3f}-{e['high']:,.3f} ms" if e["low"] is not None else ""
        else:
            what = f"throughput below {STATIONARY_RPS_FRACTION:g} x the median second's {e['median']:,.0f} req/s"
            rng = f"{e['low']:,.0f}-{e['high']:,.0f} req/s" if e["low"] is not None else ""
        extra = ", ".join(x for x in (rng, f"{e['empty']} s without any response" if e["empty"] else "") if x)
        words.append(f"{what} {span}" + (f" ({extra})" if extra else ""))
    return "; ".join(words)


def probe_problems(run):
    """[(flag, reason)] of what makes RUN's probe unusable as a saturation figure; [] when fine.
    Flags: failed, no probe, not saturated, loadgen-bound, errors, other load, not stationary."""
    if run is None:
        return [("no result", "no result.json")]
    if run.get("failure"):
        return [("failed", f"the run failed: {run['failure']}")]
    probe = run.get("probe")
    if not probe:
        return [("no probe", "the run has no probe")]
    n_srv = (run.get("config") or {}).get("server_cpu_count") or 1
    n_lg = (run.get("config") or {}).get("loadgen_cpu_count") or 1
    val = probe.get("validity") or {}
    out = []
    if val.get("loadgen_bound") and probe.get("loadgen_agents"):
        out.append(("loadgen-bound", f"a load agent saturated first in the probe ("
                    f"{agents_bound_reason(probe['loadgen_agents'])}; server CPU "
                    f"{fmt_pct(probe.get('server_cpu_pct'))} of {n_srv})"))
    elif val.get("loadgen_bound"):
        out.append(("loadgen-bound", f"the load generator saturated first in the probe (loadgen CPU "
                    f"{fmt_pct(probe.get('loadgen_cpu_pct'))} of {n_lg} CPU(s){loadgen_thread_words(probe)}, "
                    f"server CPU {fmt_pct(probe.get('server_cpu_pct'))} of {n_srv})"))
    elif val.get("saturated") is False:
        _, why = saturation(probe, n_srv)
        out.append(("not saturated", f"the probe did not saturate the server ("
                    + (why or f"server CPU {fmt_pct(probe.get('server_cpu_pct'))} of {n_srv} CPU(s), below "
                       f"{SATURATED_CPU_PCT:g}%") + ")"))
    elif co_paced(probe, n_lg):
        out.append(("co-paced", f"the load generator had no headroom in the probe (loadgen CPU "
                    f"{fmt_pct(probe.get('loadgen_cpu_pct'))} of {n_lg} CPU(s), below {LOADGEN_HEADROOM_CPU_PCT:g}% "
                    f"needed{loadgen_thread_words(probe)}; server CPU {fmt_pct(probe.get('server_cpu_pct'))} of "
                    f"{n_srv}): its req/s is the server's and the generator's together"))
    if val.get("clean") is False:
        out.append(("errors", f"{probe.get('errors_total', '?')} errors in the probe"))
    if val.get("quiet") is False:
        out.append(("other load", f"other load on the server CPUs in the probe "
                    f"({fmt_pct(probe.get('server_cpus_other_pct'))} not the server)"))
    st = stationarity(probe)
    if st["stationary"] is False:
        out.append(("not stationary", "the probe's window was not stationary: " + stationarity_reason(st)))
    out += host_slow(run)
    return out


def co_paced(phase, n_loadgen_cpus):
    """True when PHASE's load generator lacked headroom: its CPU at LOADGEN_HEADROOM_CPU_PCT
    of its CPUs or more, or its busiest thread at LOADGEN_THREAD_PCT of a CPU or more (a
    load agent's own figures for a distributed phase); None when its CPU is unknown."""
    agents = phase.get("loadgen_agents")
    if agents:
        return any(is_num(a.get("loadgen_cpu_pct")) and a["loadgen_cpu_pct"] >= LOADGEN_HEADROOM_CPU_PCT
                   * (a.get("cpu_count") or 1) for a in agents)
    cpu = phase.get("loadgen_cpu_pct")
    if not is_num(cpu):
        return None
    return cpu >= LOADGEN_HEADROOM_CPU_PCT * n_loadgen_cpus or loadgen_thread_bound(phase) is not None


def host_slow(run):
    """[("host slow", why)] when RUN's host_speed says the host was slow around it (canary.mark
    sets it against the batch's median canary), else []."""
    hs = run.get("host_speed") or {}
    if not hs.get("slow"):
        return []
    return [("host slow", f"the host was slow around the run: its canary (a pipe round trip between the server "
             f"and load generator CPUs) took {hs.get('canary_us')} us, {100 * (hs.get('off_share') or 0):.0f}% "
             f"above the batch's median {hs.get('batch_median_us')} us (more than {100 * hs.get('share', 0):.0f}%)")]


def sustain_problems(run):
    """[(flag, reason)] of what makes RUN's constant-rate window unusable (rate not held,
    errors, other load on the server CPUs, the load generator the bottleneck, no CPU figure,
    not stationary); [] when fine."""
    if run is None:
        return [("no result", "no result.json")]
    if run.get("failure"):
        return [("failed", f"the run failed: {run['failure']}")]
    if run.get("sustained_rps") is None:
        return [("no sustain", "the run has no constant-rate window")]
    val = run.get("validity") or {}
    n_srv = (run.get("config") or {}).get("server_cpu_count") or 1
    n_lg = (run.get("config") or {}).get("loadgen_cpu_count") or 1
    out = []
    if val.get("sustain_loadgen_bound") and run.get("loadgen_agents"):
        out.append(("loadgen-bound", "a load agent could not keep its schedule ("
                    + agents_bound_reason(run["loadgen_agents"]) + ")"))
    elif val.get("sustain_loadgen_bound"):
        why = []
        if is_num(run.get("loadgen_cpu_pct")) and run["loadgen_cpu_pct"] >= LOADGEN_CPU_PCT * n_lg:
            why.append(f"loadgen CPU {fmt_pct(run['loadgen_cpu_pct'])} of {n_lg} CPU(s)")
        top = loadgen_thread_bound(run)
        if top is not None:
            why.append(f"loadgen thread {top.get('name')} at {fmt_pct(top['cpu_pct'])} of a CPU")
        if lag_bound(run):
            why.append(lag_reason(run))
        out.append(("loadgen-bound", "the load generator could not keep its schedule ("
                    + ", ".join(why or ["see loadgen.json"]) + ")"))
    if val.get("rate_held") is False:
        out.append(("rate not held", f"{run.get('sustained_rps', 0):,.0f} of {run.get('target_rps', 0):,.0f} "
                    "req/s achieved"))
    if clean(run) is False:
        out.append(("errors", f"{run.get('errors_total', '?')} errors"))
    if quiet(run, n_srv) is False:
        out.append(("other load", f"other load on the server CPUs ({fmt_pct(run.get('server_cpus_other_pct'))} "
                    "not the server)"))
    if not is_num(run.get("req_per_cpu_sec")):
        out.append(("no CPU figure", "no server CPU figure"))
    st = stationarity(run)
    if st["stationary"] is False:
        out.append(("not stationary", "the window was not stationary (its latency is not the server's "
                    "steady tail): " + stationarity_reason(st)))
    out += host_slow(run)
    return out


def run_flags(run):
    """The short flags of a run for tables: every problem of its probe and its sustain."""
    if run is None:
        return ["no result"]
    if run.get("failure"):
        return ["failed"]
    flags = []
    if run.get("probe"):
        flags += [f for f, _ in probe_problems(run)]
    if run.get("sustained_rps") is not None:
        flags += [f for f, _ in sustain_problems(run) if f not in flags]
    return flags


# The remedy for each kind of problem, in words a user can act on.
REMEDY = {
    "loadgen-bound": "the load generator saturated first: give it more CPUs with LOADGEN_CPUS, "
                     "or run it on other hosts with LOADGEN_HOSTS",
    "not saturated": "the server never reached its capacity: raise WRK_CONNS, or check that "
                     "SERVER_CPUS are not shared",
    "other load": "other processes used the server CPUs: run on a quiet host (nothing else "
                  "running; compare `top` before the run)",
    "rate not held": "the offered rate was not reached: lower SAT_RATIO, or read the run's "
                     "loadgen.json and server.log",
    "errors": "requests failed: read the run's loadgen.json (errors by class) and server.log",
    "failed": "a run failed: read its runner.log and result.json's failure",
    "no result": "a run did not start: read run_all.log",
    "no probe": "re-run the batch",
    "no sustain": "re-run the batch",
    "no CPU figure": "re-run the batch; the server's CPU could not be read",
    "co-paced": "the load generator had no headroom (85% of its CPUs, a thread at 90%): give it more CPUs "
                "(LOADGEN_CPUS); on a 2-CPU host the verdict falls back to req/CPU-s at equal load",
    "host slow": "the host was slow around the run (its canary): run_all.sh re-runs such rounds within its --budget",
    "not stationary": "the host or the server slowed down for seconds inside the window: run again "
                      "on a quiet host (run_all.sh re-runs such pairs within its --budget)",
}
