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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "helper_server.h"
#include "util.h"

static const char OK[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
static const char ERR[] = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 3\r\n\r\nerr";
static const char GARBAGE[] = "HTTP/1.1 2x0 Bad\r\n\r\n";

struct server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    uv_signal_t sigterm;
    llhttp_settings_t settings;
    uint64_t close_every, hang_every, garbage_every, status_every;
    uint64_t conns, requests, ok, status500, closed, hung, garbage;
};

struct client {
    uv_tcp_t tcp;
    llhttp_t parser;
    struct server *srv;
    uint64_t index;
    int doomed;  /* close on the first request */
    int dead;    /* hung or closing: ignore further input */
    struct buf out;
    char rbuf[16384];
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
    if (nread < 0) {
        uv_close((uv_handle_t *)st, on_close);
        return;
    }
    if (c->dead)
        return;
    if (llhttp_execute(&c->parser, b->base, (size_t)nread) != HPE_OK) {
        uv_close((uv_handle_t *)st, on_close);
        return;
    }
    if (c->out.len) {
        uv_buf_t wb = uv_buf_init(c->out.data, (unsigned)c->out.len);
        int n = uv_try_write(st, &wb, 1);
        buf_reset(&c->out);
        if (n != (int)wb.len) { /* tests never fill the socket */
            uv_close((uv_handle_t *)st, on_close);
            return;
        }
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
    printf("requests=%llu ok=%llu status500=%llu closed=%llu hung=%llu garbage=%llu\n",
           (unsigned long long)s->requests, (unsigned long long)s->ok,
           (unsigned long long)s->status500, (unsigned long long)s->closed,
           (unsigned long long)s->hung, (unsigned long long)s->garbage);
    fflush(stdout);
    exit(0);
}

static void usage(FILE *f)
{
    fputs("usage: fault_server [--port P] [--status-every K] [--close-every J]\n"
          "                    [--hang-every H] [--garbage-every G]\n"
          "See the header of tests/helpers/fault_server.c for the schedule.\n",
          f);
}

int main(int argc, char **argv)
{
    static struct server s;
    uint64_t port = 0;
    const struct helper_flag flags[] = {
        {"--port", &port},
        {"--status-every", &s.status_every},
        {"--close-every", &s.close_every},
        {"--hang-every", &s.hang_every},
        {"--garbage-every", &s.garbage_every},
        {NULL, NULL},
    };
    int code = helper_parse_flags(argc, argv, flags, usage);
    if (code >= 0)
        return code;
    s.loop = uv_default_loop();
    llhttp_settings_init(&s.settings);
    s.settings.on_message_complete = on_message_complete;
    return helper_serve("fault_server", s.loop, &s.listener, &s.sigterm, &s, port, on_connection,
                        on_sigterm);
}
