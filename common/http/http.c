/* http: request parsing on llhttp with caps and the checks llhttp 8.1.0 lacks
 * (obs-fold, empty header names, bare CR, Host, Transfer-Encoding lists, trailers).
 * Invariant: the parser pauses after every complete message and at the start of every
 * trailer section, so each header block and each trailer section is scanned from its
 * first byte by scan_headers() before llhttp trusts it. */
#include "http.h"


#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "host.h"

/* The header fields this parser reads (F_TE_LIST: Transfer-Encoding). */
enum field_id { F_OTHER, F_HOST, F_CONTENT_TYPE, F_AUTHORIZATION, F_REQUEST_ID, F_TE_LIST };

/* What the Transfer-Encoding lines of a request listed (hp->te). */
#define TE_SEEN 0x01         /* a Transfer-Encoding line, even an empty one */
#define TE_CHUNKED 0x02      /* chunked listed */
#define TE_LAST_CHUNKED 0x04 /* ... as the final coding so far */
#define TE_TWICE 0x08        /* chunked listed more than once */
#define TE_OTHER 0x10        /* a coding other than chunked */
#define TE_TOO_LONG 0x20     /* a value longer than this parser reads */

/* Raw header scanner states. */
enum {
    SC_PRE, SC_PRE_CR, /* empty lines before the request line, which llhttp skips */
    SC_REQ_LINE, SC_REQ_LINE_CR, SC_LINE_START, SC_IN_LINE, SC_CR, SC_END_CR, SC_DONE
};

void http_limits_default(struct http_limits *lim)
{
    lim->max_target = 8 * 1024;
    lim->max_headers = 16 * 1024;
    lim->max_header_count = 100;
    lim->max_body = 64 * 1024;
}

static struct http_parser *parser_of(llhttp_t *llh)
{
    return (struct http_parser *)llh; /* llh is the first member */
}

static int fail(struct http_parser *hp, uint16_t status, const char *reason)
{
    hp->error_status = status;
    hp->error_reason = reason;
    return HPE_USER;
}

static int is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* ---- parsing ---- */

static int on_message_begin(llhttp_t *llh)
{
    struct http_parser *hp = parser_of(llh);
    hp->cur = hp->ops->begin(hp->ctx);
    hp->target_bytes = 0;
    hp->header_bytes = 0;
    hp->header_count = 0;
    hp->field_len = 0;
    hp->in_headers = 1;
    hp->te = 0;
    return 0;
}

static int on_url(llhttp_t *llh, const char *at, size_t len)
{
    struct http_parser *hp = parser_of(llh);
    hp->target_bytes += len;
    if (hp->target_bytes > hp->lim->max_target)
        return fail(hp, 414, "request target too long");
    /* The method is known from here on: whatever the answer, a HEAD gets no body. */
    if (llh->method == HTTP_HEAD)
        hp->cur->resp.flags |= RESP_NO_BODY;
    buf_append(&hp->cur->target, at, len);
    return 0;
}

static int count_header_bytes(struct http_parser *hp, size_t len)
{
    hp->header_bytes += len;
    if (hp->header_bytes > hp->lim->max_headers)
        return fail(hp, 431, "header block too large");
    return 0;
}

static int on_header_field(llhttp_t *llh, const char *at, size_t len)
{
    struct http_parser *hp = parser_of(llh);
    if (count_header_bytes(hp, len))
        return HPE_USER;
    /* Keeps the lower-cased first sizeof field bytes; field_len saturates at 255. */
    size_t have = hp->field_len < sizeof hp->field ? hp->field_len : sizeof hp->field;
    size_t n = len < sizeof hp->field - have ? len : sizeof hp->field - have;
    char *dst = hp->field + have;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)at[i];
        dst[i] = (char)(c | (unsigned char)((unsigned)(c - 'A') < 26u) << 5);
    }
    size_t total = hp->field_len + len;
    hp->field_len = (uint8_t)(total < 255 ? total : 255);
    return 0;
}

static int field_is(const struct http_parser *hp, const char *name, size_t n)
{
    return hp->field_len == n && memcmp(hp->field, name, n) == 0;
}

/* Fields a trailer must not carry (RFC 9110 6.5.1: those that frame the message, route
 * it, authenticate it, modify or control the request, or describe the content format),
 * plus X-Request-Id, which this server reads from the header section. */
static const char *const trailer_refused[] = {
    "authorization", "cache-control", "connection", "content-encoding", "content-length",
    "content-range", "content-type", "expect", "host", "if-match", "if-modified-since",
    "if-none-match", "if-range", "if-unmodified-since", "keep-alive", "max-forwards",
    "proxy-authorization", "range", "te", "trailer", "transfer-encoding", "upgrade",
    "x-request-id",
};

/* A chunked trailer field (RFC 9112 7.1.2): read and discarded, never merged. One that
 * only the header section may carry is refused: its sender broke RFC 9110 6.5.1,
 * perhaps to slip a credential past what checked the headers. */
static __attribute__((noinline)) int trailer_field_complete(struct http_parser *hp)
{
    for (size_t i = 0; i < ARRAY_LEN(trailer_refused); i++)
        if (field_is(hp, trailer_refused[i], strlen(trailer_refused[i])))
            return fail(hp, 400, "field not allowed in a trailer");
    hp->field_id = F_OTHER;
    hp->field_len = 0;
    return 0;
}

static int on_header_field_complete(llhttp_t *llh)
{
    struct http_parser *hp = parser_of(llh);
    if (hp->field_len == 0)
        return fail(hp, 400, "empty header name");
    if (++hp->header_count > hp->lim->max_header_count)
        return fail(hp, 431, "too many headers");
    if (!hp->in_headers)
        return trailer_field_complete(hp);
    if (field_is(hp, "host", 4))
        hp->field_id = F_HOST;
    else if (field_is(hp, "content-type", 12))
        hp->field_id = F_CONTENT_TYPE;
    else if (field_is(hp, "authorization", 13))
        hp->field_id = F_AUTHORIZATION;
    else if (field_is(hp, "x-request-id", 12))
        hp->field_id = F_REQUEST_ID;
    else if (field_is(hp, "transfer-encoding", 17))
        hp->field_id = F_TE_LIST;
    else
        hp->field_id = F_OTHER;
    buf_reset(&hp->value);
    hp->host_state = HOST_START;
    hp->field_len = 0;
    return 0;
}

static int on_header_value(llhttp_t *llh, const char *at, size_t len)
{
    struct http_parser *hp = parser_of(llh);
    if (count_header_bytes(hp, len))
        return HPE_USER;
    if (hp->field_id == F_HOST) {
        hp->host_state = host_scan(hp->host_state, &hp->value, at, len);
    } else if (hp->field_id != F_OTHER) {
        /* Kept values are short; anything longer than the cap is marked by length. */
        size_t room = AUTH_HEADER_MAX + 1 - hp->value.len;
        if (len > room)
            len = room;
        if (hp->value.cap > hp->value.len + len) { /* the usual case: no call */
            memcpy(hp->value.data + hp->value.len, at, len);
            hp->value.len += len;
            hp->value.data[hp->value.len] = '\0'; /* util.h's invariant of struct buf */
        } else {
            buf_append(&hp->value, at, len);
        }
    }
    return 0;
}

static int request_id_valid(const char *s, size_t n)
{
    if (n == 0 || n > REQUEST_ID_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_' || c == '.';
        if (!ok)
            return 0;
    }
    return 1;
}

/* application/json, optionally followed by parameters (";charset=utf-8"), any case. */
static int content_type_is_json(const char *s, size_t n)
{
    static const char want[] = "application/json";
    size_t w = sizeof want - 1;
    if (n < w || strncasecmp(s, want, w) != 0)
        return 0;
    return n == w || s[w] == ';' || s[w] == ' ' || s[w] == '\t';
}

/* Notes one Transfer-Encoding line's codings in hp->te (RFC 9112 6.1: a list of
 * transfer-coding; empty list elements are ignored, RFC 9110 5.6.1). Only "chunked"
 * with no parameters is a coding this server decodes. */
static void te_note(struct http_parser *hp, const char *v, size_t n)
{
    hp->te |= TE_SEEN;
    if (n > AUTH_HEADER_MAX) {
        hp->te |= TE_TOO_LONG; /* the value was cut at the cap */
        return;
    }
    size_t i = 0;
    while (i < n) {
        size_t a = i;
        while (i < n && v[i] != ',')
            i++;
        size_t b = i++;
        while (a < b && is_ows(v[a]))
            a++;
        while (b > a && is_ows(v[b - 1]))
            b--;
        if (a == b)
            continue;
        if (b - a == 7 && strncasecmp(v + a, "chunked", 7) == 0) {
            if (hp->te & TE_CHUNKED)
                hp->te |= TE_TWICE;
            hp->te |= TE_CHUNKED | TE_LAST_CHUNKED;
        } else {
            hp->te |= TE_OTHER;
            hp->te &= (uint8_t)~TE_LAST_CHUNKED;
        }
    }
}

static int on_header_value_complete(llhttp_t *llh)
{
    struct http_parser *hp = parser_of(llh);
    struct request *req = hp->cur;
    const char *v = hp->value.data;
    size_t n = hp->value.len;
    switch (hp->field_id) {
    case F_HOST:
        /* RFC 9112 3.2: more than one Host line, or an invalid value, is a 400. */
        if (req->has_host)
            return fail(hp, 400, "more than one Host header");
        if (!host_scan_valid(hp->host_state))
            return fail(hp, 400, "invalid Host header");
        req->has_host = 1;
        break;
    case F_TE_LIST:
        te_note(hp, v, n);
        break;
    case F_CONTENT_TYPE:
        req->content_type = content_type_is_json(v, n) ? BODY_JSON : BODY_OTHER;
        break;
    case F_AUTHORIZATION:
        if (n > AUTH_HEADER_MAX) {
            req->auth_len = AUTH_HEADER_MAX + 1;
        } else {
            memcpy(req->auth, v, n);
            req->auth[n] = '\0';
            req->auth_len = (uint16_t)n;
        }
        break;
    case F_REQUEST_ID:
        if (request_id_valid(v, n)) {
            memcpy(req->request_id, v, n);
            req->request_id[n] = '\0';
            req->request_id_len = (uint8_t)n;
        } else {
            req->request_id_len = 0;
        }
        break;
    default:
        break;
    }
    return 0;
}

/* RFC 9112 6.1 and 6.3: the body is framed by Transfer-Encoding only when chunked is
 * its final coding, listed once, and llhttp framed it as chunked too. */
static int check_transfer_encoding(struct http_parser *hp, const llhttp_t *llh)
{
    if (llh->http_minor == 0)
        return fail(hp, 400, "Transfer-Encoding in an HTTP/1.0 request");
    if ((hp->te & (TE_LAST_CHUNKED | TE_TOO_LONG)) != TE_LAST_CHUNKED)
        return fail(hp, 400, "chunked must be the final transfer coding");
    if (hp->te & TE_TWICE)
        return fail(hp, 400, "chunked applied more than once");
    if (!(llh->flags & F_CHUNKED))
        return fail(hp, 400, "invalid Transfer-Encoding");
    /* Framing is sound, but a coding under chunked would have to be undone (6.1). */
    if (hp->te & TE_OTHER)
        return fail(hp, 501, "transfer coding not implemented");
    return 0;
}

static int on_headers_complete(llhttp_t *llh)
{
    struct http_parser *hp = parser_of(llh);
    struct request *req = hp->cur;
    hp->in_headers = 0;
    if (llh->http_major != 1)
        return fail(hp, 400, "unsupported HTTP version");
    if (llh->http_minor == 0) {
        req->http_minor = 0;
        /* RFC 9112 9.3: an HTTP/1.0 client learns that the connection persists only
         * from a "keep-alive" connection option in the response. */
        if (llh->flags & F_CONNECTION_CLOSE) /* "close" wins (RFC 9112 9.6); llhttp */
            llh->flags &= (uint16_t)~F_CONNECTION_KEEP_ALIVE; /* would keep it open */
        else if (llh->flags & F_CONNECTION_KEEP_ALIVE)
            req->resp.flags |= RESP_KEEP_ALIVE;
    } else {
        /* RFC 9110 6.2: a higher minor version of HTTP/1 is served as HTTP/1.1. */
        req->http_minor = 1;
        if (!req->has_host)
            return fail(hp, 400, "missing Host header");
    }
    if (hp->te && check_transfer_encoding(hp, llh) != 0)
        return HPE_USER;
    /* Checked before any body byte is stored. */
    if ((llh->flags & F_CONTENT_LENGTH) && llh->content_length > hp->lim->max_body)
        return fail(hp, 413, "body too large");
    /* Upgrade and CONNECT are ignored (RFC 9110 7.8): the connection stays HTTP/1.1, so
     * llhttp must not treat the bytes after this message as another protocol. */
    llh->upgrade = 0;
    return 0;
}

static int on_body(llhttp_t *llh, const char *at, size_t len)
{
    struct http_parser *hp = parser_of(llh);
    if (buf_append_capped(&hp->cur->body, at, len, hp->lim->max_body) != 0)
        return fail(hp, 413, "body too large");
    return 0;
}

/* At each chunk size line; the last chunk (size 0) starts the trailer section, which
 * feed() scans like a header block before llhttp parses it. */
static int on_chunk_header(llhttp_t *llh)
{
    struct http_parser *hp = parser_of(llh);
    if (llh->content_length != 0)
        return 0;
    hp->trailers_start = 1;
    return HPE_PAUSED;
}

static int on_message_complete(llhttp_t *llh)
{
    struct http_parser *hp = parser_of(llh);
    struct request *req = hp->cur;
    req->method = (uint8_t)llh->method;
    req->keep_alive = (uint8_t)llhttp_should_keep_alive(llh);
    req->parsed_ns = now_ns();
    return HPE_PAUSED; /* always: feed() hands the request over and rescans headers */
}

static const llhttp_settings_t settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_field_complete = on_header_field_complete,
    .on_header_value = on_header_value,
    .on_header_value_complete = on_header_value_complete,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_chunk_header = on_chunk_header,
    .on_message_complete = on_message_complete,
};

void http_parser_init(struct http_parser *hp, const struct http_limits *lim,
                      const struct http_parser_ops *ops, void *ctx)
{
    memset(hp, 0, sizeof *hp);
    llhttp_init(&hp->llh, HTTP_REQUEST, &settings);
    /* Any HTTP/x.y digits are parsed; on_headers_complete answers HTTP/1.2..1.9 as 1.1
     * and refuses other majors (llhttp alone refuses HTTP/1.2 with an invalid version). */
    hp->llh.lenient_flags |= LENIENT_VERSION;
    hp->lim = lim;
    hp->ops = ops;
    hp->ctx = ctx;
    hp->line_state = SC_PRE;
}

void http_parser_destroy(struct http_parser *hp, struct request **partial)
{
    *partial = hp->cur;
    hp->cur = NULL;
    buf_free(&hp->value);
}

/* Scans raw header bytes of the current message for what llhttp 8.1.0 lets through:
 * obs-fold (a header line starting with SP/HT), an empty header name (a line starting
 * with ':'), and a CR not followed by LF. Stops at the end of the header block.
 * Returns 0, or -EINVAL with hp->error_* set and *bad = the offending byte's offset. */
static int scan_headers(struct http_parser *hp, const char *data, size_t len, size_t *bad)
{
    uint8_t st = hp->line_state;
    size_t i;
    for (i = 0; i < len && st != SC_DONE; i++) {
        char c = data[i];
        switch (st) {
        case SC_PRE:
            if (c == '\r')
                st = SC_PRE_CR;
            else if (c != '\n')
                st = SC_REQ_LINE;
            break;
        case SC_PRE_CR:
            if (c != '\n')
                goto bare_cr;
            st = SC_PRE;
            break;
        case SC_REQ_LINE:
            if (c == '\r')
                st = SC_REQ_LINE_CR;
            else if (c == '\n')
                st = SC_LINE_START;
            break;
        case SC_REQ_LINE_CR:
            if (c != '\n')
                goto bare_cr;
            st = SC_LINE_START;
            break;
        case SC_LINE_START:
            if (c == ' ' || c == '\t') {
                fail(hp, 400, "obsolete line folding");
                *bad = i;
                return -EINVAL;
            }
            if (c == ':') {
                fail(hp, 400, "empty header name");
                *bad = i;
                return -EINVAL;
            }
            if (c == '\r')
                st = SC_END_CR;
            else if (c == '\n')
                st = SC_DONE;
            else
                st = SC_IN_LINE;
            break;
        case SC_IN_LINE: {
            /* fast path: jump to the line's end */
            const char *cr = memchr(data + i, '\r', len - i);
            const char *lf = memchr(data + i, '\n', cr ? (size_t)(cr - (data + i)) : len - i);
            if (lf != NULL) {
                i = (size_t)(lf - data);
                st = SC_LINE_START;
            } else if (cr != NULL) {
                i = (size_t)(cr - data);
                st = SC_CR;
            } else {
                i = len - 1;
            }
            break;
        }
        case SC_CR:
            if (c != '\n')
                goto bare_cr;
            st = SC_LINE_START;
            break;
        case SC_END_CR:
            if (c != '\n')
                goto bare_cr;
            st = SC_DONE;
            break;
        }
    }
    hp->line_state = st;
    return 0;
bare_cr:
    fail(hp, 400, "bare CR in header block");
    *bad = i;
    return -EINVAL;
}

/* The reason given for each llhttp error (400 unless said otherwise). */
static const struct {
    llhttp_errno_t err;
    const char *reason;
} llhttp_reasons[] = {
    {HPE_UNEXPECTED_CONTENT_LENGTH, "conflicting message length"},
    {HPE_INVALID_TRANSFER_ENCODING, "invalid Transfer-Encoding"},
    {HPE_INVALID_CHUNK_SIZE, "invalid chunk size"},
    {HPE_INVALID_URL, "invalid request target"},
    {HPE_INVALID_METHOD, "invalid method"},
    {HPE_INVALID_VERSION, "invalid HTTP version"},
};

static void map_llhttp_error(struct http_parser *hp, llhttp_errno_t err)
{
    if (err == HPE_USER || hp->error_status != 0)
        return; /* set by a callback (llhttp reports *_complete callback errors as
                 * HPE_CB_*, not as the HPE_USER they returned) */
    hp->error_status = 400;
    hp->error_reason = "malformed request";
    if (err == HPE_INVALID_CONTENT_LENGTH) {
        const char *r = llhttp_get_error_reason(&hp->llh);
        int overflow = r != NULL && strstr(r, "overflow") != NULL;
        hp->error_status = overflow ? 413 : 400;
        hp->error_reason = overflow ? "body too large" : "invalid Content-Length";
        return;
    }
    for (size_t i = 0; i < ARRAY_LEN(llhttp_reasons); i++)
        if (llhttp_reasons[i].err == err)
            hp->error_reason = llhttp_reasons[i].reason;
}

int http_parser_feed(struct http_parser *hp, const char *data, size_t len, size_t *consumed)
{
    size_t off = 0;
    *consumed = 0;
    while (off < len) {
        size_t bad = 0;
        if (hp->line_state != SC_DONE && scan_headers(hp, data + off, len - off, &bad) != 0) {
            /* The earliest fault in the byte stream is the one reported, whatever the
             * read boundaries: llhttp first sees the bytes before the scanner's. */
            uint16_t status = hp->error_status;
            const char *reason = hp->error_reason;
            hp->error_status = 0;
            hp->error_reason = NULL;
            llhttp_errno_t err = llhttp_execute(&hp->llh, data + off, bad);
            if (err != HPE_OK && err != HPE_PAUSED)
                map_llhttp_error(hp, err);
            if (hp->error_status == 0) {
                hp->error_status = status;
                hp->error_reason = reason;
            }
            *consumed = off;
            return -EINVAL;
        }
        llhttp_errno_t err = llhttp_execute(&hp->llh, data + off, len - off);
        if (err == HPE_OK) {
            off = len;
            break;
        }
        if (err != HPE_PAUSED) {
            map_llhttp_error(hp, err);
            *consumed = off;
            return -EINVAL;
        }
        off = (size_t)(llhttp_get_error_pos(&hp->llh) - data);
        llhttp_resume(&hp->llh);
        if (hp->trailers_start) {
            /* The trailer section starts here: scan it as a header block. */
            hp->trailers_start = 0;
            hp->line_state = SC_LINE_START;
            continue;
        }
        /* A message is complete: hand it over, rescan the next one's headers. */
        hp->line_state = SC_PRE;
        struct request *req = hp->cur;
        hp->cur = NULL;
        if (hp->ops->complete(hp->ctx, req)) {
            *consumed = off;
            return 1;
        }
    }
    *consumed = off;
    return 0;
}

int http_parser_mid_request(const struct http_parser *hp)
{
    return hp->cur != NULL;
}

int http_parser_in_headers(const struct http_parser *hp)
{
    return hp->cur != NULL && hp->in_headers;
}
