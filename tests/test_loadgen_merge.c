/* test_loadgen_merge: lossless --hist-out files and `loadgen merge`. A sample split over
 * several runs, each written with report_write_hist and merged with merge_add_file, gives
 * exactly the histograms of the whole sample recorded at once (every bucket, count, min,
 * max, mean and percentile) and the summed counters; the answered-only latency travels
 * beside the latency (an input without it counts its latency as both); inputs with another
 * histogram layout, or that are not --hist-out files, are refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/base/histogram.h"
#include "loadgen/merge.h"
#include "loadgen/report.h"
#include "loadgen/rng.h"
#include "loadgen/stats.h"
#include "common/base/util.h"

#define PARTS 3

static struct config test_config(double rate)
{
    struct config c;
    memset(&c, 0, sizeof c);
    snprintf(c.url, sizeof c.url, "http://127.0.0.1:8080");
    c.connections = 8;
    c.threads = 1;
    c.pipeline = 1;
    c.rate = rate;
    c.tick_ns = 50000;
    c.duration_ns = 2000000000ull;
    c.timeout_ns = 10000000000ull;
    c.seed = 1;
    c.agent_count = PARTS;
    return c;
}

/* A latency-like value in us: mostly 50..2000, a tail to seconds, some out of range. */
static uint64_t sample(struct rng *r)
{
    uint64_t k = rng_range(r, 0, 999);
    if (k == 0)
        return 0; /* below the lowest (1 us): counted out of range, clamped */
    if (k == 1)
        return STATS_HIGHEST_US + rng_range(r, 1, 1000000); /* above the highest */
    if (k < 20)
        return rng_range(r, 100000, 5000000);
    return rng_range(r, 50, 2000);
}

static void write_part(struct stats *s, const struct config *cfg, unsigned index,
                       const char *path)
{
    struct config c = *cfg;
    c.agent_index = index;
    struct report r = {
        .cfg = &c, .mix_name = "default:GET /ping", .total = s, .elapsed_s = 2.0 + index * 0.01,
        .cpu_user_s = 0.25, .cpu_sys_s = 0.5, .cpu_pct = 37.5 + index, .io = "io_uring",
        .hostname = index ? "host-b" : "host-a",
    };
    assert_int_equal(report_write_hist(&r, path), 0);
}

struct bucket_list {
    uint64_t v[20000][2];
    size_t n;
};

static void collect(uint64_t upper, uint64_t count, void *ctx)
{
    struct bucket_list *b = ctx;
    assert_true(b->n < 20000);
    b->v[b->n][0] = upper;
    b->v[b->n][1] = count;
    b->n++;
}

static void assert_same_histogram(const struct histogram *a, const struct histogram *b)
{
    assert_int_equal(histogram_total(a), histogram_total(b));
    assert_int_equal(histogram_min(a), histogram_min(b));
    assert_int_equal(histogram_max(a), histogram_max(b));
    assert_int_equal(histogram_sum(a), histogram_sum(b));
    assert_int_equal(histogram_out_of_range(a), histogram_out_of_range(b));
    assert_true(histogram_mean(a) == histogram_mean(b));
    for (int i = 0; i <= 100000; i += 7) {
        double p = i / 1000.0;
        assert_int_equal(histogram_percentile(a, p), histogram_percentile(b, p));
    }
    const double ps[] = {50, 75, 90, 99, 99.9, 99.99, 99.999, 100};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
        assert_int_equal(histogram_percentile(a, ps[i]), histogram_percentile(b, ps[i]));
    static struct bucket_list ba, bb;
    ba.n = bb.n = 0;
    histogram_foreach(a, collect, &ba);
    histogram_foreach(b, collect, &bb);
    assert_int_equal(ba.n, bb.n);
    assert_memory_equal(ba.v, bb.v, ba.n * sizeof ba.v[0]);
}

static void test_split_merge_equals_whole(void **state)
{
    struct config cfg = test_config(3000.0);
    struct stats whole, part[PARTS];
    stats_init(&whole);
    struct rng r;
    rng_seed(&r, 42);
    char paths[PARTS][64];
    for (unsigned p = 0; p < PARTS; p++) {
        stats_init(&part[p]);
        part[p].requests_sent = 1000 + p;
        part[p].requests_completed = 990 + p;
        part[p].in_flight_at_end = p;
        part[p].connections_established = 8;
        part[p].requests_waited = 10 * p;
        part[p].requests_not_sent = p;
        part[p].errors[STATS_ERR_READ] = p + 1;
        part[p].errors[STATS_ERR_STATUS] = 2 * p;
        part[p].status[200] = 980 + p;
        part[p].status[500] = 2 * p;
        part[p].unexpected_status[500] = 2 * p;
    }
    /* Uneven split: part 0 gets 1/6, part 1 1/3, part 2 1/2 of 60,000 values each. */
    for (int i = 0; i < 60000; i++) {
        unsigned p = i % 6 == 0 ? 0 : i % 6 < 3 ? 1 : 2;
        uint64_t v[4] = {sample(&r), sample(&r), sample(&r) / 10, sample(&r) / 10};
        struct histogram *wh[4] = {whole.latency, whole.service, whole.send_lag, whole.conn_wait};
        struct histogram *ph[4] = {part[p].latency, part[p].service, part[p].send_lag,
                                   part[p].conn_wait};
        for (int k = 0; k < 4; k++) {
            if (k == 3 && i % 4)
                continue; /* fewer connection waits than requests */
            histogram_record(wh[k], v[k]);
            histogram_record(ph[k], v[k]);
        }
    }
    for (unsigned p = 0; p < PARTS; p++) {
        snprintf(paths[p], sizeof paths[p], "/tmp/test_loadgen_merge.%d.%u", (int)getpid(), p);
        write_part(&part[p], &cfg, p, paths[p]);
    }
    struct merge m;
    merge_init(&m);
    char err[800];
    for (unsigned p = 0; p < PARTS; p++)
        assert_int_equal(merge_add_file(&m, paths[p], err, sizeof err), 0);
    assert_int_equal(m.n, PARTS);
    assert_same_histogram(m.total.latency, whole.latency);
    assert_same_histogram(m.total.service, whole.service);
    assert_same_histogram(m.total.send_lag, whole.send_lag);
    assert_same_histogram(m.total.conn_wait, whole.conn_wait);
    assert_int_equal(m.total.requests_sent, 3003);
    assert_int_equal(m.total.requests_completed, 2973);
    assert_int_equal(m.total.in_flight_at_end, 3);
    assert_int_equal(m.total.requests_waited, 30);
    assert_int_equal(m.total.requests_not_sent, 3);
    assert_int_equal(m.total.errors[STATS_ERR_READ], 6);
    assert_int_equal(m.total.errors[STATS_ERR_STATUS], 6);
    assert_int_equal(m.total.status[200], 2943);
    assert_int_equal(m.total.status[500], 6);
    assert_int_equal(m.total.unexpected_status[500], 6);
    assert_int_equal(m.cfg.connections, 24);
    assert_int_equal(m.cfg.threads, 3);
    assert_true(m.cfg.rate == 3000.0);
    assert_true(m.elapsed_s == 2.02);       /* the longest window */
    assert_true(m.cpu_pct_max == 39.5);     /* the busiest agent */
    assert_true(m.cpu_user_s == 0.75);
    assert_string_equal(m.hostnames, "host-a,host-b");

    /* The merged document re-merges to itself: write it, read it back alone. */
    struct report rep;
    merge_report(&m, &rep);
    char again[64];
    snprintf(again, sizeof again, "/tmp/test_loadgen_merge.%d.all", (int)getpid());
    assert_int_equal(report_write_hist(&rep, again), 0);
    struct merge m2;
    merge_init(&m2);
    assert_int_equal(merge_add_file(&m2, again, err, sizeof err), 0);
    assert_same_histogram(m2.total.latency, whole.latency);
    assert_int_equal(m2.total.requests_completed, 2973);
    merge_free(&m2);
    unlink(again);

    merge_free(&m);
    for (unsigned p = 0; p < PARTS; p++) {
        unlink(paths[p]);
        stats_free(&part[p]);
    }
    stats_free(&whole);
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    struct buf b = {0};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_append(&b, chunk, n);
    fclose(f);
    buf_append(&b, "", 0);
    return b.data;
}

static char *replace_once(const char *s, const char *from, const char *to)
{
    const char *at = strstr(s, from);
    assert_non_null(at);
    size_t n = strlen(s) - strlen(from) + strlen(to) + 1;
    char *out = xmalloc(n);
    snprintf(out, n, "%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
    return out;
}

static void test_refusals(void **state)
{
    struct config cfg = test_config(1000.0);
    struct stats s;
    stats_init(&s);
    histogram_record(s.latency, 100);
    s.requests_completed = 1;
    s.status[200] = 1;
    char path[64];
    snprintf(path, sizeof path, "/tmp/test_loadgen_merge.%d.r", (int)getpid());
    write_part(&s, &cfg, 0, path);
    char *text = read_all(path);
    unlink(path);
    char err[800];

    struct merge m;
    merge_init(&m);
    assert_int_equal(merge_add_text(&m, text, "a", err, sizeof err), 0);
    /* Another histogram configuration (3 -> 2 significant figures) is refused. */
    char *other = replace_once(text, "\"sig_figs\":3", "\"sig_figs\":2");
    assert_int_equal(merge_add_text(&m, other, "b", err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "different configuration"));
    assert_int_equal(m.n, 1); /* unchanged */
    free(other);
    /* Bucket counts that do not add up to the total. */
    char *bad = replace_once(text, "\"total\":1,", "\"total\":2,");
    assert_int_equal(merge_add_text(&m, bad, "c", err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "add up"));
    free(bad);
    /* Closed loop cannot be merged with constant rate. */
    char *closed = replace_once(text, "\"mode\":\"constant\"", "\"mode\":\"closed\"");
    assert_int_equal(merge_add_text(&m, closed, "d", err, sizeof err), -EINVAL);
    free(closed);
    /* Not a --hist-out document. */
    assert_int_equal(merge_add_text(&m, "{\"url\":\"x\"}", "e", err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "--hist-out"));
    assert_int_equal(merge_add_text(&m, "not json", "f", err, sizeof err), -EINVAL);
    assert_int_equal(m.n, 1);
    assert_int_equal(m.total.requests_completed, 1);
    merge_free(&m);
    free(text);
    stats_free(&s);
}

/* text without its "KEY":{...} histogram object (and the comma after it) */
static char *drop_histogram(const char *text, const char *key)
{
    const char *at = strstr(text, key);
    assert_non_null(at);
    const char *end = strstr(at, "]},");
    assert_non_null(end);
    end += 3;
    size_t n = strlen(text) - (size_t)(end - at) + 1;
    char *out = xmalloc(n);
    snprintf(out, n, "%.*s%s", (int)(at - text), text, end);
    return out;
}

static void test_answered_latency(void **state)
{
    struct config cfg = test_config(1000.0);
    struct stats s[2];
    char paths[2][64];
    for (unsigned p = 0; p < 2; p++) {
        stats_init(&s[p]);
        /* answered: 100 + p, 200 + p us; unanswered (latency only): 5 s + p us */
        histogram_record(s[p].latency_answered, 100 + p);
        histogram_record(s[p].latency_answered, 200 + p);
        histogram_record(s[p].latency, 5000000 + p);
        stats_finish(&s[p]);
        s[p].requests_sent = s[p].requests_completed = 2;
        s[p].in_flight_at_end = 1;
        s[p].status[200] = 2;
        snprintf(paths[p], sizeof paths[p], "/tmp/test_loadgen_merge.%d.a%u", (int)getpid(), p);
        write_part(&s[p], &cfg, p, paths[p]);
    }
    assert_int_equal(histogram_total(s[0].latency), 3);
    struct merge m;
    merge_init(&m);
    char err[800];
    for (unsigned p = 0; p < 2; p++)
        assert_int_equal(merge_add_file(&m, paths[p], err, sizeof err), 0);
    assert_int_equal(histogram_total(m.total.latency), 6);
    assert_int_equal(histogram_max(m.total.latency), 5000001);
    assert_int_equal(histogram_total(m.total.latency_answered), 4);
    assert_int_equal(histogram_max(m.total.latency_answered), 201);
    assert_int_equal(histogram_min(m.total.latency_answered), 100);
    assert_int_equal(report_unanswered(&m.total), 2);
    merge_free(&m);

    /* An input from before latency_answered_us: its latency_us stands for both. */
    char *text = read_all(paths[0]);
    char *old = drop_histogram(text, "\"latency_answered_us\"");
    assert_null(strstr(old, "latency_answered_us"));
    merge_init(&m);
    assert_int_equal(merge_add_text(&m, old, "old", err, sizeof err), 0);
    assert_int_equal(histogram_total(m.total.latency_answered), 3);
    assert_int_equal(histogram_max(m.total.latency_answered), 5000000);
    merge_free(&m);
    free(old);
    free(text);
    for (unsigned p = 0; p < 2; p++) {
        unlink(paths[p]);
        stats_free(&s[p]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_merge_equals_whole),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_answered_latency),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
