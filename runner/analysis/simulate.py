"""simulate: batches of paired runs drawn from a stated model of a shared host, to check what
an interval method claims (issue 35: a 95% interval should hold the truth in 93-97% of
batches). Deterministic for a seed; pure Python, no I/O. Not used by a batch; the test
tests/test_calibration.py and SPEC.md section 9 cite it.

The model, in log throughput (0.05 = about 5%):
- each batch: an offset of the ratio, N(0, BETWEEN_SD) (the host's state that one batch sees,
  e.g. how slow cross-CPU wake-ups are that day, which the two servers feel differently);
- each round: a drift of the host between the first and the second run of the round,
  N(TREND, DRIFT_SD), counted against the server that ran second (balanced order: the
  candidate runs second in every other round, ABBA);
- each run: noise N(0, PAIR_SD / sqrt 2) and, with probability SLOW_P, a slow host that takes
  SLOW_LOG off that run only (a slow round seen by one server of the pair).
"""
import math
import random

from . import stats

MODEL = {"between_sd": 0.03, "trend": 0.02, "drift_sd": 0.03, "pair_sd": 0.05, "slow_p": 0.05, "slow_log": 0.15}


def batch(rng, n, true_ratio=1.0, model=None, balanced=True):
    """N pair ratios of one simulated batch (RNG a random.Random)."""
    m = dict(MODEL, **(model or {}))
    offset = rng.gauss(0.0, m["between_sd"])
    out = []
    for rnd in range(n):
        drift = rng.gauss(m["trend"], m["drift_sd"])
        cand_second = (rnd % 2 == 1) if balanced else True
        logs = []
        for second in (cand_second, not cand_second):
            x = rng.gauss(0.0, m["pair_sd"] / math.sqrt(2))
            if second:
                x -= drift
            if rng.random() < m["slow_p"]:
                x -= m["slow_log"]
            logs.append(x)
        out.append(true_ratio * math.exp(offset + logs[0] - logs[1]))
    return out


def coverage(n, trials=1000, seed=35, true_ratio=0.8, calib_batches=6, calib_pairs=8, model=None,
             balanced=True, method="calibrated"):
    """The share of TRIALS simulated batches of N pairs whose interval holds TRUE_RATIO, and
    the median width (high / low). Each trial draws its own calibration (CALIB_BATCHES A/A
    batches of CALIB_PAIRS pairs, true ratio 1, same model) for METHOD "calibrated"; METHOD
    "pairs" is the pairs-only t-interval. Returns {"n", "coverage", "median_width", "trials"}."""
    rng = random.Random(f"{seed}/{n}/{method}/{balanced}")
    hits, widths = 0, []
    for _ in range(trials):
        floor = None
        if method == "calibrated":
            floor = stats.floor_from_batches([batch(rng, calib_pairs, 1.0, model, balanced)
                                              for _ in range(calib_batches)])
        ratios = batch(rng, n, true_ratio, model, balanced)
        ci = stats.calibrated_interval(ratios, floor)
        if ci["low"] is None:
            continue
        hits += ci["low"] <= true_ratio <= ci["high"]
        widths.append(ci["high"] / ci["low"])
    widths.sort()
    return {"n": n, "coverage": hits / trials, "median_width": widths[len(widths) // 2] if widths else None,
            "trials": trials}
