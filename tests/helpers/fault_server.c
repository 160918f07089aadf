/* fault_server: a one-loop HTTP/1.1 test server that misbehaves on a fixed schedule so
 * the load generator's error accounting can be checked exactly. Connections are
 * numbered by accept order, requests by arrival (across connections), from 1:
 *   every --close-every J-th connection is closed on its first request, unanswered
 *     (that request is not numbered);
 *   request n with n % H == 0 (--hang-every H) is never answered (connection kept);
 *   else n % G == 0 (--garbage-every G) gets a malformed status line;
 *   else n % K == 0 (--status-every K) gets 500; else 200.
 * 0 disables a fault. Prints "port N" once listening; on SIGTERM prints the counts
 * ("requests= ok= status500= closed= hung= garbage=") and exits 0. */
#include <llhttp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "helper_server.h"
#include "common/base/util.h"

static const char OK[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
static const char ERR[] = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 3\r\n\r\nerr";
static const char GARBAGE[] = "HTTP/1.1 2x0 Bad\r\n\r\n";

struct server {
    struct helper_server hs; /* first: the handles' data is the server */
    uint64_t close_every, hang_every, garbage_every, status_every;
    uint64_t conns, requests, ok, status500, closed, hung, garbage;
};

struct client {
    struct helper_conn hc; /* first: the handle's data is the client */
    struct server *srv;
    uint64_t index;
    int doomed;  /* close on the first request */
    int dead;    /* hung or closing: ignore further input */
    struct buf out;
};

static void on_close(uv_handle_t *h)
{
    struct client *c = h->data;
    buf_free(&c->out);
    free(c);
}

static int on_message_complete(llhttp_t *p)
{
    struct client *c = p->data;
    struct server *s = c->srv;
    if (c->dead)
        return 0;
    if (c->doomed) {
        s->closed++;
        c->dead = 2;
        return 0;
    }
    uint64_t n = ++s->requests;
    if (s->hang_every && n % s->hang_every == 0) {
        s->hung++;
        c->dead = 1;
    } else if (s->garbage_every && n % s->garbage_every == 0) {
        s->garbage++;
        buf_append(&c->out, GARBAGE, sizeof GARBAGE - 1);
        c->dead = 1;
    } else if (s->status_every && n % s->status_every == 0) {
        s->status500++;
        buf_append(&c->out, ERR, sizeof ERR - 1);
    } else {
        s->ok++;
        buf_append(&c->out, OK, sizeof OK - 1);
    }
    return 0;
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *b)
{
    struct client *c = st->data;
    if (nread == 0)
        return;
    if (nread < 0) {
        uv_close((uv_handle_t *)st, on_close);
        return;
    }
    if (c->dead)
        return;
    if (llhttp_execute(&c->hc.parser, b->base, (size_t)nread) != HPE_OK) {
        uv_close((uv_handle_t *)st, on_close);
        return;
    }
    if (c->out.len) {
        int rc = helper_write(st, c->out.data, c->out.len, on_close);
        buf_reset(&c->out);
        if (rc < 0)
            return;
    }
    if (c->dead == 2)
        uv_close((uv_handle_t *)st, on_close);
}

static void on_connection(uv_stream_t *l, int status)
{
    struct server *s = l->data;
    if (status < 0)
        return;
    struct client *c = xcalloc(1, sizeof *c);
    c->srv = s;
    c->index = ++s->conns;
    c->doomed = s->close_every && c->index % s->close_every == 0;
    helper_accept(l, &c->hc, &s->hs.settings, on_read, on_close);
}

static void print_counts(const void *srv)
{
    const struct server *s = srv;
    printf("requests=%llu ok=%llu status500=%llu closed=%llu hung=%llu garbage=%llu\n",
           (unsigned long long)s->requests, (unsigned long long)s->ok,
           (unsigned long long)s->status500, (unsigned long long)s->closed,
           (unsigned long long)s->hung, (unsigned long long)s->garbage);
}

static const struct helper_spec spec = {
    .prog = "fault_server",
    .usage =
        "usage: fault_server [--port P] [--status-every K] [--close-every J]\n"
        "                    [--hang-every H] [--garbage-every G]\n"
        "See the header of tests/helpers/fault_server.c for the schedule.\n",
    .on_message_complete = on_message_complete,
    .on_connection = on_connection,
    .print_counts = print_counts,
};

int main(int argc, char **argv)
{
    static struct server s;
    const struct helper_flag flags[] = {
        {"--status-every", &s.status_every},
        {"--close-every", &s.close_every},
        {"--hang-every", &s.hang_every},
        {"--garbage-every", &s.garbage_every},
        {NULL, NULL},
    };
    return helper_main(argc, argv, &spec, flags, &s.hs);
}
