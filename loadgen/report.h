/* report: renders a finished run: the human summary (wrk-like plus a percentile table
 * of corrected and uncorrected latency), the --json document and the --hgrm spectrum.
 * Reads merged stats only; does no measuring. Main thread, after the workers joined. */
#ifndef LOADGEN_REPORT_H
#define LOADGEN_REPORT_H

#include <stdio.h>

#include "config.h"
#include "stats.h"

struct report {
    const struct config *cfg;
    const char *mix_name;    /* the --mix path, or "default:GET <path>" */
    const struct stats *total;
    double elapsed_s;        /* measured window actually run */
    double cpu_user_s;
    double cpu_sys_s;
};

/* Writes the human summary to f. */
void report_print(const struct report *r, FILE *f);
/* Writes the JSON document to path. 0 or a negative errno. */
int report_write_json(const struct report *r, const char *path);
/* Writes the corrected-latency spectrum in ms to path. 0 or a negative errno. */
int report_write_hgrm(const struct report *r, const char *path);

#endif
