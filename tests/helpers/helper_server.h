/* helper_server.h: the start-up shared by the test servers in tests/helpers/: listen on
 * 127.0.0.1 and announce the port, and a signal handler on the loop. The Makefile builds
 * every tests/helpers/X.c into its own program, so these are static functions in a header
 * rather than a .c file; include it after <uv.h>. */
#ifndef HELPER_SERVER_H
#define HELPER_SERVER_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "util.h"

/* A "--name N" flag that sets *dst to a decimal number. */
struct helper_flag {
    const char *name;
    uint64_t *dst;
};

/* Parses argv against FLAGS (terminated by a NULL name) and --help. Returns -1 to go on,
 * else the exit code: 0 after printing the usage on stdout for --help, 2 after printing
 * it on stderr for an unknown flag or a missing or bad number. */
static int helper_parse_flags(int argc, char **argv, const struct helper_flag *flags,
                              void (*usage)(FILE *))
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        }
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t *dst = NULL;
        for (const struct helper_flag *f = flags; f->name != NULL; f++)
            if (strcmp(argv[i], f->name) == 0)
                dst = f->dst;
        if (dst == NULL || v == NULL || parse_u64(v, strlen(v), dst) < 0) {
            usage(stderr);
            return 2;
        }
        i++;
    }
    return -1;
}

/* Binds LISTENER (initialised here on LOOP, with DATA as its data) to 127.0.0.1:PORT
 * (0: any free port), listens with ON_CONNECTION and prints "port N" on stdout, flushed.
 * Returns 0, or a negative libuv error (nothing printed). */
static int helper_listen(uv_loop_t *loop, uv_tcp_t *listener, void *data, uint64_t port,
                         uv_connection_cb on_connection)
{
    struct sockaddr_in addr;
    uv_ip4_addr("127.0.0.1", (int)port, &addr);
    uv_tcp_init(loop, listener);
    listener->data = data;
    int rc = uv_tcp_bind(listener, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)listener, 1024, on_connection);
    if (rc < 0)
        return rc;
    struct sockaddr_storage bound;
    int len = sizeof bound;
    uv_tcp_getsockname(listener, (struct sockaddr *)&bound, &len);
    printf("port %u\n", ntohs(((struct sockaddr_in *)&bound)->sin_port));
    fflush(stdout);
    return 0;
}

/* Starts SIG (initialised here on LOOP, with DATA as its data) calling ON_SIGNAL for SIGNUM.
 * Returns 0, or a negative libuv error. */
static int helper_signal(uv_loop_t *loop, uv_signal_t *sig, void *data, uv_signal_cb on_signal,
                         int signum)
{
    int rc = uv_signal_init(loop, sig);
    if (rc < 0)
        return rc;
    sig->data = data;
    return uv_signal_start(sig, on_signal, signum);
}

/* The rest of a helper's main once its flags are parsed: SIGPIPE ignored, LISTENER on
 * 127.0.0.1:PORT announced, SIGTERM handled by ON_SIGTERM, then the loop runs. Returns
 * the exit code: uv_run's, or 1 after a message when the port cannot be bound. */
static int helper_serve(const char *prog, uv_loop_t *loop, uv_tcp_t *listener,
                        uv_signal_t *sigterm, void *data, uint64_t port,
                        uv_connection_cb on_connection, uv_signal_cb on_sigterm)
{
    signal(SIGPIPE, SIG_IGN);
    int rc = helper_listen(loop, listener, data, port, on_connection);
    if (rc < 0) {
        fprintf(stderr, "%s: listen: %s\n", prog, uv_strerror(rc));
        return 1;
    }
    helper_signal(loop, sigterm, data, on_sigterm, SIGTERM);
    return uv_run(loop, UV_RUN_DEFAULT);
}

#endif
