/* histogram: HdrHistogram's log-linear layout (2^k sub-buckets per power of two, the
 * bucket picked by the value's leading bit), recorded without division, floating point,
 * loops or locked instructions. Not a multi-writer histogram: one writer per instance.
 * Invariant: every count, total, min, max and sum is written by its writer only, with
 * relaxed atomic stores; readers use relaxed atomic loads and may see a stale value. */
#include "histogram.h"

#include "atomics.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

/* Layout (names as in HdrHistogram): counts index = (bucket << half_count_magnitude)
 * + sub_bucket, where bucket 0 holds sub-buckets [0, sub_bucket_count) and every later
 * bucket only its upper half [sub_bucket_half_count, sub_bucket_count), each of width
 * 2^(bucket + unit_magnitude). Out-of-range values are clamped to [lowest, highest]
 * before indexing, so min, max and sum are of the clamped values too. */
struct histogram {
    uint64_t lowest;
    uint64_t highest;
    int sig_figs;
    int unit_magnitude;              /* floor(log2(lowest)) */
    int sub_bucket_half_count_magnitude;
    uint64_t sub_bucket_count;       /* 2^(half_count_magnitude + 1) */
    uint64_t sub_bucket_half_count;
    uint64_t sub_bucket_mask;        /* (sub_bucket_count - 1) << unit_magnitude */
    int bucket_count;
    size_t counts_len;

    /* Written by the writer thread only, relaxed atomics throughout. */
    uint64_t total;
    uint64_t out_of_range;
    uint64_t min; /* UINT64_MAX while empty */
    uint64_t max;
    uint64_t sum;
    uint64_t counts[];
};


static int floor_log2(uint64_t v)
{
    return 63 - __builtin_clzll(v);
}

static int buckets_needed(uint64_t value, uint64_t sub_bucket_count, int unit_magnitude)
{
    uint64_t smallest_untrackable = sub_bucket_count << unit_magnitude;
    int needed = 1;
    while (smallest_untrackable <= value) {
        if (smallest_untrackable > (uint64_t)INT64_MAX / 2)
            return needed + 1;
        smallest_untrackable <<= 1;
        needed++;
    }
    return needed;
}

struct histogram *histogram_new(uint64_t lowest, uint64_t highest, int sig_figs)
{
    if (lowest < 1 || sig_figs < 1 || sig_figs > 5 || highest > (uint64_t)INT64_MAX ||
        highest / 2 < lowest)
        return NULL;

    uint64_t single_unit_resolution = 2;
    for (int i = 0; i < sig_figs; i++)
        single_unit_resolution *= 10;
    /* ceil(log2(2 * 10^sig_figs)) */
    int count_magnitude = floor_log2(single_unit_resolution);
    if ((1ULL << count_magnitude) < single_unit_resolution)
        count_magnitude++;
    int half_magnitude = (count_magnitude > 1 ? count_magnitude : 1) - 1;
    int unit_magnitude = floor_log2(lowest);
    if (unit_magnitude + half_magnitude > 61)
        return NULL;

    uint64_t sub_bucket_count = 1ULL << (half_magnitude + 1);
    int bucket_count = buckets_needed(highest, sub_bucket_count, unit_magnitude);
    size_t counts_len = (size_t)(bucket_count + 1) * (size_t)(sub_bucket_count / 2);

    struct histogram *h = xcalloc(1, sizeof(*h) + counts_len * sizeof(uint64_t));
    h->lowest = lowest;
    h->highest = highest;
    h->sig_figs = sig_figs;
    h->unit_magnitude = unit_magnitude;
    h->sub_bucket_half_count_magnitude = half_magnitude;
    h->sub_bucket_count = sub_bucket_count;
    h->sub_bucket_half_count = sub_bucket_count / 2;
    h->sub_bucket_mask = (sub_bucket_count - 1) << unit_magnitude;
    h->bucket_count = bucket_count;
    h->counts_len = counts_len;
    h->min = UINT64_MAX;
    return h;
}

void histogram_free(struct histogram *h)
{
    free(h);
}

/* v must be in [lowest, highest] (then the index is < counts_len by construction). */
static inline size_t counts_index(const struct histogram *h, uint64_t v)
{
    int pow2ceiling = 64 - __builtin_clzll(v | h->sub_bucket_mask);
    int bucket = pow2ceiling - h->unit_magnitude - (h->sub_bucket_half_count_magnitude + 1);
    uint64_t sub_bucket = v >> (bucket + h->unit_magnitude);
    return ((size_t)bucket << h->sub_bucket_half_count_magnitude) + (size_t)sub_bucket;
}

/* Smallest value counted at index i, and the width of its range. */
static void index_range(const struct histogram *h, size_t i, uint64_t *lowest_out,
                        uint64_t *width_out)
{
    int bucket = (int)(i >> h->sub_bucket_half_count_magnitude) - 1;
    uint64_t sub_bucket = (i & (h->sub_bucket_half_count - 1)) + h->sub_bucket_half_count;
    if (bucket < 0) {
        sub_bucket -= h->sub_bucket_half_count;
        bucket = 0;
    }
    *lowest_out = sub_bucket << (bucket + h->unit_magnitude);
    *width_out = 1ULL << (bucket + h->unit_magnitude);
}

static uint64_t index_highest_equivalent(const struct histogram *h, size_t i)
{
    uint64_t lo, width;
    index_range(h, i, &lo, &width);
    return lo + width - 1;
}

void histogram_record_n(struct histogram *h, uint64_t value, uint64_t count)
{
    if (count == 0)
        return;
    if (value < h->lowest || value > h->highest) {
        atomics_add64_one_writer(&h->out_of_range, count);
        value = value < h->lowest ? h->lowest : h->highest;
    }
    atomics_add64_one_writer(&h->counts[counts_index(h, value)], count);
    atomics_add64_one_writer(&h->total, count);
    atomics_add64_one_writer(&h->sum, value * count);
    if (value < atomics_load64_relaxed(&h->min))
        atomics_store64_relaxed(&h->min, value);
    if (value > atomics_load64_relaxed(&h->max))
        atomics_store64_relaxed(&h->max, value);
}

void histogram_record(struct histogram *h, uint64_t value)
{
    histogram_record_n(h, value, 1);
}

void histogram_reset(struct histogram *h)
{
    for (size_t i = 0; i < h->counts_len; i++)
        atomics_store64_relaxed(&h->counts[i], 0);
    atomics_store64_relaxed(&h->total, 0);
    atomics_store64_relaxed(&h->out_of_range, 0);
    atomics_store64_relaxed(&h->sum, 0);
    atomics_store64_relaxed(&h->min, UINT64_MAX);
    atomics_store64_relaxed(&h->max, 0);
}

int histogram_merge(struct histogram *dst, const struct histogram *src)
{
    if (dst->lowest != src->lowest || dst->highest != src->highest ||
        dst->sig_figs != src->sig_figs)
        return -EINVAL;
    /* dst's total grows by what was actually read, so dst stays self-consistent even
     * while src's writer keeps recording. */
    uint64_t added = 0;
    for (size_t i = 0; i < src->counts_len; i++) {
        uint64_t c = atomics_load64_relaxed(&src->counts[i]);
        if (c == 0)
            continue;
        atomics_add64_one_writer(&dst->counts[i], c);
        added += c;
    }
    atomics_add64_one_writer(&dst->total, added);
    atomics_add64_one_writer(&dst->out_of_range, atomics_load64_relaxed(&src->out_of_range));
    atomics_add64_one_writer(&dst->sum, atomics_load64_relaxed(&src->sum));
    uint64_t src_min = atomics_load64_relaxed(&src->min);
    uint64_t src_max = atomics_load64_relaxed(&src->max);
    if (src_min < atomics_load64_relaxed(&dst->min))
        atomics_store64_relaxed(&dst->min, src_min);
    if (src_max > atomics_load64_relaxed(&dst->max))
        atomics_store64_relaxed(&dst->max, src_max);
    return 0;
}

void histogram_layout(const struct histogram *h, uint64_t *lowest, uint64_t *highest,
                      int *sig_figs)
{
    *lowest = h->lowest;
    *highest = h->highest;
    *sig_figs = h->sig_figs;
}

uint64_t histogram_sum(const struct histogram *h)
{
    return atomics_load64_relaxed(&h->sum);
}

int histogram_add_bucket(struct histogram *h, uint64_t value, uint64_t count)
{
    if (value > index_highest_equivalent(h, h->counts_len - 1))
        return -ERANGE;
    if (count == 0)
        return 0;
    size_t i = counts_index(h, value);
    if (i >= h->counts_len)
        return -ERANGE;
    atomics_add64_one_writer(&h->counts[i], count);
    atomics_add64_one_writer(&h->total, count);
    return 0;
}

int histogram_add_summary(struct histogram *h, uint64_t min, uint64_t max, uint64_t sum,
                          uint64_t out_of_range)
{
    if (min > max)
        return -EINVAL;
    atomics_add64_one_writer(&h->sum, sum);
    atomics_add64_one_writer(&h->out_of_range, out_of_range);
    if (min < atomics_load64_relaxed(&h->min))
        atomics_store64_relaxed(&h->min, min);
    if (max > atomics_load64_relaxed(&h->max))
        atomics_store64_relaxed(&h->max, max);
    return 0;
}

uint64_t histogram_total(const struct histogram *h)
{
    return atomics_load64_relaxed(&h->total);
}

uint64_t histogram_out_of_range(const struct histogram *h)
{
    return atomics_load64_relaxed(&h->out_of_range);
}

uint64_t histogram_min(const struct histogram *h)
{
    uint64_t v = atomics_load64_relaxed(&h->min);
    return v == UINT64_MAX ? 0 : v;
}

uint64_t histogram_max(const struct histogram *h)
{
    return atomics_load64_relaxed(&h->max);
}

/* Exact: the sum of the (clamped) values over their count. */
double histogram_mean(const struct histogram *h)
{
    uint64_t total = atomics_load64_relaxed(&h->total);
    if (total == 0)
        return 0.0;
    return (double)atomics_load64_relaxed(&h->sum) / (double)total;
}

/* Population standard deviation from the buckets, each value taken at its bucket's
 * middle (HdrHistogram's medianEquivalentValue), around the exact mean. */
double histogram_stddev(const struct histogram *h)
{
    double mean = histogram_mean(h);
    double dev_total = 0.0;
    uint64_t n = 0;
    for (size_t i = 0; i < h->counts_len; i++) {
        uint64_t c = atomics_load64_relaxed(&h->counts[i]);
        if (c == 0)
            continue;
        uint64_t lo, width;
        index_range(h, i, &lo, &width);
        double d = (double)(lo + width / 2) - mean;
        dev_total += d * d * (double)c;
        n += c;
    }
    return n ? sqrt(dev_total / (double)n) : 0.0;
}

/* The bucket's highest equivalent value, but never above the recorded max (so that
 * p100 is the max and no percentile exceeds it). */
static uint64_t reported_value(const struct histogram *h, size_t i, uint64_t max)
{
    uint64_t v = index_highest_equivalent(h, i);
    return v < max ? v : max;
}

uint64_t histogram_percentile(const struct histogram *h, double p)
{
    uint64_t total = atomics_load64_relaxed(&h->total);
    uint64_t max = atomics_load64_relaxed(&h->max);
    if (total == 0)
        return 0;
    if (!(p > 0.0))
        p = 0.0; /* also NaN */
    if (p > 100.0)
        p = 100.0;
    /* rank = ceil(p% of total); the tiny relative slack keeps 99.9% of 100000 from
     * becoming 99901 through rounding. */
    double want = p / 100.0 * (double)total;
    double rank_f = ceil(want - want * 1e-12);
    uint64_t rank = rank_f < 1.0 ? 1 : (uint64_t)rank_f;
    if (rank > total)
        rank = total;
    uint64_t cum = 0;
    for (size_t i = 0; i < h->counts_len; i++) {
        cum += atomics_load64_relaxed(&h->counts[i]);
        if (cum >= rank)
            return reported_value(h, i, max);
    }
    return max; /* only after a concurrent reset */
}

void histogram_foreach(const struct histogram *h,
                       void (*fn)(uint64_t upper, uint64_t count, void *ctx), void *ctx)
{
    for (size_t i = 0; i < h->counts_len; i++) {
        uint64_t c = atomics_load64_relaxed(&h->counts[i]);
        if (c != 0)
            fn(index_highest_equivalent(h, i), c, ctx);
    }
}

/* HdrHistogram's PercentileIterator step: `ticks` equal steps per half of the remaining
 * distance to 100%. Returns 100.0 once doubles cannot make progress any more. */
static double hgrm_next_level(double level, int ticks)
{
    double halvings = floor(log(100.0 / (100.0 - level)) / log(2.0));
    if (!(halvings < 62.0))
        return 100.0;
    double next = level + 100.0 / ((double)ticks * pow(2.0, halvings + 1.0));
    return next > level ? next : 100.0;
}

/* Mirrors AbstractHistogram.outputPercentileDistribution (plain-text flavour): a row
 * each time the cumulative percentile reaches the next level, one row for the bucket
 * that completes the count, then the 100% row without the 1/(1-p) column. */
int histogram_write_hgrm(const struct histogram *h, FILE *out, double value_scale,
                         int ticks_per_half)
{
    if (!(value_scale > 0.0))
        value_scale = 1.0;
    if (ticks_per_half < 1)
        ticks_per_half = 5;
    int prec = h->sig_figs;

    /* Snapshot so that the rows and the footer agree even while the writer records. */
    uint64_t *snap = xmalloc(h->counts_len * sizeof(uint64_t));
    uint64_t total = 0;
    for (size_t i = 0; i < h->counts_len; i++) {
        snap[i] = atomics_load64_relaxed(&h->counts[i]);
        total += snap[i];
    }
    uint64_t max = atomics_load64_relaxed(&h->max);

    fprintf(out, "%12s %14s %10s %14s\n\n", "Value", "Percentile", "TotalCount",
            "1/(1-Percentile)");
    double level = 0.0;
    uint64_t cum = 0, last_value = 0;
    for (size_t i = 0; i < h->counts_len && cum < total; i++) {
        if (snap[i] == 0)
            continue;
        cum += snap[i];
        last_value = reported_value(h, i, max);
        while (level < 100.0 && 100.0 * (double)cum / (double)total >= level) {
            fprintf(out, "%12.*f %2.12f %10llu %14.2f\n", prec,
                    (double)last_value / value_scale, level / 100.0,
                    (unsigned long long)cum, 1.0 / (1.0 - level / 100.0));
            level = hgrm_next_level(level, ticks_per_half);
            if (cum >= total)
                break;
        }
    }
    if (total > 0)
        fprintf(out, "%12.*f %2.12f %10llu\n", prec, (double)last_value / value_scale, 1.0,
                (unsigned long long)total);
    free(snap);

    fprintf(out, "#[Mean    = %12.*f, StdDeviation   = %12.*f]\n", prec,
            histogram_mean(h) / value_scale, prec, histogram_stddev(h) / value_scale);
    fprintf(out, "#[Max     = %12.*f, Total count    = %12llu]\n", prec,
            (double)max / value_scale, (unsigned long long)total);
    fprintf(out, "#[Buckets = %12d, SubBuckets     = %12llu]\n", h->bucket_count,
            (unsigned long long)h->sub_bucket_count);
    if (fflush(out) != 0 || ferror(out))
        return -EIO;
    return 0;
}
