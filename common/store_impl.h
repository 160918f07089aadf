/* store_impl: the private seam between store.c (dispatch, input checks) and the two
 * implementations, store_memory.c and store_sqlite.c. Not for server code: servers use
 * store.h only. Tests may use store_sqlite_handle() to inspect the connection.
 * Invariant: every implementation struct begins with `struct store`, so the dispatcher
 * casts between them; `count` is the number of stored users, kept exact by the impls. */
#ifndef COMMON_STORE_IMPL_H
#define COMMON_STORE_IMPL_H

#include "store.h"

struct sqlite3;

struct store {
    enum store_kind kind;
    uint64_t count; /* users stored; O(1) store_count */
};

/* Fills u->name/email (+ lengths, NUL terminators) with the seed user `id`'s values:
 * "user-<id>" and "user-<id>@example.com". Both implementations seed through this. */
void store_seed_user(uint64_t id, struct user *u);

/* Memory implementation. Same contracts as the store.h functions of the same verb;
 * inputs to create_batch are already checked by store.c. */
int store_memory_open(const struct store_options *opt, struct store **out, char *err,
                      size_t errlen);
void store_memory_close(struct store *s);
int store_memory_get(struct store *s, uint64_t id, struct user *out);
int store_memory_list(struct store *s, uint64_t after, unsigned limit, struct user *out,
                      unsigned *count, int *has_more);
int store_memory_create_batch(struct store *s, struct user *in, size_t n);

/* SQLite implementation: same contracts. */
int store_sqlite_open(const struct store_options *opt, struct store **out, char *err,
                      size_t errlen);
void store_sqlite_close(struct store *s);
int store_sqlite_get(struct store *s, uint64_t id, struct user *out);
int store_sqlite_list(struct store *s, uint64_t after, unsigned limit, struct user *out,
                      unsigned *count, int *has_more);
int store_sqlite_create_batch(struct store *s, struct user *in, size_t n);

/* The store's sqlite3 connection (borrowed; valid until store_close), or NULL for a
 * memory store. For tests that check pragmas; callers must not change its state. */
struct sqlite3 *store_sqlite_handle(struct store *s);

#endif
