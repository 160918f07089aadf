/* helper_server.h: what the test servers in tests/helpers/ share: flags, listen on
 * 127.0.0.1 and announce the port, a signal handler on the loop, and the connection
 * plumbing (accept, an llhttp parser per connection, reads, the one-shot write). The
 * Makefile builds every tests/helpers/X.c into its own program, so these are static inline
 * functions in a header rather than a .c file. Not a benchmark server: no caps beyond what
 * the tests need, writes that do not fit the socket at once close the connection. */
#ifndef HELPER_SERVER_H
#define HELPER_SERVER_H

#include <llhttp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "common/base/util.h"

/* One accepted connection: a helper's own client struct starts with it, and the handle's
 * and the parser's data point at that struct. */
struct helper_conn {
    uv_tcp_t tcp;
    llhttp_t parser;
    char rbuf[16384];
};

static inline void helper_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct helper_conn *c = h->data;
    *b = uv_buf_init(c->rbuf, sizeof c->rbuf);
}

/* Accepts a pending connection of LISTENER into C (its owner's struct, which starts with
 * C; freed by ON_CLOSE), parses with SETTINGS and reads with ON_READ. Returns 0, or -1
 * when the accept failed (then C is closing through ON_CLOSE). */
static inline int helper_accept(uv_stream_t *listener, struct helper_conn *c,
                                const llhttp_settings_t *settings, uv_read_cb on_read,
                                uv_close_cb on_close)
{
    uv_tcp_init(listener->loop, &c->tcp);
    c->tcp.data = c;
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) < 0) {
        uv_close((uv_handle_t *)&c->tcp, on_close);
        return -1;
    }
    llhttp_init(&c->parser, HTTP_REQUEST, settings);
    c->parser.data = c;
    uv_read_start((uv_stream_t *)&c->tcp, helper_on_alloc, on_read);
    return 0;
}

/* Writes LEN bytes of DATA to ST at once; when they do not all fit (the tests never fill
 * the socket) closes ST through ON_CLOSE and returns -1. Else 0. */
static inline int helper_write(uv_stream_t *st, char *data, size_t len, uv_close_cb on_close)
{
    uv_buf_t wb = uv_buf_init(data, (unsigned)len);
    if (uv_try_write(st, &wb, 1) != (int)wb.len) {
        uv_close((uv_handle_t *)st, on_close);
        return -1;
    }
    return 0;
}

/* A "--name N" flag that sets *dst to a decimal number. */
struct helper_flag {
    const char *name;
    uint64_t *dst;
};

/* What every helper server has; a helper's own server struct starts with it (the
 * listener's and the signal handle's data point at that struct). */
struct helper_server {
    uv_tcp_t listener;
    uv_signal_t sigterm;
    llhttp_settings_t settings;
    uint64_t port; /* --port; 0: any free port */
    const struct helper_spec *spec;
};

/* A helper program: its name, usage text (whole lines) and callbacks. */
struct helper_spec {
    const char *prog;
    const char *usage;
    llhttp_cb on_message_complete; /* the parser's data is the client (helper_conn) */
    llhttp_data_cb on_url;         /* optional: the request target, in pieces */
    uv_connection_cb on_connection;
    void (*print_counts)(const void *srv); /* on SIGTERM, on stdout; then exit 0 */
};

/* SIGTERM: the helper's counts on stdout, flushed, then exit 0. */
static inline void helper_on_sigterm(uv_signal_t *h, int sig)
{
    const struct helper_spec *spec = ((struct helper_server *)h->data)->spec;
    spec->print_counts(h->data);
    fflush(stdout);
    exit(0);
}

/* Parses argv against --port (into *port), FLAGS (terminated by a NULL name) and --help.
 * Returns -1 to go on, else the exit code: 0 after printing USAGE on stdout for --help, 2
 * after printing it on stderr for an unknown flag or a missing or bad number. */
static inline int helper_parse_flags(int argc, char **argv, uint64_t *port,
                                     const struct helper_flag *flags, const char *usage)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            fputs(usage, stdout);
            return 0;
        }
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t *dst = strcmp(argv[i], "--port") == 0 ? port : NULL;
        for (const struct helper_flag *f = flags; f->name != NULL; f++)
            if (strcmp(argv[i], f->name) == 0)
                dst = f->dst;
        if (dst == NULL || v == NULL || parse_u64(v, strlen(v), dst) < 0) {
            fputs(usage, stderr);
            return 2;
        }
        i++;
    }
    return -1;
}

/* Binds LISTENER (initialised here on LOOP, with DATA as its data) to 127.0.0.1:PORT
 * (0: any free port), listens with ON_CONNECTION and prints "port N" on stdout, flushed.
 * Returns 0, or a negative libuv error (nothing printed). */
static inline int helper_listen(uv_loop_t *loop, uv_tcp_t *listener, void *data, uint64_t port,
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
static inline int helper_signal(uv_loop_t *loop, uv_signal_t *sig, void *data,
                                uv_signal_cb on_signal, int signum)
{
    int rc = uv_signal_init(loop, sig);
    if (rc < 0)
        return rc;
    sig->data = data;
    return uv_signal_start(sig, on_signal, signum);
}

/* A helper's main: parses its flags (--port, FLAGS, --help), ignores SIGPIPE, listens on
 * 127.0.0.1 (announced), prints spec->print_counts and exits 0 on SIGTERM, parses requests with
 * spec->on_message_complete, then runs the default loop. Returns the exit code: the
 * flags' (0 or 2), uv_run's, or 1 after a message when the port cannot be bound. */
static inline int helper_main(int argc, char **argv, const struct helper_spec *spec,
                              const struct helper_flag *flags, struct helper_server *hs)
{
    int code = helper_parse_flags(argc, argv, &hs->port, flags, spec->usage);
    if (code >= 0)
        return code;
    uv_loop_t *loop = uv_default_loop();
    hs->spec = spec;
    llhttp_settings_init(&hs->settings);
    hs->settings.on_message_complete = spec->on_message_complete;
    hs->settings.on_url = spec->on_url;
    signal(SIGPIPE, SIG_IGN);
    int rc = helper_listen(loop, &hs->listener, hs, hs->port, spec->on_connection);
    if (rc < 0) {
        fprintf(stderr, "%s: listen: %s\n", spec->prog, uv_strerror(rc));
        return 1;
    }
    helper_signal(loop, &hs->sigterm, hs, helper_on_sigterm, SIGTERM);
    return uv_run(loop, UV_RUN_DEFAULT);
}

#endif
