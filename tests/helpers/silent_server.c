/* silent_server: a test server on 127.0.0.1 that never answers, in one of three ways:
 *   default          accepts, reads and discards every byte, never writes (requests hang);
 *   --accept-close 1 accepts and closes each connection at once, unread (what our servers
 *                    do past --max-conns);
 *   --no-accept 1    listens with a backlog of 0 and never accepts; its own connection fills
 *                    the accept queue, so the kernel drops every later SYN and a client's
 *                    connect hangs (a blackholed address, without iptables or a namespace).
 * Prints "port N" once listening; on SIGTERM prints "accepted=N" (0 with --no-accept) and
 * exits 0. For the load generator's connect timeout, backoff and unanswered requests. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "helper_server.h"
#include "common/base/util.h"

struct server {
    struct helper_server hs; /* first: the handles' data is the server */
    uint64_t accept_close;
    uint64_t no_accept;
    uint64_t accepted;
};

struct client {
    struct helper_conn hc; /* first: the handle's data is the client */
};

static void on_close(uv_handle_t *h)
{
    free(h->data);
}

static int on_message_complete(llhttp_t *p)
{
    return 0; /* never answered */
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *b)
{
    if (nread < 0)
        uv_close((uv_handle_t *)st, on_close);
}

static void on_connection(uv_stream_t *l, int status)
{
    struct server *s = l->data;
    if (status < 0)
        return;
    struct client *c = xcalloc(1, sizeof *c);
    if (helper_accept(l, &c->hc, &s->hs.settings, on_read, on_close) < 0)
        return;
    s->accepted++;
    if (s->accept_close)
        uv_close((uv_handle_t *)&c->hc.tcp, on_close);
}

static void print_counts(const void *srv)
{
    printf("accepted=%llu\n", (unsigned long long)((const struct server *)srv)->accepted);
}

static const struct helper_spec spec = {
    .prog = "silent_server",
    .usage = "usage: silent_server [--port P] [--accept-close 1 | --no-accept 1]\n"
             "See the header of tests/helpers/silent_server.c.\n",
    .on_message_complete = on_message_complete,
    .on_connection = on_connection,
    .print_counts = print_counts,
};

static volatile sig_atomic_t g_term;

static void on_term(int sig)
{
    g_term = 1;
}

/* --no-accept: a listener whose accept queue its own connections fill (a backlog of 0
 * holds one; more are tried until a connect does not complete within 200 ms), then sleeps
 * until SIGTERM. Returns the exit code. */
static int run_no_accept(uint64_t port)
{
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    if (l < 0 || bind(l, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(l, 0) < 0 ||
        getsockname(l, (struct sockaddr *)&addr, &len) < 0) {
        fprintf(stderr, "silent_server: listen: %s\n", strerror(errno));
        return 1;
    }
    for (int i = 0; i < 8; i++) { /* fillers, left open until exit */
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        if (fd < 0 || (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0 &&
                       errno != EINPROGRESS)) {
            fprintf(stderr, "silent_server: filler connect: %s\n", strerror(errno));
            return 1;
        }
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        if (poll(&p, 1, 200) == 0)
            break; /* this SYN was dropped: the queue is full */
    }
    struct sigaction sa = {.sa_handler = on_term};
    sigaction(SIGTERM, &sa, NULL);
    printf("port %u\n", ntohs(addr.sin_port));
    fflush(stdout);
    while (!g_term)
        pause();
    printf("accepted=0\n");
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    static struct server s;
    const struct helper_flag flags[] = {
        {"--accept-close", &s.accept_close},
        {"--no-accept", &s.no_accept},
        {NULL, NULL},
    };
    int code = helper_parse_flags(argc, argv, &s.hs.port, flags, spec.usage);
    if (code >= 0)
        return code;
    if (s.no_accept)
        return run_no_accept(s.hs.port);
    return helper_main(argc, argv, &spec, flags, &s.hs);
}
