"""rounds: the re-run rule of run_all.sh (SPEC.md section 9): whether the host disturbed a run,
and from a scenario's rounds-status (per comparison its probe rounds and equal-load rounds,
each valid or not, disturbed or not, and why) which round, if any, to run next. Pure
functions on result.json documents and that JSON document; reads no file, runs nothing.
Leaf module: stdlib and rules only.
"""
from . import rules
from .rules import is_num

# The flags that say the host, not the server or the setup, spoiled a run: others used the
# server's CPUs, the window holds an episode (a stall of the host shows as both), or the
# canary around the run was slow (canary.py). A round
# invalid for one of these is worth running again; one invalid only for a setup reason (the
# load generator saturated first, the server did not saturate on idle CPUs, errors, a
# failure) is not: the same setup gives the same result.
DISTURBED = ("other load", "not stationary", "host slow")


def disturbed_run(run, kind):
    """True when the host, not the server or the setup, spoiled RUN (a result.json document)
    for a KIND ("probe" or "equal") pair: one of its flags is DISTURBED, or its probe did not
    saturate the server while the server's CPUs were busy (server_cpus_busy_pct at least
    rules.SATURATED_CPU_PCT of them: the CPUs were full, and others had the share the server
    lacked, even under the other-load threshold). False for no run or a failed one."""
    if not run or run.get("failure"):
        return False
    probs = rules.probe_problems(run) if kind == "probe" else rules.sustain_problems(run)
    flags = [f for f, _ in probs]
    if any(f in DISTURBED for f in flags):
        return True
    if kind == "probe" and "not saturated" in flags:
        busy = (run.get("probe") or {}).get("server_cpus_busy_pct")
        n_srv = (run.get("config") or {}).get("server_cpu_count") or 1
        return is_num(busy) and busy >= rules.SATURATED_CPU_PCT * n_srv
    return False


def flags_of(rnd):
    """The flags of a round's why: a list of {server, flag, ...} or the text "SERVER FLAG;
    SERVER FLAG" that rounds-status writes (a server name holds no space)."""
    why = rnd.get("why")
    if isinstance(why, list):
        return [w.get("flag") for w in why if isinstance(w, dict)]
    if isinstance(why, str):
        return [part.strip().split(" ", 1)[1] for part in why.split(";") if " " in part.strip()]
    return []


def why_text(rnd):
    """A round's why as one line ("actor-mem other load; async-mem other load")."""
    why = rnd.get("why")
    if isinstance(why, list):
        return "; ".join(f"{w.get('server')} {w.get('flag')}" for w in why if isinstance(w, dict))
    return why or ""


def disturbed(rnd):
    """True when the round RND (of a rounds-status) is invalid and says it was disturbed, or,
    for a status without that mark, one of its flags is DISTURBED."""
    if rnd.get("valid"):
        return False
    if "disturbed" in rnd:
        return bool(rnd["disturbed"])
    return any(f in DISTURBED for f in flags_of(rnd))


def next_round(status, kind, min_valid, planned, figure_min=2):
    """The next re-run round of a scenario from its STATUS (rounds-status's document), or
    None.

    KIND "probe": a comparison with fewer than MIN_VALID valid probe pairs gets a new round
    for each of its rounds that the host disturbed, counted against the rounds it already
    got beyond the PLANNED ones; a round invalid only for a setup reason earns none. KIND
    "equal": a comparison whose probes gave fewer than FIGURE_MIN valid pairs (the verdict
    cannot use the saturation figure: verdict.MIN_PAIRS) and whose equal-load runs gave
    fewer than MIN_VALID gets a new equal-load round for each of its equal-load rounds that
    was valid (the interval needs more pairs) or disturbed, counted against those beyond
    the PLANNED one(s); a comparison
    without any equal-load round (none planned) gets none. A round beyond PLANNED where a
    server of the comparison has no result was another comparison's re-run (a league) and
    is not this one's.

    Returns {"kind", "round" (one more than the highest round of KIND), "servers" (every
    server of the comparisons that need it, candidates then baselines, once each),
    "comparisons": [{candidate, baseline, valid_pairs}], "answers": [{candidate, baseline,
    round, valid, why (one line)}] (per comparison the round this re-run answers)}."""
    key = "comparisons" if kind == "probe" else "equal"
    probe_valid = {(c.get("candidate"), c.get("baseline")): c.get("valid_pairs") or 0
                   for c in status.get("comparisons") or []}
    comps = status.get(key) or []
    chosen, answers = [], []
    for c in comps:
        if (c.get("valid_pairs") or 0) >= min_valid:
            continue
        pair = (c.get("candidate"), c.get("baseline"))
        rounds = [r for r in sorted(c.get("rounds") or [], key=lambda r: r["round"])
                  if r["round"] <= planned or "no result" not in flags_of(r)]
        if kind == "equal" and (probe_valid.get(pair, 0) >= figure_min or not rounds):
            continue
        extra = [r for r in rounds if r["round"] > planned]
        earning = [r for r in rounds if disturbed(r) or (kind == "equal" and r.get("valid"))]
        if len(extra) >= len(earning):
            continue
        chosen.append(c)
        a = earning[len(extra)]
        answers.append({"candidate": pair[0], "baseline": pair[1], "round": a["round"], "valid": bool(a.get("valid")),
                        "why": why_text(a)})
    if not chosen:
        return None
    servers = []
    for name in [c["candidate"] for c in chosen] + [c["baseline"] for c in chosen]:
        if name not in servers:
            servers.append(name)
    top = max((r["round"] for c in comps for r in c.get("rounds") or []), default=planned)
    return {"kind": kind, "round": max(top, planned) + 1, "servers": servers,
            "comparisons": [{"candidate": c["candidate"], "baseline": c["baseline"],
                             "valid_pairs": c.get("valid_pairs") or 0} for c in chosen],
            "answers": answers}
