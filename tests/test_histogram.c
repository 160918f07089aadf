/* test_histogram: the HDR histogram against a sorted-array oracle (uniform, exponential,
 * bimodal data), merge, out-of-range clamping, iteration order, and the HdrHistogram
 * percentile text format (exact golden text plus a parse of a large spectrum).
 * Deterministic (fixed-seed generator); runs in well under a second. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/atomics.h"
#include "common/base/histogram.h"
#include "common/base/util.h"

#define LOWEST_US 1ULL
#define HIGHEST_US 60000000ULL
#define N_VALUES 100000

/* Fails with both values shown when |a - b| > tol. */
#define assert_close(a, b, tol)                                                            \
    do {                                                                                   \
        double a_ = (a), b_ = (b), t_ = (tol);                                             \
        if (!(fabs(a_ - b_) <= t_))                                                        \
            fail_msg("%s = %.9g, %s = %.9g, differ by more than %.9g", #a, a_, #b, b_, t_); \
    } while (0)

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double unit_random(uint64_t *state) /* [0, 1) */
{
    return (double)(splitmix64(state) >> 11) * 0x1.0p-53;
}

enum dist { DIST_UNIFORM, DIST_EXPONENTIAL, DIST_BIMODAL };

static void generate(enum dist d, uint64_t seed, uint64_t *out, size_t n)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        switch (d) {
        case DIST_UNIFORM:
            out[i] = 1 + splitmix64(&s) % 10000000ULL;
            break;
        case DIST_EXPONENTIAL:
            out[i] = 1 + (uint64_t)(-2000.0 * log1p(-unit_random(&s)));
            break;
        case DIST_BIMODAL: /* fast path around 300 us, 5% stalls of 40-60 ms */
            if (splitmix64(&s) % 100 < 95)
                out[i] = 200 + splitmix64(&s) % 201;
            else
                out[i] = 40000 + splitmix64(&s) % 20001;
            break;
        }
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The smallest v with at least p% of values <= v; p in hundredths of a percent. */
static uint64_t oracle_percentile(const uint64_t *sorted, size_t n, uint64_t p_centi)
{
    uint64_t rank = (p_centi * n + 9999) / 10000;
    if (rank < 1)
        rank = 1;
    return sorted[rank - 1];
}

static const uint64_t percentiles_centi[] = {0, 5000, 7500, 9000, 9900, 9990, 9999, 10000};

static void check_against_oracle(enum dist d, uint64_t seed, int sig_figs, uint64_t rel_div)
{
    uint64_t *vals = xmalloc(N_VALUES * sizeof(uint64_t));
    generate(d, seed, vals, N_VALUES);
    struct histogram *h = histogram_new(LOWEST_US, HIGHEST_US, sig_figs);
    assert_non_null(h);
    double sum = 0.0, sumsq = 0.0;
    for (size_t i = 0; i < N_VALUES; i++) {
        histogram_record(h, vals[i]);
        sum += (double)vals[i];
        sumsq += (double)vals[i] * (double)vals[i];
    }
    qsort(vals, N_VALUES, sizeof(uint64_t), cmp_u64);

    assert_int_equal(histogram_total(h), N_VALUES);
    assert_int_equal(histogram_out_of_range(h), 0);
    assert_int_equal(histogram_min(h), vals[0]);
    assert_int_equal(histogram_max(h), vals[N_VALUES - 1]);
    for (size_t i = 0; i < ARRAY_LEN(percentiles_centi); i++) {
        uint64_t want = oracle_percentile(vals, N_VALUES, percentiles_centi[i]);
        uint64_t got = histogram_percentile(h, (double)percentiles_centi[i] / 100.0);
        /* highest equivalent value: never below the oracle, at most one bucket above */
        assert_in_range(got, want, want + want / rel_div);
    }

    double mean = sum / N_VALUES;
    double var = sumsq / N_VALUES - mean * mean;
    double rms = sqrt(sumsq / N_VALUES);
    assert_close(histogram_mean(h), mean, mean * 1e-9);
    /* bucket midpoints are off by at most half a bucket (value / (2 * rel_div)), and
     * those errors mostly cancel: observed < rms / (14 * rel_div) on these data sets,
     * while taking each bucket's floor instead shows > rms / (6 * rel_div). */
    assert_close(histogram_stddev(h), sqrt(var), rms / (8.0 * (double)rel_div));
    histogram_free(h);
    free(vals);
}

static void test_percentiles_uniform(void **state)
{
    check_against_oracle(DIST_UNIFORM, 1, 3, 1000);
}

static void test_percentiles_exponential(void **state)
{
    check_against_oracle(DIST_EXPONENTIAL, 2, 3, 1000);
}

static void test_percentiles_bimodal(void **state)
{
    check_against_oracle(DIST_BIMODAL, 3, 3, 1000);
}

static void test_percentiles_two_sig_figs(void **state)
{
    check_against_oracle(DIST_EXPONENTIAL, 4, 2, 100);
    check_against_oracle(DIST_BIMODAL, 5, 2, 100);
}

static void test_new_rejects_bad_arguments(void **state)
{
    assert_null(histogram_new(0, 1000, 3));
    assert_null(histogram_new(1, 1000, 0));
    assert_null(histogram_new(1, 1000, 6));
    assert_null(histogram_new(100, 199, 3));
    assert_null(histogram_new(1, UINT64_MAX, 3));
    struct histogram *h = histogram_new(1, 2, 1);
    assert_non_null(h);
    histogram_free(h);
}

static void test_empty(void **state)
{
    struct histogram *h = histogram_new(LOWEST_US, HIGHEST_US, 3);
    assert_int_equal(histogram_total(h), 0);
    assert_int_equal(histogram_out_of_range(h), 0);
    assert_int_equal(histogram_min(h), 0);
    assert_int_equal(histogram_max(h), 0);
    assert_close(histogram_mean(h), 0.0, 0.0);
    assert_close(histogram_stddev(h), 0.0, 0.0);
    for (size_t i = 0; i < ARRAY_LEN(percentiles_centi); i++)
        assert_int_equal(histogram_percentile(h, (double)percentiles_centi[i] / 100.0), 0);

    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(histogram_write_hgrm(h, f, 1.0, 5), 0);
    fclose(f);
    assert_string_equal(text, "       Value     Percentile TotalCount 1/(1-Percentile)\n"
                              "\n"
                              "#[Mean    =        0.000, StdDeviation   =        0.000]\n"
                              "#[Max     =        0.000, Total count    =            0]\n"
                              "#[Buckets =           16, SubBuckets     =         2048]\n");
    free(text);
    histogram_free(h);
}

static void test_out_of_range_counted_and_clamped(void **state)
{
    struct histogram *h = histogram_new(LOWEST_US, HIGHEST_US, 3);
    histogram_record(h, 0);
    assert_int_equal(histogram_out_of_range(h), 1);
    assert_int_equal(histogram_total(h), 1);
    assert_int_equal(histogram_min(h), LOWEST_US);
    histogram_record(h, LOWEST_US);
    histogram_record(h, HIGHEST_US);
    assert_int_equal(histogram_out_of_range(h), 1);
    histogram_record(h, HIGHEST_US + 1);
    histogram_record_n(h, UINT64_MAX, 3);
    assert_int_equal(histogram_out_of_range(h), 5);
    assert_int_equal(histogram_total(h), 7);
    assert_int_equal(histogram_max(h), HIGHEST_US);
    assert_int_equal(histogram_percentile(h, 100.0), HIGHEST_US);
    assert_int_equal(histogram_percentile(h, 0.0), LOWEST_US);
    /* 2 of 7 values clamped to 1 us: p28.57 is still 1, p50 is already the top */
    assert_int_equal(histogram_percentile(h, 28.0), LOWEST_US);
    assert_in_range(histogram_percentile(h, 50.0), HIGHEST_US - HIGHEST_US / 1000, HIGHEST_US);
    histogram_record_n(h, 5, 0); /* count 0 records nothing */
    assert_int_equal(histogram_total(h), 7);
    histogram_free(h);

    h = histogram_new(1000, 2000000, 3);
    histogram_record(h, 999);
    histogram_record(h, 1000);
    histogram_record(h, 2000000);
    histogram_record(h, 2000001);
    assert_int_equal(histogram_out_of_range(h), 2);
    assert_int_equal(histogram_min(h), 1000);
    assert_int_equal(histogram_max(h), 2000000);
    histogram_free(h);
}

struct bucket_list {
    size_t n;
    uint64_t upper[20000];
    uint64_t count[20000];
};

static void collect(uint64_t upper, uint64_t count, void *ctx)
{
    struct bucket_list *l = ctx;
    if (l->n < ARRAY_LEN(l->upper)) {
        l->upper[l->n] = upper;
        l->count[l->n] = count;
    }
    l->n++;
}

static void test_foreach_order_and_sum(void **state)
{
    struct histogram *h = histogram_new(LOWEST_US, HIGHEST_US, 3);
    for (uint64_t v = 1; v <= 2047; v++)
        histogram_record(h, v);
    histogram_record_n(h, 2048, 2); /* first bucket of width 2: [2048, 2049] */
    histogram_record(h, 2049);
    histogram_record(h, 1000000); /* width 512: [999936, 1000447] */
    histogram_record(h, 999936);

    struct bucket_list *l = xcalloc(1, sizeof(*l));
    histogram_foreach(h, collect, l);
    assert_int_equal(l->n, 2047 + 2);
    for (size_t i = 0; i < 2047; i++) {
        assert_int_equal(l->upper[i], i + 1);
        assert_int_equal(l->count[i], 1);
    }
    assert_int_equal(l->upper[2047], 2049);
    assert_int_equal(l->count[2047], 3);
    assert_int_equal(l->upper[2048], 1000447);
    assert_int_equal(l->count[2048], 2);

    /* random data: strictly increasing uppers, counts summing to the total */
    uint64_t *vals = xmalloc(N_VALUES * sizeof(uint64_t));
    generate(DIST_UNIFORM, 7, vals, N_VALUES);
    histogram_reset(h);
    assert_int_equal(histogram_total(h), 0);
    assert_int_equal(histogram_max(h), 0);
    for (size_t i = 0; i < N_VALUES; i++)
        histogram_record(h, vals[i]);
    memset(l, 0, sizeof(*l));
    histogram_foreach(h, collect, l);
    assert_in_range(l->n, 1, ARRAY_LEN(l->upper));
    uint64_t sum = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (i > 0)
            assert_in_range(l->upper[i], l->upper[i - 1] + 1, UINT64_MAX);
        assert_in_range(l->count[i], 1, UINT64_MAX);
        sum += l->count[i];
    }
    assert_int_equal(sum, N_VALUES);
    assert_int_equal(sum, histogram_total(h));
    free(vals);
    free(l);
    histogram_free(h);
}

struct export_ctx {
    struct histogram *into;
    int bad;
};

static void import_bucket(uint64_t upper, uint64_t count, void *ctx)
{
    struct export_ctx *e = ctx;
    e->bad |= histogram_add_bucket(e->into, upper, count) != 0;
}

/* Lossless export/import: each part exported as (layout, totals, foreach buckets) and
 * rebuilt with add_bucket + add_summary into one histogram equals recording the
 * concatenated sample into one histogram. */
static void test_export_import_equals_whole(void **state)
{
    uint64_t *a = xmalloc(N_VALUES * sizeof(uint64_t));
    uint64_t *b = xmalloc(N_VALUES * sizeof(uint64_t));
    generate(DIST_EXPONENTIAL, 21, a, N_VALUES);
    generate(DIST_BIMODAL, 22, b, N_VALUES);
    struct histogram *parts[2] = {histogram_new(LOWEST_US, HIGHEST_US, 3),
                                  histogram_new(LOWEST_US, HIGHEST_US, 3)};
    struct histogram *all = histogram_new(LOWEST_US, HIGHEST_US, 3);
    for (size_t i = 0; i < N_VALUES; i++) {
        histogram_record(parts[0], a[i]);
        histogram_record(all, a[i]);
        histogram_record(parts[1], b[i]);
        histogram_record(all, b[i]);
    }
    histogram_record(parts[1], HIGHEST_US * 4); /* clamped into the top bucket */
    histogram_record(all, HIGHEST_US * 4);
    struct histogram *rebuilt = histogram_new(LOWEST_US, HIGHEST_US, 3);
    for (int k = 0; k < 2; k++) {
        uint64_t lo, hi;
        int sig;
        histogram_layout(parts[k], &lo, &hi, &sig);
        assert_int_equal(lo, LOWEST_US);
        assert_int_equal(hi, HIGHEST_US);
        assert_int_equal(sig, 3);
        struct export_ctx e = {rebuilt, 0};
        histogram_foreach(parts[k], import_bucket, &e);
        assert_int_equal(e.bad, 0);
        assert_int_equal(histogram_add_summary(rebuilt, histogram_min(parts[k]),
                                               histogram_max(parts[k]), histogram_sum(parts[k]),
                                               histogram_out_of_range(parts[k])),
                         0);
    }
    assert_int_equal(histogram_total(rebuilt), histogram_total(all));
    assert_int_equal(histogram_out_of_range(rebuilt), 1);
    assert_int_equal(histogram_min(rebuilt), histogram_min(all));
    assert_int_equal(histogram_max(rebuilt), histogram_max(all));
    assert_int_equal(histogram_sum(rebuilt), histogram_sum(all));
    for (size_t i = 0; i < ARRAY_LEN(percentiles_centi); i++) {
        double p = (double)percentiles_centi[i] / 100.0;
        assert_int_equal(histogram_percentile(rebuilt, p), histogram_percentile(all, p));
    }
    /* A value beyond the top bucket, and min > max, are refused. */
    assert_int_equal(histogram_add_bucket(rebuilt, UINT64_MAX / 2, 1), -ERANGE);
    assert_int_equal(histogram_add_summary(rebuilt, 5, 4, 0, 0), -EINVAL);
    assert_int_equal(histogram_total(rebuilt), histogram_total(all));
    histogram_free(parts[0]);
    histogram_free(parts[1]);
    histogram_free(all);
    histogram_free(rebuilt);
    free(a);
    free(b);
}

static void test_merge_equals_recording_into_one(void **state)
{
    uint64_t *a = xmalloc(N_VALUES * sizeof(uint64_t));
    uint64_t *b = xmalloc(N_VALUES * sizeof(uint64_t));
    generate(DIST_EXPONENTIAL, 11, a, N_VALUES);
    generate(DIST_BIMODAL, 12, b, N_VALUES);
    struct histogram *ha = histogram_new(LOWEST_US, HIGHEST_US, 3);
    struct histogram *hb = histogram_new(LOWEST_US, HIGHEST_US, 3);
    struct histogram *all = histogram_new(LOWEST_US, HIGHEST_US, 3);
    for (size_t i = 0; i < N_VALUES; i++) {
        histogram_record(ha, a[i]);
        histogram_record(all, a[i]);
        histogram_record(hb, b[i]);
        histogram_record(all, b[i]);
    }
    histogram_record(hb, 0); /* out of range travels too */
    histogram_record(all, 0);

    assert_int_equal(histogram_merge(ha, hb), 0);
    assert_int_equal(histogram_total(ha), histogram_total(all));
    assert_int_equal(histogram_out_of_range(ha), 1);
    assert_int_equal(histogram_min(ha), histogram_min(all));
    assert_int_equal(histogram_max(ha), histogram_max(all));
    assert_close(histogram_mean(ha), histogram_mean(all), 0.0);
    assert_close(histogram_stddev(ha), histogram_stddev(all), 1e-9 * histogram_stddev(all));
    for (size_t i = 0; i < ARRAY_LEN(percentiles_centi); i++) {
        double p = (double)percentiles_centi[i] / 100.0;
        assert_int_equal(histogram_percentile(ha, p), histogram_percentile(all, p));
    }
    struct bucket_list *la = xcalloc(1, sizeof(*la));
    struct bucket_list *lall = xcalloc(1, sizeof(*lall));
    histogram_foreach(ha, collect, la);
    histogram_foreach(all, collect, lall);
    assert_int_equal(la->n, lall->n);
    for (size_t i = 0; i < la->n && i < ARRAY_LEN(la->upper); i++) {
        assert_int_equal(la->upper[i], lall->upper[i]);
        assert_int_equal(la->count[i], lall->count[i]);
    }

    /* merging into an empty histogram copies; src is left alone */
    struct histogram *empty = histogram_new(LOWEST_US, HIGHEST_US, 3);
    assert_int_equal(histogram_merge(empty, hb), 0);
    assert_int_equal(histogram_total(empty), N_VALUES + 1);
    assert_int_equal(histogram_total(hb), N_VALUES + 1);
    assert_int_equal(histogram_min(empty), histogram_min(hb));
    assert_int_equal(histogram_max(empty), histogram_max(hb));

    free(la);
    free(lall);
    free(a);
    free(b);
    histogram_free(empty);
    histogram_free(ha);
    histogram_free(hb);
    histogram_free(all);
}

static void test_merge_different_layouts_rejected(void **state)
{
    struct histogram *dst = histogram_new(LOWEST_US, HIGHEST_US, 3);
    struct histogram *other_figs = histogram_new(LOWEST_US, HIGHEST_US, 2);
    struct histogram *other_high = histogram_new(LOWEST_US, HIGHEST_US * 2, 3);
    struct histogram *other_low = histogram_new(10, HIGHEST_US, 3);
    histogram_record(dst, 42);
    histogram_record(other_figs, 7);
    histogram_record(other_high, 7);
    histogram_record(other_low, 70);
    assert_int_equal(histogram_merge(dst, other_figs), -EINVAL);
    assert_int_equal(histogram_merge(dst, other_high), -EINVAL);
    assert_int_equal(histogram_merge(dst, other_low), -EINVAL);
    assert_int_equal(histogram_total(dst), 1);
    assert_int_equal(histogram_min(dst), 42);
    assert_int_equal(histogram_max(dst), 42);
    histogram_free(dst);
    histogram_free(other_figs);
    histogram_free(other_high);
    histogram_free(other_low);
}

/* Values 1, 2, 3, 4: every row checked by hand against HdrHistogram's PercentileIterator
 * (5 ticks per half distance: steps of 10% up to 50%, 5% up to 75%, then 2.5%). */
static void test_hgrm_golden(void **state)
{
    struct histogram *h = histogram_new(LOWEST_US, HIGHEST_US, 3);
    for (uint64_t v = 1; v <= 4; v++)
        histogram_record(h, v);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(histogram_write_hgrm(h, f, 1.0, 5), 0);
    fclose(f);
    assert_string_equal(text,
                        "       Value     Percentile TotalCount 1/(1-Percentile)\n"
                        "\n"
                        "       1.000 0.000000000000          1           1.00\n"
                        "       1.000 0.100000000000          1           1.11\n"
                        "       1.000 0.200000000000          1           1.25\n"
                        "       2.000 0.300000000000          2           1.43\n"
                        "       2.000 0.400000000000          2           1.67\n"
                        "       2.000 0.500000000000          2           2.00\n"
                        "       3.000 0.550000000000          3           2.22\n"
                        "       3.000 0.600000000000          3           2.50\n"
                        "       3.000 0.650000000000          3           2.86\n"
                        "       3.000 0.700000000000          3           3.33\n"
                        "       3.000 0.750000000000          3           4.00\n"
                        "       4.000 0.775000000000          4           4.44\n"
                        "       4.000 1.000000000000          4\n"
                        "#[Mean    =        2.500, StdDeviation   =        1.118]\n"
                        "#[Max     =        4.000, Total count    =            4]\n"
                        "#[Buckets =           16, SubBuckets     =         2048]\n");
    free(text);
    histogram_free(h);
}

/* A large spectrum written to a file, read back and checked the way a plotter reads it. */
static void test_hgrm_parses(void **state)
{
    uint64_t *vals = xmalloc(N_VALUES * sizeof(uint64_t));
    generate(DIST_BIMODAL, 21, vals, N_VALUES);
    struct histogram *h = histogram_new(LOWEST_US, HIGHEST_US, 3);
    for (size_t i = 0; i < N_VALUES; i++)
        histogram_record(h, vals[i]);
    free(vals);

    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(histogram_write_hgrm(h, f, 1000.0, 5), 0); /* us printed as ms */
    rewind(f);

    char line[256];
    assert_non_null(fgets(line, sizeof(line), f));
    assert_string_equal(line, "       Value     Percentile TotalCount 1/(1-Percentile)\n");
    assert_non_null(fgets(line, sizeof(line), f));
    assert_string_equal(line, "\n");

    double prev_value = -1.0, prev_pct = -1.0, last_pct = -1.0, last_value = 0.0;
    unsigned long long prev_count = 0, last_count = 0;
    int rows = 0, last_fields = 0;
    while (fgets(line, sizeof(line), f) != NULL && line[0] != '#') {
        double value, pct, inv;
        unsigned long long count;
        int fields = sscanf(line, "%lf %lf %llu %lf", &value, &pct, &count, &inv);
        assert_in_range(fields, 3, 4);
        assert_true(value >= prev_value);
        assert_true(pct >= prev_pct);
        assert_in_range(count, prev_count, N_VALUES);
        assert_true(pct >= 0.0 && pct <= 1.0);
        if (fields == 4)
            assert_close(inv, 1.0 / (1.0 - pct), 0.006 + 1e-9 / (1.0 - pct));
        /* each row's value is the histogram's value at that row's percentile */
        uint64_t at = histogram_percentile(h, pct * 100.0);
        assert_close(value * 1000.0, (double)at, (double)at / 1000.0 + 0.5);
        prev_value = last_value = value;
        prev_pct = last_pct = pct;
        prev_count = last_count = count;
        last_fields = fields;
        rows++;
    }
    assert_in_range(rows, 20, 1000);
    assert_int_equal(last_fields, 3);
    assert_close(last_pct, 1.0, 0.0);
    assert_int_equal(last_count, N_VALUES);
    assert_close(last_value * 1000.0, (double)histogram_max(h), 0.5);

    double mean, stddev, max;
    unsigned long long total;
    int buckets, sub_buckets;
    assert_int_equal(line[0], '#');
    assert_int_equal(sscanf(line, "#[Mean    = %lf, StdDeviation   = %lf]", &mean, &stddev), 2);
    assert_close(mean * 1000.0, histogram_mean(h), 0.5);
    assert_close(stddev * 1000.0, histogram_stddev(h), 0.5);
    assert_non_null(fgets(line, sizeof(line), f));
    assert_int_equal(sscanf(line, "#[Max     = %lf, Total count    = %llu]", &max, &total), 2);
    assert_close(max * 1000.0, (double)histogram_max(h), 0.5);
    assert_int_equal(total, N_VALUES);
    assert_non_null(fgets(line, sizeof(line), f));
    assert_int_equal(sscanf(line, "#[Buckets = %d, SubBuckets     = %d]", &buckets, &sub_buckets),
                     2);
    assert_int_equal(buckets, 16);
    assert_int_equal(sub_buckets, 2048);
    assert_null(fgets(line, sizeof(line), f));
    fclose(f);
    histogram_free(h);
}

struct writer_arg {
    struct histogram *h;
    uint64_t n;
    unsigned done;
};

static void *writer_main(void *p)
{
    struct writer_arg *w = p;
    uint64_t s = 99;
    for (uint64_t i = 0; i < w->n; i++)
        histogram_record(w->h, 1 + splitmix64(&s) % 100000);
    atomics_store_release(&w->done, 1);
    return NULL;
}

/* One writer records while this thread merges and reads; run under SANITIZER=thread
 * this is the check that the read side needs no lock. */
static void test_concurrent_reader(void **state)
{
    struct writer_arg w = {.h = histogram_new(LOWEST_US, HIGHEST_US, 3), .n = 300000};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, writer_main, &w), 0);
    struct histogram *snap = histogram_new(LOWEST_US, HIGHEST_US, 3);
    int rounds = 0;
    while (!atomics_load_acquire(&w.done) || rounds < 3) {
        histogram_reset(snap);
        assert_int_equal(histogram_merge(snap, w.h), 0);
        assert_in_range(histogram_total(snap), 0, w.n);
        assert_true(histogram_percentile(snap, 50.0) <= histogram_percentile(snap, 99.0));
        assert_true(histogram_percentile(w.h, 99.0) <= 100000);
        rounds++;
    }
    assert_int_equal(pthread_join(t, NULL), 0);
    histogram_reset(snap);
    assert_int_equal(histogram_merge(snap, w.h), 0);
    assert_int_equal(histogram_total(snap), w.n);
    histogram_free(snap);
    histogram_free(w.h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_percentiles_uniform),
        cmocka_unit_test(test_percentiles_exponential),
        cmocka_unit_test(test_percentiles_bimodal),
        cmocka_unit_test(test_percentiles_two_sig_figs),
        cmocka_unit_test(test_new_rejects_bad_arguments),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_out_of_range_counted_and_clamped),
        cmocka_unit_test(test_foreach_order_and_sum),
        cmocka_unit_test(test_merge_equals_recording_into_one),
        cmocka_unit_test(test_export_import_equals_whole),
        cmocka_unit_test(test_merge_different_layouts_rejected),
        cmocka_unit_test(test_hgrm_golden),
        cmocka_unit_test(test_hgrm_parses),
        cmocka_unit_test(test_concurrent_reader),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
