"""stats: the confidence interval of a ratio measured in paired trials, how a verdict reads an
interval against a target, and the noise figure of repeated measurements (SPEC.md section 9
gives the method and its reason).
A pair is one run of each server in the same round (interleaved, fresh processes); its ratio
is candidate / baseline. The interval is Student's t on the logs of the pair ratios: the log
turns a ratio into a difference, the pairing cancels what drifts between rounds, and the
centre is the geometric mean of the ratios. Leaf module: stdlib and rules.is_num only.
"""
import math
import statistics

from .rules import is_num

# The confidence level of every interval the suite prints, unless a caller asks for another.
CI_LEVEL = 0.95
METHOD = "t-interval on the log of the pair ratios"


def _betacf(a, b, x):
    """The continued fraction of the regularized incomplete beta function (modified Lentz),
    for x < (a + 1) / (a + b + 2), where it converges fast."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b) for a, b > 0; x is clamped to
    [0, 1]."""
    if not (a > 0 and b > 0):
        raise ValueError(f"betainc needs a, b > 0, got a={a}, b={b}")
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(lbeta)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t, df):
    """P(T <= t) for Student's t with DF > 0 degrees of freedom."""
    if not df > 0:
        raise ValueError(f"t_cdf needs df > 0, got {df}")
    if t == 0:
        return 0.5
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p, df):
    """The t with P(T <= t) = P for Student's t with DF > 0 degrees of freedom, 0 < P < 1:
    the inverse of t_cdf, by bisection to about 1e-12 relative."""
    if not 0.0 < p < 1.0 or not df > 0:
        raise ValueError(f"t_quantile needs 0 < p < 1 and df > 0, got p={p}, df={df}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        lo, hi = hi, hi * 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return (lo + hi) / 2.0


def ratio_interval(ratios, level=CI_LEVEL):
    """The LEVEL confidence interval of the ratio from the pair ratios RATIOS: Student's t on
    their natural logs, mapped back with exp, so centred on their geometric mean and
    symmetric in log scale (0.5 and 2 are equally far from 1).

    Returns {"center" (the geometric mean), "low", "high", "level", "n" (ratios used), "df",
    "method" (METHOD), "note" (None, or why there is no interval or what was left out)}.
    With fewer than two ratios the bounds are None (one pair gives no spread to judge) and
    with none the centre too. Ratios that are not numbers > 0 are left out (a ratio of 0 has
    no log; the caller reports such a pair apart) and counted in note. Raises ValueError when
    LEVEL is not in (0, 1)."""
    if not (is_num(level) and 0.0 < level < 1.0):
        raise ValueError(f"ratio_interval: level must be in (0, 1), got {level}")
    ratios = list(ratios)
    logs = [math.log(r) for r in ratios if is_num(r) and r > 0]
    n, left_out = len(logs), len(ratios) - len(logs)
    out = {"center": None, "low": None, "high": None, "level": level, "n": n, "df": None, "method": METHOD,
           "note": None}
    notes = [f"{left_out} ratio{'s' if left_out != 1 else ''} not a number > 0 left out"] if left_out else []
    if n == 0:
        out["note"] = "; ".join(["no valid pair: no ratio"] + notes)
        return out
    mean = statistics.fmean(logs)
    out["center"] = math.exp(mean)
    if n < 2:
        out["note"] = "; ".join(["one valid pair: no interval (it needs 2 or more)"] + notes)
        return out
    half = t_quantile(0.5 + level / 2.0, n - 1) * statistics.stdev(logs) / math.sqrt(n)
    out.update(low=math.exp(mean - half), high=math.exp(mean + half), df=n - 1, note="; ".join(notes) or None)
    return out


def bound_text(v, target, decimals=2):
    """V with DECIMALS decimals, or one more when DECIMALS would print the target's own figure
    while V is not the target (0.498 against 0.5 prints 0.498, never 0.50, which reads as on
    the target). TARGET None: DECIMALS always."""
    s = f"{v:.{decimals}f}"
    if target is not None and v != target and s == f"{target:.{decimals}f}":
        return f"{v:.{decimals + 1}f}"
    return s


def against_target(interval, target):
    """How a verdict reads INTERVAL (ratio_interval's dict) against TARGET, the ratio the
    candidate must reach: ("PASS", why) when the lower bound is at least the target, ("FAIL",
    why) when the upper bound is below it, else ("INCONCLUSIVE", why): the interval crosses
    the target, or there is none (fewer than 2 valid pairs). WHY is one short sentence in
    figures, e.g. "the 95% interval (0.41-0.63) crosses the target 0.5: run more pairs
    (--repeats)"."""
    low, high, lvl = interval.get("low"), interval.get("high"), interval.get("level") or CI_LEVEL
    pct = f"{lvl * 100:g}%"
    if not (is_num(low) and is_num(high)):
        n = interval.get("n") or 0
        return "INCONCLUSIVE", (f"{n} valid pair{'s' if n != 1 else ''}: no {pct} interval "
                                "(2 or more needed): run more pairs (--repeats)")
    rng = f"{bound_text(low, target)}-{bound_text(high, target)}"
    if low >= target:
        return "PASS", f"the {pct} interval ({rng}) is at or above the target {target:g}"
    if high < target:
        return "FAIL", f"the {pct} interval ({rng}) is below the target {target:g}"
    return "INCONCLUSIVE", f"the {pct} interval ({rng}) crosses the target {target:g}: run more pairs (--repeats)"


def noise(values):
    """The spread of a server's repeated figures (e.g. the saturation req/s of its valid
    probes in one scenario): (max - min) / median, a fraction (0.08 = 8%). None with fewer
    than two numbers (one figure shows no spread) or a median that is not > 0. Values that
    are not numbers are left out."""
    vals = [v for v in values if is_num(v)]
    if len(vals) < 2:
        return None
    med = statistics.median(vals)
    return (max(vals) - min(vals)) / med if med > 0 else None


# ---- the calibrated interval (issue 35; SPEC.md section 9, "The noise floor") ---------------

CALIBRATED_METHOD = "t-interval on the log pair ratios, variance pooled with the A/A noise floor, plus between-batch"
# A batch's pairs are judged noisier than the floor (and used alone) when the F test of their
# variance against the floor's rejects equality at this one-sided level.
FLOOR_F_LEVEL = 0.95


def f_cdf(f, d1, d2):
    """P(F <= f) for Fisher's F with D1, D2 > 0 degrees of freedom."""
    if f <= 0:
        return 0.0
    return betainc(d1 / 2.0, d2 / 2.0, d1 * f / (d1 * f + d2))


def f_quantile(p, d1, d2):
    """The f with P(F <= f) = P (0 < P < 1), by bisection."""
    if not 0.0 < p < 1.0 or not (d1 > 0 and d2 > 0):
        raise ValueError(f"f_quantile needs 0 < p < 1 and d1, d2 > 0, got p={p}, d1={d1}, d2={d2}")
    lo, hi = 0.0, 1.0
    while f_cdf(hi, d1, d2) < p:
        lo, hi = hi, hi * 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if f_cdf(mid, d1, d2) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-10 * hi:
            break
    return (lo + hi) / 2.0


_T_CACHE = {}


def _t_q(p, df):
    """t_quantile memoized on (P, DF to 0.01): the simulation asks for the same ones often."""
    key = (p, round(df, 2))
    if key not in _T_CACHE:
        _T_CACHE[key] = t_quantile(p, key[1])
    return _T_CACHE[key]


def floor_from_batches(batches):
    """The noise floor of a scenario from A/A batches: BATCHES is a list of lists of pair ratios
    (one list per batch, each ratio of a server against itself under a second name). Returns
    {"sd_log" (the within-batch standard deviation of the log pair ratio, pooled over the
    batches), "df" (its degrees of freedom: the sum of n - 1), "between_sd_log" (the standard
    deviation of a batch's centre beyond what its pairs explain, method of moments, 0 when the
    centres vary less than that; None with fewer than 2 batches), "between_df" (batches - 1),
    "bias_log" (the mean log ratio over all pairs: 0 when the method is unbiased), "batches",
    "pairs"}, or None when no batch has two usable ratios. Ratios not > 0 are left out."""
    groups = [[math.log(r) for r in b if is_num(r) and r > 0] for b in batches]
    groups = [g for g in groups if len(g) >= 2]
    if not groups:
        return None
    ss = sum(sum((x - statistics.fmean(g)) ** 2 for x in g) for g in groups)
    df = sum(len(g) - 1 for g in groups)
    s2 = ss / df
    between, centre_var, between_df = None, None, len(groups) - 1
    pairs_per_batch = len(groups) / sum(1.0 / len(g) for g in groups)
    if len(groups) >= 2:
        means = [statistics.fmean(g) for g in groups]
        centre_var = statistics.variance(means)
        between = math.sqrt(max(0.0, centre_var - s2 / pairs_per_batch))
    every = [x for g in groups for x in g]
    return {"sd_log": math.sqrt(s2), "df": df, "between_sd_log": between, "between_df": between_df,
            "centre_var_log": centre_var, "pairs_per_batch": pairs_per_batch,
            "bias_log": statistics.fmean(every), "batches": len(groups), "pairs": len(every)}


def calibrated_interval(ratios, floor, level=CI_LEVEL):
    """The LEVEL interval of the ratio from the pair RATIOS of one batch with the host's noise
    FLOOR (floor_from_batches's dict, or None: then ratio_interval's, the pairs alone).

    The pairs' log variance s_p^2 (df n - 1) is pooled with the floor's s_c^2 (df_c) when an F
    test does not find the pairs noisier (at FLOOR_F_LEVEL): s^2 = (df s_p^2 + df_c s_c^2) /
    (df + df_c); when it does, the pairs' own variance is used alone (the floor does not
    describe this comparison). The centre's variance is s^2 / n plus the floor's between-batch
    variance tau^2 (the drift of a batch's centre that its pairs cannot see), with
    Welch-Satterthwaite degrees of freedom. One pair gives an interval when a floor exists.
    Returns ratio_interval's keys plus "pooled" (True, False, or None without a floor),
    "sd_log" (the s used) and "between_sd_log" (the tau added)."""
    if floor is None or not is_num(floor.get("sd_log")) or not floor.get("df"):
        out = ratio_interval(ratios, level)
        out.update(pooled=None, sd_log=None, between_sd_log=None)
        return out
    if not (is_num(level) and 0.0 < level < 1.0):
        raise ValueError(f"calibrated_interval: level must be in (0, 1), got {level}")
    ratios = list(ratios)
    logs = [math.log(r) for r in ratios if is_num(r) and r > 0]
    n, left_out = len(logs), len(ratios) - len(logs)
    out = {"center": None, "low": None, "high": None, "level": level, "n": n, "df": None,
           "method": CALIBRATED_METHOD, "note": None, "pooled": None, "sd_log": None, "between_sd_log": None}
    notes = [f"{left_out} ratio{'s' if left_out != 1 else ''} not a number > 0 left out"] if left_out else []
    if n == 0:
        out["note"] = "; ".join(["no valid pair: no ratio"] + notes)
        return out
    mean = statistics.fmean(logs)
    sc2, dfc = floor["sd_log"] ** 2, floor["df"]
    pooled = True
    if n >= 2:
        sp2 = statistics.variance(logs)
        if sc2 > 0 and sp2 / sc2 > f_quantile(FLOOR_F_LEVEL, n - 1, dfc):
            pooled = False
            notes.append(f"the pairs vary more than the noise floor (F test at {FLOOR_F_LEVEL:g}): their own "
                         "variance is used")
    if pooled:
        s2, df = ((n - 1) * (statistics.variance(logs) if n >= 2 else 0.0) + dfc * sc2) / (n - 1 + dfc), n - 1 + dfc
    else:
        s2, df = statistics.variance(logs), n - 1
    tau = floor.get("between_sd_log") if is_num(floor.get("between_sd_log")) else 0.0
    within = s2 / n
    var = within
    cv, nc, bdf = floor.get("centre_var_log"), floor.get("pairs_per_batch"), floor.get("between_df")
    if is_num(cv) and is_num(nc) and bdf:
        # a batch centre's variance measured on the A/A batches (tau^2 + s^2 / nc), corrected to
        # this batch's n pairs: unbiased, unclipped, with its own degrees of freedom
        extra = s2 * (1.0 / n - 1.0 / nc)
        var = max(within, cv + extra)
        if var > within:
            df = var ** 2 / (cv ** 2 / bdf + extra ** 2 / df)
    if var <= 0:
        half = 0.0
    else:
        half = _t_q(0.5 + level / 2.0, df) * math.sqrt(var)
    out.update(center=math.exp(mean), low=math.exp(mean - half), high=math.exp(mean + half), df=round(df, 2),
               pooled=pooled, sd_log=math.sqrt(s2), between_sd_log=tau, note="; ".join(notes) or None)
    return out
