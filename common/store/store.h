/* store: the users store, one interface over two implementations (memory, sqlite).
 * Neither implementation is thread-safe: the async server wraps calls in a mutex, the
 * actor server calls them only from the store actor. Results are copied out into
 * caller-owned structs, so nothing returned points into the store.
 * Both implementations seed users 1..N deterministically at open:
 *   {"id":i,"name":"user-i","email":"user-i@example.com"}
 * and assign ids to new users in increasing order from N+1 (max id + 1 for sqlite). */
#ifndef COMMON_STORE_H
#define COMMON_STORE_H

#include <stddef.h>
#include <stdint.h>

#define USER_NAME_MAX 64   /* bytes, 1..64 */
#define USER_EMAIL_MAX 128 /* bytes, 3..128, contains '@' */
#define STORE_LIST_MAX 100 /* GET /users?limit= upper bound */

struct user {
    uint64_t id;
    uint8_t name_len;
    uint8_t email_len;
    char name[USER_NAME_MAX + 1];   /* NUL-terminated too */
    char email[USER_EMAIL_MAX + 1]; /* NUL-terminated too */
};

enum store_kind { STORE_MEMORY, STORE_SQLITE };

struct store; /* opaque */

struct store_options {
    enum store_kind kind;
    const char *db_path;  /* sqlite only: file path; created if absent */
    uint64_t seed_users;  /* users 1..seed_users created at open if absent */
    uint64_t timeout_ms;  /* sqlite only: longest one call waits for a lock another
                             connection holds (0: STORE_TIMEOUT_DEFAULT_MS) */
};

#define STORE_TIMEOUT_DEFAULT_MS 250

/* Opens a store. On success returns 0 and sets *out; on failure returns a negative
 * errno-style code and writes a human-readable reason into err (errlen bytes).
 * For sqlite: WAL, synchronous=NORMAL, prepared statements created once here. */
int store_open(const struct store_options *opt, struct store **out, char *err, size_t errlen);
/* Closes and frees. NULL is a no-op. */
void store_close(struct store *s);

/* Waiting for a lock (sqlite: another process or connection writing): a call waits at
 * most timeout_ms for it, in total over its statements, then fails with -EBUSY and
 * leaves nothing half-done (the caller answers 503). After such a timeout, calls of the
 * same kind (reads, writes) do not wait at all until one of that kind succeeds again: a
 * store that stays locked costs its callers one timeout, not one per call. Store calls
 * themselves are never interrupted (a call that holds its locks runs to its end). The
 * memory store never waits. */

/* Copies user `id` into *out: 0, -ENOENT when absent, -EBUSY (lock wait timed out), -EIO
 * on a database error. */
int store_get(struct store *s, uint64_t id, struct user *out);

/* Copies up to `limit` (<= STORE_LIST_MAX) users with id > after, ascending by id, into
 * out[]; sets *count. Sets *has_more to 1 when more users exist after the last one
 * returned. 0, -EBUSY or -EIO. */
int store_list(struct store *s, uint64_t after, unsigned limit, struct user *out,
               unsigned *count, int *has_more);

/* Creates a user with the given (already validated) name and email; on 0, *out holds the
 * stored user with its new id and the write is durable per the store's promise (sqlite:
 * COMMIT done). -EBUSY (lock wait timed out), -ENOSPC (no space on the database's
 * filesystem: a later call succeeds once there is) or -EIO on failure (nothing stored). */
int store_create(struct store *s, const char *name, size_t name_len, const char *email,
                 size_t email_len, struct user *out);

/* Creates up to n users in one transaction (sqlite: one BEGIN IMMEDIATE .. COMMIT):
 * all or nothing. in[i].name/email are inputs; ids are assigned into in[i].id.
 * Returns 0 (all committed), -EBUSY, -ENOSPC or -EIO (none stored). Used by the actor store for
 * group commit; store_create is store_create_batch with n = 1. */
int store_create_batch(struct store *s, struct user *in, size_t n);

uint64_t store_count(struct store *s); /* number of users */
const char *store_kind_name(const struct store *s); /* "memory" or "sqlite" */

#endif
