/* router: the contract's five routes. Path decoding happens into a stack buffer no
 * longer than the request-target cap; nothing here allocates. HEAD is routed like GET
 * (the parser marks its response body-less). */
#include "router.h"

#include <llhttp.h>
#include <string.h>

#include "common/base/util.h"

#define PATH_MAX_DECODED 8192

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decodes src into dst (capacity cap); 0 or -1 on bad encoding, NUL, non-ASCII
 * or overflow. The fast path (no '%') is a copy-free check. */
static int decode_path(const char *src, size_t n, char *dst, size_t cap, size_t *out_len)
{
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        if (c == '%') {
            if (i + 2 >= n)
                return -1;
            int hi = hexval(src[i + 1]), lo = hexval(src[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            c = (unsigned char)(hi * 16 + lo);
            i += 2;
        }
        if (c == 0 || c >= 0x80)
            return -1;
        if (j >= cap)
            return -1;
        dst[j++] = (char)c;
    }
    *out_len = j;
    return 0;
}

static int parse_query(const char *q, size_t n, struct route_match *m)
{
    m->limit = 10;
    m->after = 0;
    size_t i = 0;
    while (i < n) {
        size_t start = i;
        while (i < n && q[i] != '&')
            i++;
        const char *kv = q + start;
        size_t kvlen = i - start;
        i++; /* skip '&' */
        if (kvlen == 0)
            continue;
        const char *eq = memchr(kv, '=', kvlen);
        if (eq == NULL)
            continue;
        size_t klen = (size_t)(eq - kv);
        const char *v = eq + 1;
        size_t vlen = kvlen - klen - 1;
        uint64_t val;
        if (klen == 5 && memcmp(kv, "limit", 5) == 0) {
            if (parse_u64(v, vlen, &val) != 0 || val < 1 || val > 100) {
                m->reason = "limit must be an integer 1..100";
                return -1;
            }
            m->limit = (unsigned)val;
        } else if (klen == 5 && memcmp(kv, "after", 5) == 0) {
            if (parse_u64(v, vlen, &val) != 0) {
                m->reason = "after must be a non-negative integer";
                return -1;
            }
            m->after = val;
        }
    }
    return 0;
}

static void set_error(struct route_match *m, uint16_t status, const char *reason)
{
    m->route = ROUTE_OTHER;
    m->status = status;
    m->reason = reason;
}

/* A request-target not in origin-form (RFC 9112 3.2) names no resource here: 404, as
 * for an unknown path (the absolute-form too: see tests/it_conformance.py, 3.2.2).
 * "*" is for OPTIONS alone (3.2.4); with any other method the request-line is invalid:
 * 400. */
static void other_form(uint8_t method, const char *target, size_t len, struct route_match *m)
{
    if (len == 1 && target[0] == '*' && method != HTTP_OPTIONS)
        set_error(m, 400, "invalid request target");
    else
        set_error(m, 404, "not found");
}

/* A path only GET (and HEAD) may take: its route, else 405 with Allow. */
static void match_get_only(struct route_match *m, int get, uint8_t route)
{
    if (get) {
        m->route = route;
        return;
    }
    m->allow = "GET, HEAD";
    set_error(m, 405, "method not allowed");
}

void router_match(uint8_t method, const char *target, size_t len, struct route_match *m)
{
    memset(m, 0, sizeof *m);
    m->route = ROUTE_OTHER;
    /* HEAD is GET without the body (RFC 9110 9.3.2); the Allow lists name it too */
    uint8_t get = method == HTTP_GET || method == HTTP_HEAD;
    const char *q = memchr(target, '?', len);
    size_t plen = q ? (size_t)(q - target) : len;
    const char *query = q ? q + 1 : "";
    size_t qlen = q ? len - plen - 1 : 0;

    char decoded[PATH_MAX_DECODED];
    const char *path = target;
    if (memchr(target, '%', plen) != NULL) {
        if (decode_path(target, plen, decoded, sizeof decoded, &plen) != 0) {
            set_error(m, 400, "invalid path encoding");
            return;
        }
        path = decoded;
    } else {
        for (size_t i = 0; i < plen; i++) {
            unsigned char c = (unsigned char)target[i];
            if (c == 0 || c >= 0x80) {
                set_error(m, 400, "invalid path encoding");
                return;
            }
        }
    }

    if (plen == 5 && memcmp(path, "/ping", 5) == 0) {
        match_get_only(m, get, ROUTE_PING);
        return;
    }
    if (plen == 8 && memcmp(path, "/metrics", 8) == 0) {
        match_get_only(m, get, ROUTE_METRICS);
        return;
    }
    if (plen == 6 && memcmp(path, "/users", 6) == 0) {
        m->users_group = 1;
        if (get) {
            if (parse_query(query, qlen, m) != 0) {
                set_error(m, 400, m->reason);
                return;
            }
            m->route = ROUTE_USER_LIST;
            return;
        }
        if (method == HTTP_POST) {
            m->route = ROUTE_USER_CREATE;
            return;
        }
        m->allow = "GET, HEAD, POST";
        set_error(m, 405, "method not allowed");
        return;
    }
    if (plen > 7 && memcmp(path, "/users/", 7) == 0) {
        m->users_group = 1;
        const char *idp = path + 7;
        size_t idlen = plen - 7;
        if (memchr(idp, '/', idlen) != NULL) {
            set_error(m, 404, "not found");
            return;
        }
        if (!get) {
            m->allow = "GET, HEAD";
            set_error(m, 405, "method not allowed");
            return;
        }
        uint64_t id;
        if (parse_u64(idp, idlen, &id) != 0 || id == 0) {
            set_error(m, 400, "invalid user id");
            return;
        }
        m->route = ROUTE_USER_GET;
        m->id = id;
        return;
    }
    if (len == 0 || target[0] != '/')
        other_form(method, target, len, m);
    else
        set_error(m, 404, "not found");
}

void router_apply(struct request *req)
{
    struct route_match m;
    router_match(req->method, req->target.data ? req->target.data : "", req->target.len, &m);
    req->route = m.route;
    req->users_group = m.users_group;
    req->route_error = m.status;
    req->error_reason = m.reason;
    req->resp.allow = m.allow;
    req->id = m.id;
    req->after = m.after;
    req->limit = m.limit;
}
