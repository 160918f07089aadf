/* middleware: request id, bearer auth, access logging. Stateless apart from the
 * per-thread request-id generator and per-thread log buffers. */
#include "middleware.h"

#include <errno.h>
#include <fcntl.h>
#include <llhttp.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/http/response.h"

#define ACCESSLOG_FLUSH_BYTES (64 * 1024)
#define ACCESSLOG_FLUSH_NS 1000000000ull

void rid_seed(struct rid_state *st, uint64_t seed)
{
    st->s = seed ? seed : 0x9e3779b97f4a7c15ull;
}

static uint64_t rid_next(struct rid_state *st)
{
    uint64_t x = st->s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    st->s = x;
    return x * 0x2545f4914f6cdd1dull;
}

void mw_request_id(struct request *req, struct rid_state *st)
{
    static const char hex[] = "0123456789abcdef";
    if (req->request_id_len == 0) {
        uint64_t v = rid_next(st);
        for (int i = 15; i >= 0; i--) {
            req->request_id[i] = hex[v & 15];
            v >>= 4;
        }
        req->request_id[16] = '\0';
        req->request_id_len = 16;
    }
    req->resp.flags |= RESP_REQUEST_ID;
}

int mw_auth(struct request *req, const char *token, size_t token_len)
{
    static const char prefix[] = "Bearer ";
    const size_t plen = sizeof prefix - 1;
    int ok = req->auth_len <= AUTH_HEADER_MAX && req->auth_len == plen + token_len &&
             strncasecmp(req->auth, prefix, plen) == 0;
    /* Constant time over the token's length, whatever the header holds. */
    unsigned char diff = ok ? 0 : 1;
    const char *given = ok ? req->auth + plen : token;
    for (size_t i = 0; i < token_len; i++)
        diff |= (unsigned char)(given[i] ^ token[i]);
    if (diff == 0)
        return 0;
    response_error(&req->resp, 401, req->auth_len ? "invalid bearer token"
                                                         : "missing bearer token");
    return -EACCES;
}

int accesslog_open(struct accesslog *log, const char *path)
{
    if (path == NULL || path[0] == '\0')
        path = "/dev/null";
    log->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    return log->fd < 0 ? -errno : 0;
}

void accesslog_close(struct accesslog *log)
{
    if (log->fd >= 0)
        close(log->fd);
    log->fd = -1;
}

void accesslog_buf_init(struct accesslog_buf *lb, struct accesslog *log)
{
    memset(lb, 0, sizeof *lb);
    lb->log = log;
    lb->last_flush_ns = now_ns();
}

int accesslog_flush(struct accesslog_buf *lb)
{
    size_t off = 0;
    int rc = 0;
    while (off < lb->buf.len) {
        ssize_t n = write(lb->log->fd, lb->buf.data + off, lb->buf.len - off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            break;
        }
        off += (size_t)n;
    }
    buf_reset(&lb->buf);
    lb->last_flush_ns = now_ns();
    return rc;
}

void accesslog_request(struct accesslog_buf *lb, const struct request *req, uint64_t now)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    uint64_t ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
    uint64_t dur_us = now > req->parsed_ns ? (now - req->parsed_ns) / 1000 : 0;
    struct buf *b = &lb->buf;
    size_t tlen = req->target.len > 256 ? 256 : req->target.len;
    buf_reserve(b, 128 + tlen);
    buf_append_u64(b, ms);
    buf_append(b, " ", 1);
    buf_append_str(b, llhttp_method_name((llhttp_method_t)req->method));
    buf_append(b, " ", 1);
    /* The target was validated by the parser (no control bytes). */
    buf_append(b, req->target.data, tlen);
    buf_append(b, " ", 1);
    buf_append_u64(b, req->resp.status);
    buf_append(b, " ", 1);
    buf_append_u64(b, dur_us);
    buf_append_str(b, "us ");
    buf_append(b, req->request_id, req->request_id_len);
    buf_append(b, "\n", 1);
    lb->lines++;
    if (b->len >= ACCESSLOG_FLUSH_BYTES || now - lb->last_flush_ns >= ACCESSLOG_FLUSH_NS)
        accesslog_flush(lb);
}

void accesslog_tick(struct accesslog_buf *lb, uint64_t now)
{
    if (lb->buf.len > 0 && now - lb->last_flush_ns >= ACCESSLOG_FLUSH_NS)
        accesslog_flush(lb);
}

void accesslog_buf_destroy(struct accesslog_buf *lb)
{
    accesslog_flush(lb);
    buf_free(&lb->buf);
}
