/* options: the command line both servers share (README.md "Running a server by hand"),
 * parsed the same way so a flag means the same thing to both. The actor server adds
 * --workers and --group-commit above 1 (OPT_WORKERS, OPT_GROUP_COMMIT).
 * Bad input never aborts: options_parse reports it and the caller exits 2. */
#ifndef COMMON_OPTIONS_H
#define COMMON_OPTIONS_H

#include <stdint.h>
#include <stdio.h>

#include "common/store/store.h"

struct options {
    enum store_kind store;
    const char *host;
    int port;
    unsigned threads;      /* default: CPUs in the affinity mask */
    const char *db_path;   /* sqlite; default "<program>.db" (in db_default) */
    char db_default[64];
    const char *bearer;    /* default $BEARER, else test-token-aaaaaaaaaaaaaaaaaaaa */
    uint64_t seed_users;   /* default 10000 */
    const char *access_log;/* default /dev/null */
    unsigned max_conns;    /* default 10000 */
    uint64_t max_body;     /* default 65536 */
    int workers;           /* actor server: scheduler threads; -1 when not allowed */
    unsigned group_commit; /* most POSTs per store transaction; 1 (default): each alone */
    uint64_t store_timeout_ms;  /* longest wait for the store's lock (default 250) */
    uint64_t header_timeout_ms; /* default 10000 */
    uint64_t body_timeout_ms;   /* default 10000 */
    uint64_t send_timeout_ms;   /* default 60000 */
    uint64_t idle_timeout_ms;   /* default 60000 */
    /* actor server's runtime ladder (OPT_LADDER): one design choice each; the defaults
     * (index 0) are the runtime as designed */
    unsigned placement;    /* OPTIONS_PLACEMENT_*: local (default) or spread */
    unsigned message;      /* OPTIONS_MESSAGE_*: pointer (default), malloc or copy */
    unsigned mailbox;      /* OPTIONS_MAILBOX_*: vyukov (default), ring or mutex */
    unsigned drain;        /* messages per actor run, 1..4096 (default 64) */
    unsigned spin;         /* idle polls before a worker thread sleeps (default 64) */
    int help;
    int version;
};

/* What an architecture supports beyond the common flags (options_parse's `features`). */
#define OPT_WORKERS 1      /* --workers */
#define OPT_GROUP_COMMIT 2 /* --group-commit above 1 (batched POST commits) */
#define OPT_LADDER 4       /* --placement, --message, --mailbox, --drain, --spin */
#define OPTIONS_GROUP_COMMIT_MAX 64u /* = STORE_BATCH_MAX (app.h) */

#define OPTIONS_STORE_TIMEOUT_MS 250u /* --store-timeout-ms default */

enum { OPTIONS_PLACEMENT_LOCAL, OPTIONS_PLACEMENT_SPREAD, OPTIONS_PLACEMENT_COUNT };
enum { OPTIONS_MESSAGE_POINTER, OPTIONS_MESSAGE_MALLOC, OPTIONS_MESSAGE_COPY,
       OPTIONS_MESSAGE_COUNT };
enum { OPTIONS_MAILBOX_VYUKOV, OPTIONS_MAILBOX_RING, OPTIONS_MAILBOX_MUTEX,
       OPTIONS_MAILBOX_COUNT };
#define OPTIONS_DRAIN_DEFAULT 64u
#define OPTIONS_DRAIN_MAX 4096u
#define OPTIONS_SPIN_DEFAULT 64u
#define OPTIONS_SPIN_MAX 1000000u

/* The value names of those flags, indexed by the enums above ("local", "spread"...). */
extern const char *const options_placement_names[OPTIONS_PLACEMENT_COUNT];
extern const char *const options_message_names[OPTIONS_MESSAGE_COUNT];
extern const char *const options_mailbox_names[OPTIONS_MAILBOX_COUNT];

/* Parses argv into *o (defaults first). Both `--opt value` and `--opt=value`; an empty
 * value is an error. `prog` names the program in messages and the default db file;
 * `features` (OPT_* bits) enables --workers, --group-commit above 1 and the ladder flags
 * (OPT_LADDER; --placement=spread excludes --workers above 0). Returns 0, or
 * -EINVAL after printing two lines to stderr: what was wrong (naming the flag and the
 * value given) and a pointer to --help (caller exits 2). -h/--help sets o->help,
 * --version o->version (the caller prints and exits 0). */
int options_parse(struct options *o, int argc, char **argv, const char *prog, int features);
/* The full --help text. */
void options_usage(FILE *out, const char *prog, int features);
/* One --version line: the program, the git commit it was built from (when the build
 * knew it), and the libuv, llhttp and SQLite versions. */
void options_version(FILE *out, const char *prog);
/* CPUs in this process's affinity mask (>= 1). */
unsigned options_cpu_count(void);

#endif
