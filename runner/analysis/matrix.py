"""matrix: what a batch runs, from the server definitions and run_all.sh's selection: per
scenario a group of servers (each probed once per round, interleaved) and the comparisons
(candidate / baseline) made inside it, and which comparisons decide the overall verdict.
The default is runner/default-pairs.toml; --pair, --pairs=FILE and --servers/--baseline
(a league table) replace it. Never runs anything; errors are servers.DefinitionError.
"""
from . import servers as sv


def _group_of(groups, scenario):
    for g in groups:
        if g["scenario"] == scenario:
            return g
    g = {"scenario": scenario, "servers": [], "comparisons": []}
    groups.append(g)
    return g


def _add(groups, scenario, candidate, baseline, decides):
    g = _group_of(groups, scenario)
    for name in (candidate, baseline):
        if name not in g["servers"]:
            g["servers"].append(name)
    if not any(c["candidate"] == candidate and c["baseline"] == baseline for c in g["comparisons"]):
        g["comparisons"].append({"candidate": candidate, "baseline": baseline, "decides": decides})


def _parse_names(text, what):
    names = [x for x in (text or "").split(",")]
    if not text or any(not x for x in names):
        raise sv.DefinitionError(f"{what}: a comma-separated list of server names, got '{text}'")
    if len(set(names)) != len(names):
        raise sv.DefinitionError(f"{what}: a server is named twice in '{text}'")
    return names


def parse_scenarios(text):
    """'s1,s3' -> ['s1', 's3'] (SCENARIOS order); None for None. DefinitionError on bad input."""
    if text is None:
        return None
    names = _parse_names(text, "--scenarios")
    for s in names:
        if s not in sv.SCENARIOS:
            raise sv.DefinitionError(f"--scenarios: unknown scenario '{s}' (one of: {' '.join(sv.SCENARIOS)})")
    return [s for s in sv.SCENARIOS if s in names]


def _decides(pairs_decides, shared):
    """The scenarios of SHARED that decide a pair's verdict."""
    if pairs_decides is not None:
        return [s for s in shared if s in pairs_decides]
    deciding = [s for s in shared if s in sv.DECIDING]
    return deciding or list(shared)


def build(defs, pairs=None, pairs_file=None, servers=None, baseline=None, scenarios=None):
    """The matrix of a batch: {"selection": "default" | "pairs" | "league", "baseline",
    "groups": [{"scenario", "servers": [names, in run order], "comparisons": [{"candidate",
    "baseline", "decides"}]}] in scenario order}.

    PAIRS: ["CANDIDATE,BASELINE", ...] (--pair); PAIRS_FILE: a pairs file; SERVERS and
    BASELINE: "a,b,c" and "b" (a league: every listed server on each scenario the baseline
    serves and it serves, each compared with the baseline); SERVERS without BASELINE: the
    default matrix limited to those servers (a server alone on a scenario is run and compared
    with nothing). SCENARIOS: "s1,s2" limits every case. Raises DefinitionError for a usage
    error: unknown names, a pair sharing no selected scenario, conflicting selections."""
    wanted = parse_scenarios(scenarios)
    chosen = [x for x in (pairs and "--pair", pairs_file and "--pairs", baseline and "--baseline") if x]
    if len(chosen) > 1:
        raise sv.DefinitionError(f"{' and '.join(chosen)} exclude each other")
    if servers is not None and baseline is None and (pairs or pairs_file):
        raise sv.DefinitionError(f"--servers without --baseline limits the default pairs: it excludes {chosen[0]}")
    if baseline is not None and servers is None:
        raise sv.DefinitionError("--baseline needs --servers (the servers to compare with it)")
    groups, selection = [], "default"
    if baseline is not None:
        selection = "league"
        names = _parse_names(servers, "--servers")
        sv.get(defs, baseline)
        if baseline not in names:
            names.append(baseline)
        if len(names) < 2:
            raise sv.DefinitionError("--baseline needs at least one other server in --servers")
        for s in sv.SCENARIOS:
            if (wanted is not None and s not in wanted) or not defs[baseline].serves(s):
                continue
            for name in names:
                if name != baseline and sv.get(defs, name).serves(s):
                    _add(groups, s, name, baseline, s in _decides(None, sv.pair_scenarios(defs, name, baseline)))
        if not groups:
            raise sv.DefinitionError(f"no scenario is served by {baseline} and another of {', '.join(names)}")
    elif pairs or pairs_file:
        selection = "pairs"
        if pairs_file:
            spec = sv.load_pairs(pairs_file, defs)
        else:
            lst = []
            for text in pairs:
                names = _parse_names(text, "--pair")
                if len(names) != 2:
                    raise sv.DefinitionError(f"--pair: CANDIDATE,BASELINE, got '{text}'")
                lst.append((names[0], names[1], sv.pair_scenarios(defs, names[0], names[1])))
            spec = sv.Pairs(lst)
        for cand, base, scs in spec.pairs:
            use = [s for s in scs if wanted is None or s in wanted]
            if not use:
                raise sv.DefinitionError(f"{cand} and {base} share no selected scenario (they serve "
                                         f"{', '.join(sv.get(defs, cand).scenarios)} and "
                                         f"{', '.join(sv.get(defs, base).scenarios)})")
            for s in use:
                _add(groups, s, cand, base, s in _decides(spec.decides, scs))
    else:
        spec = sv.load_pairs(sv.DEFAULT_PAIRS, defs)
        only = _parse_names(servers, "--servers") if servers is not None else None
        for name in only or []:
            sv.get(defs, name)
        for cand, base, scs in spec.pairs:
            for s in scs:
                if wanted is not None and s not in wanted:
                    continue
                pick = [n for n in (cand, base) if only is None or n in only]
                if len(pick) == 2:
                    _add(groups, s, cand, base, s in _decides(spec.decides, scs))
                elif pick:
                    g = _group_of(groups, s)
                    if pick[0] not in g["servers"]:
                        g["servers"].append(pick[0])
        if not groups:
            raise sv.DefinitionError("no run matches the selection (the default pairs: "
                                     + "; ".join(f"{c} vs {b} on {','.join(s)}" for c, b, s in spec.pairs) + ")")
    groups.sort(key=lambda g: sv.SCENARIOS.index(g["scenario"]))
    return {"selection": selection, "baseline": baseline, "groups": groups}


# ---- the order of a round (issue 35; SPEC.md section 9, "Order") -----------------------------

def round_order(seed, scenario, kind, rnd, names):
    """The order of NAMES in round RND (1-based) of SCENARIO's KIND rounds: a base order drawn
    from (SEED, SCENARIO, KIND), rotated by one place each pair of rounds and reversed in every
    second round, so that in each two rounds every pair of servers runs in both orders (two
    servers: AB, BA, BA, AB, ... the ABBA design; three: ABC, CBA, BCA, ACB, CAB, BAC). With few rounds a
    random draw leaves a server first in most of them (3 rounds: in 1 of 4 draws one server is
    first in all three), and a host that drifts within a round then reads as a difference
    between the servers; this order cancels a linear drift over each two rounds. Pure."""
    import random
    base = list(names)
    random.Random(f"{seed}/{scenario}/{kind}").shuffle(base)
    k = len(base)
    if k < 2:
        return base
    r = rnd - 1
    if k == 2:
        # AB BA BA AB: ABBA, then BAAB (a drift that is not linear cancels too over four rounds)
        return base[::-1] if r % 4 in (1, 2) else base
    shift = (r // 2) % k
    rot = base[shift:] + base[:shift]
    return rot[::-1] if r % 2 else rot


def order_balance(rounds, scenario, candidate, baseline, kind="probe", used=None):
    """How often CANDIDATE ran before BASELINE in SCENARIO's KIND rounds (matrix.json's rounds:
    [{scenario, kind, round, order}]), limited to the rounds in USED when given:
    {"candidate_first", "baseline_first", "rounds", "balanced"}: balanced when the two counts
    differ by at most one (None when no round recorded an order)."""
    first = second = 0
    for r in rounds or []:
        if r.get("scenario") != scenario or r.get("kind") != kind or (used is not None and r.get("round") not in used):
            continue
        order = r.get("order") or []
        if candidate in order and baseline in order:
            if order.index(candidate) < order.index(baseline):
                first += 1
            else:
                second += 1
    n = first + second
    return {"candidate_first": first, "baseline_first": second, "rounds": n,
            "balanced": None if n == 0 else abs(first - second) <= 1}
