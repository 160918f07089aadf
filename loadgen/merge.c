/* merge: reads --hist-out documents with jansson into a struct stats each (counters from
 * "run", histograms rebuilt bucket by bucket with histogram_add_bucket/_add_summary, so
 * exactly as recorded), adds them with stats_merge, and renders through report.c. */
#include "merge.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/histogram.h"
#include "common/base/util.h"

static const char *const error_keys[STATS_ERR_COUNT] = {"connect", "read",  "write",
                                                        "timeout", "parse", "status"};
#define NHIST 6
#define OWN_LAG 4 /* send_lag_own_us: optional (older inputs lack it: then "unknown") */
#define ANSWERED 5 /* latency_answered_us: optional; an input written before it existed had
                    * only answered requests in latency_us, which then stands for both */
static const char *const hist_keys[NHIST] = {"latency_us", "service_time_us", "send_lag_us",
                                             "connection_wait_us", "send_lag_own_us",
                                             "latency_answered_us"};

void merge_init(struct merge *m)
{
    memset(m, 0, sizeof *m);
}

void merge_free(struct merge *m)
{
    if (m->have_layout)
        stats_free(&m->total);
    free(m->agents);
    memset(m, 0, sizeof *m);
}

static struct histogram **stats_hist(struct stats *s, int i)
{
    struct histogram **hs[NHIST] = {&s->latency, &s->service, &s->send_lag, &s->conn_wait,
                                    &s->own_lag, &s->latency_answered};
    return hs[i];
}

static int u64_field(json_t *obj, const char *key, uint64_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return -1;
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static double num_field(json_t *obj, const char *key, double dflt)
{
    json_t *v = json_object_get(obj, key);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

static const char *str_field(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_string(v) ? json_string_value(v) : "";
}

/* Rebuilds one exported histogram into a new one. NULL with err set on bad input. */
static struct histogram *hist_import(json_t *h, const char *key, char *err, size_t errlen)
{
    uint64_t lowest, highest, sig, total, min, max, sum, oor;
    if (!json_is_object(h) || u64_field(h, "lowest", &lowest) || u64_field(h, "highest", &highest) ||
        u64_field(h, "sig_figs", &sig) || u64_field(h, "total", &total) ||
        u64_field(h, "min", &min) || u64_field(h, "max", &max) || u64_field(h, "sum", &sum) ||
        u64_field(h, "out_of_range", &oor) || strcmp(str_field(h, "unit"), "us") != 0) {
        snprintf(err, errlen, "histogram %s: missing or malformed layout/totals", key);
        return NULL;
    }
    struct histogram *out = histogram_new(lowest, highest, (int)sig);
    if (out == NULL || sig > 5) {
        histogram_free(out);
        snprintf(err, errlen, "histogram %s: impossible layout %llu..%llu, %llu digits", key,
                 (unsigned long long)lowest, (unsigned long long)highest,
                 (unsigned long long)sig);
        return NULL;
    }
    json_t *buckets = json_object_get(h, "buckets");
    size_t i;
    json_t *b;
    if (!json_is_array(buckets)) {
        snprintf(err, errlen, "histogram %s: no buckets array", key);
        histogram_free(out);
        return NULL;
    }
    json_array_foreach(buckets, i, b) {
        json_t *v = json_array_get(b, 0), *c = json_array_get(b, 1);
        if (json_array_size(b) != 2 || !json_is_integer(v) || !json_is_integer(c) ||
            json_integer_value(v) < 0 || json_integer_value(c) < 0 ||
            histogram_add_bucket(out, (uint64_t)json_integer_value(v),
                                 (uint64_t)json_integer_value(c)) < 0) {
            snprintf(err, errlen, "histogram %s: bad bucket #%zu", key, i);
            histogram_free(out);
            return NULL;
        }
    }
    if (histogram_total(out) != total) {
        snprintf(err, errlen, "histogram %s: buckets add up to %llu, total says %llu", key,
                 (unsigned long long)histogram_total(out), (unsigned long long)total);
        histogram_free(out);
        return NULL;
    }
    if (total > 0 && histogram_add_summary(out, min, max, sum, oor) < 0) {
        snprintf(err, errlen, "histogram %s: min %llu > max %llu", key,
                 (unsigned long long)min, (unsigned long long)max);
        histogram_free(out);
        return NULL;
    }
    return out;
}

static int same_layout(const struct histogram *a, const struct histogram *b)
{
    uint64_t la, ha, lb, hb;
    int sa, sb;
    histogram_layout(a, &la, &ha, &sa);
    histogram_layout(b, &lb, &hb, &sb);
    return la == lb && ha == hb && sa == sb;
}

static void describe_layout(const struct histogram *h, char *out, size_t n)
{
    uint64_t lo, hi;
    int sig;
    histogram_layout(h, &lo, &hi, &sig);
    snprintf(out, n, "lowest %llu, highest %llu, sig_figs %d", (unsigned long long)lo,
             (unsigned long long)hi, sig);
}

/* Reads the counters of a run document into s (zeroed, histograms not touched). */
static int run_counters(json_t *run, struct stats *s, char *err, size_t errlen)
{
    if (u64_field(run, "requests_sent", &s->requests_sent) ||
        u64_field(run, "requests_completed", &s->requests_completed) ||
        u64_field(run, "in_flight_at_end", &s->in_flight_at_end) ||
        u64_field(run, "connections_established", &s->connections_established) ||
        u64_field(run, "connections_failed", &s->connections_failed)) {
        snprintf(err, errlen, "run: missing request or connection counters");
        return -EINVAL;
    }
    json_t *v = json_object_get(run, "requests_waited_for_connection");
    if (json_is_integer(v))
        s->requests_waited = (uint64_t)json_integer_value(v);
    v = json_object_get(run, "requests_not_sent");
    if (json_is_integer(v))
        s->requests_not_sent = (uint64_t)json_integer_value(v);
    json_t *errors = json_object_get(run, "errors");
    for (int i = 0; i < STATS_ERR_COUNT; i++)
        if (u64_field(errors, error_keys[i], &s->errors[i])) {
            snprintf(err, errlen, "run: errors.%s missing", error_keys[i]);
            return -EINVAL;
        }
    const char *tables[2] = {"status_counts", "unexpected_status_counts"};
    uint64_t *dst[2] = {s->status, s->unexpected_status};
    for (int k = 0; k < 2; k++) {
        json_t *t = json_object_get(run, tables[k]);
        const char *code;
        json_t *n;
        if (!json_is_object(t)) {
            snprintf(err, errlen, "run: %s missing", tables[k]);
            return -EINVAL;
        }
        json_object_foreach(t, code, n) {
            uint64_t sc;
            if (parse_u64(code, strlen(code), &sc) < 0 || sc >= STATS_MAX_STATUS ||
                !json_is_integer(n) || json_integer_value(n) < 0) {
                snprintf(err, errlen, "run: %s: bad entry '%s'", tables[k], code);
                return -EINVAL;
            }
            dst[k][sc] += (uint64_t)json_integer_value(n);
        }
    }
    return 0;
}

static void config_from_run(json_t *run, struct config *c, char *mix_name, size_t mix_len)
{
    memset(c, 0, sizeof *c);
    snprintf(c->url, sizeof c->url, "%s", str_field(run, "url"));
    snprintf(mix_name, mix_len, "%s", str_field(run, "mix"));
    c->pipeline = (unsigned)num_field(run, "pipeline", 1);
    c->rate = num_field(run, "target_rps", 0);
    c->arrivals = strcmp(str_field(run, "arrivals"), "poisson") == 0 ? ARRIVALS_POISSON
                                                                     : ARRIVALS_EVEN;
    c->tick_ns = (uint64_t)(num_field(run, "tick_us", 0) * 1e3 + 0.5);
    c->tick_auto = json_is_true(json_object_get(run, "tick_auto"));
    c->warmup_ns = (uint64_t)(num_field(run, "warmup_s", 0) * 1e9 + 0.5);
    c->duration_ns = (uint64_t)(num_field(run, "duration_s", 0) * 1e9 + 0.5);
    c->timeout_ns = (uint64_t)(num_field(run, "timeout_s", 0) * 1e9 + 0.5);
    c->connect_timeout_ns = (uint64_t)(num_field(run, "connect_timeout_s", 0) * 1e9 + 0.5);
    c->seed = (uint64_t)num_field(run, "seed", 0);
    c->start_at = num_field(run, "start_at_unix_s", 0);
    c->agent_index = 0; /* the merged document describes the whole run */
    c->agent_count = 1;
}

int merge_add_text(struct merge *m, const char *text, const char *name, char *err,
                   size_t errlen)
{
    char why[400] = "";
    json_error_t jerr;
    json_t *doc = json_loads(text, 0, &jerr);
    if (doc == NULL) {
        snprintf(err, errlen, "%s: not JSON: %s (line %d)", name, jerr.text, jerr.line);
        return -EINVAL;
    }
    int rc = -EINVAL;
    struct stats s;
    memset(&s, 0, sizeof s);
    json_t *run = json_object_get(doc, "run");
    json_t *hists = json_object_get(doc, "histograms");
    if (strcmp(str_field(doc, "format"), REPORT_HIST_FORMAT) != 0 || !json_is_object(run) ||
        !json_is_object(hists)) {
        snprintf(err, errlen, "%s: not a loadgen --hist-out file (want format \"%s\")", name,
                 REPORT_HIST_FORMAT);
        goto out;
    }
    int constant = strcmp(str_field(run, "mode"), "constant") == 0;
    if (m->n > 0 && constant != (m->cfg.rate > 0)) {
        snprintf(err, errlen, "%s: mixes closed loop and constant rate with the inputs before",
                 name);
        goto out;
    }
    int own_missing = 0;
    for (int i = 0; i < NHIST; i++) {
        json_t *jh = json_object_get(hists, hist_keys[i]);
        struct histogram *h;
        if (i == OWN_LAG && jh == NULL) { /* an empty one in the send lag's layout */
            uint64_t lo, hi;
            int sig;
            histogram_layout(s.send_lag, &lo, &hi, &sig);
            h = histogram_new(lo, hi, sig);
            own_missing = 1;
        } else if (i == ANSWERED && jh == NULL) { /* a copy of latency_us */
            uint64_t lo, hi;
            int sig;
            histogram_layout(s.latency, &lo, &hi, &sig);
            h = histogram_new(lo, hi, sig);
            if (h != NULL && histogram_merge(h, s.latency) < 0) {
                histogram_free(h);
                h = NULL;
            }
            if (h == NULL)
                snprintf(why, sizeof why, "cannot copy latency_us");
        } else {
            h = hist_import(jh, hist_keys[i], why, sizeof why);
        }
        if (h == NULL) {
            snprintf(err, errlen, "%s: %s", name, why);
            goto out;
        }
        *stats_hist(&s, i) = h;
        if (m->have_layout && !same_layout(*stats_hist(&m->total, i), h)) {
            char a[120], b[120];
            describe_layout(*stats_hist(&m->total, i), a, sizeof a);
            describe_layout(h, b, sizeof b);
            snprintf(err, errlen,
                     "%s: histogram %s has a different configuration (%s) from the first "
                     "input's (%s): refusing to merge",
                     name, hist_keys[i], b, a);
            goto out;
        }
    }
    if (run_counters(run, &s, why, sizeof why) < 0) {
        snprintf(err, errlen, "%s: %s", name, why);
        goto out;
    }

    /* Valid: fold it in. */
    if (!m->have_layout) {
        char mix[sizeof m->mix_name];
        config_from_run(run, &m->cfg, mix, sizeof mix);
        memcpy(m->mix_name, mix, sizeof mix);
        memset(&m->total, 0, sizeof m->total);
        for (int i = 0; i < NHIST; i++) {
            uint64_t lo, hi;
            int sig;
            histogram_layout(*stats_hist(&s, i), &lo, &hi, &sig);
            *stats_hist(&m->total, i) = histogram_new(lo, hi, sig);
        }
        m->have_layout = 1;
        snprintf(m->io, sizeof m->io, "%s", str_field(run, "io"));
    } else if (strcmp(m->io, str_field(run, "io")) != 0) {
        snprintf(m->io, sizeof m->io, "mixed");
    }
    stats_merge(&m->total, &s);
    m->own_lag_missing |= own_missing;
    m->cfg.threads += (unsigned)num_field(run, "threads", 0);
    m->cfg.connections += (unsigned)num_field(run, "connections", 0);
    double elapsed = num_field(run, "elapsed_s", 0);
    if (elapsed > m->elapsed_s)
        m->elapsed_s = elapsed;
    json_t *cpu = json_object_get(run, "loadgen_cpu_s");
    m->cpu_user_s += num_field(cpu, "user", 0);
    m->cpu_sys_s += num_field(cpu, "sys", 0);
    double pct = num_field(run, "loadgen_cpu_pct", 0);
    if (pct > m->cpu_pct_max)
        m->cpu_pct_max = pct;
    const char *host = str_field(run, "hostname");
    int seen = 0;
    for (unsigned i = 0; i < m->n && !seen; i++)
        seen = strcmp(m->agents[i].hostname, host) == 0;
    if (!seen && *host) {
        size_t len = strlen(m->hostnames);
        snprintf(m->hostnames + len, sizeof m->hostnames - len, "%s%s", len ? "," : "", host);
    }
    m->agents = xrealloc(m->agents, (m->n + 1) * sizeof *m->agents);
    struct report_agent *a = &m->agents[m->n++];
    memset(a, 0, sizeof *a);
    a->index = (unsigned)num_field(run, "agent_index", 0);
    a->count = (unsigned)num_field(run, "agent_count", 1);
    snprintf(a->hostname, sizeof a->hostname, "%s", host);
    a->threads = (unsigned)num_field(run, "threads", 0);
    a->cpu_pct = pct;
    a->elapsed_s = elapsed;
    a->requests_completed = s.requests_completed;
    a->errors_total = stats_errors_total(&s);
    json_t *lag = json_object_get(run, "send_lag_ms");
    if (json_is_object(lag)) {
        a->has_send_lag = 1;
        a->send_lag_p99_ms = num_field(lag, "p99", 0);
        a->send_lag_max_ms = num_field(lag, "max", 0);
        json_t *own = json_object_get(run, "send_lag_own_ms");
        a->has_own_lag = json_is_object(own);
        a->send_lag_own_p99_ms = num_field(own, "p99", 0);
    }
    rc = 0;
out:
    for (int i = 0; i < NHIST; i++)
        histogram_free(*stats_hist(&s, i));
    json_decref(doc);
    return rc;
}

int merge_add_file(struct merge *m, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -errno;
    }
    struct buf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_append(&b, chunk, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        buf_free(&b);
        snprintf(err, errlen, "%s: read error", path);
        return -EIO;
    }
    buf_append(&b, "", 0);
    int rc = merge_add_text(m, b.data, path, err, errlen);
    buf_free(&b);
    return rc;
}

void merge_report(const struct merge *m, struct report *r)
{
    memset(r, 0, sizeof *r);
    r->cfg = &m->cfg;
    r->mix_name = m->mix_name;
    r->total = &m->total;
    r->elapsed_s = m->elapsed_s;
    r->cpu_user_s = m->cpu_user_s;
    r->cpu_sys_s = m->cpu_sys_s;
    r->cpu_pct = m->cpu_pct_max;
    r->io = m->io;
    r->hostname = m->hostnames;
    r->merged = m->n;
    r->agents = m->agents;
    r->own_lag_unknown = m->own_lag_missing;
}

static void merge_usage(FILE *f)
{
    fputs("usage: loadgen merge [--hgrm FILE] [--hist-out FILE] [--quiet] [--] OUT.json IN...\n"
          "Merges the --hist-out files IN... (e.g. one per --agent) into OUT.json, in the\n"
          "shape of a single run's --json: bucket counts and counters are added and every\n"
          "percentile is recomputed from the summed counts. achieved_rps = the summed\n"
          "completions / the longest input window; loadgen_cpu_s is summed, loadgen_cpu_pct\n"
          "is the busiest input's; 'agents' lists each input. Inputs whose histograms have\n"
          "different configurations are refused.\n"
          "  --hgrm FILE      also write the merged corrected-latency spectrum (ms)\n"
          "  --hist-out FILE  also write the merged lossless file (can be merged again)\n"
          "  --quiet          no human summary on stdout\n"
          "  -h, --help       this text\n"
          "Options take their value as --opt FILE or --opt=FILE; an empty value is an error.\n"
          "Exit status: 0 merged, 1 an input was unreadable or refused, 2 usage error.\n",
          f);
}

/* A usage error: one line, then where the help is; returns the exit status 2. */
static int merge_usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "loadgen merge: %s%s%s%s\n", what, arg ? " '" : "", arg ? arg : "",
            arg ? "'" : "");
    fprintf(stderr, "try 'loadgen merge --help'\n");
    return 2;
}

int merge_main(int argc, char **argv)
{
    const char *hgrm = NULL, *hist = NULL;
    int quiet = 0, i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            merge_usage(stdout);
            return 0;
        }
        if (strcmp(arg, "--quiet") == 0) {
            quiet = 1;
            continue;
        }
        /* --hgrm FILE, --hgrm=FILE, and the same for --hist-out */
        const char *eq = strchr(arg, '=');
        size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
        const char **dst = n == 6 && strncmp(arg, "--hgrm", n) == 0       ? &hgrm
                           : n == 10 && strncmp(arg, "--hist-out", n) == 0 ? &hist
                                                                          : NULL;
        if (dst == NULL)
            return merge_usage_error("unknown option", arg);
        if (eq == NULL && i + 1 >= argc)
            return merge_usage_error("this option needs a value:", arg);
        *dst = eq ? eq + 1 : argv[++i];
        if (**dst == '\0')
            return merge_usage_error("this option needs a value, not an empty one:", arg);
    }
    if (argc - i < 2)
        return merge_usage_error("need OUT.json and at least one input", NULL);
    const char *out = argv[i++];
    struct merge m;
    merge_init(&m);
    char err[800];
    for (; i < argc; i++)
        if (merge_add_file(&m, argv[i], err, sizeof err) < 0) {
            fprintf(stderr, "loadgen merge: %s\n", err);
            merge_free(&m);
            return 1;
        }
    struct report r;
    merge_report(&m, &r);
    int rc, status = 0;
    if (!quiet)
        report_print(&r, stdout);
    if ((rc = report_write_json(&r, out)) < 0) {
        fprintf(stderr, "loadgen merge: %s: %s\n", out, strerror(-rc));
        status = 1;
    }
    if (hgrm && (rc = report_write_hgrm(&r, hgrm)) < 0) {
        fprintf(stderr, "loadgen merge: --hgrm %s: %s\n", hgrm, strerror(-rc));
        status = 1;
    }
    if (hist && (rc = report_write_hist(&r, hist)) < 0) {
        fprintf(stderr, "loadgen merge: --hist-out %s: %s\n", hist, strerror(-rc));
        status = 1;
    }
    merge_free(&m);
    return status;
}
