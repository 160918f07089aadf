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
