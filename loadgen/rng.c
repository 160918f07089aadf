/* rng: xoshiro256** (Blackman & Vigna, public domain) seeded through splitmix64.
 * Range draws use Lemire's multiply-shift with rejection, so they are unbiased. */
#include "rng.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void rng_seed(struct rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t rng_next(struct rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t rng_range(struct rng *r, uint64_t lo, uint64_t hi)
{
    uint64_t span = hi - lo + 1;
    if (span == 0) /* the whole 64-bit range */
        return rng_next(r);
    unsigned __int128 m = (unsigned __int128)rng_next(r) * span;
    uint64_t low = (uint64_t)m;
    if (low < span) {
        uint64_t threshold = -span % span;
        while (low < threshold) {
            m = (unsigned __int128)rng_next(r) * span;
            low = (uint64_t)m;
        }
    }
    return lo + (uint64_t)(m >> 64);
}

double rng_unit(struct rng *r)
{
    /* 53 random bits -> [0, 1), then flip to (0, 1]. */
    return 1.0 - (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}
