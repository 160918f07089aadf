#!/usr/bin/env python3
"""test_analysis.py: unit tests of runner/analysis (TAP): Prometheus scrape diffs, the CPU and
contention arithmetic, every validity rule (SPEC.md section 8), result.json from raw facts
the way runner.sh records them, load from several agents, and compare's words. Batch (below)
builds a batch folder from raw facts; test_verdict.py, test_scaling.py and test_sweep.py use it.
Runs no benchmark; writes only to a temporary folder.
"""
import json
import os
import shutil
import statistics
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "runner"))

from analysis import compare, promtext, result, rules, summary  # noqa: E402
import tap_unittest  # noqa: E402

FIX = os.path.join(ROOT, "tests", "fixtures")
N_SRV, N_LG, TCK = 1, 1, 100
# The default pairs (runner/default-pairs.toml): candidate and baseline per scenario.
PAIRS = {"s1": ("actor-mem", "async-mem"), "s2": ("actor-mem", "async-mem"), "s3": ("actor-mem", "async-mem"),
         "s4": ("actor-sqlite", "async-sqlite")}


def loadgen_doc(rps, window_s=10.0, cpu_pct=50.0, errors=0, p99=1.0, lag_p99=None, waited=None, rate=0.0,
                intervals=None):
    """A load generator JSON as build/loadgen --json writes it."""
    done = int(rps * window_s)
    doc = {"achieved_rps": rps, "requests_completed": done, "elapsed_s": window_s, "target_rps": rate,
           "errors": {"connect": 0, "read": 0, "write": 0, "timeout": 0, "parse": 0, "status": errors},
           "status_counts": {"200": done}, "unexpected_status_counts": {"500": errors} if errors else {},
           "in_flight_at_end": 0, "connections_established": 32, "connections_failed": 0,
           "latency_ms": {"p50": p99 / 4, "p75": p99 / 3, "p90": p99 / 2, "p99": p99, "p99_9": p99 * 1.5,
                          "p99_99": p99 * 2, "max": p99 * 3, "mean": p99 / 4},
           "service_time_ms": {"p50": 0.1, "p99": 0.5, "max": 1.0},
           "loadgen_cpu_s": {"user": 0, "sys": 0, "total": cpu_pct / 100 * window_s}}
    if lag_p99 is not None:
        doc["send_lag_ms"] = {"p50": lag_p99 / 10, "p99": lag_p99, "max": lag_p99 * 2}
    if waited is not None:
        doc["requests_waited_for_connection"] = waited
    if intervals is not None:  # the p99 of each 1 s interval (None: no response in it)
        doc["latency_intervals"] = {"interval_s": 1.0, "count": [0 if v is None else 100 for v in intervals],
                                    "p50_ms": [None if v is None else v / 4 for v in intervals],
                                    "p99_ms": list(intervals),
                                    "max_ms": [None if v is None else v * 2 for v in intervals]}
    return doc


class Batch:
    """A batch folder built from raw facts, as runner.sh and run_all.sh write them."""

    def __init__(self, root, name, mode="quick", repeats=3, target=0.5, group_commit=1):
        self.dir = os.path.join(root, name)
        self.group_commit = group_commit  # the actor server's (runner.sh records 1 for async-server)
        os.makedirs(self.dir)
        self.mode = mode
        self.runs = []
        self.matrix = {"batch": name, "mode": mode, "target_ratio": target, "sat_ratio": 0.7, "repeats": repeats,
                       "equal_load_warmup_sec": 5, "equal_load_measure_sec": 10, "started": "2026-12-01T00:00:00Z",
                       "ended": "2026-12-01T00:10:00Z", "runs": []}

    def run(self, server, sc, kind="saturation", repeat=1, probe=None, sustain=None, failure=None, sweep=None):
        """PROBE / SUSTAIN: dicts of (rps, server_cpu, lg_cpu, other, errors, p99, lag_p99, waited,
        target); None leaves the phase out. SWEEP: a sweep step's facts ({step, steps,
        offered_rps, base_rps, fraction_of_base, rates_given}; kind "sweep"). REPEAT is the
        round (for equal-load runs: '-equal' for 1, '-equalN' after)."""
        suffix = {"saturation": "", "probe": f"-probe{repeat}",
                  "equal-load": "-equal" if repeat in (None, 1) else f"-equal{repeat}",
                  "sweep": f"-sweep-{(sweep or {}).get('step', 0):02d}"}[kind]
        name = f"{server}-{sc}{suffix}"
        d = os.path.join(self.dir, name)
        os.makedirs(d)
        facts = {"server": server, "scenario": sc, "kind": kind, "batch": os.path.basename(self.dir), "run": name,
                 "repeat": repeat if kind not in ("equal-load", "sweep") else None, "sweep": sweep,
                 "config": {"mode": self.mode, "server_cpu_count": N_SRV, "loadgen_cpu_count": N_LG,
                            "server_cpus": "0", "loadgen_cpus": "1", "server_threads": 1, "wrk_conns": 256,
                            "wrk_threads": 1, "sat_ratio": 0.7,
                            "group_commit": self.group_commit if server.startswith("actor") else 1},
                 "host": {"hostname": "fixture", "cores": 2, "cpu_model": "Fixture CPU", "kernel": "6"},
                 "versions": {"git_commit": "0" * 40, "git_dirty": False},
                 "timestamps": {"start": "2026-12-01T00:00:00Z", "end": "2026-12-01T00:00:30Z"},
                 "clk_tck": TCK, "phases": {}, "stop": {"rss_kb": 10240, "code": 0, "killed": False, "stop_s": 0.1},
                 "failure": failure}
        for phase, spec, fname, rate_key in (("probe", probe, "probe.json", None),
                                             ("sustain", sustain, "loadgen.json", "target")):
            if spec is None:
                continue
            spec = dict({"server_cpu": 95.0, "lg_cpu": 50.0, "other": 0.0, "errors": 0, "p99": 1.0,
                         "lag_p99": None, "waited": None, "intervals": None}, **spec)
            rate = spec.get("target", 0) if rate_key else 0
            with open(os.path.join(d, fname), "w", encoding="utf-8") as fh:
                json.dump(loadgen_doc(spec["rps"], 10.0, spec["lg_cpu"], spec["errors"], spec["p99"],
                                      spec["lag_p99"], spec["waited"], rate, spec["intervals"]), fh)
            ticks = spec["server_cpu"] / 100 * 10.0 * TCK
            busy = (spec["server_cpu"] + spec["other"]) / 100 * 10.0 * TCK
            facts["phases"][phase] = {"loadgen_json": fname, "histogram": "h.txt", "cpu": [[100.0, 0], [110.0, ticks]],
                                      "cpustat": [[0, 0, 0], [busy, 10.0 * TCK, 0]], "wall_s": 11.0,
                                      "target_rps": rate or None, "scrapes": None}
        with open(os.path.join(d, "facts.json"), "w", encoding="utf-8") as fh:
            json.dump(facts, fh)
        doc = result.write(d)
        if kind == "saturation":
            self.matrix["runs"].append({"server": server, "scenario": sc})
        return doc

    def scenario(self, sc, actor_rps, async_rps, actor_probe=None, async_probe=None, eq=None, eq_actor=None,
                 eq_async=None, eq_rounds=1, servers=None):
        """Probes of both servers (one rps per round; *_probe: overrides per round index),
        their sustains, and EQ_ROUNDS equal-load pairs (EQ: (candidate req/CPU-s, baseline
        req/CPU-s) as rps at 50% CPU, or a list of such per round, or None for no equal-load
        runs; eq_actor / eq_async override every round, or a dict {round index: overrides}).
        SERVERS: (candidate, baseline), the default pair of SC unless given."""
        actor, asyn = servers or PAIRS[sc]
        for who, server, rpss, over in (("actor", actor, actor_rps, actor_probe or {}),
                                        ("async", asyn, async_rps, async_probe or {})):
            for i, rps in enumerate(rpss):
                p = dict({"rps": rps}, **over.get(i, {}))
                if i == 0:
                    self.run(server, sc, "saturation", 1, probe=p,
                             sustain={"rps": round(rps * 0.7), "target": round(rps * 0.7), "server_cpu": 70.0,
                                      "lag_p99": 0.05})
                else:
                    self.run(server, sc, "probe", i + 1, probe=p)
        if eq is not None:
            rate = round(min(statistics.median(actor_rps), statistics.median(async_rps)) * 0.7)
            per_round = eq if isinstance(eq, list) else [eq] * eq_rounds
            for rnd, pair in enumerate(per_round, 1):
                for server, rpc, over in ((actor, pair[0], eq_actor or {}), (asyn, pair[1], eq_async or {})):
                    if over and all(isinstance(k, int) for k in over):
                        over = over.get(rnd - 1, {})
                    spec = dict({"rps": rate, "target": rate, "server_cpu": 100.0 * rate / rpc, "lag_p99": 0.05},
                                **over)
                    self.run(server, sc, "equal-load", rnd, sustain=spec)

    def summarize(self):
        with open(os.path.join(self.dir, "matrix.json"), "w", encoding="utf-8") as fh:
            json.dump(self.matrix, fh)
        return summary.write(self.dir)


def scen(index, sc):
    """The (first) comparison of scenario SC in INDEX."""
    return next(s for s in index["comparisons"] if s["scenario"] == sc)


class TestPromtext(unittest.TestCase):
    def setUp(self):
        self.before = promtext.read(os.path.join(FIX, "metrics_before.prom"))
        self.after = promtext.read(os.path.join(FIX, "metrics_after.prom"))

    def test_handler_quantiles_on_the_union_of_sparse_edges(self):
        self.assertEqual(promtext.handler_quantile_us(self.before, self.after, 0.99), 20)
        self.assertEqual(promtext.handler_quantile_us(self.before, self.after, 0.5), 10)

    def test_empty_window_is_none(self):
        self.assertIsNone(promtext.handler_quantile_us(self.before, self.before, 0.99))

    def test_deltas_and_routes(self):
        self.assertEqual(promtext.delta(self.before, self.after, "http_overload_rejections_total"), 3)
        self.assertEqual(promtext.routes(self.before, self.after), {"metrics": 1, "ping": 1000})

    def test_fixtures_use_the_seconds_family(self):
        self.assertTrue(any(n == "http_handler_latency_seconds_count" for n, _, _ in self.after))

    def test_microseconds_family_of_older_servers_reads_the_same(self):
        def to_microseconds(samples):
            text = []
            for n, lab, v in samples:
                if n.startswith("http_handler_latency_seconds"):
                    n = n.replace("_seconds", "_us")
                    if "le" in lab and lab["le"] != "+Inf":
                        lab = dict(lab, le=repr(round(float(lab["le"]) * 1e6)))
                labels = ",".join(f'{k}="{v2}"' for k, v2 in lab.items())
                text.append(f"{n}{{{labels}}} {v}" if labels else f"{n} {v}")
            return promtext.parse("\n".join(text))
        b, a = to_microseconds(self.before), to_microseconds(self.after)
        self.assertTrue(any(n == "http_handler_latency_us_count" for n, _, _ in a))
        self.assertEqual(promtext.handler_quantile_us(b, a, 0.99), 20)
        self.assertEqual(promtext.handler_quantile_us(b, a, 0.5), 10)


class TestArithmetic(unittest.TestCase):
    def test_cpu_window(self):
        self.assertEqual(result.cpu_window({"cpu": [[100.0, 1000], [102.0, 1100]]}, 100), (50.0, 1.0, 2.0))
        self.assertEqual(result.cpu_window({"cpu": []}, 100), (None, None, None))

    def test_contention_other_is_busy_minus_own_floored(self):
        c = result.contention({"cpustat": [[0, 0, 0], [600, 1000, 50]]}, 1, 40.0)
        self.assertEqual((c["server_cpus_busy_pct"], c["server_cpus_other_pct"], c["server_cpus_steal_pct"]),
                         (60.0, 20.0, 5.0))
        self.assertEqual(result.contention({"cpustat": [[0, 0, 0], [300, 1000, 0]]}, 1, 40.0)["server_cpus_other_pct"], 0)

    def test_rate_held_within_one_percent(self):
        self.assertTrue(rules.rate_held(9901, 10000))
        self.assertFalse(rules.rate_held(9899, 10000))
        self.assertIsNone(rules.rate_held(None, 10000))


class TestRules(unittest.TestCase):
    def test_probe_loadgen_bound_only_when_the_server_is_not_saturated(self):
        self.assertTrue(rules.loadgen_bound({"loadgen_cpu_pct": 95}, 1, True, server_saturated=False))
        self.assertFalse(rules.loadgen_bound({"loadgen_cpu_pct": 95}, 1, True, server_saturated=True))
        self.assertFalse(rules.loadgen_bound({"loadgen_cpu_pct": 80}, 1, True, server_saturated=False))

    def test_constant_rate_loadgen_bound_by_cpu_or_lag(self):
        self.assertTrue(rules.loadgen_bound({"loadgen_cpu_pct": 92}, 1, False))
        self.assertFalse(rules.loadgen_bound({"loadgen_cpu_pct": 92}, 2, False))  # 46% of two CPUs
        self.assertTrue(rules.loadgen_bound({"loadgen_cpu_pct": 50, "send_lag_p99_ms": 3.0,
                                             "requests_completed": 1000, "requests_waited_for_connection": 0}, 1, False))
        self.assertFalse(rules.loadgen_bound({"loadgen_cpu_pct": 50, "send_lag_p99_ms": 0.2}, 1, False))

    def test_lag_from_busy_connections_is_the_servers(self):
        phase = {"loadgen_cpu_pct": 50, "send_lag_p99_ms": 3.0, "requests_completed": 1000,
                 "requests_waited_for_connection": 200}
        self.assertFalse(rules.loadgen_bound(phase, 1, False))

    def test_own_lag_decides_when_reported(self):
        # a generator stall with a backlog larger than its connections: 4% waited for a
        # connection, which the whole-lag rule took for the server's; the own lag says it was not
        stall = {"loadgen_cpu_pct": 50, "send_lag_p99_ms": 37.0, "send_lag_own_p99_ms": 36.2,
                 "requests_completed": 801000, "requests_waited_for_connection": 31732}
        self.assertTrue(rules.loadgen_bound(stall, 1, False))
        self.assertFalse(rules.loadgen_bound(dict(stall, send_lag_own_p99_ms=None), 1, False))
        self.assertIn("own send lag p99 36.200 ms > 1 ms and > 10% of the send lag p99 37.000 ms",
                      rules.lag_reason(stall))
        # the server held every connection: a long lag, little of it the generator's own,
        # whether or not many requests were counted as waiting
        held = {"loadgen_cpu_pct": 50, "send_lag_p99_ms": 465.0, "send_lag_own_p99_ms": 0.9,
                "requests_completed": 3000, "requests_waited_for_connection": 0}
        self.assertFalse(rules.loadgen_bound(held, 1, False))
        # past 1 ms the own lag must also be more than a tenth of the whole lag: 1.2 ms of
        # 465 is the generator's reaction in each round of the drain (the server idle between
        # rounds), not its latency
        self.assertFalse(rules.loadgen_bound(dict(held, send_lag_own_p99_ms=1.2), 1, False))
        self.assertFalse(rules.loadgen_bound(dict(held, send_lag_own_p99_ms=46.5), 1, False))
        self.assertTrue(rules.loadgen_bound(dict(held, send_lag_own_p99_ms=46.6), 1, False))
        # a lag that is all the generator's: the 1 ms bound alone decides
        self.assertTrue(rules.loadgen_bound(dict(held, send_lag_p99_ms=1.2, send_lag_own_p99_ms=1.1), 1, False))
        self.assertFalse(rules.loadgen_bound(dict(held, send_lag_p99_ms=1.2, send_lag_own_p99_ms=0.9), 1, False))
        # the whole lag unknown: the own lag alone decides
        self.assertTrue(rules.loadgen_bound(dict(held, send_lag_p99_ms=None, send_lag_own_p99_ms=1.2), 1, False))

    def test_quiet_threshold_scales_with_server_cpus(self):
        self.assertTrue(rules.quiet({"server_cpus_other_pct": 10.0}, 1))
        self.assertFalse(rules.quiet({"server_cpus_other_pct": 10.5}, 1))
        self.assertTrue(rules.quiet({"server_cpus_other_pct": 19.0}, 2))


class TestResult(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_every_field_present_and_derived(self):
        b = Batch(self.tmp, "r")
        res = b.run("async-mem", "s1", probe={"rps": 100000, "server_cpu": 95.0, "lg_cpu": 60.0},
                    sustain={"rps": 70000, "target": 70000, "server_cpu": 70.0, "lg_cpu": 55.0, "lag_p99": 0.08,
                             "waited": 0})
        self.assertEqual(list(res), result.FIELDS)
        self.assertEqual(res["saturation_rps"], 100000)
        self.assertEqual(res["req_per_cpu_sec"], 100000)
        self.assertEqual(res["loadgen_cpu_pct"], 55.0)
        self.assertEqual(res["send_lag_p99_ms"], 0.08)
        self.assertEqual(res["requests_waited_for_connection"], 0)
        self.assertEqual(res["validity"], {"saturated": True, "loadgen_bound": False, "probe_loadgen_bound": False,
                                           "sustain_loadgen_bound": False, "rate_held": True, "clean": True,
                                           "quiet": True, "stationary": None})
        self.assertEqual(res["flags"], [])
        self.assertEqual(res["server_rss_mb"], 10.0)

    def test_p99_per_interval_is_summed_up(self):
        b = Batch(self.tmp, "r")
        res = b.run("async-mem", "s1", probe={"rps": 100000},
                    sustain={"rps": 70000, "target": 70000, "server_cpu": 70.0, "p99": 48.9,
                             "intervals": [0.8, 48.9, None, 0.3, 0.5]})
        self.assertEqual(res["latency_p99_intervals"],
                         {"interval_s": 1.0, "intervals": 4, "median_ms": 0.65, "min_ms": 0.3, "max_ms": 48.9,
                          "p99_ms": [0.8, 48.9, None, 0.3, 0.5]})
        res = b.run("async-mem", "s2", probe={"rps": 100000}, sustain={"rps": 70000, "target": 70000})
        self.assertIsNone(res["latency_p99_intervals"])  # an older load generator: unknown

    def test_equal_load_table_shows_the_p99_per_interval(self):
        b = Batch(self.tmp, "r")
        b.scenario("s1", [100000] * 3, [100000] * 3, eq=(100000, 100000),
                   eq_actor={"intervals": [0.3, 0.4, 0.5, 30.0]}, eq_async={"intervals": [None, None]})
        b.scenario("s2", [100000] * 3, [100000] * 3, eq=(100000, 100000))
        b.summarize()
        with open(os.path.join(b.dir, "summary.md"), encoding="utf-8") as fh:
            text = fh.read()
        self.assertIn("| p99 per 1 s: median (min-max) |", text)
        eq = text[text.index("## Equal load"):]
        row = next(line for line in eq.splitlines() if line.startswith("| s1 | actor-mem | 70,000 |"))
        self.assertIn("| 0.450 (0.300-30.000) ms |", row)
        row = next(line for line in eq.splitlines() if line.startswith("| s1 | async-mem | 70,000 |"))
        self.assertIn("| n/a |", row)
        self.assertIn("p99 per 1 s: the p99 of each 1 s of the window, median (min-max)", text)

    def test_sustain_loadgen_bound_is_flagged_with_its_reason(self):
        b = Batch(self.tmp, "r")
        res = b.run("async-mem", "s1", probe={"rps": 100000},
                    sustain={"rps": 70000, "target": 70000, "server_cpu": 70.0, "lg_cpu": 97.6})
        self.assertTrue(res["validity"]["sustain_loadgen_bound"])
        self.assertTrue(res["validity"]["loadgen_bound"])
        self.assertIn("loadgen-bound", res["flags"])
        self.assertTrue(any("97.6%" in p["reason"] for p in res["problems"] if p["phase"] == "sustain"))

    def test_failed_run_keeps_every_field(self):
        b = Batch(self.tmp, "r")
        res = b.run("async-mem", "s1", failure="server died")
        self.assertEqual(list(res), result.FIELDS)
        self.assertEqual(res["failure"], "server died")
        self.assertEqual(res["flags"], ["failed"])


class TestAgents(unittest.TestCase):
    """Load from several hosts (LOADGEN_HOSTS): each agent judged on its own CPU count and lag."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def run_with_agents(self, agents, probe=None, sustain=None, n_lg=2):
        """A run whose phases came from AGENTS: [(cpu_count, cpu_pct, lag_p99, waited)] per agent,
        recorded the way runner/remote.sh and loadgen merge write them."""
        b = Batch(self.tmp, f"a{len(os.listdir(self.tmp))}")
        doc = b.run("async-mem", "s1", probe=probe, sustain=sustain)
        d = os.path.join(b.dir, doc["run"])
        with open(os.path.join(d, "facts.json"), encoding="utf-8") as fh:
            facts = json.load(fh)
        facts["config"]["loadgen_cpu_count"] = n_lg
        facts["loadgen_hosts"] = [{"destination": f"u@h{i}", "hostname": f"h{i}", "cores": c, "kernel": "6",
                                   "cpu_model": "X", "arch": "x86_64"} for i, (c, _, _, _) in enumerate(agents)]
        for phase, fname in (("probe", "probe.json"), ("sustain", "loadgen.json")):
            if phase not in facts["phases"]:
                continue
            ph = facts["phases"][phase]
            ph["start_at_unix_s"] = 1764547200.5
            ph["clock"] = [{"agent_index": i, "destination": f"u@h{i}", "offset_ms": 0.2 * (i + 1), "rtt_ms": 0.5,
                            "start_skew_ms": 0.2 * (i + 1) + 0.25, "bound_ms": 10} for i in range(len(agents))]
            ph["agents"] = []
            merged = json.load(open(os.path.join(d, fname), encoding="utf-8"))
            merged["agents"] = []
            share = merged["requests_completed"] // len(agents)
            for i, (cpus, pct, lag, waited) in enumerate(agents):
                own = f"loadgen-{phase}-agent{i}.json"
                with open(os.path.join(d, own), "w", encoding="utf-8") as fh:
                    json.dump({"requests_waited_for_connection": waited}, fh)
                ph["agents"].append({"agent_index": i, "destination": f"u@h{i}", "cpu_count": cpus, "threads": cpus,
                                     "connections": 16, "json": own, "exit": 0})
                merged["agents"].append({"agent_index": i, "agent_count": len(agents), "hostname": f"h{i}",
                                         "threads": cpus, "loadgen_cpu_pct": pct, "elapsed_s": 10.0,
                                         "requests_completed": share, "errors_total": 0,
                                         "send_lag_p99_ms": lag if phase == "sustain" else None,
                                         "send_lag_max_ms": lag if phase == "sustain" else None})
            merged["loadgen_cpu_pct"] = max(a[1] for a in agents)
            with open(os.path.join(d, fname), "w", encoding="utf-8") as fh:
                json.dump(merged, fh)
        with open(os.path.join(d, "facts.json"), "w", encoding="utf-8") as fh:
            json.dump(facts, fh)
        return result.write(d)

    def test_local_run_has_no_agents(self):
        b = Batch(self.tmp, "local")
        res = b.run("async-mem", "s1", sustain={"rps": 70000, "target": 70000, "server_cpu": 70.0})
        self.assertIsNone(res["loadgen_agents"])
        self.assertIsNone(res["loadgen_hosts"])

    def test_agents_listed_with_their_clock_and_cpu(self):
        res = self.run_with_agents([(2, 40.0, 0.1, 0), (2, 45.0, 0.2, 0)],
                                   sustain={"rps": 70000, "target": 70000, "server_cpu": 70.0})
        self.assertEqual(list(res), result.FIELDS)
        ags = res["loadgen_agents"]
        self.assertEqual([a["agent_index"] for a in ags], [0, 1])
        self.assertEqual([a["destination"] for a in ags], ["u@h0", "u@h1"])
        self.assertEqual([a["loadgen_cpu_pct"] for a in ags], [40.0, 45.0])
        self.assertEqual([a["clock_offset_ms"] for a in ags], [0.2, 0.4])
        self.assertEqual(ags[1]["start_skew_ms"], 0.65)
        self.assertEqual([a["loadgen_bound"] for a in ags], [False, False])
        self.assertEqual(len(res["loadgen_hosts"]), 2)
        self.assertFalse(res["validity"]["sustain_loadgen_bound"])

    def test_one_busy_agent_makes_the_phase_loadgen_bound(self):
        # 95% of its one CPU: bound, although the single-host rule (95 < 90 x 2 local CPUs) is not
        res = self.run_with_agents([(4, 60.0, 0.1, 0), (1, 95.0, 0.1, 0)],
                                   sustain={"rps": 70000, "target": 70000, "server_cpu": 70.0})
        self.assertEqual([a["loadgen_bound"] for a in res["loadgen_agents"]], [False, True])
        self.assertTrue(res["validity"]["sustain_loadgen_bound"])
        self.assertTrue(res["validity"]["loadgen_bound"])
        reason = next(p["reason"] for p in res["problems"] if p["flag"] == "loadgen-bound")
        self.assertIn("agent 1 (u@h1, h1) loadgen CPU 95.0% of 1 CPU(s)", reason)

    def test_each_agent_judged_on_its_own_cpu_count(self):
        # 150% of 4 CPUs is not bound, although 150 >= 90 x 1 would be for a one-CPU host
        res = self.run_with_agents([(4, 150.0, 0.1, 0), (4, 150.0, 0.1, 0)],
                                   sustain={"rps": 70000, "target": 70000, "server_cpu": 70.0}, n_lg=1)
        self.assertFalse(res["validity"]["sustain_loadgen_bound"])

    def test_agent_send_lag_unless_its_connections_were_busy(self):
        res = self.run_with_agents([(2, 30.0, 3.0, 0), (2, 30.0, 0.1, 0)],
                                   sustain={"rps": 70000, "target": 70000, "server_cpu": 70.0})
        self.assertTrue(res["loadgen_agents"][0]["loadgen_bound"])
        self.assertIn("send lag p99 3.000 ms > 1 ms",
                      next(p["reason"] for p in res["problems"] if p["flag"] == "loadgen-bound"))
        res = self.run_with_agents([(2, 30.0, 3.0, 20000), (2, 30.0, 0.1, 0)],
                                   sustain={"rps": 70000, "target": 70000, "server_cpu": 70.0})
        self.assertFalse(res["loadgen_agents"][0]["loadgen_bound"])
        self.assertFalse(res["validity"]["sustain_loadgen_bound"])

    def test_probe_agent_bound_only_when_the_server_is_not_saturated(self):
        res = self.run_with_agents([(1, 95.0, None, None), (1, 50.0, None, None)],
                                   probe={"rps": 100000, "server_cpu": 60.0})
        self.assertTrue(res["validity"]["probe_loadgen_bound"])
        self.assertEqual(len(res["probe"]["loadgen_agents"]), 2)
        self.assertIn("loadgen-bound", res["flags"])
        res = self.run_with_agents([(1, 95.0, None, None), (1, 50.0, None, None)],
                                   probe={"rps": 100000, "server_cpu": 95.0})
        self.assertFalse(res["validity"]["probe_loadgen_bound"])


class TestCompare(unittest.TestCase):
    def test_compare_words(self):
        words = compare.direction("saturation req/s", "higher", -7.1)
        self.assertEqual(words, "B is 7.1% slower than A (saturation req/s)")
        self.assertEqual(compare.direction("p99", "lower", 12.0), "B's p99 is 12.0% higher (worse) than A's")


if __name__ == "__main__":
    tap_unittest.main(__name__)
