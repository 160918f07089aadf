/* histogram: HDR-style log-linear histogram of non-negative integer values (the suite
 * records microseconds), mergeable, with percentile lookup, iteration over non-empty
 * buckets and the HdrHistogram text spectrum ("Value Percentile TotalCount
 * 1/(1-Percentile)" plus the #[Mean ...] footer).
 * Values outside [lowest, highest] are not dropped: they are counted apart
 * (histogram_out_of_range) and also clamped into the end buckets, so max/percentiles
 * stay honest about "at least highest".
 * One writer thread per histogram. Counts are stored with relaxed atomic stores, so
 * another thread may read (merge, percentile) concurrently and see a slightly stale
 * but never torn value. Not for multiple concurrent writers. */
#ifndef COMMON_HISTOGRAM_H
#define COMMON_HISTOGRAM_H

#include <stdint.h>
#include <stdio.h>

struct histogram;

/* Creates a histogram covering [lowest, highest] (lowest >= 1) with `sig_figs`
 * significant decimal digits (1..5). Returns NULL on bad arguments; aborts on OOM.
 * Caller frees with histogram_free. */
struct histogram *histogram_new(uint64_t lowest, uint64_t highest, int sig_figs);
void histogram_free(struct histogram *h);

/* Records one value (or `count` of them). Writer thread only. */
void histogram_record(struct histogram *h, uint64_t value);
void histogram_record_n(struct histogram *h, uint64_t value, uint64_t count);
/* Zeroes every count. Writer thread only. */
void histogram_reset(struct histogram *h);

/* Adds src's counts into dst. Both must have been created with identical arguments:
 * returns 0, or -EINVAL when the layouts differ (dst unchanged). dst's writer thread. */
int histogram_merge(struct histogram *dst, const struct histogram *src);

uint64_t histogram_total(const struct histogram *h);        /* all values recorded */
uint64_t histogram_out_of_range(const struct histogram *h); /* below lowest or above highest */
uint64_t histogram_min(const struct histogram *h);          /* 0 when empty */
uint64_t histogram_max(const struct histogram *h);          /* 0 when empty */
double histogram_mean(const struct histogram *h);
double histogram_stddev(const struct histogram *h);

/* Value at percentile p in [0, 100]: the highest value equivalent (within the
 * histogram's precision) to the smallest recorded value v such that at least p% of
 * values are <= v. 0 when empty. p = 100 gives the max. */
uint64_t histogram_percentile(const struct histogram *h, double p);

/* Calls fn(upper, count, ctx) for each non-empty bucket in increasing order, where
 * `upper` is the highest value equivalent to that bucket's values. */
void histogram_foreach(const struct histogram *h,
                       void (*fn)(uint64_t upper, uint64_t count, void *ctx), void *ctx);

/* ---- lossless export and import (e.g. one histogram per load-generator agent) ----
 * Export: histogram_layout, the totals below and histogram_foreach's (value, count)
 * pairs. Import into a histogram created with the same layout: histogram_add_bucket for
 * every pair, then histogram_add_summary once. The result, alone or merged with others,
 * equals the exported histogram (merge) exactly: counts, total, min, max, sum. */

/* The arguments h was created with. */
void histogram_layout(const struct histogram *h, uint64_t *lowest, uint64_t *highest,
                      int *sig_figs);
/* Sum of the (clamped) values recorded: mean = sum / total. */
uint64_t histogram_sum(const struct histogram *h);
/* Adds `count` to the bucket holding `value` (any value of that bucket, e.g. the upper
 * value histogram_foreach gives) and to the total; min, max, sum and out_of_range are
 * left to histogram_add_summary. Returns 0, or -ERANGE when value lies beyond the
 * highest bucket. Writer thread only. */
int histogram_add_bucket(struct histogram *h, uint64_t value, uint64_t count);
/* Folds an exported histogram's min and max in and adds its sum and out_of_range (call
 * only for a non-empty export). Returns 0, or -EINVAL when min > max. Writer thread. */
int histogram_add_summary(struct histogram *h, uint64_t min, uint64_t max, uint64_t sum,
                          uint64_t out_of_range);

/* Writes the percentile spectrum in the HdrHistogram text format, values divided by
 * `value_scale` (e.g. 1000.0 to print microseconds as milliseconds), with
 * `ticks_per_half` steps per halving distance (5 is HdrHistogram's default).
 * Returns 0 or -EIO. */
int histogram_write_hgrm(const struct histogram *h, FILE *out, double value_scale,
                         int ticks_per_half);

#endif
