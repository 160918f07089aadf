"""fmt: how figures are printed in summary.md and the progress lines: numbers with thousands
separators, units, ranges and percentages, and the marks tables use. A leaf module: it
imports nothing of the package but rules.is_num, so every section can use it.
Never decides anything: a figure that is not a finite number prints as "n/a".
"""
from .rules import is_num

# dagger: a latency limited by the load generator (its queue, not the server's)
LOADGEN_MARK = "\u2020"
# double dagger: a latency of a window that was not stationary (an episode made its tail)
STATIONARY_MARK = "\u2021"


def num(value, decimals=0):
    """VALUE with thousands separators and DECIMALS decimals, or 'n/a'."""
    if not is_num(value):
        return "n/a"
    return f"{value:,.{decimals}f}"


def with_unit(value, decimals, unit):
    """'12.5 ms' (VALUE with DECIMALS decimals and UNIT), or 'n/a'."""
    return "n/a" if not is_num(value) else f"{num(value, decimals)} {unit}"


def pct(value):
    """'97.3%' (one decimal), or 'n/a'."""
    return "n/a" if not is_num(value) else f"{value:.1f}%"


def span(values, decimals=0, unit=""):
    """'97-100%' style: the min and max of VALUES (numbers only), one figure when equal,
    'n/a' when none."""
    vals = [v for v in values if is_num(v)]
    if not vals:
        return "n/a"
    lo, hi = num(min(vals), decimals), num(max(vals), decimals)
    return (lo if lo == hi else f"{lo}-{hi}") + unit


def known(value):
    """A setting as printed: '?' when the batch does not record it (never 'None')."""
    return "?" if value is None else value


def plural(n, word, many=None):
    """'1 pair', '3 pairs'."""
    return f"{n} {word if n == 1 else (many or word + 's')}"
