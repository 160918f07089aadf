/* report: renders a finished run, or a merge of runs: the human summary (wrk-like plus a
 * percentile table of corrected and uncorrected latency, send lag), the --json document,
 * the --hgrm spectrum and the lossless --hist-out file (the --json document plus every
 * histogram's bucket counts). Reads merged stats only; does no measuring. One thread. */
#ifndef LOADGEN_REPORT_H
#define LOADGEN_REPORT_H

#include <stdio.h>

#include "config.h"
#include "stats.h"

#define REPORT_HIST_FORMAT "loadgen-hist-1"

/* One agent of a merge, as its own --json document reported it. */
struct report_agent {
    unsigned index, count;   /* --agent index/count */
    char hostname[256];
    unsigned threads;
    double cpu_pct;          /* its loadgen_cpu_pct */
    double elapsed_s;
    uint64_t requests_completed;
    uint64_t errors_total;
    int has_send_lag;        /* constant rate: the three below are set */
    double send_lag_p99_ms;
    double send_lag_max_ms;
    double send_lag_own_p99_ms; /* the generator's own part of it (stats.h own_lag), when */
    int has_own_lag;            /* the agent reported it (its build has it) */
};

struct report {
    const struct config *cfg;
    const char *mix_name;    /* the --mix path, or "default:GET <path>" */
    const struct stats *total;
    double elapsed_s;        /* measured window actually run */
    double cpu_user_s;
    double cpu_sys_s;
    double cpu_pct;          /* loadgen CPU over the window, % of one CPU (merge: the max) */
    const char *io;          /* "io_uring" or "epoll" */
    const char *hostname;
    unsigned merged;         /* 0: one run; N: a merge of N runs */
    const struct report_agent *agents; /* merge: one per input */
    int own_lag_unknown;     /* merge: an input did not record the own send lag */
};

/* The requests of t that the latency histogram holds without an answer: timed out, in
 * flight at the end, due and not sent (latency.count - latency_answered.count). */
uint64_t report_unanswered(const struct stats *t);
/* Writes the human summary to f. */
void report_print(const struct report *r, FILE *f);
/* Writes the JSON document (one object, no newline) to f. */
void report_json(const struct report *r, FILE *f);
/* Writes the JSON document and a newline to path. 0 or a negative errno. */
int report_write_json(const struct report *r, const char *path);
/* Writes the lossless file to path: {"format":"loadgen-hist-1","run":<the --json
 * document>,"histograms":{"latency_us":H,"latency_answered_us":H,"service_time_us":H,
 * "send_lag_us":H,"connection_wait_us":H,"send_lag_own_us":H (absent when unknown)}},
 * H = {"lowest","highest","sig_figs","unit":"us","total","min","max","sum",
 * "out_of_range","buckets":[[value,count],...]} (non-empty buckets, value = the bucket's
 * highest equivalent value). 0 or a negative errno. */
int report_write_hist(const struct report *r, const char *path);
/* Writes the corrected-latency spectrum (the latency histogram: unanswered requests
 * included) in ms to path. 0 or a negative errno. */
int report_write_hgrm(const struct report *r, const char *path);

#endif
