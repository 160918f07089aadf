#!/usr/bin/env bash
# summarize.sh: turns a batch folder's result.json files into index.json (every result, the
# per-scenario comparisons and the overall verdict) and summary.md (the same as tables).
# Re-runnable on old batches; reads only results/<batch>/ and never runs a benchmark.
# Invariant: summary.md is rendered from index.json alone, so the two cannot disagree.
set -euo pipefail

TARGET_RATIO="${TARGET_RATIO:-}"    # default: matrix.json's target_ratio, else 0.5

# shellcheck source=runner/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    cat <<USAGE
usage: runner/summarize.sh [--help] results/<batch>
Writes results/<batch>/index.json and results/<batch>/summary.md from the batch's
*/result.json (and matrix.json when present: the planned runs and settings).
Environment: TARGET_RATIO (from matrix.json, else 0.5).
USAGE
}

case "${1:-}" in
    -h|--help) usage; exit 0 ;;
esac
batch_dir=$(batch_dir_arg summarize.sh "$@") || exit 2

matrix='{}'
if [[ -f "$batch_dir/matrix.json" ]]; then
    matrix=$(jq -c . "$batch_dir/matrix.json")
fi
if [[ -z "$TARGET_RATIO" ]]; then
    TARGET_RATIO=$(jq -r '.target_ratio // 0.5' <<<"$matrix")
fi
results=()
for f in "$batch_dir"/*/result.json; do
    [[ -f "$f" ]] && results+=("$f")
done

# ---- index.json ---------------------------------------------------------------------
read -r -d '' INDEX_JQ <<'JQ' || true
def ok: . != null and .failure == null;
def pair($sc): if $sc == "s4" then ["actor-sqlite", "async-sqlite"] else ["actor-mem", "async-mem"] end;
def flags: if . == null then ["no result"] else
    [ (if .failure != null then "failed" else empty end),
      (if .validity.saturated == false then "not saturated" else empty end),
      (if .validity.loadgen_bound == true then "loadgen-bound" else empty end),
      (if .validity.rate_held == false then "rate not held" else empty end),
      (if .validity.clean == false then "errors" else empty end),
      (if ([.server_cpus_other_pct, .probe.server_cpus_other_pct] | map(. // 0) | max)
            > 10 * (.config.server_cpu_count // 1) then "other load on server CPUs" else empty end) ] end;
def brief: if . == null then null else
    {run, server, scenario, kind, failure, saturation_rps, target_rps, sustained_rps,
     latency_p50_ms, latency_p90_ms, latency_p99_ms, latency_p99_9_ms, latency_max_ms,
     server_cpu_pct, req_per_cpu_sec, server_rss_mb, handler_p99_us, loadgen_cpu_pct,
     server_cpus_busy_pct, server_cpus_other_pct, errors_total, validity, flags: flags} end;
# ratio A B: A / B to 3 decimals for display (verdicts compare the unrounded quotient).
def ratio($a; $b): if $a != null and $b != null and $b > 0 then ($a / $b * 1000 | round / 1000) else null end;

(map(select(.kind == "saturation"))) as $sat
| (map(select(.kind == "equal-load"))) as $eq
| . as $all
| ($matrix.runs // [$sat[] | {server, scenario}]) as $planned
| ([$planned[].scenario] + [$sat[].scenario] | unique) as $scs
| [ $scs[] as $sc | pair($sc) as [$actor, $async]
    | ([$sat[] | select(.server == $actor and .scenario == $sc)] | .[0]) as $a
    | ([$sat[] | select(.server == $async and .scenario == $sc)] | .[0]) as $b
    | ([$eq[] | select(.server == $actor and .scenario == $sc)] | .[0]) as $ea
    | ([$eq[] | select(.server == $async and .scenario == $sc)] | .[0]) as $eb
    | ([$planned[] | select(.scenario == $sc) | .server]) as $sel
    | (($sel | index($actor)) != null and ($sel | index($async)) != null) as $both
    | ([($a, $b) | select(. != null and .failure == null
                           and (.validity.saturated != true or .validity.loadgen_bound == true))
        | "\(.server) \(flags | map(select(. == "not saturated" or . == "loadgen-bound")) | join(", "))"]) as $why
    | (if ($a | ok | not) or ($b | ok | not) then
         {basis: null, basis_source: null, actor_value: null, async_value: null}
       elif ($why | length) == 0 then
         {basis: "saturation_rps", basis_source: "saturation runs", actor_value: $a.saturation_rps,
          async_value: $b.saturation_rps}
       elif ($ea | ok) and ($eb | ok) and $ea.req_per_cpu_sec != null and $eb.req_per_cpu_sec != null then
         {basis: "req_per_cpu_sec", basis_source: "equal-load runs", actor_value: $ea.req_per_cpu_sec,
          async_value: $eb.req_per_cpu_sec}
       else
         {basis: "req_per_cpu_sec", basis_source: "saturation runs (sustain phase)",
          actor_value: $a.req_per_cpu_sec, async_value: $b.req_per_cpu_sec}
       end) as $basis
    | ratio($basis.actor_value; $basis.async_value) as $ratio
    | {scenario: $sc, actor: $actor, async: $async,
       actor_run: ($a.run // null), async_run: ($b.run // null),
       basis: $basis.basis, basis_source: $basis.basis_source,
       basis_reason: (if ($why | length) > 0 then ($why | join("; ")) else null end),
       errors: ([($a, $b) | select(. != null and .failure != null) | "\(.run) failed: \(.failure)"]
               + [if $a == null and ($sel | index($actor)) != null then "\($actor)-\($sc) has no result" else empty end,
                  if $b == null and ($sel | index($async)) != null then "\($async)-\($sc) has no result" else empty end]),
       actor_value: $basis.actor_value, async_value: $basis.async_value, ratio: $ratio,
       target_ratio: $target,
       verdict: (if ($both | not) then "N/A"
                 elif ($a | ok | not) or ($b | ok | not) or $ratio == null then "ERROR"
                 elif $basis.actor_value / $basis.async_value >= $target then "PASS" else "FAIL" end),
       counts_for_overall: ($sc == "s1" or $sc == "s2"),
       saturation_ratio: ratio($a.saturation_rps; $b.saturation_rps),
       req_per_cpu_sec_ratio: ratio($a.req_per_cpu_sec; $b.req_per_cpu_sec),
       actor_result: ($a | brief), async_result: ($b | brief),
       equal_load: (if $ea == null and $eb == null then null else
         {rate_rps: ($ea.target_rps // $eb.target_rps),
          actor_run: ($ea.run // null), async_run: ($eb.run // null),
          actor: ($ea | brief), async: ($eb | brief),
          p99_ratio: ratio($ea.latency_p99_ms; $eb.latency_p99_ms),
          req_per_cpu_sec_ratio: ratio($ea.req_per_cpu_sec; $eb.req_per_cpu_sec)} end)}
  ] as $scenarios
| ([$scenarios[] | select(.counts_for_overall)]) as $req
| (if ($req | map(select(.verdict != "N/A")) | length) < 2 then
     {overall: "N/A", reason: "s1 and s2 were not both compared (need both servers on each)"}
   elif any($req[]; .verdict == "FAIL") then
     {overall: "FAIL", reason: ([$req[] | select(.verdict == "FAIL") | "\(.scenario) ratio \(.ratio) < \($target)"] | join("; "))}
   elif any($req[]; .verdict != "PASS") then
     {overall: "INCOMPLETE", reason: ([$req[] | select(.verdict != "PASS") | "\(.scenario): \(.verdict)"] | join("; "))}
   else
     {overall: "PASS", reason: ([$req[] | "\(.scenario) ratio \(.ratio) >= \($target)"] | join("; "))}
   end) as $verdict
| ([$planned[] | . as $p | select([$sat[] | select(.server == $p.server and .scenario == $p.scenario)] | length == 0)
    | {run: "\(.server)-\(.scenario)", failure: "no result.json (runner.sh did not start the run)"}]
   + [$all[] | select(.failure != null) | {run, failure}]) as $failures
| ([$sat[] | select(.failure == null)] + [$all[] | select(.failure == null)] | .[0] // $sat[0] // $all[0] // null) as $first
| {schema: 1, batch: $batch, generated: $generated,
   mode: ($matrix.mode // $first.config.mode // null),
   target_ratio: $target, sat_ratio: ($matrix.sat_ratio // $first.config.sat_ratio // null),
   timestamps: {start: ($matrix.started // ([$all[].timestamps.start] | min)),
                end: ($matrix.ended // ([$all[].timestamps.end | select(. != null)] | max))},
   host: ($first.host // null), versions: ($first.versions // null),
   config: (if $first == null then null else ($first.config | {mode, server_cpus, loadgen_cpus,
            server_cpu_count, loadgen_cpu_count, cpus_disjoint, server_threads, wrk_conns, wrk_threads,
            probe_warmup_sec, probe_sec, warmup_sec, measure_sec, sat_ratio, seed_users}) end),
   equal_load_config: {warmup_sec: ($matrix.equal_load_warmup_sec // null),
                       measure_sec: ($matrix.equal_load_measure_sec // null)},
   verdict: ($verdict + {target_ratio: $target, required_scenarios: ["s1", "s2"],
             per_scenario: [$scenarios[] | {scenario, verdict, ratio, basis, basis_source}]}),
   scenarios: $scenarios, failures: $failures,
   runs: [$sat[] | . + {dir: .run, path: "\(.run)/result.json"}],
   equal_load_runs: [$eq[] | . + {dir: .run, path: "\(.run)/result.json"}]}
JQ

jq -s --argjson matrix "$matrix" --argjson target "$TARGET_RATIO" \
    --arg batch "$(basename "$batch_dir")" --arg generated "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    "$INDEX_JQ" "${results[@]}" </dev/null >"$batch_dir/index.json.tmp"
mv -f "$batch_dir/index.json.tmp" "$batch_dir/index.json"

# ---- summary.md ---------------------------------------------------------------------
read -r -d '' SUMMARY_JQ <<'JQ' || true
def n($d): if . == null then "n/a" else (. * pow(10; $d) | round / pow(10; $d) | tostring) end;
def u($d; $unit): if . == null then "n/a" else (n($d) + " " + $unit) end;
def fl: if . == null then "" elif (.flags | length) == 0 then "" else " (" + (.flags | join(", ")) + ")" end;
def val($r; f; $d): if $r == null then "no result" else (($r | f | n($d)) + ($r | fl)) end;
def basis_name: if . == "saturation_rps" then "saturation req/s" elif . == "req_per_cpu_sec" then "req/CPU-s" else "n/a" end;
def validity($r): if $r == null then "no result" elif ($r.flags | length) == 0 then "ok" else ($r.flags | join(", ")) end;
"# Benchmark summary: batch \(.batch)",
"",
"Date \(.timestamps.start // "?") to \(.timestamps.end // "?") (UTC), mode \(.mode // "?"). Host \(.host.hostname // "?"): \(.host.cpu_model // "unknown CPU"), \(.host.cores // "?") cores, kernel \(.host.kernel // "?").",
"Versions: \(.versions.compiler // "cc ?"); libuv \(.versions.libuv // "?"), llhttp \(.versions.llhttp // "?"), sqlite \(.versions.sqlite // "?"), ck \(.versions.ck // "?"), jansson \(.versions.jansson // "?"); commit \((.versions.git_commit // "?")[0:12])\(if .versions.git_dirty == true then " (dirty)" else "" end).",
"Configuration: server CPUs \(.config.server_cpus // "?") (server threads: \(.config.server_threads // "?")), loadgen CPUs \(.config.loadgen_cpus // "?") (loadgen threads: \(.config.wrk_threads // "?")), \(.config.wrk_conns // "?") connections, probe \(.config.probe_warmup_sec // "?")+\(.config.probe_sec // "?") s closed loop, sustain \(.config.warmup_sec // "?")+\(.config.measure_sec // "?") s at SAT_RATIO \(.sat_ratio // "?") x saturation, equal load \(.equal_load_config.warmup_sec // "?")+\(.equal_load_config.measure_sec // "?") s.",
"",
"**Verdict: \(.verdict.overall)** (actor/async >= \(.target_ratio) on s1 and s2): \(.verdict.reason)",
"",
"## Each server at its own saturation",
"",
"| scenario | actor req/s | async req/s | ratio | verdict | p99 actor | p99 async | CPU actor | CPU async | req/CPU-s actor | req/CPU-s async | validity |",
"| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
(.scenarios[] | . as $s |
 "| \(.scenario) | \(val(.actor_result; .saturation_rps; 0)) | \(val(.async_result; .saturation_rps; 0)) | \(.ratio | n(3))\(if .basis != null then " (" + (.basis | basis_name) + ")" else "" end) | \(.verdict)\(if .counts_for_overall then "" else " (info)" end) | \(.actor_result.latency_p99_ms | u(3; "ms")) | \(.async_result.latency_p99_ms | u(3; "ms")) | \(.actor_result.server_cpu_pct | u(1; "%")) | \(.async_result.server_cpu_pct | u(1; "%")) | \(.actor_result.req_per_cpu_sec | n(0)) | \(.async_result.req_per_cpu_sec | n(0)) | actor: \(validity(.actor_result)); async: \(validity(.async_result)) |"),
"",
"req/s is the closed-loop saturation throughput; p99, CPU (percent of one CPU) and req/CPU-s are from the measured window at SAT_RATIO x that server's own saturation (coordinated-omission corrected latency).",
"",
"## Equal load (both servers at SAT_RATIO x the slower one's saturation)",
"",
"| scenario | rate req/s | p99 actor | p99 async | p99.9 actor | p99.9 async | CPU actor | CPU async | req/CPU-s actor | req/CPU-s async | handler p99 actor | handler p99 async | validity |",
"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
(.scenarios[] | select(.equal_load != null) | .equal_load as $e |
 "| \(.scenario) | \($e.rate_rps | n(0)) | \($e.actor.latency_p99_ms | u(3; "ms")) | \($e.async.latency_p99_ms | u(3; "ms")) | \($e.actor.latency_p99_9_ms | u(3; "ms")) | \($e.async.latency_p99_9_ms | u(3; "ms")) | \($e.actor.server_cpu_pct | u(1; "%")) | \($e.async.server_cpu_pct | u(1; "%")) | \($e.actor.req_per_cpu_sec | n(0)) | \($e.async.req_per_cpu_sec | n(0)) | \($e.actor.handler_p99_us | u(0; "us")) | \($e.async.handler_p99_us | u(0; "us")) | actor: \(validity($e.actor)); async: \(validity($e.async)) |"),
"",
"## How each scenario was decided",
"",
(.scenarios[] | if .verdict == "ERROR" then
 "- \(.scenario) (\(.actor) vs \(.async)): ERROR: \(if (.errors | length) > 0 then (.errors | join("; ")) else "no comparable figure" end)."
 elif .verdict == "N/A" then
 "- \(.scenario): N/A, only one of \(.actor) and \(.async) was run."
 else
 "- \(.scenario) (\(.actor) vs \(.async)): \(.verdict), ratio \(.ratio | n(3)) on \(.basis | basis_name) from the \(.basis_source)\(if .basis_reason != null then " because \(.basis_reason)" else "" end)\(if .counts_for_overall then "" else "; informational, not part of the overall verdict" end). Saturation ratio \(.saturation_ratio | n(3)), req/CPU-s ratio \(.req_per_cpu_sec_ratio | n(3))." end),
(if (.failures | length) > 0 then "", "## Failures", "", (.failures[] | "- \(.run): \(.failure)") else empty end)
JQ

jq -r "$SUMMARY_JQ" "$batch_dir/index.json" >"$batch_dir/summary.md.tmp"
mv -f "$batch_dir/summary.md.tmp" "$batch_dir/summary.md"
