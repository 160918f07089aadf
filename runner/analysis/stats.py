"""stats: the confidence interval of a ratio from paired trials (SPEC.md section 9), Student's
t distribution computed here (no third-party module), how a verdict reads an interval
against a target, and the noise figure of a server's repeated probes.
A leaf module: pure functions on lists of numbers; reads no file, imports no other analysis
module but rules.is_num.
"""
import math
import statistics

from .rules import is_num

# The confidence level of every interval the suite prints, unless a caller asks for another.
CI_LEVEL = 0.95
# How ratio_interval computes its interval, in words (index.json and summary.md quote it).
METHOD = "t-interval on the log of the pair ratios (geometric mean)"


def _betacf(a, b, x):
    """The continued fraction of the regularized incomplete beta function (modified Lentz),
    for x < (a + 1) / (a + b + 2), where it converges fast."""
    tiny = 1e-300
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
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betai(a, b, x):
    """The regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if not (a > 0 and b > 0 and 0.0 <= x <= 1.0):
        raise ValueError(f"betai: needs a, b > 0 and 0 <= x <= 1, got a={a}, b={b}, x={x}")
    if x in (0.0, 1.0):
        return x
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(lbt) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lbt) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t, df):
    """P(T <= t) for Student's t distribution with DF > 0 degrees of freedom."""
    if not df > 0:
        raise ValueError(f"t_cdf: degrees of freedom must be > 0, got {df}")
    if t == 0:
        return 0.5
    tail = 0.5 * betai(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p, df):
    """The t such that P(T <= t) = P for Student's t with DF > 0 degrees of freedom
    (0 < P < 1): the inverse of t_cdf, by bisection to about 1e-12 relative."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"t_quantile: p must be in (0, 1), got {p}")
    if not df > 0:
        raise ValueError(f"t_quantile: degrees of freedom must be > 0, got {df}")
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
    """The LEVEL confidence interval of the ratio of two servers from RATIOS, one ratio per
    pair of interleaved runs (candidate / baseline of the same round): a Student t interval on
    the natural logs of the ratios, mapped back with exp, so that it is centred on their
    geometric mean and symmetric in log scale (0.5 and 2 are equally far from 1).

    Returns {"center" (the geometric mean), "low", "high", "level", "n" (ratios used), "df",
    "method" (METHOD), "note" (None, or why there is no interval)}. With fewer than 2 ratios
    low and high are None (one pair gives no spread to judge by) and note says so; with none
    center is None too. Raises ValueError when a ratio is not a number > 0 (a log needs it;
    the caller leaves invalid pairs out) or LEVEL is not in (0, 1)."""
    if not (is_num(level) and 0.0 < level < 1.0):
        raise ValueError(f"ratio_interval: level must be in (0, 1), got {level}")
    ratios = list(ratios)
    for r in ratios:
        if not (is_num(r) and r > 0):
            raise ValueError(f"ratio_interval: every ratio must be a number > 0, got {r!r}")
    n = len(ratios)
    out = {"center": None, "low": None, "high": None, "level": level, "n": n, "df": None, "method": METHOD,
           "note": None}
    if n == 0:
        out["note"] = "no valid pair: no ratio"
        return out
    logs = [math.log(r) for r in ratios]
    mean = statistics.fmean(logs)
    out["center"] = math.exp(mean)
    if n < 2:
        out["note"] = "one valid pair: no interval (it needs 2 or more)"
        return out
    half = t_quantile(0.5 + level / 2.0, n - 1) * statistics.stdev(logs) / math.sqrt(n)
    out.update(low=math.exp(mean - half), high=math.exp(mean + half), df=n - 1)
    return out


def _fmt(v, target):
    """V with 2 decimals, or 3 when 2 would print the target's own figure (0.5 vs 0.498)."""
    s = f"{v:.2f}"
    return f"{v:.3f}" if s == f"{target:.2f}" and v != target else s


def against_target(interval, target):
    """How a verdict reads INTERVAL (ratio_interval's dict) against TARGET (the ratio the
    candidate must reach): ("PASS", why) when the lower bound is at least the target, ("FAIL",
    why) when the upper bound is below it, else ("INCONCLUSIVE", why): the interval crosses
    the target, or there is no interval (fewer than 2 valid pairs). WHY is one short sentence
    in figures, e.g. "the interval (0.41-0.63) crosses the target 0.5: run more pairs
    (--repeats)"."""
    low, high, lvl = interval.get("low"), interval.get("high"), interval.get("level", CI_LEVEL)
    pct = f"{lvl * 100:g}%"
    if not (is_num(low) and is_num(high)):
        n = interval.get("n") or 0
        return "INCONCLUSIVE", (f"{n} valid pair{'s' if n != 1 else ''}: no {pct} interval "
                                "(2 or more needed): run more pairs (--repeats)")
    rng = f"{_fmt(low, target)}-{_fmt(high, target)}"
    if low >= target:
        return "PASS", f"the {pct} interval ({rng}) is at or above the target {target:g}"
    if high < target:
        return "FAIL", f"the {pct} interval ({rng}) is below the target {target:g}"
    return "INCONCLUSIVE", f"the {pct} interval ({rng}) crosses the target {target:g}: run more pairs (--repeats)"


def noise(values):
    """The spread of a server's repeated figures (e.g. the saturation req/s of its valid
    probes in one scenario): (max - min) / median, a fraction (0.08 = 8%). None with fewer
    than 2 numbers (one figure shows no spread) or a median that is not > 0. Values that are
    not numbers are left out."""
    vals = [v for v in values if is_num(v)]
    if len(vals) < 2:
        return None
    med = statistics.median(vals)
    if med <= 0:
        return None
    return (max(vals) - min(vals)) / med
