/* config: the load generator's command line (flags, durations, the target URL) parsed
 * into a struct config. Parsing only: nothing here opens sockets or files.
 * The struct is filled once in main and read-only afterwards. */
#ifndef LOADGEN_CONFIG_H
#define LOADGEN_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#define CONFIG_MAX_PIPELINE 64
#define CONFIG_MAX_CONNECTIONS 100000
#define CONFIG_MAX_THREADS 256

#define CONFIG_MAX_TICK_NS 100000000ull     /* 100 ms */
/* --tick auto (the default): responses do not wake the loop at a constant rate (io_uring
 * and epoll alike), so each tick should find CONFIG_TICK_AUTO_REQS requests due, within
 * [MIN, MAX] (config_auto_tick_ns). */
#define CONFIG_TICK_AUTO_MIN_NS 50000ull    /* 50 us */
#define CONFIG_TICK_AUTO_MAX_NS 500000ull   /* 500 us: the tick's own lag, half of 1 ms */
#define CONFIG_TICK_AUTO_REQS 16
#define CONFIG_MAX_AGENTS 1000
#define CONFIG_START_AT_PAST_MAX_S 1.0      /* --start-at may lie this far in the past */
#define CONFIG_MAX_INTERVALS 3600           /* --interval: at most this many per run */
#define CONFIG_CONNECT_TIMEOUT_NS 5000000000ull /* --connect-timeout default: 5 s, past
                                                 * Linux's SYN retransmissions at 1 and 3 s */

enum arrivals { ARRIVALS_EVEN, ARRIVALS_POISSON };
enum io_mode { IO_AUTO, IO_URING, IO_EPOLL };

struct config {
    char url[512];
    char host[256];      /* from the URL, without brackets */
    char host_header[300]; /* "host:port" */
    uint16_t port;
    char path[256];      /* URL path ("/" when absent): the default request's path */
    const char *mix_path; /* NULL: default mix "1 GET /ping - 200" */
    unsigned connections;
    unsigned threads;
    uint64_t duration_ns;
    uint64_t warmup_ns;
    double rate;         /* requests per second in total; 0 = closed loop */
    enum arrivals arrivals;
    unsigned pipeline;
    uint64_t timeout_ns;
    uint64_t connect_timeout_ns; /* a connect not done by then fails (a connect error) */
    const char *bearer;
    uint64_t seed;
    const char *json_path;
    const char *hgrm_path;
    const char *hist_out_path; /* --hist-out: lossless histograms + counters (merge input) */
    uint64_t tick_ns;    /* constant rate: timer wake-ups at most once per tick (the
                          * chosen one when tick_auto) */
    int tick_auto;       /* --tick auto: tick_ns chosen from the rate per thread */
    enum io_mode io;
    unsigned agent_index; /* --agent i/N: this is agent i (0-based) of N */
    unsigned agent_count;
    double start_at;     /* --start-at: CLOCK_REALTIME seconds since the epoch; 0 = now */
    uint64_t interval_ns; /* --interval: the corrected latency of each interval of the
                           * measured window, too (0: off; widened so that there are at
                           * most CONFIG_MAX_INTERVALS) */
    int quiet;
};

/* Parses argv into *cfg (pointers borrow argv / environ). Each option takes its value as
 * "--opt VALUE" or "--opt=VALUE"; an empty value is an error. Returns 0 to run, 1 when
 * -h/--help printed the usage to stdout (exit 0), 2 when --version was asked (the caller
 * prints it; exit 0), or -EINVAL with a one-line message in err (exit 2).
 * `env_bearer` is $BEARER or NULL. Uses getopt_long: call once per process (tests reset
 * optind themselves). */
int config_parse(int argc, char **argv, const char *env_bearer, struct config *cfg, char *err,
                 size_t errlen);
/* Parses "15", "15s", "500ms", "2m", "250us" into nanoseconds. 0 or -EINVAL. */
int config_parse_duration(const char *s, uint64_t *out_ns);
/* Parses "http://host[:port][/path]" into cfg's host, port, host_header and path.
 * 0 or -EINVAL. */
int config_parse_url(const char *url, struct config *cfg);
/* Parses "I/N" (0 <= I < N <= CONFIG_MAX_AGENTS) into *index, *count. 0 or -EINVAL. */
int config_parse_agent(const char *s, unsigned *index, unsigned *count);
/* Parses an absolute time in seconds since the epoch ("1767225600", "1767225600.25").
 * 0 or -EINVAL (not a positive finite decimal number). */
int config_parse_epoch(const char *s, double *out);
/* Refuses a --start-at more than CONFIG_START_AT_PAST_MAX_S before now_s (both seconds
 * since the epoch): returns 0, or -ETIME with the reason in err. */
int config_check_start_at(double start_at, double now_s, char *err, size_t errlen);
/* --tick auto: the tick for `rate` req/s in total split over `streams` (agents x threads)
 * event loops of rate r = rate / streams each: CONFIG_TICK_AUTO_REQS / r, clamped to
 * [CONFIG_TICK_AUTO_MIN_NS, CONFIG_TICK_AUTO_MAX_NS] and rounded to whole us; but
 * CONFIG_TICK_AUTO_MIN_NS when even the maximum would hold fewer than two requests per tick
 * on average (r < 2 / MAX: a coarser tick would add send lag and save few wake-ups), and
 * in closed loop (rate 0). Pure. */
uint64_t config_auto_tick_ns(double rate, unsigned streams);
/* Sets cfg->tick_ns to config_auto_tick_ns when cfg->tick_auto (config_parse calls it). */
void config_pick_tick(struct config *cfg);
/* The number of --interval intervals of the measured window (the last may be shorter);
 * 0 when off. Pure. */
unsigned config_intervals(const struct config *cfg);
/* Prints the usage text to f. */
void config_usage(void *f);

#endif
