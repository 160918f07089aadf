/* config: getopt_long over the documented flags, with range checks; errors become a
 * message and -EINVAL (main exits 2), never an abort. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/util.h"

#define DEFAULT_BEARER "test-token-aaaaaaaaaaaaaaaaaaaa"

void config_usage(void *fp)
{
    FILE *f = fp;
    fputs(
        "usage: loadgen --url http://HOST:PORT [options]\n"
        "       loadgen merge [--hgrm FILE] [--hist-out FILE] OUT.json IN.hist.json...\n"
        "HTTP/1.1 load generator: closed loop or constant rate (coordinated-omission\n"
        "corrected latency), one event loop per thread.\n"
        "\n"
        "  --url URL            target, http://host:port[/path] (required)\n"
        "  --mix FILE           request mix (loadgen-scripts/README.md); default:\n"
        "                       GET /ping (or GET <url path>) expecting 200\n"
        "  --connections N      keep-alive connections in total (default 64)\n"
        "  --threads N          threads, one event loop each (default 1)\n"
        "  --duration D         measured time, e.g. 15, 15s, 500ms, 2m (default 10s)\n"
        "  --warmup D           time before measuring: requests sent, not recorded (default 0)\n"
        "  --rate R             total requests/s over all threads and agents, 0.001..1e8\n"
        "                       (printed to 0.001); 0 = closed loop (default 0)\n"
        "  --arrivals even|poisson  spacing of planned sends at a constant rate (default even)\n"
        "  --tick auto|D        constant rate: planned times are binned to a grid of this\n"
        "                       tick (a request is due at the next grid point); the loop\n"
        "                       sleeps until a grid point where something is due, reads\n"
        "                       every response that arrived (each timed by the kernel's\n"
        "                       receive timestamp) and sends what is due; a response wakes\n"
        "                       it only when nothing is scheduled (all connections busy).\n"
        "                       A wake-up costs 18-30 us of CPU on a small VM, more than a\n"
        "                       request, so the tick decides what constant rate costs; a\n"
        "                       coarser tick offers the load in bigger batches. auto\n"
        "                       (default): 16 requests due per wake-up (16 / the rate per\n"
        "                       thread) within 50us..500us, and 50us when a thread's rate\n"
        "                       is under 4,000 req/s (a coarser tick would batch little).\n"
        "                       D: that tick, e.g. 50us, 1ms; 0 = no grid, wake at every\n"
        "                       planned time (smoothest, costliest).\n"
        "                       Max 100ms. The tick used is in --json (tick_us, tick_auto).\n"
        "  --pipeline N         requests in flight per connection (default 1, max 64)\n"
        "  --timeout D          a response later than this is a timeout error (default 10s);\n"
        "                       its connection is closed and reopened\n"
        "  --connect-timeout D  a connect not established by then is a connect error\n"
        "                       (default 5s; the kernel alone would wait about 2 minutes\n"
        "                       for a server that drops the SYN). Reconnects after a\n"
        "                       connection that got no answer back off: 25-50 ms, doubling\n"
        "                       up to 0.5-1 s\n"
        "  --io epoll|uring|auto  socket I/O (default epoll): epoll (a read and a write per\n"
        "                       request), or io_uring (one system call per wake-up for all\n"
        "                       connections); either way, at a constant rate responses are\n"
        "                       read once per tick and timed by the kernel's receive\n"
        "                       timestamps; auto = io_uring when the kernel allows it,\n"
        "                       else epoll\n"
        "  --agent I/N          this process is agent I (0-based) of N sharing one schedule:\n"
        "                       it sends R/N req/s with phase I/R, so the N agents' planned\n"
        "                       times together are the single schedule at --rate R (each\n"
        "                       agent's tick grid offset by its phase too)\n"
        "  --start-at T         start sending at T, seconds since the epoch (CLOCK_REALTIME,\n"
        "                       fraction allowed), so that agents on several hosts start\n"
        "                       together; connections are opened before. More than 1 s in\n"
        "                       the past is refused (exit 2 at start-up, 1 if it passed while\n"
        "                       connecting)\n"
        "  --bearer TOKEN       value of ${BEARER} in mix files (default $BEARER, else\n"
        "                       " DEFAULT_BEARER ")\n"
        "  --seed N             seed for the random choices (default 1)\n"
        "  --json FILE          write the results as JSON (fields: loadgen-scripts/README.md)\n"
        "  --hgrm FILE          write the corrected-latency percentile spectrum (ms; timed-out\n"
        "                       and unanswered requests included, as in --json latency_ms)\n"
        "  --interval D         also the corrected latency of each interval D of the\n"
        "                       measured window (p50, p99, max, count per interval in --json\n"
        "                       and the spread of the p99s in the summary), to tell a tail\n"
        "                       made by a few seconds from one spread over the run; 0 = off\n"
        "                       (default 1s; widened to keep at most 3600 intervals)\n"
        "  --hist-out FILE      write the run losslessly: counters and every histogram's\n"
        "                       non-empty bucket counts (input of 'loadgen merge')\n"
        "  --quiet              no progress line and no human summary\n"
        "  -h, --help           this text\n"
        "  --version            the commit it was built from and the libraries' versions\n"
        "Every option takes its value as --opt VALUE or --opt=VALUE; an empty value is an\n"
        "error. --json, --hgrm and --hist-out must name a file in a writable folder (checked\n"
        "before connecting).\n"
        "\n"
        "merge: adds the bucket counts and counters of --hist-out files (e.g. one per agent)\n"
        "and writes OUT.json in the --json shape with every percentile recomputed from the\n"
        "summed counts (never averaged); refuses files whose histograms differ in layout.\n"
        "\n"
        "Progress: a line on stderr every second when stderr is a terminal (not with --quiet).\n"
        "Exit status: 0 run completed (errors are counted, not fatal), 1 runtime failure\n"
        "(e.g. no connection could be established), 2 usage error.\n",
        f);
}

int config_parse_duration(const char *s, uint64_t *out_ns)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno != 0 || !isfinite(v) || v < 0)
        return -EINVAL;
    double mult;
    if (*end == '\0' || strcmp(end, "s") == 0)
        mult = 1e9;
    else if (strcmp(end, "ms") == 0)
        mult = 1e6;
    else if (strcmp(end, "us") == 0)
        mult = 1e3;
    else if (strcmp(end, "m") == 0)
        mult = 60e9;
    else if (strcmp(end, "h") == 0)
        mult = 3600e9;
    else
        return -EINVAL;
    double ns = v * mult;
    if (ns > 1e18)
        return -EINVAL;
    *out_ns = (uint64_t)llround(ns);
    return 0;
}

int config_parse_url(const char *url, struct config *cfg)
{
    const char *p = url;
    if (strncmp(p, "http://", 7) != 0)
        return -EINVAL;
    p += 7;
    const char *host_end;
    const char *after;
    if (*p == '[') {
        host_end = strchr(p, ']');
        if (host_end == NULL)
            return -EINVAL;
        p++;
        after = host_end + 1;
    } else {
        host_end = p + strcspn(p, ":/?#"); /* RFC 3986 3.2: the authority ends at / ? # */
        after = host_end;
    }
    size_t hn = (size_t)(host_end - p);
    if (hn == 0 || hn >= sizeof cfg->host)
        return -EINVAL;
    memcpy(cfg->host, p, hn);
    cfg->host[hn] = '\0';
    uint64_t port = 80;
    const char *path = after;
    if (*after == ':') {
        size_t pn = strcspn(after + 1, "/?#");
        if (parse_u64(after + 1, pn, &port) < 0 || port == 0 || port > 65535)
            return -EINVAL;
        path = after + 1 + pn;
    } else if (*after != '/' && *after != '?' && *after != '#' && *after != '\0') {
        return -EINVAL;
    }
    cfg->port = (uint16_t)port;
    /* a fragment is never sent (RFC 9110 4.2.4): refused rather than dropped silently */
    if (strpbrk(path, " \t\r\n#") != NULL)
        return -EINVAL;
    /* origin-form: an empty path is "/", and "?q" alone is "/?q" */
    int slash = *path != '/';
    if (strlen(path) + (size_t)slash >= sizeof cfg->path)
        return -EINVAL;
    cfg->path[0] = '/';
    strcpy(cfg->path + slash, path);
    int bracket = strchr(cfg->host, ':') != NULL;
    snprintf(cfg->host_header, sizeof cfg->host_header, "%s%s%s:%u", bracket ? "[" : "",
             cfg->host, bracket ? "]" : "", (unsigned)port);
    snprintf(cfg->url, sizeof cfg->url, "%s", url);
    return 0;
}

static int parse_uint(const char *s, uint64_t lo, uint64_t hi, unsigned *out)
{
    uint64_t v;
    if (parse_u64(s, strlen(s), &v) < 0 || v < lo || v > hi)
        return -EINVAL;
    *out = (unsigned)v;
    return 0;
}

enum {
    OPT_URL = 256, OPT_MIX, OPT_CONNECTIONS, OPT_THREADS, OPT_DURATION, OPT_WARMUP, OPT_RATE,
    OPT_ARRIVALS, OPT_PIPELINE, OPT_TIMEOUT, OPT_BEARER, OPT_SEED, OPT_JSON, OPT_HGRM,
    OPT_QUIET, OPT_HELP, OPT_TICK, OPT_IO, OPT_AGENT, OPT_START_AT, OPT_HIST_OUT, OPT_INTERVAL,
    OPT_CONNECT_TIMEOUT, OPT_VERSION
};

int config_parse_agent(const char *s, unsigned *index, unsigned *count)
{
    const char *slash = strchr(s, '/');
    uint64_t i, n;
    if (slash == NULL || parse_u64(s, (size_t)(slash - s), &i) < 0 ||
        parse_u64(slash + 1, strlen(slash + 1), &n) < 0 || n < 1 || n > CONFIG_MAX_AGENTS ||
        i >= n)
        return -EINVAL;
    *index = (unsigned)i;
    *count = (unsigned)n;
    return 0;
}

int config_parse_epoch(const char *s, double *out)
{
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9')
        return -EINVAL;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !isfinite(v) || !(v > 0))
        return -EINVAL;
    *out = v;
    return 0;
}

int config_check_start_at(double start_at, double now_s, char *err, size_t errlen)
{
    if (start_at <= 0 || start_at >= now_s - CONFIG_START_AT_PAST_MAX_S)
        return 0;
    snprintf(err, errlen,
             "--start-at %.6f is %.3f s in the past (more than %.1f s): give a time ahead of "
             "now (now is %.6f, CLOCK_REALTIME)",
             start_at, now_s - start_at, CONFIG_START_AT_PAST_MAX_S, now_s);
    return -ETIME;
}

int config_parse(int argc, char **argv, const char *env_bearer, struct config *cfg, char *err,
                 size_t errlen)
{
    static const struct option opts[] = {
        {"url", required_argument, NULL, OPT_URL},
        {"mix", required_argument, NULL, OPT_MIX},
        {"connections", required_argument, NULL, OPT_CONNECTIONS},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"duration", required_argument, NULL, OPT_DURATION},
        {"warmup", required_argument, NULL, OPT_WARMUP},
        {"rate", required_argument, NULL, OPT_RATE},
        {"arrivals", required_argument, NULL, OPT_ARRIVALS},
        {"pipeline", required_argument, NULL, OPT_PIPELINE},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
        {"bearer", required_argument, NULL, OPT_BEARER},
        {"seed", required_argument, NULL, OPT_SEED},
        {"json", required_argument, NULL, OPT_JSON},
        {"hgrm", required_argument, NULL, OPT_HGRM},
        {"hist-out", required_argument, NULL, OPT_HIST_OUT},
        {"tick", required_argument, NULL, OPT_TICK},
        {"interval", required_argument, NULL, OPT_INTERVAL},
        {"io", required_argument, NULL, OPT_IO},
        {"agent", required_argument, NULL, OPT_AGENT},
        {"start-at", required_argument, NULL, OPT_START_AT},
        {"quiet", no_argument, NULL, OPT_QUIET},
        {"help", no_argument, NULL, OPT_HELP},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0},
    };
    memset(cfg, 0, sizeof *cfg);
    cfg->connections = 64;
    cfg->threads = 1;
    cfg->duration_ns = 10000000000ull;
    cfg->pipeline = 1;
    cfg->timeout_ns = 10000000000ull;
    cfg->connect_timeout_ns = CONFIG_CONNECT_TIMEOUT_NS;
    cfg->seed = 1;
    cfg->tick_auto = 1;
    cfg->io = IO_EPOLL;
    cfg->agent_count = 1;
    cfg->interval_ns = 1000000000ull;
    cfg->bearer = env_bearer && *env_bearer ? env_bearer : DEFAULT_BEARER;
    const char *url = NULL;
    opterr = 0;
    int c, li = -1;
    while ((li = -1, c = getopt_long(argc, argv, ":h", opts, &li)) != -1) {
        const char *a = optarg;
        int bad = 0;
        if (a != NULL && *a == '\0' && li >= 0) { /* --json= or --json "" */
            snprintf(err, errlen, "option '--%s' needs a value, not an empty one", opts[li].name);
            return -EINVAL;
        }
        switch (c) {
        case OPT_URL: url = a; break;
        case OPT_MIX: cfg->mix_path = a; break;
        case OPT_CONNECTIONS:
            bad = parse_uint(a, 1, CONFIG_MAX_CONNECTIONS, &cfg->connections);
            break;
        case OPT_THREADS: bad = parse_uint(a, 1, CONFIG_MAX_THREADS, &cfg->threads); break;
        case OPT_DURATION:
            bad = config_parse_duration(a, &cfg->duration_ns) || cfg->duration_ns == 0;
            break;
        case OPT_WARMUP: bad = config_parse_duration(a, &cfg->warmup_ns); break;
        case OPT_RATE: {
            char *end;
            errno = 0;
            cfg->rate = strtod(a, &end);
            bad = end == a || *end != '\0' || errno != 0 || !isfinite(cfg->rate) ||
                  cfg->rate < 0 || cfg->rate > 1e8 ||
                  (cfg->rate > 0 && cfg->rate < 0.001); /* would print as 0, closed loop */
            break;
        }
        case OPT_ARRIVALS:
            if (strcmp(a, "even") == 0)
                cfg->arrivals = ARRIVALS_EVEN;
            else if (strcmp(a, "poisson") == 0)
                cfg->arrivals = ARRIVALS_POISSON;
            else
                bad = 1;
            break;
        case OPT_PIPELINE:
            bad = parse_uint(a, 1, CONFIG_MAX_PIPELINE, &cfg->pipeline);
            break;
        case OPT_TIMEOUT:
            bad = config_parse_duration(a, &cfg->timeout_ns) || cfg->timeout_ns == 0;
            break;
        case OPT_CONNECT_TIMEOUT:
            bad = config_parse_duration(a, &cfg->connect_timeout_ns) ||
                  cfg->connect_timeout_ns < 1000000; /* libuv's timers count ms */
            break;
        case OPT_BEARER: cfg->bearer = a; break;
        case OPT_SEED: {
            uint64_t v;
            bad = parse_u64(a, strlen(a), &v) < 0;
            cfg->seed = v;
            break;
        }
        case OPT_JSON: cfg->json_path = a; break;
        case OPT_HGRM: cfg->hgrm_path = a; break;
        case OPT_HIST_OUT: cfg->hist_out_path = a; break;
        case OPT_TICK:
            cfg->tick_auto = strcmp(a, "auto") == 0;
            if (!cfg->tick_auto)
                bad = config_parse_duration(a, &cfg->tick_ns) ||
                      cfg->tick_ns > CONFIG_MAX_TICK_NS;
            break;
        case OPT_IO:
            if (strcmp(a, "auto") == 0)
                cfg->io = IO_AUTO;
            else if (strcmp(a, "uring") == 0)
                cfg->io = IO_URING;
            else if (strcmp(a, "epoll") == 0)
                cfg->io = IO_EPOLL;
            else
                bad = 1;
            break;
        case OPT_INTERVAL: bad = config_parse_duration(a, &cfg->interval_ns); break;
        case OPT_AGENT: bad = config_parse_agent(a, &cfg->agent_index, &cfg->agent_count); break;
        case OPT_START_AT: bad = config_parse_epoch(a, &cfg->start_at); break;
        case OPT_QUIET: cfg->quiet = 1; break;
        case 'h':
        case OPT_HELP: config_usage(stdout); return 1;
        case OPT_VERSION: return 2;
        case ':':
            snprintf(err, errlen, "option '%s' needs a value", argv[optind - 1]);
            return -EINVAL;
        default:
            for (const struct option *o = opts; optopt >= OPT_URL && o->name; o++)
                if (o->val == optopt) { /* a flag without a value given one: --quiet=1 */
                    snprintf(err, errlen, "option '--%s' takes no value", o->name);
                    return -EINVAL;
                }
            snprintf(err, errlen, "unknown option '%s'", argv[optind - 1]);
            return -EINVAL;
        }
        if (bad) { /* only options with values set bad */
            snprintf(err, errlen, "bad value '%s' for option '--%s'", a,
                     li >= 0 ? opts[li].name : "?");
            return -EINVAL;
        }
    }
    if (optind < argc) {
        snprintf(err, errlen, "unexpected argument '%s'", argv[optind]);
        return -EINVAL;
    }
    if (url == NULL) {
        snprintf(err, errlen, "--url is required");
        return -EINVAL;
    }
    if (config_parse_url(url, cfg) < 0) {
        snprintf(err, errlen, "bad --url '%s' (want http://host:port[/path])", url);
        return -EINVAL;
    }
    if (cfg->connections < cfg->threads) {
        snprintf(err, errlen, "--connections (%u) must be >= --threads (%u)", cfg->connections,
                 cfg->threads);
        return -EINVAL;
    }
    config_pick_tick(cfg);
    if (cfg->interval_ns && cfg->duration_ns / cfg->interval_ns >= CONFIG_MAX_INTERVALS)
        cfg->interval_ns = (cfg->duration_ns + CONFIG_MAX_INTERVALS - 1) / CONFIG_MAX_INTERVALS;
    return 0;
}

unsigned config_intervals(const struct config *cfg)
{
    if (cfg->interval_ns == 0)
        return 0;
    return (unsigned)((cfg->duration_ns + cfg->interval_ns - 1) / cfg->interval_ns);
}

void config_pick_tick(struct config *cfg)
{
    if (cfg->tick_auto)
        cfg->tick_ns = config_auto_tick_ns(cfg->rate, cfg->agent_count * cfg->threads);
}

uint64_t config_auto_tick_ns(double rate, unsigned streams)
{
    if (!(rate > 0) || streams == 0)
        return CONFIG_TICK_AUTO_MIN_NS;
    double per_stream = rate / streams; /* req/s of one event loop */
    if (per_stream * (double)CONFIG_TICK_AUTO_MAX_NS < 2e9)
        return CONFIG_TICK_AUTO_MIN_NS; /* under two requests per maximal tick */
    double t = CONFIG_TICK_AUTO_REQS * 1e9 / per_stream;
    if (t <= (double)CONFIG_TICK_AUTO_MIN_NS)
        return CONFIG_TICK_AUTO_MIN_NS;
    if (t >= (double)CONFIG_TICK_AUTO_MAX_NS)
        return CONFIG_TICK_AUTO_MAX_NS;
    return (uint64_t)(t / 1000.0 + 0.5) * 1000;
}
