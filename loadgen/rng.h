/* rng: a small, fast per-thread pseudo-random generator (xoshiro256**, seeded by
 * splitmix64) for picking mix lines, template integers and Poisson gaps.
 * Not cryptographic, not thread-safe: one struct rng per worker thread. */
#ifndef LOADGEN_RNG_H
#define LOADGEN_RNG_H

#include <stdint.h>

struct rng {
    uint64_t s[4];
};

/* Seeds r deterministically from seed (any value, 0 included). */
void rng_seed(struct rng *r, uint64_t seed);
/* Next 64 random bits. */
uint64_t rng_next(struct rng *r);
/* Uniform integer in [lo, hi] (lo <= hi; hi - lo may span the whole 64-bit range). */
uint64_t rng_range(struct rng *r, uint64_t lo, uint64_t hi);
/* Uniform double in (0, 1]: safe to pass to log(). */
double rng_unit(struct rng *r);

#endif
