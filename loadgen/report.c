/* report: human summary, JSON and hgrm output of a merged run. Latencies are stored in
 * microseconds and printed in milliseconds. */
#include "report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/util.h"

static const char *const error_names[STATS_ERR_COUNT] = {"connect", "read",    "write",
                                                         "timeout", "parse",   "status"};

struct pct {
    const char *key;
    const char *label;
    double p;
};

static const struct pct pcts[] = {
    {"p50", "50%", 50.0},      {"p75", "75%", 75.0},         {"p90", "90%", 90.0},
    {"p99", "99%", 99.0},      {"p99_9", "99.9%", 99.9},     {"p99_99", "99.99%", 99.99},
};

static double ms(uint64_t us)
{
    return (double)us / 1000.0;
}

static double achieved_rps(const struct report *r)
{
    return r->elapsed_s > 0 ? (double)r->total->requests_completed / r->elapsed_s : 0.0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The p99 (us) of each non-empty interval, sorted, into out (n_intervals long); returns how
 * many. */
static unsigned interval_p99s(const struct stats *t, uint64_t *out)
{
    unsigned n = 0;
    for (unsigned i = 0; i < t->n_intervals; i++)
        if (histogram_total(t->interval_latency[i]) > 0)
            out[n++] = histogram_percentile(t->interval_latency[i], 99.0);
    qsort(out, n, sizeof *out, cmp_u64);
    return n;
}

/* One line: the spread of the intervals' p99s (median of the non-empty ones, min, max). */
static void print_intervals(const struct stats *t, FILE *f)
{
    if (t->n_intervals == 0)
        return;
    uint64_t *p99 = xcalloc(t->n_intervals, sizeof *p99);
    unsigned n = interval_p99s(t, p99);
    if (n > 0) {
        double median = n % 2 ? ms(p99[n / 2]) : (ms(p99[n / 2 - 1]) + ms(p99[n / 2])) / 2;
        fprintf(f, "  latency p99 per %.3g s interval (ms): median %.3f  min %.3f  max %.3f  "
                   "over %u intervals with requests (of %u)\n",
                (double)t->interval_ns / 1e9, median, ms(p99[0]), ms(p99[n - 1]), n,
                t->n_intervals);
    }
    free(p99);
}

uint64_t report_unanswered(const struct stats *t)
{
    return t->errors[STATS_ERR_TIMEOUT] + t->in_flight_at_end + t->requests_not_sent;
}

void report_print(const struct report *r, FILE *f)
{
    const struct config *c = r->cfg;
    const struct stats *t = r->total;
    fprintf(f, "loadgen %s  mix %s\n", c->url, r->mix_name);
    fprintf(f, "  %u threads, %u connections, pipeline %u, %s", c->threads, c->connections,
            c->pipeline, c->rate > 0 ? "constant rate" : "closed loop");
    if (c->rate > 0)
        fprintf(f, " %.1f req/s (%s arrivals)", c->rate,
                c->arrivals == ARRIVALS_POISSON ? "poisson" : "even");
    fprintf(f, ", warmup %.3gs, measured %.3fs\n", (double)c->warmup_ns / 1e9, r->elapsed_s);
    fprintf(f, "  requests: %llu sent, %llu completed, %llu in flight at end\n",
            (unsigned long long)t->requests_sent, (unsigned long long)t->requests_completed,
            (unsigned long long)t->in_flight_at_end);
    fprintf(f, "  rate: asked %.1f, achieved %.1f req/s\n", c->rate, achieved_rps(r));
    fprintf(f, "  connections: %llu established, %llu failed\n",
            (unsigned long long)t->connections_established,
            (unsigned long long)t->connections_failed);
    fprintf(f, "  errors:");
    for (int i = 0; i < STATS_ERR_COUNT; i++)
        fprintf(f, " %s %llu", error_names[i], (unsigned long long)t->errors[i]);
    fputc('\n', f);
    fprintf(f, "  status:");
    for (int s = 0; s < STATS_MAX_STATUS; s++)
        if (t->status[s])
            fprintf(f, " %d:%llu%s", s, (unsigned long long)t->status[s],
                    t->unexpected_status[s] ? "(unexpected)" : "");
    fputc('\n', f);
    const char *lat_name = c->rate > 0 ? "latency (corrected)" : "latency";
    const struct histogram *cols[3] = {t->latency, t->latency_answered, t->service};
    fprintf(f, "  %-10s %20s %20s %22s\n", "ms", lat_name, "answered only",
            "service (uncorrected)");
    for (size_t i = 0; i < ARRAY_LEN(pcts); i++) {
        fprintf(f, "  %-10s", pcts[i].label);
        for (int k = 0; k < 3; k++)
            fprintf(f, " %*.3f", k == 2 ? 22 : 20, ms(histogram_percentile(cols[k], pcts[i].p)));
        fputc('\n', f);
    }
    fprintf(f, "  %-10s", "max");
    for (int k = 0; k < 3; k++)
        fprintf(f, " %*.3f", k == 2 ? 22 : 20, ms(histogram_max(cols[k])));
    fprintf(f, "\n  %-10s", "mean");
    for (int k = 0; k < 3; k++)
        fprintf(f, " %*.3f", k == 2 ? 22 : 20, histogram_mean(cols[k]) / 1000.0);
    fputc('\n', f);
    fprintf(f, "  the latency counts %llu requests without an answer at the time they had "
               "reached: %llu timed out, %llu in flight and %llu due but not sent at the end\n",
            (unsigned long long)report_unanswered(t),
            (unsigned long long)t->errors[STATS_ERR_TIMEOUT],
            (unsigned long long)t->in_flight_at_end, (unsigned long long)t->requests_not_sent);
    print_intervals(t, f);
    if (histogram_out_of_range(t->latency))
        fprintf(f, "  %llu latencies above %.0f s (clamped)\n",
                (unsigned long long)histogram_out_of_range(t->latency),
                (double)STATS_HIGHEST_US / 1e6);
    if (c->rate > 0) {
        const struct histogram *lag = t->send_lag;
        fprintf(f, "  send lag (actual - planned send, ms): p50 %.3f  p99 %.3f  max %.3f  "
                   "over %llu requests (tick %.0f us%s)\n",
                ms(histogram_percentile(lag, 50.0)), ms(histogram_percentile(lag, 99.0)),
                ms(histogram_max(lag)), (unsigned long long)histogram_total(lag),
                (double)c->tick_ns / 1e3, c->tick_auto ? ", auto" : "");
        const struct histogram *own = t->own_lag;
        if (r->own_lag_unknown)
            fputs("  send lag of loadgen's own: unknown (an input did not record it)\n", f);
        else
            fprintf(f, "  send lag of loadgen's own (not waiting for a response, ms): p50 %.3f  "
                       "p99 %.3f  max %.3f\n",
                    ms(histogram_percentile(own, 50.0)), ms(histogram_percentile(own, 99.0)),
                    ms(histogram_max(own)));
        fprintf(f, "  waited for a free connection: %llu requests (p99 wait %.3f ms); "
                   "planned but not sent: %llu\n",
                (unsigned long long)t->requests_waited,
                ms(histogram_percentile(t->conn_wait, 99.0)),
                (unsigned long long)t->requests_not_sent);
    } else {
        fputs("  send lag: not applicable in closed loop (no planned send times)\n", f);
    }
    fprintf(f, "  loadgen cpu: %.3fs user, %.3fs sys, %.1f%% of one CPU%s; io %s\n",
            r->cpu_user_s, r->cpu_sys_s, r->cpu_pct, r->merged ? " (busiest agent)" : "",
            r->io);
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/* The corrected latency of each interval: {"interval_s", "count": [...], "p50_ms",
 * "p99_ms", "max_ms": [...]} (null entries for an interval without responses), or null
 * when not recorded (--interval 0, or a merge of inputs without them). */
static void json_intervals(FILE *f, const struct stats *t)
{
    if (t->n_intervals == 0) {
        fputs("null", f);
        return;
    }
    fprintf(f, "{\"interval_s\":%.6f,\"count\":[", (double)t->interval_ns / 1e9);
    for (unsigned i = 0; i < t->n_intervals; i++)
        fprintf(f, "%s%llu", i ? "," : "",
                (unsigned long long)histogram_total(t->interval_latency[i]));
    const char *keys[3] = {"p50_ms", "p99_ms", "max_ms"};
    const double ps[3] = {50.0, 99.0, 100.0};
    for (int k = 0; k < 3; k++) {
        fprintf(f, "],\"%s\":[", keys[k]);
        for (unsigned i = 0; i < t->n_intervals; i++) {
            const struct histogram *h = t->interval_latency[i];
            if (histogram_total(h) == 0)
                fprintf(f, "%snull", i ? "," : "");
            else
                fprintf(f, "%s%.3f", i ? "," : "", ms(histogram_percentile(h, ps[k])));
        }
    }
    fputs("]}", f);
}

/* A histogram's summary in ms, or null when it does not apply. */
static void json_hist_or_null(FILE *f, const struct histogram *h, int applies);

static void json_hist(FILE *f, const struct histogram *h)
{
    fputc('{', f);
    for (size_t i = 0; i < ARRAY_LEN(pcts); i++)
        fprintf(f, "\"%s\":%.3f,", pcts[i].key, ms(histogram_percentile(h, pcts[i].p)));
    fprintf(f, "\"max\":%.3f,\"mean\":%.3f,\"count\":%llu}", ms(histogram_max(h)),
            histogram_mean(h) / 1000.0, (unsigned long long)histogram_total(h));
}

static void json_hist_or_null(FILE *f, const struct histogram *h, int applies)
{
    if (applies)
        json_hist(f, h);
    else
        fputs("null", f);
}

static void json_u64_or_null(FILE *f, uint64_t v, int applies)
{
    if (applies)
        fprintf(f, "%llu", (unsigned long long)v);
    else
        fputs("null", f);
}

static void json_agents(FILE *f, const struct report *r)
{
    fputs(",\"agents\":[", f);
    for (unsigned i = 0; i < r->merged; i++) {
        const struct report_agent *a = &r->agents[i];
        fprintf(f, "%s{\"agent_index\":%u,\"agent_count\":%u,\"hostname\":", i ? "," : "",
                a->index, a->count);
        json_str(f, a->hostname);
        fprintf(f, ",\"threads\":%u,\"loadgen_cpu_pct\":%.3f,\"elapsed_s\":%.6f"
                   ",\"requests_completed\":%llu,\"errors_total\":%llu",
                a->threads, a->cpu_pct, a->elapsed_s, (unsigned long long)a->requests_completed,
                (unsigned long long)a->errors_total);
        if (a->has_send_lag && a->has_own_lag)
            fprintf(f, ",\"send_lag_p99_ms\":%.3f,\"send_lag_max_ms\":%.3f"
                       ",\"send_lag_own_p99_ms\":%.3f}",
                    a->send_lag_p99_ms, a->send_lag_max_ms, a->send_lag_own_p99_ms);
        else if (a->has_send_lag)
            fprintf(f, ",\"send_lag_p99_ms\":%.3f,\"send_lag_max_ms\":%.3f"
                       ",\"send_lag_own_p99_ms\":null}",
                    a->send_lag_p99_ms, a->send_lag_max_ms);
        else
            fputs(",\"send_lag_p99_ms\":null,\"send_lag_max_ms\":null"
                  ",\"send_lag_own_p99_ms\":null}", f);
    }
    fputc(']', f);
}

void report_json(const struct report *r, FILE *f)
{
    const struct config *c = r->cfg;
    const struct stats *t = r->total;
    int constant = c->rate > 0;
    fputs("{\"url\":", f);
    json_str(f, c->url);
    fputs(",\"mix\":", f);
    json_str(f, r->mix_name);
    fprintf(f, ",\"threads\":%u,\"connections\":%u,\"pipeline\":%u", c->threads, c->connections,
            c->pipeline);
    fprintf(f, ",\"mode\":\"%s\",\"arrivals\":\"%s\",\"target_rps\":%.3f",
            constant ? "constant" : "closed",
            c->arrivals == ARRIVALS_POISSON ? "poisson" : "even", c->rate);
    fputs(",\"tick_us\":", f);
    if (constant)
        fprintf(f, "%.3f", (double)c->tick_ns / 1e3);
    else
        fputs("null", f);
    fputs(",\"tick_auto\":", f);
    fputs(!constant ? "null" : c->tick_auto ? "true" : "false", f);
    fprintf(f, ",\"io\":\"%s\",\"agent_index\":%u,\"agent_count\":%u", r->io, c->agent_index,
            c->agent_count);
    fputs(",\"start_at_unix_s\":", f);
    if (c->start_at > 0)
        fprintf(f, "%.6f", c->start_at);
    else
        fputs("null", f);
    fputs(",\"hostname\":", f);
    json_str(f, r->hostname ? r->hostname : "");
    fprintf(f, ",\"warmup_s\":%.3f,\"duration_s\":%.3f,\"elapsed_s\":%.6f",
            (double)c->warmup_ns / 1e9, (double)c->duration_ns / 1e9, r->elapsed_s);
    fprintf(f, ",\"timeout_s\":%.3f,\"connect_timeout_s\":%.3f,\"seed\":%llu",
            (double)c->timeout_ns / 1e9, (double)c->connect_timeout_ns / 1e9,
            (unsigned long long)c->seed);
    fprintf(f, ",\"requests_sent\":%llu,\"requests_completed\":%llu,\"achieved_rps\":%.3f",
            (unsigned long long)t->requests_sent, (unsigned long long)t->requests_completed,
            achieved_rps(r));
    fprintf(f, ",\"in_flight_at_end\":%llu,\"connections_established\":%llu"
               ",\"connections_failed\":%llu",
            (unsigned long long)t->in_flight_at_end,
            (unsigned long long)t->connections_established,
            (unsigned long long)t->connections_failed);
    fputs(",\"requests_waited_for_connection\":", f);
    json_u64_or_null(f, t->requests_waited, constant);
    fputs(",\"requests_not_sent\":", f);
    json_u64_or_null(f, t->requests_not_sent, constant);
    fputs(",\"errors\":{", f);
    for (int i = 0; i < STATS_ERR_COUNT; i++)
        fprintf(f, "%s\"%s\":%llu", i ? "," : "", error_names[i],
                (unsigned long long)t->errors[i]);
    fprintf(f, "},\"errors_total\":%llu", (unsigned long long)stats_errors_total(t));
    const uint64_t *tables[2] = {t->status, t->unexpected_status};
    const char *names[2] = {"status_counts", "unexpected_status_counts"};
    for (int k = 0; k < 2; k++) {
        fprintf(f, ",\"%s\":{", names[k]);
        int first = 1;
        for (int s = 0; s < STATS_MAX_STATUS; s++)
            if (tables[k][s]) {
                fprintf(f, "%s\"%d\":%llu", first ? "" : ",", s,
                        (unsigned long long)tables[k][s]);
                first = 0;
            }
        fputc('}', f);
    }
    fprintf(f, ",\"requests_unanswered\":%llu", (unsigned long long)report_unanswered(t));
    fputs(",\"latency_ms\":", f);
    json_hist(f, t->latency);
    fputs(",\"latency_answered_ms\":", f);
    json_hist(f, t->latency_answered);
    fputs(",\"latency_intervals\":", f);
    json_intervals(f, t);
    fputs(",\"service_time_ms\":", f);
    json_hist(f, t->service);
    fputs(",\"send_lag_ms\":", f);
    json_hist_or_null(f, t->send_lag, constant);
    fputs(",\"connection_wait_ms\":", f);
    json_hist_or_null(f, t->conn_wait, constant);
    fputs(",\"send_lag_own_ms\":", f);
    json_hist_or_null(f, t->own_lag, constant && !r->own_lag_unknown);
    fprintf(f, ",\"out_of_range\":%llu", (unsigned long long)histogram_out_of_range(t->latency));
    fprintf(f, ",\"loadgen_cpu_s\":{\"user\":%.6f,\"sys\":%.6f,\"total\":%.6f}",
            r->cpu_user_s, r->cpu_sys_s, r->cpu_user_s + r->cpu_sys_s);
    fprintf(f, ",\"loadgen_cpu_pct\":%.3f", r->cpu_pct);
    if (r->merged) {
        fprintf(f, ",\"merged_from\":%u", r->merged);
        json_agents(f, r);
    }
    fputc('}', f);
}

static int close_checked(FILE *f)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return -EIO;
    return 0;
}

int report_write_json(const struct report *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -errno;
    report_json(r, f);
    fputc('\n', f);
    return close_checked(f);
}

struct bucket_ctx {
    FILE *f;
    int first;
};

static void json_bucket(uint64_t upper, uint64_t count, void *ctx)
{
    struct bucket_ctx *b = ctx;
    fprintf(b->f, "%s[%llu,%llu]", b->first ? "" : ",", (unsigned long long)upper,
            (unsigned long long)count);
    b->first = 0;
}

static void json_hist_buckets(FILE *f, const char *name, const struct histogram *h)
{
    uint64_t lowest, highest;
    int sig;
    histogram_layout(h, &lowest, &highest, &sig);
    fprintf(f, "\"%s\":{\"lowest\":%llu,\"highest\":%llu,\"sig_figs\":%d,\"unit\":\"us\""
               ",\"total\":%llu,\"min\":%llu,\"max\":%llu,\"sum\":%llu,\"out_of_range\":%llu"
               ",\"buckets\":[",
            name, (unsigned long long)lowest, (unsigned long long)highest, sig,
            (unsigned long long)histogram_total(h), (unsigned long long)histogram_min(h),
            (unsigned long long)histogram_max(h), (unsigned long long)histogram_sum(h),
            (unsigned long long)histogram_out_of_range(h));
    struct bucket_ctx b = {f, 1};
    histogram_foreach(h, json_bucket, &b);
    fputs("]}", f);
}

int report_write_hist(const struct report *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -errno;
    const struct stats *t = r->total;
    fputs("{\"format\":\"" REPORT_HIST_FORMAT "\",\"run\":", f);
    report_json(r, f);
    fputs(",\"histograms\":{", f);
    json_hist_buckets(f, "latency_us", t->latency);
    fputc(',', f);
    json_hist_buckets(f, "latency_answered_us", t->latency_answered);
    fputc(',', f);
    json_hist_buckets(f, "service_time_us", t->service);
    fputc(',', f);
    json_hist_buckets(f, "send_lag_us", t->send_lag);
    fputc(',', f);
    json_hist_buckets(f, "connection_wait_us", t->conn_wait);
    if (!r->own_lag_unknown) { /* absent, as in its inputs: a re-merge stays unknown */
        fputc(',', f);
        json_hist_buckets(f, "send_lag_own_us", t->own_lag);
    }
    fputs("}}\n", f);
    return close_checked(f);
}

int report_write_hgrm(const struct report *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -errno;
    int rc = histogram_write_hgrm(r->total->latency, f, 1000.0, 5);
    if (fclose(f) != 0 && rc == 0)
        rc = -EIO;
    return rc;
}
