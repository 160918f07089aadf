"""stats: the confidence interval of a ratio measured in paired trials, and the noise figure
of repeated measurements (SPEC.md section 9 gives the method and its reason).
A pair is one run of each server in the same round (interleaved, fresh processes); its ratio
is candidate / baseline. The interval is Student's t on the logs of the pair ratios: the log
turns a ratio into a difference, the pairing cancels what drifts between rounds, and the
centre is the geometric mean of the ratios. Leaf module: stdlib and rules.is_num only.
"""
import math
import statistics

from .rules import is_num

CI_LEVEL = 0.95
METHOD = "t-interval on the log of the pair ratios"


def _betacf(a, b, x):
    """The continued fraction of the regularized incomplete beta function (Lentz's method)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
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
    """The regularized incomplete beta function I_x(a, b), 0 <= x <= 1."""
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
    """P(T <= t) for Student's t with DF degrees of freedom."""
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p, df):
    """The t with P(T <= t) = P, 0 < P < 1 (bisection on t_cdf to 1e-12)."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError(f"t_quantile needs 0 < p < 1 and df > 0, got p={p}, df={df}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return (lo + hi) / 2.0


def ratio_interval(ratios, level=CI_LEVEL):
    """The interval of the ratio from the pair ratios RATIOS (positive numbers): {"center"
    (geometric mean), "low", "high", "level", "n", "method"}. With fewer than two ratios the
    bounds are None (one pair gives no spread to judge). Ratios that are not positive numbers
    are left out (a ratio of 0 has no log; the caller reports such a pair apart)."""
    logs = [math.log(r) for r in ratios if is_num(r) and r > 0]
    n = len(logs)
    out = {"center": None, "low": None, "high": None, "level": level, "n": n, "method": METHOD}
    if n == 0:
        return out
    mean = sum(logs) / n
    out["center"] = math.exp(mean)
    if n < 2:
        return out
    sd = statistics.stdev(logs)
    half = t_quantile(0.5 + level / 2.0, n - 1) * sd / math.sqrt(n)
    out["low"], out["high"] = math.exp(mean - half), math.exp(mean + half)
    return out


def noise(values):
    """(max - min) / median of VALUES (numbers), the spread of repeated measurements of one
    server; None with fewer than two values or a median of 0."""
    vals = [v for v in values if is_num(v)]
    if len(vals) < 2:
        return None
    med = statistics.median(vals)
    return (max(vals) - min(vals)) / med if med else None
