/* util: out-of-memory handling in one place, a capped growable byte buffer, the
 * monotonic clock. Not thread-aware: a struct buf belongs to one thread at a time.
 * Invariant: buf.data is always NUL-terminated past buf.len when buf.cap > 0. */
#ifndef COMMON_UTIL_H
#define COMMON_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Aborts with a message on allocation failure; never return NULL. */
void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t n);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* Broken invariant: print to stderr and abort(). */
__attribute__((noreturn, format(printf, 1, 2))) void panic(const char *fmt, ...);

/* ASSERT(cond): an invariant of the code (an "Invariant" comment made executable). When
 * cond is false: panic() with the file, line, function and the condition's text. Compiled
 * out where NDEBUG is defined, which the Makefile does only in the benchmark build (the
 * binaries of the default build); on in the sanitizer, fuzz and ASSERTS=1 builds and in
 * the libraries the unit tests link. Compiled out, cond is not evaluated (it still must
 * compile), so it must have no side effects. Any thread. */
#ifdef NDEBUG
#define ASSERT(cond) ((void)sizeof(!(cond)))
#else
#define ASSERT(cond)                                                                   \
    ((cond) ? (void)0                                                                  \
            : panic("%s:%d: %s: invariant broken: %s", __FILE__, __LINE__, __func__, #cond))
#endif

/* Monotonic clock in nanoseconds (CLOCK_MONOTONIC). Any thread. */
uint64_t now_ns(void);

/* A growable byte buffer. Zero-initialised is a valid empty buffer. */
struct buf {
    char *data;
    size_t len;
    size_t cap;
};

/* Ensures room for `extra` more bytes plus a NUL. Aborts only on OOM. */
void buf_reserve(struct buf *b, size_t extra);
void buf_append(struct buf *b, const void *data, size_t n);
void buf_append_str(struct buf *b, const char *s);
void buf_append_u64(struct buf *b, uint64_t v);
__attribute__((format(printf, 2, 3))) void buf_printf(struct buf *b, const char *fmt, ...);
/* Appends unless the result would exceed `cap` bytes: returns 0, or -ENOSPC (nothing
 * appended). For buffers that grow because of peer input. */
int buf_append_capped(struct buf *b, const void *data, size_t n, size_t cap);
void buf_reset(struct buf *b);  /* len = 0, keeps the memory */
void buf_free(struct buf *b);   /* releases the memory; b is empty afterwards */

/* Writes the decimal form of v into out (>= 21 bytes); returns the length. */
size_t u64_to_dec(uint64_t v, char *out);
/* Parses a whole decimal string of 1..19 digits without sign into *out; 0 or -EINVAL
 * (empty, non-digit, overflow of 64 bits). */
int parse_u64(const char *s, size_t len, uint64_t *out);

#endif
