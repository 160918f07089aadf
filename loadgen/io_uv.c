/* io_uv: closed loop on epoll. libuv reads every socket as it becomes readable (a read
 * callback per connection, timed at the read), a uv_check handle runs the turn after each
 * poll phase, and a flush is uv_try_write with uv_write for what did not fit (the other
 * output buffer takes new requests meanwhile). */
#include "io.h"

#include "dispatch.h"
#include "timebase.h"

static void on_write(uv_write_t *req, int status)
{
    struct client *c = req->data;
    c->wpending = 0;
    buf_reset(&c->out[c->wbuf]);
    if (status < 0) {
        if (status != UV_ECANCELED && c->state == CLIENT_OPEN) {
            c->w->now_ns = timebase_now_ns();
            client_write_failed(c, status);
        }
        return;
    }
    if (c->out[c->cur].len && c->state == CLIENT_OPEN)
        client_touch(c); /* the next turn writes what queued up meanwhile */
}

void io_uv_flush(struct client *c)
{
    struct buf *out = &c->out[c->cur];
    uv_buf_t b = uv_buf_init(out->data, (unsigned)out->len);
    int n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (n == (int)out->len) {
        buf_reset(out);
        return;
    }
    if (n < 0 && n != UV_EAGAIN) {
        client_write_failed(c, n);
        return;
    }
    if (n < 0)
        n = 0;
    /* Partial: uv_write owns the rest of this buffer until on_write; append to the other. */
    c->wbuf = c->cur;
    c->cur = !c->cur;
    c->wpending = 1;
    b = uv_buf_init(out->data + n, (unsigned)(out->len - (size_t)n));
    int rc = uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_write);
    if (rc < 0) {
        c->wpending = 0;
        buf_reset(out);
        client_write_failed(c, rc);
    }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct client *c = h->data;
    *b = uv_buf_init(c->rbuf, sizeof c->rbuf);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    struct client *c = s->data;
    if (nread == 0)
        return;
    c->w->now_ns = timebase_now_ns();
    if (nread < 0)
        client_read_ended(c, nread == UV_EOF);
    else
        client_on_data(c, b->base, (size_t)nread);
}

static int iouv_open(struct client *c)
{
    return uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static void on_turn(uv_check_t *h)
{
    dispatch_turn(h->data);
}

static void iouv_init(struct worker *w)
{
}

static void iouv_run(struct worker *w)
{
    uv_check_init(&w->loop, &w->turn);
    w->turn.data = w;
    uv_check_start(&w->turn, on_turn);
    uv_run(&w->loop, UV_RUN_DEFAULT);
}

static void iouv_stop(struct worker *w)
{
    uv_close((uv_handle_t *)&w->turn, NULL);
}

static void iouv_release(struct worker *w)
{
}

const struct io_ops io_uv = {
    .name = "epoll",
    .init = iouv_init,
    .open = iouv_open,
    .flush = io_uv_flush,
    .close = NULL,
    .run = iouv_run,
    .stop = iouv_stop,
    .release = iouv_release,
};
