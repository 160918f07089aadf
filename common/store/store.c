/* store: checks what both implementations rely on (user field lengths, the list limit)
 * and dispatches through the store's ops table; which implementation a store is, only
 * store_open.c knows. Holds no state of its own; not thread-safe (the implementations
 * are not). */
#include "store.h"

#include <errno.h>
#include <string.h>

#include "store_impl.h"

void store_close(struct store *s)
{
    if (s != NULL)
        s->ops->close(s);
}

int store_get(struct store *s, uint64_t id, struct user *out)
{
    return s->ops->get(s, id, out);
}

int store_list(struct store *s, uint64_t after, unsigned limit, struct user *out,
               unsigned *count, int *has_more)
{
    if (limit > STORE_LIST_MAX)
        limit = STORE_LIST_MAX;
    *count = 0;
    *has_more = 0;
    return s->ops->list(s, after, limit, out, count, has_more);
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
    return s->ops->create_batch(s, in, n);
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
    return s->ops->name;
}
