/* http: HTTP/1.1 request parsing on llhttp (strict build) for one connection. Values
 * that arrive in pieces are accumulated with caps; limits map to statuses (414, 431,
 * 413, 400, 501). Pipelined requests are delivered in order.
 * llhttp 8.1.0 lets through obs-fold, empty header names, bare CR after an empty value,
 * repeated or malformed Host lines and Transfer-Encoding lists it frames loosely: this
 * module rejects those itself (Host values through host.h). Chunked trailers are checked
 * and discarded, never merged. One parser per connection; not thread-safe. Rendering
 * the answer is response.h's. */
#ifndef COMMON_HTTP_H
#define COMMON_HTTP_H

#include <llhttp.h>
#include <stddef.h>
#include <stdint.h>

#include "request.h"
#include "common/base/util.h"

struct http_limits {
    size_t max_target;   /* request line, bytes (8 KiB) -> 414 */
    size_t max_headers;  /* header block, bytes (16 KiB) -> 431 */
    unsigned max_header_count; /* (100) -> 431 */
    size_t max_body;     /* body bytes (64 KiB) -> 413 */
};

void http_limits_default(struct http_limits *lim);

struct http_parser;

/* Called for each request: `begin` must return a fresh (reset) request object, owned by
 * the parser until `complete` hands it back. `complete` returns 0 to keep parsing or 1 to
 * pause (http_parser_feed then returns with the unparsed bytes unconsumed). */
struct http_parser_ops {
    struct request *(*begin)(void *ctx);
    int (*complete)(void *ctx, struct request *req);
};

struct http_parser {
    llhttp_t llh;
    const struct http_limits *lim;
    const struct http_parser_ops *ops;
    void *ctx;
    struct request *cur;    /* being parsed, or NULL between requests */
    size_t target_bytes;
    size_t header_bytes;
    unsigned header_count;
    uint8_t field_id;       /* which header the current field names */
    uint8_t field_len;      /* bytes of field name seen (saturating) */
    uint8_t value_len_nonzero;
    uint8_t line_state;     /* raw header scanner state (obs-fold, bare CR) */
    uint8_t in_headers;
    uint16_t error_status;  /* set when feed fails */
    const char *error_reason;
    uint16_t cl_count;
    uint8_t te;             /* TE_* bits: what the Transfer-Encoding lines listed */
    uint8_t host_state;     /* Host value scanner state (http.c) */
    uint8_t trailers_start; /* on_chunk_header paused at the trailer section */
    char field[24];         /* lower-cased prefix of the field name */
    struct buf value;       /* current header value pieces (only headers we keep) */
};

/* Initialises hp for one connection; borrows lim and ops (must outlive hp). */
void http_parser_init(struct http_parser *hp, const struct http_limits *lim,
                      const struct http_parser_ops *ops, void *ctx);
/* Releases the parser's buffers. If a request is mid-parse it is returned through
 * *partial (caller frees it), else *partial = NULL. */
void http_parser_destroy(struct http_parser *hp, struct request **partial);

/* Feeds bytes. Returns:
 *   0   all bytes consumed (*consumed = len)
 *   1   paused by ops->complete: *consumed < len possibly; feed the rest (data +
 *       *consumed) when ready: nothing else is needed to resume
 *  <0   the input is not acceptable: hp->error_status holds the status to answer with
 *       (400, 413, 414, 431) and hp->error_reason a short reason; the connection must be
 *       answered with that status and closed. */
int http_parser_feed(struct http_parser *hp, const char *data, size_t len, size_t *consumed);

/* 1 when some bytes of a request have been seen and it is not complete yet. */
int http_parser_mid_request(const struct http_parser *hp);
/* 1 when the headers of the current request are still being received. */
int http_parser_in_headers(const struct http_parser *hp);

#endif
