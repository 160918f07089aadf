#!/usr/bin/env bash
# it_render.sh: tests of runner/report.sh on kept batches (index.json without run folders,
# as the reference batches in results/): the kept batch ref-1 and a kept copy of fixture A
# (tests/fixtures/report/A's index.json alone) are rendered from index.json alone into a
# temporary folder: summary.md and report.html name the batch and its verdict and have the
# tables; --rejudge writes today's judgement (index.json too); an older schema needs
# --rejudge; one without runs and a folder without index.json fail clearly. Runs no benchmark; writes
# only to a temporary folder, removed at the end (the batch folders are checked unchanged).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REF="$ROOT/results/ref-1"
KEEP_RESULTS="${KEEP_RESULTS:-0}"     # 1: keep the temporary folder (the rendered files)

usage() {
    cat <<USAGE
usage: tests/it_render.sh [--help]
Environment: KEEP_RESULTS (0).
USAGE
}
# shellcheck source=tests/lib/it.sh
. "$ROOT/tests/lib/it.sh"
it_args "$@"
it_tmpdir it_render
rc_of() { local rc=0; "$@" >/dev/null 2>&1 || rc=$?; echo "$rc"; }
listing() { (cd "$1" && find . -type f | sort && cat -- *); }

# check_render NAME OUT_DIR INDEX: the rendered report.html and summary.md of OUT_DIR against
# INDEX (the index.json they were rendered from), one TAP line per check.
check_render() {
    local name=$1 line
    while IFS= read -r line; do
        n=$((n + 1))
        if [[ "$line" == PASS* ]]; then
            echo "ok $n - $name: ${line#PASS }"
        else
            echo "not ok $n - $name: ${line#FAIL }"
            failed=$((failed + 1))
        fi
    done < <(python3 - "$2" "$3" <<'PY' 2>&1 || echo "FAIL checker crashed"
import html, json, re, sys

out, index_path = sys.argv[1], sys.argv[2]
page = open(f"{out}/report.html", encoding="utf-8").read()
md = open(f"{out}/summary.md", encoding="utf-8").read()
index = json.load(open(index_path, encoding="utf-8"))
batch, verdict = index["batch"], index["verdict"]

def check(ok, what, detail=""):
    print(("PASS " if ok else "FAIL ") + what + ("" if ok else ": " + detail))

def at(doc, key):
    for part in key.split("/"):
        doc = doc[int(part)] if isinstance(doc, list) else (doc or {}).get(part)
    return doc

h1 = re.findall(r"<h1>(.*?)</h1>", page)
check(h1 == [f"Benchmark report: batch {html.escape(batch)}"], f"the page's title names batch {batch}", str(h1))
banner = re.findall(r'<span class="verdict">([A-Z/]+)</span>', page)
check(banner == [verdict["overall"]], f"the banner gives the verdict {verdict['overall']}", str(banner))
check(html.escape(verdict["headline"]) in page, "the headline is on the page")
tables = page.count("<table>") + page.count("<table ")
check(tables >= 6, "the page has its tables (verdict, throughput, equal load, handler, host, ...)", f"{tables}")
for c in index["comparisons"]:
    row = f'<tr><td>{html.escape(c["scenario"])}</td><td>{html.escape(c["candidate"])} vs {html.escape(c["baseline"])}</td>'
    check(page.count(row) >= 2, f"{c['scenario']} {c['candidate']}/{c['baseline']}: in the verdict and throughput tables")
keys = re.findall(r'<span class="fig" data-key="([^"]+)">', page)
bad = [k for k in keys if not isinstance(at(index, k), (int, float))]
check(keys and not bad, f"every figure on the page ({len(keys)}) is a number of index.json", str(bad[:3]))
check(md.startswith(f"# Benchmark summary: batch {batch}\n"), "summary.md names the batch", md[:60])
check(f"**{verdict['headline']}**" in md, "summary.md's headline is index.json's", verdict["headline"])
check(md.count("\n| --- |") >= 4, "summary.md has its tables", str(md.count("\n| --- |")))
PY
    )
}

# ---- usage and failures -------------------------------------------------------------------
mkdir -p "$TMP/empty"
is "a folder without index.json exits 2" "$(rc_of "$ROOT/runner/report.sh" --out="$TMP/o" "$TMP/empty")" 2
ok "... saying index.json is missing" bash -c \
    "'$ROOT/runner/report.sh' '$TMP/empty' 2>&1 | grep -q 'index.json missing'"
is "the analysis command exits 2 on it too" \
    "$(PYTHONPATH="$ROOT/runner" rc_of python3 -m analysis render "$TMP/empty" "$TMP")" 2
ok "... saying so" bash -c \
    "PYTHONPATH='$ROOT/runner' python3 -m analysis render '$TMP/empty' '$TMP' 2>&1 | grep -q 'index.json missing: not a batch folder'"
is "an unknown option exits 2" "$(rc_of "$ROOT/runner/report.sh" --bogus "$REF")" 2
ok "nothing was written for the failures" test ! -e "$TMP/o"

# ---- the kept batch ref-1, from index.json alone ------------------------------------------
before=$(listing "$REF")
ok "ref-1 is a kept batch: index.json and summary.md, no run folder" \
    bash -c "[[ \$(cd '$REF' && ls) == \$'index.json\nsummary.md' ]]"
ok "report.sh --out renders ref-1" "$ROOT/runner/report.sh" --out="$TMP/ref-1" "$REF"
ok "... report.html and summary.md, not index.json" \
    bash -c "[[ \$(cd '$TMP/ref-1' && ls) == \$'report.html\nsummary.md' ]]"
check_render "ref-1" "$TMP/ref-1" "$REF/index.json"
ok "ref-1: no latency spectrum plot (its histograms are not kept), the bar charts are there" bash -c \
    "! grep -q 'data-plot=\"latency-' '$TMP/ref-1/report.html' && grep -q 'data-plot=\"throughput\"' '$TMP/ref-1/report.html'"
is "ref-1's folder is unchanged" "$(listing "$REF")" "$before"

ok "report.sh --rejudge --out judges ref-1 by today's rules" \
    "$ROOT/runner/report.sh" --rejudge --out="$TMP/ref-1j" "$REF"
is "... and writes index.json beside summary.md and report.html" "$(cd "$TMP/ref-1j" && echo *)" \
    "index.json report.html summary.md"
check_render "ref-1 re-judged" "$TMP/ref-1j" "$TMP/ref-1j/index.json"
is "ref-1 re-judged: INCONCLUSIVE by today's rules (results/README.md), PASS as recorded" \
    "$(jq -r .verdict.overall "$TMP/ref-1j/index.json") $(jq -r .verdict.overall "$REF/index.json")" "INCONCLUSIVE PASS"
is "ref-1 re-judged: every run kept, its re-runs and equal-load durations too" \
    "$(jq -c '[(.runs, .probe_runs, .equal_load_runs | length), (.reruns | length), .equal_load_config]' "$TMP/ref-1j/index.json")" \
    "$(jq -c '[(.runs, .probe_runs, .equal_load_runs | length), (.reruns | length), .equal_load_config]' "$REF/index.json")"
is "ref-1's folder is still unchanged" "$(listing "$REF")" "$before"

# ---- a kept copy of fixture A (its index.json alone), rendered in its own folder ----------
mkdir -p "$TMP/A"
cp "$ROOT/tests/fixtures/report/A/index.json" "$TMP/A/"
ok "report.sh renders the kept fixture A into its folder" "$ROOT/runner/report.sh" "$TMP/A"
ok "... report.html and summary.md beside index.json" \
    bash -c "[[ \$(cd '$TMP/A' && ls) == \$'index.json\nreport.html\nsummary.md' ]]"
check_render "kept fixture A" "$TMP/A" "$TMP/A/index.json"
ok "kept fixture A: its index.json is untouched" cmp -s "$TMP/A/index.json" "$ROOT/tests/fixtures/report/A/index.json"

# ---- a batch with its run folders: report.html only (summarize.sh writes summary.md) ------
cp -r "$ROOT/tests/fixtures/report/A" "$TMP/fresh"
rm -f "$TMP/fresh"/*/result.json
mkdir -p "$TMP/fresh/actor-mem-s1" && echo '{}' >"$TMP/fresh/actor-mem-s1/result.json"
ok "a batch with run folders renders" "$ROOT/runner/report.sh" "$TMP/fresh"
ok "... report.html only, no summary.md" bash -c "[[ -s '$TMP/fresh/report.html' && ! -e '$TMP/fresh/summary.md' ]]"

# ---- index.json of an older schema, with and without its runs ------------------------------
mkdir -p "$TMP/old" "$TMP/bare"
jq '.schema = 2 | del(.verdict, .comparisons)' "$REF/index.json" >"$TMP/old/index.json"
is "a kept index.json of schema 2 without --rejudge exits 1" "$(rc_of "$ROOT/runner/report.sh" "$TMP/old")" 1
ok "... saying to use --rejudge" bash -c \
    "'$ROOT/runner/report.sh' '$TMP/old' 2>&1 | grep -q 'is not today.s schema: render it with --rejudge'"
ok "... and it renders with --rejudge (re-judged from its runs)" "$ROOT/runner/report.sh" --rejudge "$TMP/old"
is "... with today's schema and judgement in the folder's files" \
    "$(jq -r '.schema, .verdict.overall' "$TMP/old/index.json" | tr '\n' ' ')" "3 INCONCLUSIVE "
check_render "schema 2" "$TMP/old" "$TMP/old/index.json"
echo '{"schema": 1, "batch": "bare"}' >"$TMP/bare/index.json"
is "a kept index.json of schema 1 without runs exits 1" "$(rc_of "$ROOT/runner/report.sh" "$TMP/bare")" 1
ok "... naming what is missing" bash -c \
    "'$ROOT/runner/report.sh' '$TMP/bare' 2>&1 | grep -q 'holds no runs (runs, probe_runs, equal_load_runs missing or empty)'"

tap_finish
