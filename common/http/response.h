/* response: a decided HTTP response (status, content type, extra headers, body) and its
 * rendering into bytes: status line and Server header pre-rendered per status (from
 * status.h), a Date header cached per thread and refreshed at most once a second, then
 * the headers the flags ask for and the body. Knows nothing of connections or requests.
 * A struct response belongs to one thread at a time. */
#ifndef COMMON_RESPONSE_H
#define COMMON_RESPONSE_H

#include <stdint.h>

#include "common/base/util.h"

#define REQUEST_ID_MAX 64 /* bytes of an X-Request-Id value, ours or the client's */

/* The Content-Type a response is rendered with. */
enum __attribute__((packed)) content_type { CT_NONE, CT_TEXT, CT_JSON, CT_PROMETHEUS };

/* Whether the connection stays open after a response: CLOSE_AFTER renders
 * "Connection: close" and the connection closes once the response is written. */
enum __attribute__((packed)) close_mode { CLOSE_KEEP, CLOSE_AFTER };

/* Response flags (extra headers) */
#define RESP_RETRY_AFTER 0x02 /* Retry-After: 1 */
#define RESP_LOCATION 0x04    /* Location: /users/<location_id> */
#define RESP_REQUEST_ID 0x08  /* X-Request-Id: <request_id> */
#define RESP_NO_BODY 0x10     /* a HEAD request: headers only (set by the parser) */
#define RESP_KEEP_ALIVE 0x20  /* HTTP/1.0 keep-alive honoured: say so (set by the parser) */

struct response {
    uint16_t status;
    enum content_type content_type;
    uint8_t flags;        /* RESP_* */
    const char *allow;    /* Allow header value for 405, static string, or NULL */
    uint64_t location_id;
    struct buf body;      /* last: a request keeps it across reuse (request.h) */
};

/* Appends the full response (status line, Server, Date, Content-Type, Content-Length,
 * Connection, X-Request-Id, Location, Allow, Retry-After, WWW-Authenticate (every 401:
 * the Bearer challenge), then the body) to out.
 * CLOSE_AFTER adds "Connection: close"; otherwise RESP_KEEP_ALIVE adds "Connection:
 * keep-alive" (the HTTP/1.0 keep-alive answer). RESP_NO_BODY (a HEAD request) keeps the
 * Content-Length of resp->body but leaves the body out (RFC 9110 9.3.2, 8.6). A status
 * outside status.h's table renders with the reason "Unknown". request_id is borrowed
 * (rendered only with RESP_REQUEST_ID). Any thread; out and resp are the caller's. */
void response_render(struct buf *out, const struct response *resp, const char *request_id,
                     enum close_mode close);

/* Fills resp with a {"error":reason} JSON response with that status (reason borrowed,
 * copied into the body). */
void response_error(struct response *resp, uint16_t status, const char *reason);

#endif
