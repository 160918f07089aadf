/* atomics: the one vocabulary for memory shared between threads: inline wrappers over
 * the GCC/Clang __atomic builtins on plain fields (no _Atomic types, no <stdatomic.h>),
 * the memory order spelled in the name. 32-bit words are `unsigned` (flags, states,
 * counts, futex words); 64-bit counters use the *64 forms. Every access to a shared
 * word goes through these, so ThreadSanitizer sees each one and a reader sees the
 * ordering at the call site. */
#ifndef COMMON_ATOMICS_H
#define COMMON_ATOMICS_H

#include <stdbool.h>
#include <stdint.h>

#define ATOMICS_INLINE static inline __attribute__((always_inline))

/* ---- 32-bit words ---- */

ATOMICS_INLINE unsigned atomics_load_relaxed(const unsigned *p)
{
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}
ATOMICS_INLINE unsigned atomics_load_acquire(const unsigned *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
ATOMICS_INLINE unsigned atomics_load_seq_cst(const unsigned *p)
{
    return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}
ATOMICS_INLINE void atomics_store_relaxed(unsigned *p, unsigned v)
{
    __atomic_store_n(p, v, __ATOMIC_RELAXED);
}
ATOMICS_INLINE void atomics_store_release(unsigned *p, unsigned v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
ATOMICS_INLINE void atomics_store_seq_cst(unsigned *p, unsigned v)
{
    __atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}
/* The read-modify-writes return the value before the change. */
ATOMICS_INLINE unsigned atomics_add_relaxed(unsigned *p, unsigned v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
ATOMICS_INLINE unsigned atomics_add_acq_rel(unsigned *p, unsigned v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
}
ATOMICS_INLINE unsigned atomics_sub_relaxed(unsigned *p, unsigned v)
{
    return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED);
}
ATOMICS_INLINE unsigned atomics_sub_acq_rel(unsigned *p, unsigned v)
{
    return __atomic_fetch_sub(p, v, __ATOMIC_ACQ_REL);
}

ATOMICS_INLINE unsigned atomics_add_seq_cst(unsigned *p, unsigned v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
ATOMICS_INLINE unsigned atomics_sub_seq_cst(unsigned *p, unsigned v)
{
    return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST);
}
ATOMICS_INLINE unsigned atomics_exchange_seq_cst(unsigned *p, unsigned v)
{
    return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}
/* Sets *p to desired if it holds *expected (true); else *expected = *p (false). */
ATOMICS_INLINE bool atomics_cas_seq_cst(unsigned *p, unsigned *expected, unsigned desired)
{
    return __atomic_compare_exchange_n(p, expected, desired, false, __ATOMIC_SEQ_CST,
                                       __ATOMIC_SEQ_CST);
}
/* A full fence: no load or store moves across it either way. */
ATOMICS_INLINE void atomics_fence_seq_cst(void)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* ---- 64-bit counters ---- */

ATOMICS_INLINE uint64_t atomics_load64_relaxed(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}
ATOMICS_INLINE void atomics_store64_relaxed(uint64_t *p, uint64_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELAXED);
}
/* A counter with one writer thread, read from others: a plain add made visible without
 * a locked read-modify-write. Only its writer may call it. */
ATOMICS_INLINE void atomics_add64_one_writer(uint64_t *p, uint64_t n)
{
    __atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

#endif
