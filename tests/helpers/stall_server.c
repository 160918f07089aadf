/* stall_server: a one-loop HTTP/1.1 test server that answers every request
 * "200 ok" at once, except that it freezes its loop once, for --stall-ms, when the first
 * request arrives at least --stall-after-ms after the first request of all. For the
 * coordinated-omission test. Prints "port N" on stdout once listening; SIGTERM exits 0.
 * Not a benchmark server: no caps beyond what the test needs. */
#include <errno.h>
#include <llhttp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "helper_server.h"
#include "common/base/util.h"

static const char RESPONSE[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

struct server {
    struct helper_server hs; /* first: the handles' data is the server */
    uint64_t stall_ms;
    uint64_t stall_after_ms;
    uint64_t first_ns;
    int stalled;
    uint64_t requests;
};

struct client {
    struct helper_conn hc; /* first: the handle's data is the client */
    struct server *srv;
    unsigned pending; /* responses to write after this read */
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

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *b)
{
    struct client *c = st->data;
    if (nread == 0)
        return;
    if (nread < 0 || llhttp_execute(&c->hc.parser, b->base, (size_t)nread) != HPE_OK) {
        uv_close((uv_handle_t *)st, on_close);
        return;
    }
    char out[64 * (sizeof RESPONSE - 1)];
    while (c->pending > 0) {
        unsigned n = c->pending < 64 ? c->pending : 64;
        for (unsigned i = 0; i < n; i++)
            memcpy(out + i * (sizeof RESPONSE - 1), RESPONSE, sizeof RESPONSE - 1);
        c->pending -= n;
        if (helper_write(st, out, n * (sizeof RESPONSE - 1), on_close) < 0)
            return;
    }
}

static void on_connection(uv_stream_t *l, int status)
{
    struct server *s = l->data;
    if (status < 0)
        return;
    struct client *c = xcalloc(1, sizeof *c);
    c->srv = s;
    helper_accept(l, &c->hc, &s->hs.settings, on_read, on_close);
}

static void print_counts(const void *srv)
{
    const struct server *s = srv;
    printf("requests=%llu stalled=%d\n", (unsigned long long)s->requests, s->stalled);
}

static const struct helper_spec spec = {
    .prog = "stall_server",
    .usage =
        "usage: stall_server [--port P] [--stall-ms MS] [--stall-after-ms MS]\n"
        "Answers 200 to every request; freezes once for --stall-ms (default 500) when a\n"
        "request arrives --stall-after-ms (default 1000) after the first. Port 0 (default):\n"
        "any free port. Prints 'port N' once listening.\n",
    .on_message_complete = on_message_complete,
    .on_connection = on_connection,
    .print_counts = print_counts,
};

int main(int argc, char **argv)
{
    static struct server s = {.stall_ms = 500, .stall_after_ms = 1000};
    const struct helper_flag flags[] = {
        {"--stall-ms", &s.stall_ms},
        {"--stall-after-ms", &s.stall_after_ms},
        {NULL, NULL},
    };
    return helper_main(argc, argv, &spec, flags, &s.hs);
}
