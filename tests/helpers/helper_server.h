/* helper_server.h: the start-up shared by the test servers in tests/helpers/: listen on
 * 127.0.0.1 and announce the port, and a signal handler on the loop. The Makefile builds
 * every tests/helpers/X.c into its own program, so these are static functions in a header
 * rather than a .c file; include it after <uv.h>. */
#ifndef HELPER_SERVER_H
#define HELPER_SERVER_H

#include <stdint.h>
#include <stdio.h>
#include <uv.h>

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

#endif
