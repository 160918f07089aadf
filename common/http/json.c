/* json: POST /users body parsing (jansson, after a nesting pre-scan so deep input never
 * reaches a recursive parser) and a small escaping writer into struct buf. The writer
 * reserves its worst case once per call and then writes in place: no malloc beyond the
 * buffer's own growth. Stateless; any thread. */
#include "json.h"

#include <errno.h>
#include <jansson.h>
#include <string.h>

#define JSON_DEPTH_MAX 32

static const char REASON_JSON[] = "invalid json";
static const char REASON_OBJECT[] = "body must be an object";
static const char REASON_NAME[] = "name must be a string of 1..64 bytes";
static const char REASON_EMAIL[] = "email must be a string of 3..128 bytes containing @";

/* 1 when arrays/objects nest deeper than JSON_DEPTH_MAX (brackets inside strings do not
 * count). Iterative, O(len); malformed input is left for jansson to reject. */
static int nesting_too_deep(const char *p, size_t len)
{
    unsigned depth = 0;
    int in_string = 0;
    for (size_t i = 0; i < len; i++) {
        char c = p[i];
        if (in_string) {
            if (c == '\\')
                i++; /* skip the escaped byte */
            else if (c == '"')
                in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > JSON_DEPTH_MAX)
                return 1;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return 0;
}

/* Copies a string member into dst (NUL-terminated) when it is a string of lo..hi bytes
 * without NUL; returns its length, or -1. */
static int member_string(json_t *obj, const char *key, size_t lo, size_t hi, char *dst)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL || !json_is_string(v))
        return -1;
    size_t n = json_string_length(v);
    const char *s = json_string_value(v);
    if (n < lo || n > hi || memchr(s, '\0', n) != NULL)
        return -1;
    memcpy(dst, s, n);
    dst[n] = '\0';
    return (int)n;
}

int json_parse_user(const char *body, size_t len, struct user *out, const char **reason)
{
    if (body == NULL || nesting_too_deep(body, len)) {
        *reason = REASON_JSON;
        return -EINVAL;
    }
    /* duplicate keys are refused: {"name":"a","name":"b"} has no single meaning */
    json_error_t jerr;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (root == NULL) {
        *reason = REASON_JSON;
        return -EINVAL;
    }
    int r = -EINVAL;
    int n;
    if (!json_is_object(root)) {
        *reason = REASON_OBJECT;
    } else if ((n = member_string(root, "name", 1, USER_NAME_MAX, out->name)) < 0) {
        *reason = REASON_NAME;
    } else {
        out->name_len = (uint8_t)n;
        n = member_string(root, "email", 3, USER_EMAIL_MAX, out->email);
        if (n < 0 || memchr(out->email, '@', (size_t)n) == NULL) {
            *reason = REASON_EMAIL;
        } else {
            out->email_len = (uint8_t)n;
            r = 0;
        }
    }
    json_decref(root);
    return r;
}

/* Per byte: 0 = copy as is; 'u' = \u00XX; else the letter after the backslash. */
static const char escape_table[256] = {
    ['\0'] = 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u',
    ['\b'] = 'b', ['\t'] = 't', ['\n'] = 'n', ['\v'] = 'u', ['\f'] = 'f', ['\r'] = 'r',
    [0x0e] = 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u',
    'u', 'u',
    ['"'] = '"', ['\\'] = '\\',
};

/* Writes the quoted, escaped literal at p (room for 2 + 6 * n bytes); returns the end. */
static char *put_string(char *p, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    *p++ = '"';
    size_t run = 0; /* start of the pending run of bytes copied as is */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char e = escape_table[c];
        if (e == 0)
            continue;
        memcpy(p, s + run, i - run);
        p += i - run;
        run = i + 1;
        *p++ = '\\';
        if (e == 'u') {
            memcpy(p, "u00", 3);
            p[3] = hex[c >> 4];
            p[4] = hex[c & 15];
            p += 5;
        } else {
            *p++ = e;
        }
    }
    memcpy(p, s + run, n - run);
    p += n - run;
    *p++ = '"';
    return p;
}

static char *put_lit(char *p, const char *lit, size_t n)
{
    memcpy(p, lit, n);
    return p + n;
}

#define PUT_LIT(p, lit) put_lit((p), (lit), sizeof(lit) - 1)

/* Worst-case size of one user object: fixed text + 20 digits + escaped fields. */
static size_t user_max(const struct user *u)
{
    return 40 + 20 + 6 * ((size_t)u->name_len + u->email_len);
}

static char *put_user(char *p, const struct user *u)
{
    p = PUT_LIT(p, "{\"id\":");
    p += u64_to_dec(u->id, p);
    p = PUT_LIT(p, ",\"name\":");
    p = put_string(p, u->name, u->name_len);
    p = PUT_LIT(p, ",\"email\":");
    p = put_string(p, u->email, u->email_len);
    *p++ = '}';
    return p;
}

/* Ends an in-place write begun at b->data + b->len. */
static void finish(struct buf *b, char *end)
{
    b->len = (size_t)(end - b->data);
    b->data[b->len] = '\0';
}

void json_append_string(struct buf *b, const char *s, size_t n)
{
    buf_reserve(b, 2 + 6 * n);
    finish(b, put_string(b->data + b->len, s, n));
}

void json_append_user(struct buf *b, const struct user *u)
{
    buf_reserve(b, user_max(u));
    finish(b, put_user(b->data + b->len, u));
}

void json_append_user_list(struct buf *b, const struct user *users, unsigned count,
                           int has_more)
{
    size_t need = 40;
    for (unsigned i = 0; i < count; i++)
        need += user_max(&users[i]) + 1;
    buf_reserve(b, need);
    char *p = PUT_LIT(b->data + b->len, "{\"users\":[");
    for (unsigned i = 0; i < count; i++) {
        if (i)
            *p++ = ',';
        p = put_user(p, &users[i]);
    }
    p = PUT_LIT(p, "],\"next\":");
    if (has_more && count > 0)
        p += u64_to_dec(users[count - 1].id, p);
    else
        p = PUT_LIT(p, "null");
    *p++ = '}';
    finish(b, p);
}

void json_append_error(struct buf *b, const char *reason)
{
    size_t n = strlen(reason);
    buf_reserve(b, 12 + 6 * n);
    char *p = PUT_LIT(b->data + b->len, "{\"error\":");
    p = put_string(p, reason, n);
    *p++ = '}';
    finish(b, p);
}
