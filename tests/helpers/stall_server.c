/* stall_server: a one-loop HTTP/1.1 test server that answers every request
 * "200 ok" at once, except that it freezes its loop once, for --stall-ms, when the first
 * request arrives at least --stall-after-ms after the first request of all. For the
 * coordinated-omission test. Prints "port N" on stdout once listening; SIGTERM exits 0.
 * Not a benchmark server: no caps beyond what the test needs. */
#include <errno.h>
#include <llhttp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "helper_server.h"
#include "util.h"

static const char RESPONSE[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

struct server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    uv_signal_t sigterm;
    llhttp_settings_t settings;
    uint64_t stall_ms;
    uint64_t stall_after_ms;
    uint64_t first_ns;
    int stalled;
    uint64_t requests;
};

struct client {
    uv_tcp_t tcp;
    llhttp_t parser;
    struct server *srv;
    unsigned pending; /* responses to write after this read */
    char rbuf[16384];
};

static void on_close(uv_handle_t *h)
{
    free(h->data);
}

static int on_message_complete(llhttp_t *p)
{
    struct client *c = p->data;
    struct server *s = c->srv;
    uint64_t now = now_ns();
    if (s->requests++ == 0)
        s->first_ns = now;
    if (!s->stalled && s->stall_ms && now - s->first_ns >= s->stall_after_ms * 1000000u) {
        s->stalled = 1;
        struct timespec ts = {.tv_sec = (time_t)(s->stall_ms / 1000),
                              .tv_nsec = (long)(s->stall_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
        }
    }
    c->pending++;
    return 0;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct client *c = h->data;
    *b = uv_buf_init(c->rbuf, sizeof c->rbuf);
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *b)
{
    struct client *c = st->data;
    if (nread == 0)
        return;
    if (nread < 0 || llhttp_execute(&c->parser, b->base, (size_t)nread) != HPE_OK) {
        uv_close((uv_handle_t *)st, on_close);
        return;
    }
    char out[64 * (sizeof RESPONSE - 1)];
    while (c->pending > 0) {
        unsigned n = c->pending < 64 ? c->pending : 64;
        for (unsigned i = 0; i < n; i++)
            memcpy(out + i * (sizeof RESPONSE - 1), RESPONSE, sizeof RESPONSE - 1);
        c->pending -= n;
        uv_buf_t wb = uv_buf_init(out, (unsigned)(n * (sizeof RESPONSE - 1)));
        if (uv_try_write(st, &wb, 1) != (int)wb.len) { /* tests never fill the socket */
            uv_close((uv_handle_t *)st, on_close);
            return;
        }
    }
}

static void on_connection(uv_stream_t *l, int status)
{
    struct server *s = l->data;
    if (status < 0)
        return;
    struct client *c = xcalloc(1, sizeof *c);
    c->srv = s;
    uv_tcp_init(s->loop, &c->tcp);
    c->tcp.data = c;
    if (uv_accept(l, (uv_stream_t *)&c->tcp) < 0) {
        uv_close((uv_handle_t *)&c->tcp, on_close);
        return;
    }
    llhttp_init(&c->parser, HTTP_REQUEST, &s->settings);
    c->parser.data = c;
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static void on_sigterm(uv_signal_t *h, int sig)
{
    struct server *s = h->data;
    printf("requests=%llu stalled=%d\n", (unsigned long long)s->requests, s->stalled);
    fflush(stdout);
    exit(0);
}

static void usage(FILE *f)
{
    fputs("usage: stall_server [--port P] [--stall-ms MS] [--stall-after-ms MS]\n"
          "Answers 200 to every request; freezes once for --stall-ms (default 500) when a\n"
          "request arrives --stall-after-ms (default 1000) after the first. Port 0 (default):\n"
          "any free port. Prints 'port N' once listening.\n",
          f);
}

int main(int argc, char **argv)
{
    static struct server s;
    uint64_t port = 0;
    s.stall_ms = 500;
    s.stall_after_ms = 1000;
    const struct helper_flag flags[] = {
        {"--port", &port},
        {"--stall-ms", &s.stall_ms},
        {"--stall-after-ms", &s.stall_after_ms},
        {NULL, NULL},
    };
    int code = helper_parse_flags(argc, argv, flags, usage);
    if (code >= 0)
        return code;
    s.loop = uv_default_loop();
    llhttp_settings_init(&s.settings);
    s.settings.on_message_complete = on_message_complete;
    return helper_serve("stall_server", s.loop, &s.listener, &s.sigterm, &s, port, on_connection,
                        on_sigterm);
}
