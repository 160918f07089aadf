/* middleware: the logic of the three middleware steps on the /users routes, shared by
 * both servers (the async server calls them inline, the actor server from its
 * middleware actors): request id, bearer auth, and the access logger.
 * The access log is one file shared by all threads; each thread (or logger actor) owns
 * a struct accesslog_buf and writes whole lines with one write(2) per flush, so lines
 * never interleave. Flushed at 64 KiB or when a second has passed. */
#ifndef COMMON_MIDDLEWARE_H
#define COMMON_MIDDLEWARE_H

#include <stddef.h>
#include <stdint.h>

#include "common/http/request.h"
#include "common/base/util.h"

/* Per-thread state for request-id generation (xorshift64*). Seed with rid_seed. */
struct rid_state {
    uint64_t s;
};
void rid_seed(struct rid_state *st, uint64_t seed);

/* Request-id step: keeps a valid incoming X-Request-Id (<= 64 of [A-Za-z0-9._-], checked
 * by the parser), else generates 16 lowercase hex digits into req->request_id. Sets
 * RESP_REQUEST_ID so the response echoes it. */
void mw_request_id(struct request *req, struct rid_state *st);

/* Auth step: 0 when req carries "Authorization: Bearer <token>" with exactly `token`
 * (constant-time compare over the token's length), else fills a 401 response and
 * returns -EACCES. */
int mw_auth(struct request *req, const char *token, size_t token_len);

/* The shared access-log file. path NULL or "/dev/null" still formats every line (the
 * cost is part of the logger) but writes to /dev/null. */
struct accesslog {
    int fd;
};
/* Opens (append, create 0644). 0 or -errno. */
int accesslog_open(struct accesslog *log, const char *path);
void accesslog_close(struct accesslog *log);

struct accesslog_buf {
    struct accesslog *log;
    struct buf buf;
    uint64_t last_flush_ns;
    uint64_t lines;
};
void accesslog_buf_init(struct accesslog_buf *lb, struct accesslog *log);
/* Logger step: formats one line
 *   <unix time ms> <method> <target> <status> <duration_us>us <request id>\n
 * (target truncated to 256 bytes) and flushes when 64 KiB are buffered or a second has
 * passed since the last flush. Owner thread only. */
void accesslog_request(struct accesslog_buf *lb, const struct request *req, uint64_t now);
/* Flushes when lines have waited a second or more (call from a periodic timer). */
void accesslog_tick(struct accesslog_buf *lb, uint64_t now);
/* Writes out what is buffered. 0 or -errno. */
int accesslog_flush(struct accesslog_buf *lb);
/* Flushes, then frees the buffer. */
void accesslog_buf_destroy(struct accesslog_buf *lb);

#endif
