/* serve: the process skeleton both servers share: parse options, open the store and the
 * access log, create the loops (server.c), print "listening on", wait for SIGINT or
 * SIGTERM, stop gracefully, close the store, exit 0 (a second signal: exit 128 + signal
 * at once; a stop past stop timeout + store timeout + 0.5 s: exit 1). The architecture
 * plugs in through struct serve_arch; nothing else differs between the two programs. */
#ifndef COMMON_SERVE_H
#define COMMON_SERVE_H

#include "app.h"
#include "middleware.h"
#include "options.h"
#include "common/net/server.h"
#include "common/store/store.h"

struct serve_ctx {
    struct options opt;
    struct store *store;
    struct app app;
    struct accesslog log;
    struct server *srv;
    struct metrics_registry registry;
    void *arch; /* the architecture's state */
    char info[160]; /* set by init: its settings for the start-up line ("" for none) */
};

struct serve_arch {
    const char *prog;
    int allow_workers; /* OPT_* bits of options.h: OPT_WORKERS, OPT_GROUP_COMMIT */
    const struct server_hooks *hooks; /* ctx passed to hooks is the struct serve_ctx */
    /* After the store is open and the loops exist, before they start (main thread):
     * 0, or a negative errno with a message printed. May set ctx->registry.extra. */
    int (*init)(struct serve_ctx *ctx);
    /* After the loops stopped running (server_join) and before their memory is freed
     * (server_free), then the store closes: stops and frees what init made, its threads
     * first (main thread). */
    void (*fini)(struct serve_ctx *ctx);
};

/* Runs a server process; returns the exit code (0 ok, 1 runtime failure, 2 usage), or
 * does not return (the stop's second signal or watchdog _exit, see above). */
int serve_main(int argc, char **argv, const struct serve_arch *arch);

#endif
