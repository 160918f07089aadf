/* store_memory: the in-memory users store. Ids are dense (1..count, never deleted), so
 * the "hash map by id" is the identity hash: slots[id - 1] in one growable array, which
 * also is the id-ordered index for listing; names and emails live back to back in one
 * arena. get is O(1), list O(limit), create amortised O(1). Not thread-safe; the arrays
 * may move when they grow, so results are copied out. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_impl.h"
#include "common/base/util.h"

/* One user's place in the arena: name bytes, then email bytes. 16 bytes per user
 * instead of a 208-byte struct user, so a store grown by a long POST-heavy run stays
 * small (about 16 + name + email bytes per user). */
struct slot {
    uint64_t off;
    uint8_t name_len;
    uint8_t email_len;
};

struct memory_store {
    struct store base; /* base.count == number of users == highest id */
    struct slot *slots; /* slots[i] is user i + 1 */
    uint64_t cap;
    struct buf arena;   /* names and emails, back to back */
};
_Static_assert(offsetof(struct memory_store, base) == 0, "store_impl.h: base comes first");

static void memory_reserve(struct memory_store *m, uint64_t need)
{
    if (need <= m->cap)
        return;
    uint64_t cap = m->cap ? m->cap : 1024;
    while (cap < need)
        cap *= 2;
    m->slots = xrealloc(m->slots, cap * sizeof *m->slots);
    m->cap = cap;
}

static void memory_append(struct memory_store *m, const struct user *u)
{
    uint64_t id = m->base.count + 1;
    memory_reserve(m, id);
    struct slot *sl = &m->slots[id - 1];
    sl->off = m->arena.len;
    sl->name_len = u->name_len;
    sl->email_len = u->email_len;
    buf_append(&m->arena, u->name, u->name_len);
    buf_append(&m->arena, u->email, u->email_len);
    m->base.count = id;
}

static void memory_copy_out(const struct memory_store *m, uint64_t id, struct user *out)
{
    const struct slot *sl = &m->slots[id - 1];
    const char *p = m->arena.data + sl->off;
    out->id = id;
    out->name_len = sl->name_len;
    out->email_len = sl->email_len;
    memcpy(out->name, p, sl->name_len);
    out->name[sl->name_len] = '\0';
    memcpy(out->email, p + sl->name_len, sl->email_len);
    out->email[sl->email_len] = '\0';
}

static const struct store_ops memory_ops;

int store_memory_open(const struct store_options *opt, struct store **out, char *err,
                      size_t errlen)
{
    (void)err;
    (void)errlen;
    struct memory_store *m = xcalloc(1, sizeof *m);
    m->base.ops = &memory_ops;
    memory_reserve(m, opt->seed_users);
    buf_reserve(&m->arena, opt->seed_users * 32);
    struct user u;
    for (uint64_t i = 0; i < opt->seed_users; i++) {
        store_seed_user(i + 1, &u);
        memory_append(m, &u);
    }
    *out = &m->base;
    return 0;
}

static void memory_close(struct store *s)
{
    struct memory_store *m = (struct memory_store *)s;
    free(m->slots);
    buf_free(&m->arena);
    free(m);
}

static int memory_get(struct store *s, uint64_t id, struct user *out)
{
    struct memory_store *m = (struct memory_store *)s;
    if (id - 1 >= m->base.count) /* id 0 wraps to UINT64_MAX */
        return -ENOENT;
    memory_copy_out(m, id, out);
    return 0;
}

static int memory_list(struct store *s, uint64_t after, unsigned limit, struct user *out,
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
    for (unsigned i = 0; i < n; i++)
        memory_copy_out(m, after + 1 + i, &out[i]);
    *count = n;
    *has_more = avail > n;
    return 0;
}

static int memory_create_batch(struct store *s, struct user *in, size_t n)
{
    struct memory_store *m = (struct memory_store *)s;
    for (size_t i = 0; i < n; i++) {
        memory_append(m, &in[i]);
        in[i].id = m->base.count;
    }
    return 0;
}

static const struct store_ops memory_ops = {
    .name = "memory", .close = memory_close, .get = memory_get, .list = memory_list,
    .create_batch = memory_create_batch};
