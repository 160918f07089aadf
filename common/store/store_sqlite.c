/* store_sqlite: the users store on one SQLite connection (WAL, synchronous=NORMAL),
 * table users(id INTEGER PRIMARY KEY, name, email). Every statement is prepared once at
 * open and reset after each use; writes run in BEGIN IMMEDIATE .. COMMIT, a batch in one
 * transaction. A lock held by another connection is waited for by a busy handler bounded
 * per call (store.h: timeout_ms, then -EBUSY; after a timeout, calls of that kind do not
 * wait until one succeeds). Not thread-safe: one caller at a time.
 * Invariant: outside a call no transaction is open and base.count == COUNT(*). */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_impl.h"
#include "common/base/util.h"

#define OPEN_BUSY_TIMEOUT_MS 5000 /* while opening: schema, WAL switch, seeding */

enum call_kind { CALL_READ, CALL_WRITE };

struct sqlite_store {
    struct store base;
    sqlite3 *db;
    sqlite3_stmt *get;    /* SELECT name, email WHERE id = ?1 */
    sqlite3_stmt *list;   /* SELECT id, name, email WHERE id > ?1 ORDER BY id LIMIT ?2 */
    sqlite3_stmt *insert; /* INSERT (name, email) */
    sqlite3_stmt *begin;  /* BEGIN IMMEDIATE */
    sqlite3_stmt *commit;
    sqlite3_stmt *rollback;
    uint64_t timeout_ns;  /* the most one call waits for locks, in total */
    uint64_t wait_start_ns; /* the current call's first wait; 0: it has not waited */
    uint8_t kind;         /* the current call's enum call_kind */
    uint8_t gave_up;      /* the current call's wait reached timeout_ns */
    uint8_t tripped[2];   /* per kind: a wait timed out and no call of that kind has
                             succeeded since, so calls of that kind do not wait */
};
_Static_assert(offsetof(struct sqlite_store, base) == 0, "store_impl.h: base comes first");

/* SQLite's busy handler: called with the lock still held elsewhere, `count` times so far
 * in this statement. Sleeps a little (1, 2, 5, 10, 15, 20, then 25 ms steps, never past
 * the call's budget) and asks SQLite to try again (1), or gives up (0: the statement
 * fails with SQLITE_BUSY). */
static int busy_wait(void *arg, int count)
{
    static const unsigned steps_ms[] = {1, 2, 5, 10, 15, 20, 25};
    struct sqlite_store *q = arg;
    uint64_t now = now_ns();
    if (q->wait_start_ns == 0)
        q->wait_start_ns = now;
    uint64_t waited = now - q->wait_start_ns;
    if (q->tripped[q->kind] || waited >= q->timeout_ns) {
        q->gave_up = 1;
        return 0;
    }
    uint64_t step = (uint64_t)steps_ms[count < (int)ARRAY_LEN(steps_ms)
                                           ? count
                                           : (int)ARRAY_LEN(steps_ms) - 1] * 1000000u;
    if (step > q->timeout_ns - waited)
        step = q->timeout_ns - waited;
    struct timespec ts = {.tv_sec = (time_t)(step / 1000000000u),
                          .tv_nsec = (long)(step % 1000000000u)};
    nanosleep(&ts, NULL);
    return 1;
}

/* The start of one store call of that kind: a fresh wait budget. */
static void call_begin(struct sqlite_store *q, enum call_kind kind)
{
    q->kind = (uint8_t)kind;
    q->wait_start_ns = 0;
    q->gave_up = 0;
}

/* The end of a call with result r: a success of its kind lets the next calls wait again;
 * a wait that timed out makes them fail at once until then. Returns r. */
static int call_end(struct sqlite_store *q, int r)
{
    ASSERT(sqlite3_get_autocommit(q->db)); /* no transaction left open by the call */
    if (r == 0 || r == -ENOENT)
        q->tripped[q->kind] = 0;
    else if (r == -EBUSY && q->gave_up)
        q->tripped[q->kind] = 1;
    return r;
}

/* A failed SQLite result of a statement on db as a store error: a lock not obtained is
 * -EBUSY, no space for the write (SQLITE_FULL, or an I/O error whose errno is ENOSPC or
 * EDQUOT) -ENOSPC, the rest -EIO. */
static int sql_error(sqlite3 *db, int rc)
{
    int primary = rc & 0xff;
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
        return -EBUSY;
    if (primary == SQLITE_FULL)
        return -ENOSPC;
    if (primary == SQLITE_IOERR) {
        int e = sqlite3_system_errno(db);
        if (e == ENOSPC || e == EDQUOT)
            return -ENOSPC;
    }
    return -EIO;
}

static int fail(char *err, size_t errlen, const char *path, const char *what, sqlite3 *db)
{
    if (err && errlen)
        snprintf(err, errlen, "sqlite %s: %s: %s", path, what,
                 db ? sqlite3_errmsg(db) : "out of memory");
    return -EIO;
}

/* Runs one statement to completion (reset afterwards): SQLITE_DONE/ROW -> 0, else
 * -EBUSY (a lock not obtained), -ENOSPC (no space) or -EIO. */
static int step_once(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return (rc == SQLITE_DONE || rc == SQLITE_ROW) ? 0 : sql_error(sqlite3_db_handle(st), rc);
}

/* Reads a column of text into dst (cap bytes + NUL); -EIO when it does not fit. */
static int column_copy(sqlite3_stmt *st, int col, char *dst, size_t cap, uint8_t *len)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    int n = sqlite3_column_bytes(st, col);
    if (t == NULL || n < 0 || (size_t)n > cap)
        return -EIO;
    memcpy(dst, t, (size_t)n);
    dst[n] = '\0';
    *len = (uint8_t)n;
    return 0;
}

static int row_to_user(sqlite3_stmt *st, int first, struct user *u)
{
    if (column_copy(st, first, u->name, USER_NAME_MAX, &u->name_len) != 0)
        return -EIO;
    return column_copy(st, first + 1, u->email, USER_EMAIL_MAX, &u->email_len);
}

static int query_u64(sqlite3 *db, const char *sql, uint64_t a, uint64_t *out)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK && a)
        rc = sqlite3_bind_int64(st, 1, (sqlite3_int64)a);
    if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        *out = (uint64_t)sqlite3_column_int64(st, 0);
    else
        rc = SQLITE_ERROR;
    sqlite3_finalize(st);
    return rc == SQLITE_OK ? 0 : -EIO;
}

/* Ensures users 1..n exist (INSERT OR IGNORE), in one transaction; skipped when the
 * table already holds all of them. */
static int seed(struct sqlite_store *q, uint64_t n, char *err, size_t errlen,
                const char *path)
{
    uint64_t have = 0;
    if (query_u64(q->db, "SELECT COUNT(*) FROM users WHERE id BETWEEN 1 AND ?1", n,
                  &have) != 0)
        return fail(err, errlen, path, "counting seed users", q->db);
    if (n == 0 || have >= n)
        return 0;
    sqlite3_stmt *ins = NULL;
    if (sqlite3_prepare_v2(q->db,
                           "INSERT OR IGNORE INTO users(id, name, email) VALUES(?1, ?2, ?3)",
                           -1, &ins, NULL) != SQLITE_OK)
        return fail(err, errlen, path, "preparing seed insert", q->db);
    if (step_once(q->begin) != 0) {
        sqlite3_finalize(ins);
        return fail(err, errlen, path, "BEGIN IMMEDIATE for seeding", q->db);
    }
    struct user u;
    for (uint64_t id = 1; id <= n; id++) {
        store_seed_user(id, &u);
        sqlite3_bind_int64(ins, 1, (sqlite3_int64)id);
        sqlite3_bind_text(ins, 2, u.name, u.name_len, SQLITE_STATIC);
        sqlite3_bind_text(ins, 3, u.email, u.email_len, SQLITE_STATIC);
        if (step_once(ins) != 0) {
            int r = fail(err, errlen, path, "seeding users", q->db);
            sqlite3_finalize(ins);
            step_once(q->rollback);
            return r;
        }
    }
    sqlite3_finalize(ins);
    if (step_once(q->commit) != 0) {
        int r = fail(err, errlen, path, "COMMIT of seed users", q->db);
        step_once(q->rollback);
        return r;
    }
    return 0;
}

static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
    return sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
}

static const struct store_ops sqlite_ops;
static void sqlite_close(struct store *s);

int store_sqlite_open(const struct store_options *opt, struct store **out, char *err,
                      size_t errlen)
{
    const char *path = opt->db_path;
    if (path == NULL || path[0] == '\0') {
        if (err && errlen)
            snprintf(err, errlen, "sqlite store needs a database path (--db)");
        return -EINVAL;
    }
    struct sqlite_store *q = xcalloc(1, sizeof *q);
    q->base.ops = &sqlite_ops;
    int r;

    /* one connection, used by one thread at a time (callers serialise) */
    if (sqlite3_open_v2(path, &q->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        r = fail(err, errlen, path, "open", q->db);
        goto fail_db;
    }
    sqlite3_busy_timeout(q->db, OPEN_BUSY_TIMEOUT_MS); /* opening may wait longer */
    /* per-connection pragmas; journal_mode answers with the mode actually in force */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(q->db, "PRAGMA journal_mode=WAL", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW ||
        sqlite3_stricmp((const char *)sqlite3_column_text(st, 0), "wal") != 0) {
        sqlite3_finalize(st);
        r = fail(err, errlen, path, "PRAGMA journal_mode=WAL", q->db);
        goto fail_db;
    }
    sqlite3_finalize(st);
    if (sqlite3_exec(q->db,
                     "PRAGMA synchronous=NORMAL;"
                     "CREATE TABLE IF NOT EXISTS users("
                     "id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL)",
                     NULL, NULL, NULL) != SQLITE_OK) {
        r = fail(err, errlen, path, "schema", q->db);
        goto fail_db;
    }
    /* statements reused for the life of the connection */
    if (prepare(q->db, "SELECT name, email FROM users WHERE id = ?1", &q->get) ||
        prepare(q->db,
                "SELECT id, name, email FROM users WHERE id > ?1 ORDER BY id LIMIT ?2",
                &q->list) ||
        prepare(q->db, "INSERT INTO users(name, email) VALUES(?1, ?2)", &q->insert) ||
        prepare(q->db, "BEGIN IMMEDIATE", &q->begin) ||
        prepare(q->db, "COMMIT", &q->commit) || prepare(q->db, "ROLLBACK", &q->rollback)) {
        r = fail(err, errlen, path, "prepare", q->db);
        goto fail_stmts;
    }
    if ((r = seed(q, opt->seed_users, err, errlen, path)) != 0)
        goto fail_stmts;
    if (query_u64(q->db, "SELECT COUNT(*) FROM users", 0, &q->base.count) != 0) {
        r = fail(err, errlen, path, "COUNT(*)", q->db);
        goto fail_stmts;
    }
    /* from here on, calls wait for locks within their budget only */
    q->timeout_ns = (opt->timeout_ms ? opt->timeout_ms : STORE_TIMEOUT_DEFAULT_MS) * 1000000u;
    sqlite3_busy_handler(q->db, busy_wait, q);
    *out = &q->base;
    return 0;

fail_stmts:
fail_db:
    sqlite_close(&q->base);
    return r;
}

static void sqlite_close(struct store *s)
{
    struct sqlite_store *q = (struct sqlite_store *)s;
    sqlite3_finalize(q->get);
    sqlite3_finalize(q->list);
    sqlite3_finalize(q->insert);
    sqlite3_finalize(q->begin);
    sqlite3_finalize(q->commit);
    sqlite3_finalize(q->rollback);
    sqlite3_close(q->db); /* NULL-safe; all statements are finalized above */
    free(q);
}

static int sqlite_get(struct store *s, uint64_t id, struct user *out)
{
    struct sqlite_store *q = (struct sqlite_store *)s;
    if (id > (uint64_t)INT64_MAX)
        return -ENOENT;
    int r;
    call_begin(q, CALL_READ);
    sqlite3_bind_int64(q->get, 1, (sqlite3_int64)id);
    int rc = sqlite3_step(q->get);
    if (rc == SQLITE_ROW) {
        out->id = id;
        r = row_to_user(q->get, 0, out);
    } else {
        r = rc == SQLITE_DONE ? -ENOENT : sql_error(q->db, rc);
    }
    sqlite3_reset(q->get);
    return call_end(q, r);
}

static int sqlite_list(struct store *s, uint64_t after, unsigned limit, struct user *out,
                       unsigned *count, int *has_more)
{
    struct sqlite_store *q = (struct sqlite_store *)s;
    unsigned n = 0;
    int r = 0, rc;
    if (after > (uint64_t)INT64_MAX)
        return 0;
    call_begin(q, CALL_READ);
    sqlite3_bind_int64(q->list, 1, (sqlite3_int64)after);
    sqlite3_bind_int64(q->list, 2, (sqlite3_int64)limit + 1); /* one more: has_more */
    while ((rc = sqlite3_step(q->list)) == SQLITE_ROW) {
        if (n == limit) {
            *has_more = 1;
            break;
        }
        out[n].id = (uint64_t)sqlite3_column_int64(q->list, 0);
        if ((r = row_to_user(q->list, 1, &out[n])) != 0)
            break;
        n++;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        r = sql_error(q->db, rc);
    sqlite3_reset(q->list);
    *count = r == 0 ? n : 0;
    if (r != 0)
        *has_more = 0;
    return call_end(q, r);
}

static int sqlite_create_batch(struct store *s, struct user *in, size_t n)
{
    struct sqlite_store *q = (struct sqlite_store *)s;
    call_begin(q, CALL_WRITE);
    int r = step_once(q->begin); /* the write lock: where another writer makes us wait */
    if (r != 0)
        return call_end(q, r);
    size_t i;
    for (i = 0; i < n; i++) {
        sqlite3_bind_text(q->insert, 1, in[i].name, in[i].name_len, SQLITE_STATIC);
        sqlite3_bind_text(q->insert, 2, in[i].email, in[i].email_len, SQLITE_STATIC);
        int rc = sqlite3_step(q->insert);
        sqlite3_reset(q->insert);
        sqlite3_clear_bindings(q->insert);
        if (rc != SQLITE_DONE) {
            r = sql_error(q->db, rc);
            goto rollback;
        }
        in[i].id = (uint64_t)sqlite3_last_insert_rowid(q->db);
    }
    if ((r = step_once(q->commit)) != 0)
        goto rollback;
    q->base.count += n;
    return call_end(q, 0);

rollback:
    /* an error may already have ended the transaction; roll back only if still open */
    if (!sqlite3_get_autocommit(q->db))
        step_once(q->rollback);
    for (size_t j = 0; j < n; j++)
        in[j].id = 0;
    return call_end(q, r);
}

static const struct store_ops sqlite_ops = {
    .name = "sqlite", .close = sqlite_close, .get = sqlite_get, .list = sqlite_list,
    .create_batch = sqlite_create_batch};

struct sqlite3 *store_sqlite_handle(struct store *s)
{
    return s->ops == &sqlite_ops ? ((struct sqlite_store *)s)->db : NULL;
}
