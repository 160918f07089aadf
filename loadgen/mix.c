/* mix: parses mix files into request templates and renders requests from them.
 * Parsing allocates; rendering only appends to caller buffers (no malloc once they
 * have grown). Placeholders: {rand:LO:HI}, {seq}; ${BEARER} in header lines. */
#include "mix.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* A template under construction: segments refer to the pool by offset until done. */
struct tbuild {
    struct buf pool;
    struct mix_seg segs[256];
    size_t offs[256];
    unsigned nsegs;
    int dynamic;
};

__attribute__((format(printf, 4, 5))) static int fail(char *err, size_t errlen, unsigned lineno,
                                                      const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (lineno)
        snprintf(err, errlen, "line %u: %s", lineno, msg);
    else
        snprintf(err, errlen, "%s", msg);
    return -EINVAL;
}

static int tb_lit(struct tbuild *tb, const char *s, size_t n)
{
    if (n == 0)
        return 0;
    if (tb->nsegs > 0 && tb->segs[tb->nsegs - 1].kind == MIX_SEG_LIT) {
        buf_append(&tb->pool, s, n);
        tb->segs[tb->nsegs - 1].lit_len += n;
        return 0;
    }
    if (tb->nsegs == ARRAY_LEN(tb->segs))
        return -E2BIG;
    struct mix_seg *sg = &tb->segs[tb->nsegs];
    memset(sg, 0, sizeof *sg);
    sg->kind = MIX_SEG_LIT;
    sg->lit_len = n;
    tb->offs[tb->nsegs++] = tb->pool.len;
    buf_append(&tb->pool, s, n);
    return 0;
}

static int tb_dyn(struct tbuild *tb, enum mix_seg_kind kind, uint64_t lo, uint64_t hi)
{
    if (tb->nsegs == ARRAY_LEN(tb->segs))
        return -E2BIG;
    struct mix_seg *sg = &tb->segs[tb->nsegs++];
    memset(sg, 0, sizeof *sg);
    sg->kind = kind;
    sg->lo = lo;
    sg->hi = hi;
    tb->dynamic = 1;
    return 0;
}

/* Adds src (n bytes) with its placeholders. 0, or -EINVAL with err set. */
static int tb_template(struct tbuild *tb, const char *src, size_t n, unsigned lineno,
                       const char *what, char *err, size_t errlen)
{
    size_t i = 0, lit_start = 0;
    while (i < n) {
        if (src[i] != '{') {
            i++;
            continue;
        }
        size_t rest = n - i;
        if (rest >= 5 && memcmp(src + i, "{seq}", 5) == 0) {
            tb_lit(tb, src + lit_start, i - lit_start);
            if (tb_dyn(tb, MIX_SEG_SEQ, 0, 0) < 0)
                return fail(err, errlen, lineno, "%s: too many placeholders", what);
            i += 5;
            lit_start = i;
            continue;
        }
        if (rest >= 6 && memcmp(src + i, "{rand:", 6) == 0) {
            const char *close = memchr(src + i, '}', rest);
            if (close == NULL)
                return fail(err, errlen, lineno, "%s: unterminated {rand:LO:HI}", what);
            const char *a = src + i + 6;
            const char *colon = memchr(a, ':', (size_t)(close - a));
            uint64_t lo, hi;
            if (colon == NULL || parse_u64(a, (size_t)(colon - a), &lo) < 0 ||
                parse_u64(colon + 1, (size_t)(close - colon - 1), &hi) < 0)
                return fail(err, errlen, lineno,
                            "%s: bad placeholder '%.*s' (want {rand:LO:HI}, decimal LO <= HI)",
                            what, (int)(close - (src + i) + 1), src + i);
            if (lo > hi)
                return fail(err, errlen, lineno, "%s: {rand:%llu:%llu} has LO > HI", what,
                            (unsigned long long)lo, (unsigned long long)hi);
            tb_lit(tb, src + lit_start, i - lit_start);
            if (tb_dyn(tb, MIX_SEG_RAND, lo, hi) < 0)
                return fail(err, errlen, lineno, "%s: too many placeholders", what);
            i = (size_t)(close - src) + 1;
            lit_start = i;
            continue;
        }
        i++; /* a literal '{' (JSON bodies) */
    }
    if (tb_lit(tb, src + lit_start, n - lit_start) < 0)
        return fail(err, errlen, lineno, "%s: too many segments", what);
    return 0;
}

static void tb_finish(struct tbuild *tb, struct mix_tmpl *t)
{
    t->nsegs = tb->nsegs;
    t->segs = xcalloc(tb->nsegs ? tb->nsegs : 1, sizeof *t->segs);
    t->pool = tb->pool.data; /* takes the pool */
    t->dynamic = tb->dynamic;
    for (unsigned i = 0; i < tb->nsegs; i++) {
        t->segs[i] = tb->segs[i];
        if (t->segs[i].kind == MIX_SEG_LIT)
            t->segs[i].lit = t->pool + tb->offs[i];
    }
    memset(tb, 0, sizeof *tb);
}

static void tmpl_free(struct mix_tmpl *t)
{
    free(t->segs);
    free(t->pool);
    memset(t, 0, sizeof *t);
}

static void tmpl_render(const struct mix_tmpl *t, struct rng *r, uint64_t seq, struct buf *out)
{
    for (unsigned i = 0; i < t->nsegs; i++) {
        const struct mix_seg *sg = &t->segs[i];
        switch (sg->kind) {
        case MIX_SEG_LIT:
            buf_append(out, sg->lit, sg->lit_len);
            break;
        case MIX_SEG_RAND:
            buf_append_u64(out, rng_range(r, sg->lo, sg->hi));
            break;
        case MIX_SEG_SEQ:
            buf_append_u64(out, seq);
            break;
        }
    }
}

void mix_render(const struct mix *m, unsigned idx, struct rng *r, uint64_t seq,
                struct buf *out, struct buf *scratch)
{
    const struct mix_line *ln = &m->lines[idx];
    if (ln->fixed.len) {
        buf_append(out, ln->fixed.data, ln->fixed.len);
        return;
    }
    tmpl_render(&ln->head, r, seq, out);
    if (!ln->has_body)
        return;
    buf_reset(scratch);
    tmpl_render(&ln->body, r, seq, scratch);
    buf_append_u64(out, scratch->len);
    buf_append(out, "\r\n\r\n", 4);
    buf_append(out, scratch->data, scratch->len);
}

unsigned mix_pick(const struct mix *m, struct rng *r)
{
    if (m->nlines == 1)
        return 0;
    uint64_t x = rng_range(r, 0, m->total_weight - 1);
    unsigned i = 0;
    while (x >= m->cum[i])
        i++;
    return i;
}

void mix_free(struct mix *m)
{
    for (unsigned i = 0; i < m->nlines; i++) {
        tmpl_free(&m->lines[i].head);
        tmpl_free(&m->lines[i].body);
        buf_free(&m->lines[i].fixed);
    }
    m->nlines = 0;
}

static int is_tchar(int c)
{
    return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* Expands ${BEARER} in a header value into out; other ${...} are errors. */
static int expand_header(const char *v, size_t n, const char *bearer, struct buf *out,
                         unsigned lineno, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        if (v[i] == '$' && i + 1 < n && v[i + 1] == '{') {
            if (n - i >= 9 && memcmp(v + i, "${BEARER}", 9) == 0) {
                buf_append_str(out, bearer);
                i += 8;
                continue;
            }
            return fail(err, errlen, lineno, "unknown variable in header (only ${BEARER})");
        }
        buf_append(out, v + i, 1);
    }
    return 0;
}

struct token {
    const char *s;
    size_t n;
};

static unsigned split_ws(const char *s, size_t n, struct token *toks, unsigned max)
{
    unsigned k = 0;
    size_t i = 0;
    while (i < n && k < max) {
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i == n)
            break;
        size_t start = i;
        while (i < n && s[i] != ' ' && s[i] != '\t')
            i++;
        toks[k].s = s + start;
        toks[k].n = i - start;
        k++;
    }
    return k;
}

static int parse_request_line(struct mix *m, const char *s, size_t n, unsigned lineno,
                              char *err, size_t errlen)
{
    struct token t[64];
    unsigned k = split_ws(s, n, t, ARRAY_LEN(t));
    if (k < 4)
        return fail(err, errlen, lineno,
                    "expected 'WEIGHT METHOD PATH [BODY] EXPECT', got %u field%s", k,
                    k == 1 ? "" : "s");
    if (m->nlines == MIX_MAX_LINES)
        return fail(err, errlen, lineno, "more than %d request lines", MIX_MAX_LINES);
    struct mix_line *ln = &m->lines[m->nlines];
    memset(ln, 0, sizeof *ln);
    uint64_t w, st;
    if (parse_u64(t[0].s, t[0].n, &w) < 0 || w == 0 || w > 1000000)
        return fail(err, errlen, lineno, "weight '%.*s' is not an integer in 1..1000000",
                    (int)t[0].n, t[0].s);
    ln->weight = (uint32_t)w;
    if (t[1].n >= sizeof ln->method)
        return fail(err, errlen, lineno, "method too long");
    for (size_t i = 0; i < t[1].n; i++)
        if (!isupper((unsigned char)t[1].s[i]))
            return fail(err, errlen, lineno, "method '%.*s' must be upper-case letters",
                        (int)t[1].n, t[1].s);
    memcpy(ln->method, t[1].s, t[1].n);
    ln->is_head = strcmp(ln->method, "HEAD") == 0;
    if (t[2].s[0] != '/')
        return fail(err, errlen, lineno, "path '%.*s' must start with '/'", (int)t[2].n,
                    t[2].s);
    const struct token *ex = &t[k - 1];
    if (parse_u64(ex->s, ex->n, &st) < 0 || st < 100 || st > 599)
        return fail(err, errlen, lineno, "expected status '%.*s' is not in 100..599",
                    (int)ex->n, ex->s);
    ln->expect = (int)st;
    const char *body = NULL;
    size_t body_len = 0;
    if (k > 4) {
        body = t[3].s;
        body_len = (size_t)(t[k - 2].s + t[k - 2].n - body);
        if (body_len == 1 && body[0] == '-')
            body = NULL;
    }
    ln->has_body = body != NULL;
    if (ln->has_body && ln->is_head)
        return fail(err, errlen, lineno, "HEAD cannot have a body");

    struct tbuild *tb = xcalloc(1, sizeof *tb);
    int rc = 0;
    tb_lit(tb, ln->method, strlen(ln->method));
    tb_lit(tb, " ", 1);
    if ((rc = tb_template(tb, t[2].s, t[2].n, lineno, "path", err, errlen)) < 0)
        goto out;
    tb_lit(tb, " HTTP/1.1\r\n", 11);
    /* The shared header block is appended by the caller (it is known only at the end). */
    tb_finish(tb, &ln->head);
    if (ln->has_body &&
        (rc = tb_template(tb, body, body_len, lineno, "body", err, errlen)) < 0) {
        tmpl_free(&ln->head);
        goto out;
    }
    if (ln->has_body)
        tb_finish(tb, &ln->body);
    m->nlines++;
out:
    buf_free(&tb->pool);
    free(tb);
    return rc;
}

/* Appends the header block (Host, header lines) and the body framing to every line's
 * head template, and pre-renders lines without placeholders. */
static void finish_lines(struct mix *m, const struct buf *hdrs, int has_ctype)
{
    for (unsigned i = 0; i < m->nlines; i++) {
        struct mix_line *ln = &m->lines[i];
        struct mix_tmpl *h = &ln->head;
        struct buf tail = {0};
        buf_append(&tail, hdrs->data, hdrs->len);
        if (ln->has_body) {
            if (!has_ctype)
                buf_append_str(&tail, "Content-Type: application/json\r\n");
            buf_append_str(&tail, "Content-Length: ");
        } else {
            buf_append_str(&tail, "\r\n");
        }
        /* Rebuild the head template with the tail as its last literal. */
        struct tbuild *tb = xcalloc(1, sizeof *tb);
        for (unsigned s = 0; s < h->nsegs; s++) {
            if (h->segs[s].kind == MIX_SEG_LIT)
                tb_lit(tb, h->segs[s].lit, h->segs[s].lit_len);
            else
                tb_dyn(tb, h->segs[s].kind, h->segs[s].lo, h->segs[s].hi);
        }
        tb_lit(tb, tail.data, tail.len);
        tmpl_free(h);
        tb_finish(tb, h);
        free(tb);
        buf_free(&tail);
        if (!h->dynamic && !(ln->has_body && ln->body.dynamic)) {
            struct buf scratch = {0};
            struct rng r;
            rng_seed(&r, 0);
            /* fixed.len is 0 here, so mix_render takes the template path. */
            mix_render(m, i, &r, 0, &ln->fixed, &scratch);
            buf_free(&scratch);
        }
    }
}

int mix_parse(const char *text, const char *bearer, const char *host, struct mix *out,
              char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct buf hdrs = {0};
    int has_ctype = 0, nheaders = 0, rc = 0;
    buf_append_str(&hdrs, "Host: ");
    buf_append_str(&hdrs, host);
    buf_append_str(&hdrs, "\r\n");
    unsigned lineno = 0;
    const char *p = text;
    while (*p) {
        lineno++;
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        const char *next = eol ? eol + 1 : p + n;
        while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        while (n > 0 && (*p == ' ' || *p == '\t')) {
            p++;
            n--;
        }
        if (n == 0 || *p == '#') {
            p = next;
            continue;
        }
        if (n > 7 && memcmp(p, "header", 6) == 0 && (p[6] == ' ' || p[6] == '\t')) {
            const char *h = p + 7;
            size_t hn = n - 7;
            while (hn > 0 && (*h == ' ' || *h == '\t')) {
                h++;
                hn--;
            }
            const char *colon = memchr(h, ':', hn);
            if (colon == NULL || colon == h) {
                rc = fail(err, errlen, lineno, "expected 'header Name: value'");
                goto fail;
            }
            for (const char *c = h; c < colon; c++)
                if (!is_tchar((unsigned char)*c)) {
                    rc = fail(err, errlen, lineno, "bad character in header name '%.*s'",
                              (int)(colon - h), h);
                    goto fail;
                }
            size_t name_len = (size_t)(colon - h);
            if ((name_len == 4 && strncasecmp(h, "host", 4) == 0) ||
                (name_len == 14 && strncasecmp(h, "content-length", 14) == 0) ||
                (name_len == 17 && strncasecmp(h, "transfer-encoding", 17) == 0)) {
                rc = fail(err, errlen, lineno, "header '%.*s' is set by the load generator",
                          (int)name_len, h);
                goto fail;
            }
            if (name_len == 12 && strncasecmp(h, "content-type", 12) == 0)
                has_ctype = 1;
            if (++nheaders > MIX_MAX_HEADERS) {
                rc = fail(err, errlen, lineno, "more than %d header lines", MIX_MAX_HEADERS);
                goto fail;
            }
            const char *v = colon + 1;
            size_t vn = hn - name_len - 1;
            while (vn > 0 && (*v == ' ' || *v == '\t')) {
                v++;
                vn--;
            }
            buf_append(&hdrs, h, name_len);
            buf_append_str(&hdrs, ": ");
            if ((rc = expand_header(v, vn, bearer, &hdrs, lineno, err, errlen)) < 0)
                goto fail;
            buf_append_str(&hdrs, "\r\n");
        } else if (isdigit((unsigned char)*p)) {
            if ((rc = parse_request_line(out, p, n, lineno, err, errlen)) < 0)
                goto fail;
        } else {
            rc = fail(err, errlen, lineno,
                      "expected a request line 'WEIGHT METHOD PATH [BODY] EXPECT', "
                      "'header Name: value' or a # comment");
            goto fail;
        }
        p = next;
    }
    if (out->nlines == 0) {
        rc = fail(err, errlen, 0, "no request lines in mix");
        goto fail;
    }
    for (unsigned i = 0; i < out->nlines; i++) {
        out->total_weight += out->lines[i].weight;
        out->cum[i] = out->total_weight;
    }
    finish_lines(out, &hdrs, has_ctype);
    buf_free(&hdrs);
    return 0;
fail:
    buf_free(&hdrs);
    mix_free(out);
    return rc;
}

int mix_load_file(const char *path, const char *bearer, const char *host, struct mix *out,
                  char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    struct buf text = {0};
    char chunk[8192];
    int rc = 0;
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            break;
        }
        if (n == 0)
            break;
        if (buf_append_capped(&text, chunk, (size_t)n, MIX_MAX_FILE_BYTES) < 0) {
            rc = -EFBIG;
            snprintf(err, errlen, "%s: larger than %u bytes", path, MIX_MAX_FILE_BYTES);
            break;
        }
    }
    close(fd);
    if (rc == 0) {
        if (text.len == 0)
            buf_append_str(&text, "");
        if (memchr(text.data, '\0', text.len) != NULL) {
            snprintf(err, errlen, "%s: contains a NUL byte", path);
            rc = -EINVAL;
        } else {
            char inner[256];
            rc = mix_parse(text.data, bearer, host, out, inner, sizeof inner);
            if (rc < 0)
                snprintf(err, errlen, "%s: %s", path, inner);
        }
    }
    buf_free(&text);
    return rc;
}
