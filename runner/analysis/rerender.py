"""rerender: a batch's summary.md and report.html rendered by today's code from its index.json
alone, so a kept reference batch (results/README.md: summary.md and index.json only, no run
folders) can be rendered again; runner/report.sh is the command. By default the page and
the tables show the judgement index.json records; --rejudge first judges the batch by
today's rules (rejudge.index_of: from its run folders, or from the runs index.json holds)
and writes that index.json beside them, so the three files always agree. A kept batch's
index.json of another schema than today's needs --rejudge (its runs are today's input);
one without its runs cannot be rendered, and says what is missing.
Invariant: summary.md and report.html are written from the same index document, and a
batch folder is written to only when it is the output.
"""
import json
import os

from . import rejudge, report, rules, summary

RUN_LISTS = ("runs", "probe_runs", "equal_load_runs")


class NotABatch(ValueError):
    """The folder has no index.json to render from."""


def load_index(batch_dir):
    """BATCH_DIR/index.json as a document; NotABatch when it is missing, ValueError when it is
    not a JSON object."""
    path = os.path.join(batch_dir, "index.json")
    if not os.path.isfile(path):
        raise NotABatch(f"{path} missing: not a batch folder (runner/summarize.sh writes index.json "
                        "from a batch's run folders)")
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh, parse_constant=rules.json_null_constant)
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: not a JSON object")
    return doc


def index_for(batch_dir, rejudged=False):
    """(index, how) of BATCH_DIR to render: its index.json as recorded ('recorded'), or, when
    REJUDGED, judged by today's rules ('rejudged'). ValueError saying what to do when a kept
    batch's index.json is of another schema than today's and not REJUDGED (today's renderers
    read today's schema; a batch with run folders is re-summarized by runner/summarize.sh),
    and naming what is missing when it holds no runs to re-judge."""
    doc = load_index(batch_dir)
    has_runs = rejudge.has_run_folders(batch_dir)
    where = f"{batch_dir}/index.json (schema {doc.get('schema')}, today's {summary.SCHEMA})"
    if not has_runs and not any(doc.get(k) for k in RUN_LISTS) and (rejudged or doc.get("schema") != summary.SCHEMA):
        raise ValueError(f"{where} holds no runs ({', '.join(RUN_LISTS)} missing or empty): it cannot be "
                         "re-judged or rendered by today's code")
    if rejudged:
        return rejudge.index_of(batch_dir), "rejudged"
    if doc.get("schema") != summary.SCHEMA and not has_runs:
        raise ValueError(f"{where} is not today's schema: render it with --rejudge (today's rules, from the "
                         "runs it holds; index.json is written too)")
    return doc, "recorded"


def _write_text(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def write(batch_dir, work, out_dir=None, html_path=None, rejudged=False):
    """Renders BATCH_DIR into OUT_DIR (default: BATCH_DIR itself); returns the paths written.
    report.html always (to HTML_PATH when given); summary.md when the batch is a kept one
    (no run folders) or is re-judged; index.json when it is re-judged. WORK holds the
    plots' files. Raises NotABatch, ValueError, OSError or RuntimeError (gnuplot)."""
    index, how = index_for(batch_dir, rejudged)
    out_dir = out_dir or batch_dir
    os.makedirs(out_dir, exist_ok=True)
    files = [(html_path or os.path.join(out_dir, "report.html"), report.render(batch_dir, work, index))]
    if how == "rejudged" or not rejudge.has_run_folders(batch_dir):
        files.append((os.path.join(out_dir, "summary.md"), summary.render_markdown(index)))
    if how == "rejudged":
        files.append((os.path.join(out_dir, "index.json"), json.dumps(index, indent=1) + "\n"))
    for path, text in files:
        _write_text(path, text)
    return [path for path, _ in files]
