#!/usr/bin/env bash
# it_report.sh: tests of runner/report.sh and runner/compare.sh (TAP) on the fixture batches
# in tests/fixtures/report/ (trimmed from a real smoke batch; see its README.md): the page is
# well-formed HTML with every plot a parseable SVG, every figure equals index.json's, strings
# are escaped, nothing is fetched; compare.sh prints every run with the right direction words.
# Runs no benchmark; writes only to a temporary folder, removed at the end.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FIX="$ROOT/tests/fixtures/report"
KEEP_RESULTS="${KEEP_RESULTS:-0}"     # 1: keep the temporary folder (the rendered pages)
REPORT_BATCH="${REPORT_BATCH:-}"      # a real batch folder to render and check as well

usage() {
    cat <<USAGE
usage: tests/it_report.sh [--help]
Environment: KEEP_RESULTS (0), REPORT_BATCH (a real results/<batch> to render into the
temporary folder and check with the same page checks; default: fixtures only).
USAGE
}
# shellcheck source=tests/lib/it.sh
. "$ROOT/tests/lib/it.sh"
it_args "$@"
it_tmpdir it_report
rc_of() { local rc=0; "$@" >/dev/null 2>&1 || rc=$?; echo "$rc"; }
# has NAME FILE TEXT: FILE holds the fixed string TEXT.
has() { ok "$1" grep -qF -- "$3" "$2"; }

# check_page NAME PAGE INDEX PLOTS...: runs the page checks (python3 stdlib) and turns each
# "PASS name" / "FAIL name: detail" line into a TAP line.
check_page() {
    local name=$1 page=$2 index=$3 line
    shift 3
    while IFS= read -r line; do
        n=$((n + 1))
        case "$line" in
            PASS*) echo "ok $n - $name: ${line#PASS }" ;;
            *) echo "not ok $n - $name: ${line#FAIL }"; failed=$((failed + 1)) ;;
        esac
    done < <(python3 - "$page" "$index" "$@" <<'PY' 2>&1 || echo "FAIL checker crashed"
import html.parser, json, re, sys, xml.etree.ElementTree as ET

page_path, index_path, plots = sys.argv[1], sys.argv[2], sys.argv[3:]
text = open(page_path, encoding="utf-8").read()
index = json.load(open(index_path, encoding="utf-8"))
VOID = {"meta", "br", "hr", "img", "input", "link", "col", "area", "base", "wbr", "source", "track", "embed"}

def report(ok, name, detail=""):
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else ": " + detail))

class Checker(html.parser.HTMLParser):
    """Tag balance outside SVG, the figure spans and the visible text."""
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.figs, self.cur, self.text, self.svg_depth = [], [], [], None, [], 0
        self.ids = []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.append(a["id"])
        if tag == "svg":
            self.svg_depth += 1
        if self.svg_depth:
            self.stack.append(tag)
            return
        if tag in VOID:
            return
        self.stack.append(tag)
        if tag == "span" and "fig" in (a.get("class") or "").split():
            self.cur = [a.get("data-key"), ""]
    def handle_startendtag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.append(a["id"])
    def handle_endtag(self, tag):
        if tag in VOID and not self.svg_depth:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else 'nothing'}> at {self.getpos()}")
            return
        self.stack.pop()
        if tag == "svg":
            self.svg_depth -= 1
        if tag == "span" and self.cur is not None and not self.svg_depth:
            self.figs.append(tuple(self.cur))
            self.cur = None
    def handle_data(self, data):
        if self.cur is not None:
            self.cur[1] += data
        if not self.svg_depth:
            self.text.append(data)

c = Checker()
c.feed(text)
c.close()
report(text.startswith("<!DOCTYPE html>") and not c.errors and not c.stack, "well-formed HTML (tags balanced)",
       "; ".join(c.errors[:3]) + f" unclosed {c.stack[:5]}")
report(len(c.ids) == len(set(c.ids)), "element ids are unique (SVG ids prefixed per plot)",
       str(sorted({i for i in c.ids if c.ids.count(i) > 1})[:5]))

svgs = re.findall(r"<svg\b.*?</svg>", text, flags=re.S)
names, bad = [], []
for s in svgs:
    try:
        root = ET.fromstring(s)
        names.append(root.get("data-plot"))
        if not list(root.iter("{http://www.w3.org/2000/svg}path")):
            bad.append(f"{root.get('data-plot')} draws no path")
    except ET.ParseError as err:
        bad.append(f"parse error {err}")
report(not bad, f"all {len(svgs)} inline SVGs parse as XML and draw something", "; ".join(bad[:3]))
missing = [p for p in plots if p not in names]
report(not missing and len(names) == len(plots), "every expected plot is present, no other",
       f"missing {missing}, present {names}")
for s in svgs:
    root = ET.fromstring(s)
    if (root.get("data-plot") or "").startswith("latency-"):
        labels = {"".join(t.itertext()).strip() for t in root.iter("{http://www.w3.org/2000/svg}text")}
        want = {"50%", "90%", "99%", "99.9%", "99.99%"}
        report(want <= labels, f"{root.get('data-plot')}: percentile axis labelled 50%..99.99%",
               f"labels {sorted(labels)[:12]}")

def lookup(key):
    cur = index
    for part in key.split("/"):
        cur = cur[int(part)] if isinstance(cur, list) else cur.get(part) if isinstance(cur, dict) else None
        if cur is None:
            return None
    return cur

wrong = []
for key, shown in c.figs:
    value = lookup(key)
    digits = shown.replace(",", "")
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not re.fullmatch(r"-?\d+(\.\d+)?", digits):
        wrong.append(f"{key}: shown '{shown}', index {value!r}")
        continue
    dec = len(digits.split(".")[1]) if "." in digits else 0
    if f"{value:,.{dec}f}" != shown:
        wrong.append(f"{key}: shown '{shown}', index {value!r}")
report(c.figs and not wrong, f"all {len(c.figs)} figures on the page equal index.json's (rounded as shown)",
       "; ".join(wrong[:4]))
keys = {k for k, _ in c.figs}
need = ["target_ratio", "sat_ratio", "host/cores"]
for i, sc in enumerate(index["comparisons"]):
    base = f"comparisons/{i}"
    need += [f"{base}/ratio", f"{base}/ci_low", f"{base}/ci_high", f"{base}/candidate_value", f"{base}/baseline_value",
             f"{base}/all_pairs_median_ratio"]
    for side in ("candidate_result", "baseline_result") + (("equal_load/candidate", "equal_load/baseline") if sc.get("equal_load") else ()):
        if lookup(f"{base}/{side}") is None:
            continue
        need += [f"{base}/{side}/{m}" for m in ("latency_p99_ms", "latency_p50_ms", "latency_p99_9_ms", "handler_p99_us",
                                                 "req_per_cpu_sec", "server_cpu_pct", "sustained_rps")]
    for who in ("candidate", "baseline"):
        need.append(f"{base}/saturation_median_rps/{who}")
        need += [f"{base}/probes/{who}/{j}/saturation_rps" for j in range(len((sc.get("probes") or {}).get(who) or []))]
    if sc.get("equal_load"):
        need += [f"{base}/equal_load/rate_rps", f"{base}/equal_load/p99_ratio"]
for i, sw in enumerate((index.get("sweep") or {}).get("scenarios") or []):
    base = f"sweep/scenarios/{i}"
    need += [f"{base}/base_rps", f"{base}/knee_ratio", f"{base}/comparison_ratio"]
    for who, srv in sw["servers"].items():
        if not srv:
            continue
        need.append(f"{base}/servers/{who}/knee/rate_rps")
        for j in range(len(srv["steps"])):
            need += [f"{base}/servers/{who}/steps/{j}/{m}" for m in (
                "offered_rps", "achieved_rps", "latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "latency_p99_9_ms",
                "latency_max_ms", "server_cpu_pct", "req_per_cpu_sec", "handler_p99_us", "loadgen_cpu_pct",
                "send_lag_p99_ms", "requests_waited_for_connection", "errors_total")]
need = [k for k in need if isinstance(lookup(k), (int, float))]
report(set(need) <= keys, f"the {len(need)} key figures (ratios, req/s, p50/p99/p99.9, handler p99, req/CPU-s, CPU, rates, sweep steps and knees) are printed",
       str(sorted(set(need) - keys)[:6]))
banner = re.search(r'<section class="banner [^"]*" id="verdict"><span class="verdict">([^<]*)</span>', text)
report(banner is not None and banner.group(1) == index["verdict"]["overall"], "verdict banner shows index.json's verdict",
       banner.group(1) if banner else "no banner")
per = [(s["scenario"], s["verdict"]) for s in index["comparisons"]]
vis = " ".join(c.text)
report(all(v in vis for _, v in per), "each comparison's verdict is on the page", str(per))
report(index["verdict"]["headline"] in vis and len(index["verdict"]["headline"]) <= 200,
       "the one-line headline (at most 200 characters) is on the page", index["verdict"]["headline"])
outside_ns = re.sub(r"""xmlns(:\w+)?=(["'])[^"']*\2""", "", text)
report(not re.search(r"https?://|<script|<link|<iframe|<img|\bsrc=|@import", outside_ns, flags=re.I),
       "self-contained: no script, no external URL, no src/link/@import",
       str(re.findall(r".{30}(?:https?://|<script|<link|\bsrc=).{30}", outside_ns, flags=re.I)[:2]))
refs = [m[1] for m in re.findall(r"""href=(["'])([^"']*)\1""", text)]
report(all(r.startswith("#") for r in refs), "every href is a fragment inside the page", str(refs[:3]))
for s in (index.get("host") or {}).get("cpu_model"), (index.get("versions") or {}).get("compiler"):
    if s and any(ch in s for ch in "<&>"):
        report(s in vis, f"escaping: '{s[:24]}...' shown verbatim as text", "not in the page text")
for f in index.get("failures") or []:
    report(f["failure"] in vis, "escaping: the failure message shown verbatim", f["failure"])
report("<script>" not in text and "<b>bold</b>" not in text, "escaping: no markup from the batch reaches the page",
       "found raw markup")
PY
    )
}

# ---- report.sh: usage -------------------------------------------------------------------
is "report.sh --help exits 0" "$(rc_of "$ROOT/runner/report.sh" --help)" 0
is "report.sh without a batch exits 2" "$(rc_of "$ROOT/runner/report.sh")" 2
is "report.sh on a missing folder exits 2" "$(rc_of "$ROOT/runner/report.sh" "$TMP/nope")" 2
mkdir -p "$TMP/empty"
is "report.sh on a folder without index.json exits 2" "$(rc_of "$ROOT/runner/report.sh" "$TMP/empty")" 2
is "report.sh with two arguments exits 2" "$(rc_of "$ROOT/runner/report.sh" "$FIX/A" "$FIX/B")" 2

# ---- report.sh on the fixture batch A (s1 and s2, with equal load) ------------------------
cp -r "$FIX/A" "$TMP/A"
ok "report.sh renders fixture A" "$ROOT/runner/report.sh" "$TMP/A"
ok "report.html written" test -s "$TMP/A/report.html"
check_page "fixture A" "$TMP/A/report.html" "$TMP/A/index.json" \
    throughput ratio efficiency handler-vs-client-p99 \
    latency-s1-own latency-s1-equal latency-s2-own latency-s2-equal
has "escaping: the cpu model's <&> escaped" "$TMP/A/report.html" 'Fixture CPU &lt;&amp;&gt; &quot;quoted&quot;'
has "escaping: the failure message escaped" "$TMP/A/report.html" 'fixture failure &lt;&amp;&gt; &quot;quoted&quot;'
has "the smoke warning is shown for a smoke batch" "$TMP/A/report.html" 'Smoke run: checks the pipeline, too short to mean anything'
ok "report.sh is re-runnable (the same page again)" bash -c "
    cp '$TMP/A/report.html' '$TMP/first.html' && '$ROOT/runner/report.sh' '$TMP/A' 2>/dev/null &&
    cmp -s '$TMP/first.html' '$TMP/A/report.html'"

# ---- without gnuplot (a bundle on a borrowed host): the tables, a note per plot, said once ---
cp -r "$FIX/A" "$TMP/NG"
ng_rc=0
env GNUPLOT="$TMP/no-such-gnuplot" REPORT_OUT="$TMP/NG/report.html" "$ROOT/runner/report.sh" "$TMP/NG" 2>"$TMP/NG/stderr" || ng_rc=$?
is "no gnuplot: report.sh exits 0" "$ng_rc" 0
is "no gnuplot: said once on stderr" "$(grep -c 'not found: report.html has its tables without plots' "$TMP/NG/stderr")" 1
is "no gnuplot: no SVG in the page" "$(grep -c '<svg' "$TMP/NG/report.html" || true)" 0
has "no gnuplot: a note where the throughput plot would be" "$TMP/NG/report.html" 'data-plot="throughput"><p>(plot not drawn: no gnuplot on this host)'
has "no gnuplot: the figures are still there" "$TMP/NG/report.html" 'Fixture CPU &lt;&amp;&gt; &quot;quoted&quot;'

# ---- a sweep batch (fixture S): latency and CPU against offered load, knees, every step ----
cp -r "$FIX/S" "$TMP/S"
ok "report.sh renders fixture S (a rate sweep)" "$ROOT/runner/report.sh" "$TMP/S"
check_page "fixture S" "$TMP/S/report.html" "$TMP/S/index.json" throughput ratio sweep-latency-s2 sweep-cpu-s2
has "S: the knees table gives the knee ratio with its range" "$TMP/S/report.html" \
    '<span class="fig" data-key="sweep/scenarios/0/knee_ratio">3.000</span> (range <span class="fig" data-key="sweep/scenarios/0/knee_ratio_min">1.500</span>'
has "S: each server's knee is marked in the latency plot's key" "$TMP/S/report.html" 'actor-mem knee'
has "S: loadgen-limited steps are greyed rows" "$TMP/S/report.html" '<tr class="lg" title="limited by the load generator'
is "S: one row per step, 24" "$(grep -c 'data-key="sweep/scenarios/0/servers/[a-z]*/steps/[0-9]*/step"' "$TMP/S/report.html")" 24
ok "S: no efficiency or handler plot without a sustained window" bash -c \
    "! grep -Eq 'data-plot=\"(efficiency|handler-vs-client-p99)\"' '$TMP/S/report.html'"

# ---- a degraded batch: one run failed, no equal load for s2, a missing histogram ---------
mkdir -p "$TMP/D"
jq '.comparisons[1].equal_load = null | .comparisons[1].candidate_result.failure = "died <here>"
    | .comparisons[1].verdict = "ERROR" | .comparisons[1].ratio = null | .comparisons[1].candidate_value = null
    | .verdict.overall = "INCOMPLETE" | .comparisons[1].errors = ["actor-mem-s2 failed: died <here>"]' \
    "$FIX/A/index.json" >"$TMP/D/index.json"
cp -r "$FIX/A/actor-mem-s1" "$FIX/A/actor-mem-s1-equal" "$FIX/A/async-mem-s1-equal" "$FIX/A/async-mem-s2" "$TMP/D/"
ok "report.sh renders a batch with a failed run and missing histograms" "$ROOT/runner/report.sh" "$TMP/D"
check_page "degraded" "$TMP/D/report.html" "$TMP/D/index.json" \
    throughput ratio efficiency handler-vs-client-p99 latency-s1-own latency-s1-equal latency-s2-own
has "degraded: the failed run's message shown escaped" "$TMP/D/report.html" 'died &lt;here&gt;'

# ---- optionally a real batch (REPORT_BATCH), rendered into the temporary folder ----------
if [[ -n "$REPORT_BATCH" ]]; then
    ok "REPORT_BATCH renders" env REPORT_OUT="$TMP/real.html" "$ROOT/runner/report.sh" "$REPORT_BATCH"
    # efficiency and handler p99 need a sustained window; a sweep batch (no sustain after the
    # probes, no equal load by default) has neither, but a latency and a CPU plot per swept scenario
    mapfile -t want < <(jq -r '(if (.comparisons | length) > 0 then "throughput", "ratio" else empty end),
        (if any(.comparisons[]; [.candidate_result.req_per_cpu_sec, .baseline_result.req_per_cpu_sec,
                                 .equal_load.candidate.req_per_cpu_sec, .equal_load.baseline.req_per_cpu_sec]
                                | any(type == "number")) then "efficiency" else empty end),
        (if any(.comparisons[]; [.candidate_result.latency_p99_ms, .baseline_result.latency_p99_ms] | any(type == "number"))
         then "handler-vs-client-p99" else empty end),
        ([.comparisons[].scenario] as $all | .comparisons[]
         | .scenario as $sc | (if ([$all[] | select(. == $sc)] | length) == 1 then $sc else "\($sc)-\(.candidate)" end) as $k
         | (if .candidate_result.sustained_rps != null or .baseline_result.sustained_rps != null
            then "latency-\($k)-own" else empty end),
           (if .equal_load != null then "latency-\($k)-equal" else empty end)),
        ((.sweep // {scenarios: []}).scenarios | to_entries[]
         | .value.scenario as $sc | "sweep-latency-\($sc)", "sweep-cpu-\($sc)")' \
        "$REPORT_BATCH/index.json")
    check_page "REPORT_BATCH" "$TMP/real.html" "$REPORT_BATCH/index.json" "${want[@]}"
fi

# ---- compare.sh ---------------------------------------------------------------------------
is "compare.sh --help exits 0" "$(rc_of "$ROOT/runner/compare.sh" --help)" 0
ok "compare.sh --help states the noise thresholds" bash -c "'$ROOT/runner/compare.sh' --help | grep -q 'NOISE_RPS_PCT.*default [0-9]'"
is "compare.sh without arguments exits 2" "$(rc_of "$ROOT/runner/compare.sh")" 2
is "compare.sh with one batch exits 2" "$(rc_of "$ROOT/runner/compare.sh" "$FIX/A")" 2
is "compare.sh on a folder without index.json exits 2" "$(rc_of "$ROOT/runner/compare.sh" "$FIX/A" "$TMP/empty")" 2
is "compare.sh with a bad NOISE_RPS_PCT exits 2" "$(NOISE_RPS_PCT=abc rc_of "$ROOT/runner/compare.sh" "$FIX/A" "$FIX/B")" 2
"$ROOT/runner/compare.sh" "$FIX/A" "$FIX/B" >"$TMP/cmp.txt"
NOISE_RPS_PCT=5 NOISE_CPU_PCT=25 "$ROOT/runner/compare.sh" "$FIX/A" "$FIX/B" >"$TMP/cmp5.txt"
"$ROOT/runner/compare.sh" "$FIX/B" "$FIX/A" >"$TMP/cmp-rev.txt"
mapfile -t runs < <(jq -r '.runs[], .probe_runs[], .equal_load_runs[] | .run' "$FIX/A/index.json")
is "compare: one block per run (12 in both, 1 only in B)" "$(grep -c '^run ' "$TMP/cmp.txt")" 13
for r in "${runs[@]}"; do
    ok "compare: a row for $r" grep -q "^run $r " "$TMP/cmp.txt"
done
has "compare: the run only in B is named" "$TMP/cmp.txt" "run extra-only-in-B: only in B, not compared"
is "compare: saturation -7.1% in words, within the default noise (4 saturation runs, 4 probe runs)" \
    "$(grep -c 'B is 7.1% slower than A (saturation req/s) *within noise' "$TMP/cmp.txt")" 8
is "compare: the same change beyond NOISE_RPS_PCT=5 is REGRESSED" \
    "$(grep -c 'B is 7.1% slower than A (saturation req/s) *REGRESSED' "$TMP/cmp5.txt")" 8
is "compare: p99 +12.0% is higher (worse), every run" \
    "$(grep -c "B's p99 is 12.0% higher (worse) than A's" "$TMP/cmp.txt")" 8
is "compare: p99.9 -50.0% is lower (better), every run" \
    "$(grep -c "B's p99.9 is 50.0% lower (better) than A's" "$TMP/cmp.txt")" 8
is "compare: req/CPU-s +50.0% is higher (better), within the default noise" \
    "$(grep -c "B's req/CPU-s is 50.0% higher (better) than A's *within noise (+/-100%)" "$TMP/cmp.txt")" 8
is "compare: req/CPU-s +50.0% beyond NOISE_CPU_PCT=25 is IMPROVED" \
    "$(grep -c "B's req/CPU-s is 50.0% higher (better) than A's *IMPROVED (beyond +/-25% noise)" "$TMP/cmp5.txt")" 8
# an index that records nothing (no mode, host, commit, time): '?' and 'unknown', never 'None'
mkdir -p "$TMP/bare"
echo '{"batch": "bare", "runs": []}' >"$TMP/bare/index.json"
"$ROOT/runner/compare.sh" "$TMP/bare" "$FIX/B" >"$TMP/cmp-bare.txt"
is "compare: a batch recording no mode, host or time prints '?', never None" \
    "$(grep -c 'None' "$TMP/cmp-bare.txt") $(grep -c '^A: batch bare, mode ?, ?, commit ?, host ? (? cores)$' "$TMP/cmp-bare.txt")" "0 1"
# quick batches get the quick-mode thresholds (rps and cpu 20%); mixed modes the smoke ones
for side in A B; do
    mkdir -p "$TMP/quick/$side"
    jq '.mode = "quick"' "$FIX/$side/index.json" >"$TMP/quick/$side/index.json"
done
"$ROOT/runner/compare.sh" "$TMP/quick/A" "$TMP/quick/B" >"$TMP/cmp-quick.txt"
is "compare: quick batches, req/CPU-s +50.0% beyond the 20% quick threshold is IMPROVED" \
    "$(grep -c "B's req/CPU-s is 50.0% higher (better) than A's *IMPROVED (beyond +/-20% noise)" "$TMP/cmp-quick.txt")" 8
is "compare: quick batches, saturation -7.1% is within the 20% quick threshold" \
    "$(grep -c 'B is 7.1% slower than A (saturation req/s) *within noise (+/-20%)' "$TMP/cmp-quick.txt")" 8
"$ROOT/runner/compare.sh" "$TMP/quick/A" "$FIX/B" >"$TMP/cmp-mixed.txt"
is "compare: a quick and a smoke batch use the wider smoke thresholds" \
    "$(grep -c "B's req/CPU-s is 50.0% higher (better) than A's *within noise (+/-100%)" "$TMP/cmp-mixed.txt")" 8
is "compare: server CPU -10.0% is lower (better)" \
    "$(grep -c "B's server CPU is 10.0% lower (better) than A's" "$TMP/cmp.txt")" 8
is "compare: handler p99 x3 is higher (worse) and REGRESSED" \
    "$(grep -c "B's handler p99 is 200.0% higher (worse) than A's *REGRESSED" "$TMP/cmp.txt")" 8
is "compare: unchanged p50 says equals" "$(grep -c "B's p50 equals A's" "$TMP/cmp.txt")" 8
is "compare: ratio column B/A for saturation" "$(grep -c 'saturation req/s .* 0\.929  B is' "$TMP/cmp.txt")" 8
is "compare: swapped batches say faster (+7.6%)" \
    "$(grep -c 'B is 7.6% faster than A (saturation req/s)' "$TMP/cmp-rev.txt")" 8
is "compare: swapped batches say p99 lower (better)" \
    "$(grep -c "B's p99 is 10.7% lower (better) than A's" "$TMP/cmp-rev.txt")" 8
has "compare: flagged runs are noted" "$TMP/cmp.txt" "note: A's run is flagged (not saturated, other load)"
# shellcheck disable=SC2016  # the literal text of run_all.sh
ok "run_all.sh renders the report after the summary" grep -q 'runner/report.sh" "$batch_dir"' "$ROOT/run_all.sh"

tap_finish
