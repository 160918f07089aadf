/* response: rendering (see response.h). The status lines come from status.h's table;
 * the Date line is per thread, so rendering needs no lock. */
#include "response.h"

#include <string.h>
#include <time.h>

#include "json.h"
#include "status.h"

/* "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n", refreshed at most once a second per thread. */
static _Thread_local char date_line[48];
static _Thread_local size_t date_len;
static _Thread_local time_t date_sec;

static void date_refresh(void)
{
    time_t t = time(NULL);
    if (t == date_sec && date_len)
        return;
    struct tm tm;
    gmtime_r(&t, &tm);
    date_len = strftime(date_line, sizeof date_line, "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
    date_sec = t;
}

struct lit {
    const char *s;
    size_t n;
};
#define LIT(x) ((struct lit){x, sizeof(x) - 1})

/* The status line and the Server header, pre-rendered per status of the table. */
static struct lit status_head(unsigned status)
{
    switch (status) {
#define STATUS_HEAD_CASE(code, reason)                                                    \
    case code:                                                                            \
        return LIT("HTTP/1.1 " #code " " reason "\r\nServer: refsrv\r\n");
        STATUS_TABLE(STATUS_HEAD_CASE)
#undef STATUS_HEAD_CASE
    default:
        return LIT("");
    }
}

static struct lit content_type_line(uint8_t ct)
{
    switch (ct) {
    case CT_TEXT: return LIT("Content-Type: text/plain\r\n");
    case CT_JSON: return LIT("Content-Type: application/json\r\n");
    case CT_PROMETHEUS: return LIT("Content-Type: text/plain; version=0.0.4\r\n");
    default: return LIT("");
    }
}

static char *put(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}

#define PUT_LIT(p, x) put((p), (x), sizeof(x) - 1)

/* Headers are at most ~440 bytes: status 60, Date 37, type 42, length 38, close 24,
 * request id 80, location 39, Allow 27, Retry-After 16, WWW-Authenticate 40, blank line 2. */
#define HEAD_MAX 512

void response_render(struct buf *out, const struct response *resp, const char *request_id,
                     enum close_mode close)
{
    date_refresh();
    buf_reserve(out, HEAD_MAX + resp->body.len);
    char *p = out->data + out->len;
    struct lit head = status_head(resp->status);
    if (head.n) {
        p = put(p, head.s, head.n);
    } else {
        p = PUT_LIT(p, "HTTP/1.1 ");
        p += u64_to_dec(resp->status % 1000, p);
        p = PUT_LIT(p, " Unknown\r\nServer: refsrv\r\n");
    }
    p = put(p, date_line, date_len);
    struct lit ct = content_type_line(resp->content_type);
    p = put(p, ct.s, ct.n);
    p = PUT_LIT(p, "Content-Length: ");
    p += u64_to_dec(resp->body.len, p);
    p = PUT_LIT(p, "\r\n");
    if (close == CLOSE_AFTER)
        p = PUT_LIT(p, "Connection: close\r\n");
    else if (resp->flags & RESP_KEEP_ALIVE)
        p = PUT_LIT(p, "Connection: keep-alive\r\n");
    if ((resp->flags & RESP_REQUEST_ID) && request_id != NULL && request_id[0]) {
        size_t n = strnlen(request_id, REQUEST_ID_MAX);
        p = PUT_LIT(p, "X-Request-Id: ");
        p = put(p, request_id, n);
        p = PUT_LIT(p, "\r\n");
    }
    if (resp->flags & RESP_LOCATION) {
        p = PUT_LIT(p, "Location: /users/");
        p += u64_to_dec(resp->location_id, p);
        p = PUT_LIT(p, "\r\n");
    }
    if (resp->allow != NULL) {
        p = PUT_LIT(p, "Allow: ");
        p = put(p, resp->allow, strnlen(resp->allow, 32));
        p = PUT_LIT(p, "\r\n");
    }
    if (resp->flags & RESP_RETRY_AFTER)
        p = PUT_LIT(p, "Retry-After: 1\r\n");
    if (resp->status == 401) /* RFC 9110 11.6.1: a 401 MUST carry a challenge (RFC 6750 3) */
        p = PUT_LIT(p, "WWW-Authenticate: Bearer realm=\"users\"\r\n");
    p = PUT_LIT(p, "\r\n");
    if (resp->body.len && !(resp->flags & RESP_NO_BODY))
        p = put(p, resp->body.data, resp->body.len);
    out->len = (size_t)(p - out->data);
    *p = '\0';
}

void response_error(struct response *resp, uint16_t status, const char *reason)
{
    resp->status = status;
    resp->content_type = CT_JSON;
    buf_reset(&resp->body);
    json_append_error(&resp->body, reason);
}
