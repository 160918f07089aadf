/* store_memory: the in-memory users store. Ids are dense (1..count, never deleted), so
 * the "hash map by id" is the identity hash: users[id - 1] in one growable array, which
 * also is the id-ordered index for listing. get is O(1), list O(limit), create amortised
 * O(1). Not thread-safe; the array may move when it grows, so results are copied out. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_impl.h"
#include "util.h"

struct memory_store {
    struct store base; /* base.count == number of users == highest id */
    struct user *users; /* users[i].id == i + 1 */
    uint64_t cap;
};

static void memory_reserve(struct memory_store *m, uint64_t need)
{
    if (need <= m->cap)
        return;
    uint64_t cap = m->cap ? m->cap : 1024;
    while (cap < need)
        cap *= 2;
    m->users = xrealloc(m->users, cap * sizeof *m->users);
    m->cap = cap;
}

int store_memory_open(const struct store_options *opt, struct store **out, char *err,
                      size_t errlen)
{
    (void)err;
    (void)errlen;
    struct memory_store *m = xcalloc(1, sizeof *m);
    m->base.kind = STORE_MEMORY;
    memory_reserve(m, opt->seed_users);
    for (uint64_t i = 0; i < opt->seed_users; i++) {
        m->users[i].id = i + 1;
        store_seed_user(i + 1, &m->users[i]);
    }
    m->base.count = opt->seed_users;
    *out = &m->base;
    return 0;
}

void store_memory_close(struct store *s)
{
    struct memory_store *m = (struct memory_store *)s;
    free(m->users);
    free(m);
}

int store_memory_get(struct store *s, uint64_t id, struct user *out)
{
    struct memory_store *m = (struct memory_store *)s;
    if (id - 1 >= m->base.count) /* id 0 wraps to UINT64_MAX */
        return -ENOENT;
    *out = m->users[id - 1];
    return 0;
}

int store_memory_list(struct store *s, uint64_t after, unsigned limit, struct user *out,
                      unsigned *count, int *has_more)
{
    struct memory_store *m = (struct memory_store *)s;
    uint64_t total = m->base.count;
    if (after >= total) {
        *count = 0;
        *has_more = 0;
        return 0;
    }
    uint64_t avail = total - after;
    unsigned n = avail < limit ? (unsigned)avail : limit;
    memcpy(out, &m->users[after], (size_t)n * sizeof *out);
    *count = n;
    *has_more = avail > n;
    return 0;
}

int store_memory_create_batch(struct store *s, struct user *in, size_t n)
{
    struct memory_store *m = (struct memory_store *)s;
    memory_reserve(m, m->base.count + n);
    for (size_t i = 0; i < n; i++) {
        uint64_t id = m->base.count + 1;
        struct user *u = &m->users[id - 1];
        in[i].id = id;
        u->id = id;
        u->name_len = in[i].name_len;
        u->email_len = in[i].email_len;
        memcpy(u->name, in[i].name, u->name_len);
        u->name[u->name_len] = '\0';
        memcpy(u->email, in[i].email, u->email_len);
        u->email[u->email_len] = '\0';
        m->base.count = id;
    }
    return 0;
}
