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

/* Writes the percentile spectrum in the HdrHistogram text format, values divided by
 * `value_scale` (e.g. 1000.0 to print microseconds as milliseconds), with
 * `ticks_per_half` steps per halving distance (5 is HdrHistogram's default).
 * Returns 0 or -EIO. */
int histogram_write_hgrm(const struct histogram *h, FILE *out, double value_scale,
                         int ticks_per_half);

#endif
