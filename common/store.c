/* store: dispatch from the store.h interface to the memory or sqlite implementation,
 * plus the checks both share (user field lengths, list limit). Holds no state of its
 * own; not thread-safe (the implementations are not). */
#include "store.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "store_impl.h"
#include "util.h"

void store_seed_user(uint64_t id, struct user *u)
{
    static const char domain[] = "@example.com";
    char digits[24];
    size_t nd = u64_to_dec(id, digits);
    /* "user-" + up to 20 digits + "@example.com" fits both fields (<= 37 bytes). */
    memcpy(u->name, "user-", 5);
    memcpy(u->name + 5, digits, nd);
    u->name_len = (uint8_t)(5 + nd);
    u->name[u->name_len] = '\0';
    memcpy(u->email, u->name, u->name_len);
    memcpy(u->email + u->name_len, domain, sizeof domain); /* includes the NUL */
    u->email_len = (uint8_t)(u->name_len + sizeof domain - 1);
}

int store_open(const struct store_options *opt, struct store **out, char *err, size_t errlen)
{
    *out = NULL;
    if (err && errlen)
        err[0] = '\0';
    switch (opt->kind) {
    case STORE_MEMORY:
        return store_memory_open(opt, out, err, errlen);
    case STORE_SQLITE:
        return store_sqlite_open(opt, out, err, errlen);
    }
    if (err && errlen)
        snprintf(err, errlen, "unknown store kind %d", (int)opt->kind);
    return -EINVAL;
}

void store_close(struct store *s)
{
    if (s == NULL)
        return;
    if (s->kind == STORE_MEMORY)
        store_memory_close(s);
    else
        store_sqlite_close(s);
}

int store_get(struct store *s, uint64_t id, struct user *out)
{
    if (s->kind == STORE_MEMORY)
        return store_memory_get(s, id, out);
    return store_sqlite_get(s, id, out);
}

int store_list(struct store *s, uint64_t after, unsigned limit, struct user *out,
               unsigned *count, int *has_more)
{
    if (limit > STORE_LIST_MAX)
        limit = STORE_LIST_MAX;
    *count = 0;
    *has_more = 0;
    if (s->kind == STORE_MEMORY)
        return store_memory_list(s, after, limit, out, count, has_more);
    return store_sqlite_list(s, after, limit, out, count, has_more);
}

/* Field checks the store relies on (lengths fit the struct); the full validation
 * ('@', types) is json.c's. */
static int user_fields_ok(size_t name_len, size_t email_len)
{
    return name_len >= 1 && name_len <= USER_NAME_MAX && email_len >= 3 &&
           email_len <= USER_EMAIL_MAX;
}

int store_create_batch(struct store *s, struct user *in, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!user_fields_ok(in[i].name_len, in[i].email_len))
            return -EINVAL;
    if (n == 0)
        return 0;
    if (s->kind == STORE_MEMORY)
        return store_memory_create_batch(s, in, n);
    return store_sqlite_create_batch(s, in, n);
}

int store_create(struct store *s, const char *name, size_t name_len, const char *email,
                 size_t email_len, struct user *out)
{
    if (!user_fields_ok(name_len, email_len))
        return -EINVAL;
    out->id = 0;
    out->name_len = (uint8_t)name_len;
    out->email_len = (uint8_t)email_len;
    memmove(out->name, name, name_len);
    out->name[name_len] = '\0';
    memmove(out->email, email, email_len);
    out->email[email_len] = '\0';
    return store_create_batch(s, out, 1);
}

uint64_t store_count(struct store *s)
{
    return s->count;
}

const char *store_kind_name(const struct store *s)
{
    return s->kind == STORE_MEMORY ? "memory" : "sqlite";
}
