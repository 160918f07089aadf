/* store_impl: the private seam between store.c (input checks, dispatch) and the two
 * implementations, store_memory.c and store_sqlite.c, each of which fills a struct
 * store_ops; store_open.c opens the one the options name. Not for server code: servers
 * use store.h only. Tests may use store_sqlite_handle() to inspect the connection.
 * Invariant: every implementation struct begins with `struct store`, whose ops point at
 * that implementation's table; `count` is the number of stored users, kept exact by the
 * implementations. Nothing here calls back into store.c. */
#ifndef COMMON_STORE_IMPL_H
#define COMMON_STORE_IMPL_H

#include <string.h>

#include "store.h"
#include "common/base/util.h"

struct sqlite3;

/* One implementation. Same contracts as the store.h functions of the same verb, with
 * the inputs already checked by store.c (list: limit <= STORE_LIST_MAX, *count and
 * *has_more zeroed; create_batch: n >= 1, field lengths in range). */
struct store_ops {
    const char *name; /* store_kind_name */
    void (*close)(struct store *s);
    int (*get)(struct store *s, uint64_t id, struct user *out);
    int (*list)(struct store *s, uint64_t after, unsigned limit, struct user *out,
                unsigned *count, int *has_more);
    int (*create_batch)(struct store *s, struct user *in, size_t n);
};

struct store {
    const struct store_ops *ops;
    uint64_t count; /* users stored; O(1) store_count */
};

/* Opens that implementation (for store_open.c): the store_open contract. */
int store_memory_open(const struct store_options *opt, struct store **out, char *err,
                      size_t errlen);
int store_sqlite_open(const struct store_options *opt, struct store **out, char *err,
                      size_t errlen);

/* Fills u->name/email (+ lengths, NUL terminators) with the seed user `id`'s values:
 * "user-<id>" and "user-<id>@example.com". Both implementations seed through this. */
static inline void store_seed_user(uint64_t id, struct user *u)
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

/* The store's sqlite3 connection (borrowed; valid until store_close), or NULL for a
 * memory store. For tests that check pragmas; callers must not change its state. */
struct sqlite3 *store_sqlite_handle(struct store *s);

#endif
