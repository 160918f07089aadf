#!/usr/bin/env python3
"""test_stats.py: unit tests of runner/analysis/stats.py (TAP): Student t quantiles against
published table values and the closed forms of 1 and 2 degrees of freedom, the ratio
interval against one worked by hand, the edges (one pair, no pair, equal ratios, bad input),
how a verdict reads an interval against the target, and the noise figure.
Runs no benchmark and writes no file.
"""
import math
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "runner"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from analysis import stats  # noqa: E402
import tap_unittest  # noqa: E402


class TestT(unittest.TestCase):
    # Two-sided 95% (p = 0.975) and 99% (p = 0.995) quantiles as printed in standard tables
    # (e.g. NIST/SEMATECH e-Handbook, table 1.3.6.7.2), 3 decimals.
    TABLE = {(0.975, 1): 12.706, (0.975, 2): 4.303, (0.975, 3): 3.182, (0.975, 5): 2.571,
             (0.975, 10): 2.228, (0.975, 30): 2.042, (0.975, 100): 1.984,
             (0.995, 5): 4.032, (0.95, 3): 2.353, (0.9, 1): 3.078}

    def test_quantiles_match_the_published_table(self):
        for (p, df), want in self.TABLE.items():
            got = stats.t_quantile(p, df)
            self.assertAlmostEqual(got, want, delta=0.0006, msg=f"t({p}, df={df}) = {got}, table {want}")

    def test_df1_is_the_cauchy_quantile_and_df2_its_closed_form(self):
        for p in (0.55, 0.8, 0.9, 0.975, 0.999):
            cauchy = math.tan(math.pi * (p - 0.5))
            self.assertAlmostEqual(stats.t_quantile(p, 1), cauchy, delta=1e-8 * max(1.0, cauchy))
            self.assertAlmostEqual(stats.t_quantile(p, 2), (2 * p - 1) / math.sqrt(2 * p * (1 - p)), delta=1e-8)

    def test_large_df_tends_to_the_normal_quantile(self):
        self.assertAlmostEqual(stats.t_quantile(0.975, 1e6), 1.959964, delta=2e-5)

    def test_symmetry_median_and_cdf_round_trip(self):
        self.assertEqual(stats.t_quantile(0.5, 7), 0.0)
        self.assertAlmostEqual(stats.t_quantile(0.025, 5), -stats.t_quantile(0.975, 5), delta=1e-12)
        for df in (1, 2, 4, 9, 29):
            for p in (0.6, 0.95, 0.995):
                self.assertAlmostEqual(stats.t_cdf(stats.t_quantile(p, df), df), p, delta=1e-10)

    def test_bad_arguments_raise(self):
        for p, df in ((0, 5), (1, 5), (-0.1, 5), (0.975, 0), (0.975, -1)):
            with self.assertRaises(ValueError, msg=f"p={p} df={df}"):
                stats.t_quantile(p, df)


class TestRatioInterval(unittest.TestCase):
    def test_three_pairs_worked_by_hand(self):
        # pairs 0.761, 1.156, 1.118 (issue 29's s1 pairs). ln: -0.273122, 0.144966, 0.111541;
        # mean -0.005538, sample sd 0.232336, se = sd / sqrt(3) = 0.134139;
        # half width = t(0.975, 2) 4.302653 x 0.134139 = 0.577154;
        # exp(-0.005538) = 0.99448, exp(-0.582692) = 0.55839, exp(0.571616) = 1.77113.
        iv = stats.ratio_interval([0.761, 1.156, 1.118])
        self.assertAlmostEqual(iv["center"], 0.99448, delta=5e-5)
        self.assertAlmostEqual(iv["low"], 0.55839, delta=5e-5)
        self.assertAlmostEqual(iv["high"], 1.77113, delta=5e-5)
        self.assertEqual((iv["n"], iv["df"], iv["level"], iv["note"]), (3, 2, 0.95, None))
        self.assertEqual(iv["method"], stats.METHOD)

    def test_symmetric_in_log_scale(self):
        # 0.5 and 2 are as far from 1 on either side: centre 1, low x high = 1
        iv = stats.ratio_interval([0.5, 2.0])
        self.assertAlmostEqual(iv["center"], 1.0, delta=1e-12)
        self.assertAlmostEqual(iv["low"] * iv["high"], 1.0, delta=1e-9)
        # sd of (-ln 2, ln 2) = sqrt(2) ln 2, se = ln 2, half = 12.7062 ln 2 = 8.8072
        self.assertAlmostEqual(math.log(iv["high"]), 12.706205 * math.log(2), delta=1e-5)

    def test_a_lower_level_gives_a_narrower_interval(self):
        r = [0.9, 1.0, 1.05, 0.97]
        wide, narrow = stats.ratio_interval(r, 0.99), stats.ratio_interval(r, 0.9)
        self.assertLess(wide["low"], narrow["low"])
        self.assertGreater(wide["high"], narrow["high"])
        self.assertEqual(narrow["level"], 0.9)

    def test_more_pairs_of_the_same_spread_narrow_it(self):
        few = stats.ratio_interval([0.9, 1.1])
        many = stats.ratio_interval([0.9, 1.1] * 5)
        self.assertLess(many["high"] / many["low"], few["high"] / few["low"])
        self.assertLess(many["high"] / many["low"], 1.2)

    def test_equal_ratios_give_a_point(self):
        iv = stats.ratio_interval([0.8, 0.8, 0.8])
        self.assertAlmostEqual(iv["low"], 0.8, delta=1e-12)
        self.assertAlmostEqual(iv["high"], 0.8, delta=1e-12)

    def test_one_pair_has_a_centre_and_no_bounds_and_says_so(self):
        iv = stats.ratio_interval([0.7])
        self.assertEqual((iv["center"], iv["low"], iv["high"], iv["n"]), (0.7, None, None, 1))
        self.assertIn("no interval", iv["note"])

    def test_no_pair(self):
        iv = stats.ratio_interval([])
        self.assertEqual((iv["center"], iv["low"], iv["high"], iv["n"]), (None, None, None, 0))
        self.assertIn("no valid pair", iv["note"])

    def test_ratios_without_a_log_are_left_out_and_counted(self):
        # a ratio of 0, a negative one, a missing one, NaN, a boolean: none has a log
        for bad in ([0.9, 1.1, 0.0], [0.9, 1.1, -2.0], [0.9, None, 1.1], [float("nan"), 0.9, 1.1], [True, 0.9, 1.1]):
            iv = stats.ratio_interval(bad)
            self.assertEqual(iv["n"], 2, repr(bad))
            self.assertEqual((iv["low"], iv["high"]), (stats.ratio_interval([0.9, 1.1])["low"],
                                                        stats.ratio_interval([0.9, 1.1])["high"]), repr(bad))
            self.assertEqual(iv["note"], "1 ratio not a number > 0 left out", repr(bad))
        self.assertIn("no valid pair", stats.ratio_interval([0.0])["note"])

    def test_a_level_outside_0_1_raises(self):
        for lvl in (0, 1, 1.5, None):
            with self.assertRaises(ValueError):
                stats.ratio_interval([1.0, 1.1], lvl)


class TestAgainstTarget(unittest.TestCase):
    def iv(self, low, high, n=3):
        return {"center": (low * high) ** 0.5, "low": low, "high": high, "level": 0.95, "n": n}

    def test_pass_when_the_lower_bound_reaches_the_target(self):
        self.assertEqual(stats.against_target(self.iv(0.5, 0.7), 0.5)[0], "PASS")
        word, why = stats.against_target(self.iv(0.93, 1.03), 0.5)
        self.assertEqual(word, "PASS")
        self.assertIn("(0.93-1.03)", why)

    def test_fail_when_the_upper_bound_is_below(self):
        word, why = stats.against_target(self.iv(0.3, 0.49), 0.5)
        self.assertEqual(word, "FAIL")
        self.assertIn("below the target 0.5", why)

    def test_inconclusive_when_the_interval_crosses_the_target(self):
        word, why = stats.against_target(self.iv(0.41, 0.63), 0.5)
        self.assertEqual(word, "INCONCLUSIVE")
        self.assertEqual(why, "the 95% interval (0.41-0.63) crosses the target 0.5: run more pairs (--repeats)")

    def test_a_bound_next_to_the_target_gets_a_third_decimal(self):
        word, why = stats.against_target(self.iv(0.498, 0.7), 0.5)
        self.assertEqual(word, "INCONCLUSIVE")
        self.assertIn("(0.498-0.70)", why)

    def test_no_interval_is_inconclusive(self):
        word, why = stats.against_target(stats.ratio_interval([0.9]), 0.5)
        self.assertEqual(word, "INCONCLUSIVE")
        self.assertIn("1 valid pair", why)
        self.assertIn("--repeats", why)


class TestNoise(unittest.TestCase):
    def test_spread_over_the_median(self):
        self.assertAlmostEqual(stats.noise([100, 110, 90]), 0.2, delta=1e-12)
        self.assertAlmostEqual(stats.noise([80_000, 100_000]), 20_000 / 90_000, delta=1e-12)

    def test_fewer_than_two_figures_is_none_and_non_numbers_are_left_out(self):
        self.assertIsNone(stats.noise([]))
        self.assertIsNone(stats.noise([5.0]))
        self.assertIsNone(stats.noise([5.0, None]))
        self.assertAlmostEqual(stats.noise([10, None, 12]), 2 / 11, delta=1e-12)
        self.assertIsNone(stats.noise([0, 0]))


if __name__ == "__main__":
    tap_unittest.main(__name__)
