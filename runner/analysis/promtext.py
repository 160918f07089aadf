"""promtext: reading two scrapes of a server's /metrics (Prometheus text format 0.0.4) and
diffing them: the handler-latency quantiles of the window between them, counter deltas and
requests by route.

The servers emit cumulative histogram buckets sparsely (only edges whose count changes, plus
+Inf): at an edge a scrape does not list, its cumulative count is the one of its largest
listed edge below. Two scrapes are therefore compared as step functions on the union of
their edges. The handler histogram is `http_handler_latency_seconds` (base unit) or, from
servers before that change, `http_handler_latency_us`; figures come out in microseconds.
"""
import math
import re

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?\s*$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
HANDLER_FAMILIES = (("http_handler_latency_seconds", 1e6), ("http_handler_latency_us", 1.0))


def parse(text):
    """[(name, {label: value}, value)] of every sample line (comments skipped)."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        labels = {k: v.replace('\\"', '"').replace("\\\\", "\\").replace("\\n", "\n")
                  for k, v in _LABEL.findall(m.group(3) or "")}
        try:
            value = float(m.group(4))
        except ValueError:
            continue
        out.append((m.group(1), labels, value))
    return out


def read(path):
    with open(path, encoding="utf-8", errors="replace") as fh:
        return parse(fh.read())


def total(samples, name, **match):
    """Sum of NAME's samples whose labels include MATCH (0 when absent)."""
    return sum(v for n, lab, v in samples if n == name and all(lab.get(k) == w for k, w in match.items()))


def delta(before, after, name, **match):
    return total(after, name, **match) - total(before, name, **match)


def routes(before, after):
    """{route: requests in the window} from http_requests_total, summed over statuses."""
    seen = {}
    for sign, samples in ((-1, before), (1, after)):
        for n, lab, v in samples:
            if n == "http_requests_total" and "route" in lab:
                seen[lab["route"]] = seen.get(lab["route"], 0) + sign * v
    return {r: round(v) for r, v in sorted(seen.items())}


def _handler(samples):
    """(edges {le_us: cumulative}, +Inf count) of the handler histogram in SAMPLES."""
    for family, scale in HANDLER_FAMILIES:
        buckets = [(lab.get("le"), v) for n, lab, v in samples if n == family + "_bucket"]
        if not buckets:
            continue
        edges, inf = {}, None
        for le, v in buckets:
            if le in ("+Inf", "Inf"):
                inf = v
            elif le is not None:
                try:
                    edges[float(le) * scale] = v
                except ValueError:
                    continue
        if inf is None:
            inf = total(samples, family + "_count")
        return edges, inf
    return {}, 0.0


def _steps(edges, union):
    """The cumulative counts of a sparse bucket list (a step function: at an edge it does
    not list, the count of its largest listed edge below) at each edge of UNION, sorted
    ascending. One pass over both: O(len(union) + len(edges)) after the sorts."""
    own = sorted(edges)
    out, i, cum = [], 0, 0.0
    for e in union:
        while i < len(own) and own[i] <= e:
            cum = edges[own[i]]
            i += 1
        out.append(cum)
    return out


def handler_quantile_us(before, after, q):
    """The handler latency quantile Q (0..1) of the window between two scrapes, in us: the
    smallest edge whose count difference is >= Q x the window's requests (no interpolation).
    None when the window handled nothing or only +Inf reaches Q. O(n log n) in the number
    of buckets (a server's /metrics is not trusted for size)."""
    e1, inf1 = _handler(before)
    e2, inf2 = _handler(after)
    d = inf2 - inf1
    if d <= 0:
        return None
    union = sorted(set(e1) | set(e2))
    for e, c1, c2 in zip(union, _steps(e1, union), _steps(e2, union)):
        if c2 - c1 >= q * d:
            # edges printed from seconds come back as 9.999999e-06 us: round to the ns
            v = round(e, 3)
            return int(v) if v == math.floor(v) else v
    return None


def handler_count(before, after):
    """Requests the handler histogram counted in the window."""
    _, inf1 = _handler(before)
    _, inf2 = _handler(after)
    return round(inf2 - inf1)
