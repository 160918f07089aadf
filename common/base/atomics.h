/* atomics: the one vocabulary for memory shared between threads: inline wrappers over
 * the GCC/Clang __atomic builtins on plain fields (no _Atomic types, no <stdatomic.h>),
 * the memory order spelled in the name. 32-bit words are `unsigned` (flags, states,
 * counts, futex words); 64-bit counters use the *64 forms. Every access to a shared
 * word goes through these, so ThreadSanitizer sees each one and a reader sees the
 * ordering at the call site. Each wrapper is one line below, its name written out. */
#ifndef COMMON_ATOMICS_H
#define COMMON_ATOMICS_H

#include <stdbool.h>
#include <stdint.h>

#define ATOMICS_INLINE static inline __attribute__((always_inline))
/* name(p): *p read with ORDER. */
#define ATOMICS_LOAD(T, name, ORDER)                                                      \
    ATOMICS_INLINE T name(const T *p) { return __atomic_load_n(p, ORDER); }
/* name(p, v): *p = v with ORDER. */
#define ATOMICS_STORE(T, name, ORDER)                                                     \
    ATOMICS_INLINE void name(T *p, T v) { __atomic_store_n(p, v, ORDER); }
/* name(p, v): a read-modify-write (OP: fetch_add, fetch_sub, exchange) returning the
 * value before it. */
#define ATOMICS_RMW(T, name, OP, ORDER)                                                   \
    ATOMICS_INLINE T name(T *p, T v) { return __atomic_##OP(p, v, ORDER); }

/* ---- 32-bit words ---- */

ATOMICS_LOAD(unsigned, atomics_load_relaxed, __ATOMIC_RELAXED)
ATOMICS_LOAD(unsigned, atomics_load_acquire, __ATOMIC_ACQUIRE)
ATOMICS_LOAD(unsigned, atomics_load_seq_cst, __ATOMIC_SEQ_CST)
ATOMICS_STORE(unsigned, atomics_store_relaxed, __ATOMIC_RELAXED)
ATOMICS_STORE(unsigned, atomics_store_release, __ATOMIC_RELEASE)
ATOMICS_STORE(unsigned, atomics_store_seq_cst, __ATOMIC_SEQ_CST)
ATOMICS_RMW(unsigned, atomics_add_relaxed, fetch_add, __ATOMIC_RELAXED)
ATOMICS_RMW(unsigned, atomics_add_acq_rel, fetch_add, __ATOMIC_ACQ_REL)
ATOMICS_RMW(unsigned, atomics_add_seq_cst, fetch_add, __ATOMIC_SEQ_CST)
ATOMICS_RMW(unsigned, atomics_sub_relaxed, fetch_sub, __ATOMIC_RELAXED)
ATOMICS_RMW(unsigned, atomics_sub_acq_rel, fetch_sub, __ATOMIC_ACQ_REL)
ATOMICS_RMW(unsigned, atomics_sub_seq_cst, fetch_sub, __ATOMIC_SEQ_CST)
ATOMICS_RMW(unsigned, atomics_exchange_seq_cst, exchange_n, __ATOMIC_SEQ_CST)

/* Sets *p to desired if it holds *expected (true); else *expected = *p (false). */
ATOMICS_INLINE bool atomics_cas_seq_cst(unsigned *p, unsigned *expected, unsigned desired)
{
    return __atomic_compare_exchange_n(p, expected, desired, false, __ATOMIC_SEQ_CST,
                                       __ATOMIC_SEQ_CST);
}
/* A full fence: no load or store moves across it either way. (GCC warns that
 * ThreadSanitizer does not model fences; the fenced sides' stores and loads are seq_cst
 * atomics it does see, so the warning is silenced for the TSan build only.) */
#if defined(__SANITIZE_THREAD__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtsan"
#endif
ATOMICS_INLINE void atomics_fence_seq_cst(void)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
#if defined(__SANITIZE_THREAD__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

/* ---- 64-bit counters ---- */

ATOMICS_LOAD(uint64_t, atomics_load64_relaxed, __ATOMIC_RELAXED)
ATOMICS_STORE(uint64_t, atomics_store64_relaxed, __ATOMIC_RELAXED)
/* A counter with one writer thread, read from others: a plain add made visible without
 * a locked read-modify-write. Only its writer may call it. */
ATOMICS_INLINE void atomics_add64_one_writer(uint64_t *p, uint64_t n)
{
    __atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

#undef ATOMICS_LOAD
#undef ATOMICS_STORE
#undef ATOMICS_RMW

#endif
