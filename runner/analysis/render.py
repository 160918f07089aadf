"""render: the HTML and gnuplot helpers every report.html section uses: escaping, labels safe
for gnuplot, figures tagged with their index.json path (Page.fig), validity badges, reading
an HdrHistogram text file, running a plot script and inlining its SVG. A leaf module (it
imports only rules.is_num), so report.py, sweep.py and scaling.py share it without a circle.
Invariant: every figure printed through Page.fig is a value of index.json.
"""
import html
import math
import os
import re
import shutil
import subprocess

from .rules import is_num

PLOTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "plots")
SAFE = re.compile(r"[^A-Za-z0-9 ._+:,=()/-]")


def esc(value):
    """Any value as escaped HTML text (None as 'n/a')."""
    return html.escape("n/a" if value is None else str(value), quote=True)


def safe_label(text):
    """A string fit for a gnuplot title or data label: [A-Za-z0-9 ._+:,=()/-] only."""
    return SAFE.sub("_", str(text))


def get_path(doc, key):
    """The value at a '/'-separated path of index.json (list indexes as numbers), or None."""
    cur = doc
    for part in key.split("/"):
        if isinstance(cur, list):
            try:
                cur = cur[int(part)]
            except (ValueError, IndexError):
                return None
        elif isinstance(cur, dict):
            cur = cur.get(part)
        else:
            return None
        if cur is None:
            return None
    return cur


def fmt_num(value, decimals):
    """A number with thousands separators and DECIMALS decimals."""
    return f"{value:,.{decimals}f}"


class Page:
    """The index and the figure formatter; every printed figure goes through fig()."""

    def __init__(self, index):
        self.index = index

    def fig(self, key, decimals=0, unit=""):
        """The value of index.json at KEY, formatted, tagged with its key for the tests."""
        value = get_path(self.index, key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return '<span class="na">n/a</span>'
        text = fmt_num(value, decimals)
        suffix = f"&nbsp;{esc(unit)}" if unit else ""
        return f'<span class="fig" data-key="{esc(key)}">{text}</span>{suffix}'


def per_interval(page, key):
    """A brief's per-interval p99s at KEY as 'median (min-max) ms', or n/a."""
    f = page.fig
    if not is_num(get_path(page.index, key + "/median_ms")):
        return f(key + "/median_ms")
    return f'{f(key + "/median_ms", 3)} ({f(key + "/min_ms", 3)}-{f(key + "/max_ms", 3, "ms")})'


def validity_html(brief):
    """The validity of a brief result as small badges: one per problem (rules.py), or ok."""
    if brief is None:
        return '<span class="bad">no result</span>'
    if brief.get("failure"):
        return f'<span class="bad">failed: {esc(brief["failure"])}</span>'
    problems = brief.get("problems") or []
    if not problems:
        return '<span class="flag ok">valid</span>'
    return " ".join(f'<span class="flag bad" title="{esc(p.get("reason"))}">{esc(p.get("phase") or "run")}: '
                    f'{esc(p.get("flag"))}</span>' for p in problems)


def probe_validity_html(brief):
    """The probe problems of a brief as badges (only the probe phase)."""
    if brief is None:
        return '<span class="bad">no result</span>'
    if brief.get("failure"):
        return f'<span class="bad">failed: {esc(brief["failure"])}</span>'
    probs = [p for p in brief.get("problems") or [] if p.get("phase") == "probe"]
    if not probs:
        return '<span class="flag ok">valid</span>'
    return " ".join(f'<span class="flag bad" title="{esc(p.get("reason"))}">{esc(p.get("flag"))}</span>' for p in probs)


def read_histogram(path):
    """(x = 1/(1-p), latency ms) points of an HdrHistogram text file, p < 1 only."""
    points = []
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                cols = line.split()
                if len(cols) < 4 or line.lstrip().startswith("#"):
                    continue
                try:
                    value, pct = float(cols[0]), float(cols[1])
                except ValueError:
                    continue
                if 0 <= pct < 1 and math.isfinite(value):
                    points.append((1.0 / (1.0 - pct), value))
    except OSError:
        return []
    return points


def gnuplot_missing():
    """True when there is no gnuplot ($GNUPLOT, default gnuplot) on PATH: the report then
    has its tables without plots (a bundle on a borrowed host; report.sh says so once)."""
    return shutil.which(os.environ.get("GNUPLOT", "gnuplot")) is None


def gnuplot(script, variables, work):
    """Runs runner/plots/SCRIPT with VARIABLES (name -> number or safe string); returns
    the SVG text, or None when gnuplot is missing (gnuplot_missing; Svgs.inline then puts a
    note where the plot would be). Raises RuntimeError with gnuplot's stderr on failure."""
    if gnuplot_missing():
        return None
    out = os.path.join(work, f"plot{len(os.listdir(work))}.svg")
    assigns = [f"out='{out}'", f"plotsdir='{PLOTS_DIR}'"]
    for name, value in variables.items():
        if isinstance(value, str):
            if "'" in value or "\\" in value:
                raise ValueError(f"unsafe gnuplot string for {name}")
            assigns.append(f"{name}='{value}'")
        else:
            assigns.append(f"{name}={value!r}")
    cmd = [os.environ.get("GNUPLOT", "gnuplot"), "-e", "; ".join(assigns), os.path.join(PLOTS_DIR, script)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    if proc.returncode != 0 or not os.path.exists(out):
        raise RuntimeError(f"gnuplot {script} failed: {proc.stderr.strip()}")
    with open(out, encoding="utf-8") as fh:
        return fh.read()


class Svgs:
    """Inlines gnuplot SVGs: drops the XML prolog and makes every id unique per plot."""

    def __init__(self):
        self.count = 0

    def inline(self, svg, name):
        if svg is None:   # no gnuplot here (render.gnuplot)
            return f'<figure class="plot" data-plot="{esc(name)}"><p>(plot not drawn: no gnuplot on this host)</p></figure>'
        self.count += 1
        prefix = f"p{self.count}-"
        svg = svg[svg.index("<svg"):]
        seen = {}

        def new_id(match):
            # gnuplot repeats a plot's group id when it redraws an opaque key: number repeats.
            name = match.group(2)
            seen[name] = seen.get(name, 0) + 1
            suffix = "" if seen[name] == 1 else f"-{seen[name]}"
            return f'id="{prefix}{name}{suffix}"'
        svg = re.sub(r"""\bid=(["'])([^"']+)\1""", new_id, svg)
        svg = re.sub(r"""href=(["'])#([^"']+)\1""", lambda m: f'href="#{prefix}{m.group(2)}"', svg)
        svg = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}{m.group(1)})", svg)
        svg = svg.replace("<svg", f'<svg data-plot="{esc(name)}" role="img" aria-label="{esc(name)}"', 1)
        return f'<figure class="plot">{svg}</figure>'


def num_or_nan(value):
    return repr(float(value)) if isinstance(value, (int, float)) and not isinstance(value, bool) else "NaN"


def write_dat(path, rows):
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(" ".join(str(c) for c in row) + "\n")
