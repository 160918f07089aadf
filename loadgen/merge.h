/* merge: `loadgen merge`: adds the --hist-out files of several runs (one per agent of a
 * split schedule, typically) into one run: every histogram bucket count and counter is
 * summed, every percentile recomputed from the summed counts (never averaged), and the
 * result written in the single-run --json shape (plus --hgrm / --hist-out). Refuses
 * inputs whose histograms differ in layout or that mix closed loop and constant rate. */
#ifndef LOADGEN_MERGE_H
#define LOADGEN_MERGE_H

#include <stddef.h>

#include "config.h"
#include "report.h"
#include "stats.h"

struct merge {
    struct config cfg;      /* the first input's, connections and threads summed */
    char mix_name[600];
    char io[16];
    char hostnames[1024];   /* the inputs' distinct hostnames, comma-separated */
    struct stats total;     /* histograms in the first input's layout */
    int have_layout;
    double elapsed_s;       /* the longest input window */
    double cpu_user_s, cpu_sys_s;
    double cpu_pct_max;     /* the busiest input's loadgen_cpu_pct */
    int own_lag_missing;    /* an input had no send_lag_own_us (an older build) */
    unsigned n;
    struct report_agent *agents;
};

/* Empties m. */
void merge_init(struct merge *m);
/* Adds one --hist-out document (text) named `name` (for messages). Returns 0, or -EINVAL
 * with the reason in err; m is unchanged on failure. */
int merge_add_text(struct merge *m, const char *text, const char *name, char *err,
                   size_t errlen);
/* Reads the file at path and calls merge_add_text. */
int merge_add_file(struct merge *m, const char *path, char *err, size_t errlen);
/* Fills r to render the merged run (borrows m). At least one input added. */
void merge_report(const struct merge *m, struct report *r);
void merge_free(struct merge *m);
/* The subcommand: argv[0] is "merge". Returns the exit status (0, 1 bad input, 2 usage). */
int merge_main(int argc, char **argv);

#endif
