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

enum arrivals { ARRIVALS_EVEN, ARRIVALS_POISSON };

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
    const char *bearer;
    uint64_t seed;
    const char *json_path;
    const char *hgrm_path;
    int quiet;
};

/* Parses argv into *cfg (pointers borrow argv / environ). Returns 0 to run, 1 when --help
 * printed the usage to stdout (exit 0), or -EINVAL with a message in err (exit 2).
 * `env_bearer` is $BEARER or NULL. Uses getopt_long: call once per process (tests reset
 * optind themselves). */
int config_parse(int argc, char **argv, const char *env_bearer, struct config *cfg, char *err,
                 size_t errlen);
/* Parses "15", "15s", "500ms", "2m", "250us" into nanoseconds. 0 or -EINVAL. */
int config_parse_duration(const char *s, uint64_t *out_ns);
/* Parses "http://host[:port][/path]" into cfg's host, port, host_header and path.
 * 0 or -EINVAL. */
int config_parse_url(const char *url, struct config *cfg);
/* Prints the usage text to f. */
void config_usage(void *f);

#endif
