/* cost_server: a one-loop HTTP/1.1 test server with a known cost per request, for the cost
 * account's tests (runner/analysis/cost.py): every request is answered 200 "ok" after
 * --extra-syscalls K getppid() system calls (K per request, counted by the stage as "other")
 * and --spin L turns of an empty loop the compiler must keep (user-space instructions that
 * grow with L). GET /metrics answers the agreed counters (iface: actor_messages_total and
 * the rest) with actor_messages_total advancing by --hops H per request, so that the
 * stage's /metrics deltas have a known answer. Prints "port N" once listening; on SIGTERM
 * prints "requests=N" and exits 0. */
#include <llhttp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "helper_server.h"
#include "common/base/util.h"

static const char OK[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

struct server {
    struct helper_server hs; /* first: the handles' data is the server */
    uint64_t extra_syscalls, spin, hops;
    uint64_t requests, messages;
};

struct client {
    struct helper_conn hc; /* first: the handle's data is the client */
    struct server *srv;
    int metrics; /* the request being parsed is GET /metrics */
    struct buf out;
};

static void on_close(uv_handle_t *h)
{
    struct client *c = h->data;
    buf_free(&c->out);
    free(c);
}

static int on_url(llhttp_t *p, const char *at, size_t len)
{
    struct client *c = p->data;
    /* one piece here: the requests are small and arrive whole */
    c->metrics = len == 8 && memcmp(at, "/metrics", 8) == 0;
    return 0;
}

static void answer_metrics(struct client *c)
{
    char body[512];
    int n = snprintf(body, sizeof body,
                     "actor_messages_total %llu\nactor_cross_thread_hops_total 0\n"
                     "actor_wakeups_total 0\nstore_lock_waits_total 0\n"
                     "store_lock_acquisitions_total 0\n",
                     (unsigned long long)c->srv->messages);
    char head[128];
    int h = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", n);
    buf_append(&c->out, head, (size_t)h);
    buf_append(&c->out, body, (size_t)n);
}

static int on_message_complete(llhttp_t *p)
{
    struct client *c = p->data;
    struct server *s = c->srv;
    if (c->metrics) {
        answer_metrics(c);
        return 0;
    }
    s->requests++;
    s->messages += s->hops;
    for (uint64_t i = 0; i < s->extra_syscalls; i++)
        (void)getppid();
    for (volatile uint64_t i = 0; i < s->spin; i++) {
    }
    buf_append(&c->out, OK, sizeof OK - 1);
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
    if (c->out.len) {
        int rc = helper_write(st, c->out.data, c->out.len, on_close);
        if (rc == 0)
            buf_reset(&c->out);
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
    printf("requests=%llu\n", (unsigned long long)s->requests);
}

static const struct helper_spec spec = {
    .prog = "cost_server",
    .usage = "usage: cost_server [--port P] [--extra-syscalls K] [--spin L] [--hops H]\n"
             "See the header of tests/helpers/cost_server.c.\n",
    .on_message_complete = on_message_complete,
    .on_url = on_url,
    .on_connection = on_connection,
    .print_counts = print_counts,
};

int main(int argc, char **argv)
{
    static struct server s;
    const struct helper_flag flags[] = {
        {"--extra-syscalls", &s.extra_syscalls},
        {"--spin", &s.spin},
        {"--hops", &s.hops},
        {NULL, NULL},
    };
    return helper_main(argc, argv, &spec, flags, &s.hs);
}
