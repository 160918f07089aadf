/* plan: the constant-rate send schedule of one stream. The whole run's schedule at total
 * rate R is split into S = agents x threads streams; stream s = agent + agents x thread.
 * Even arrivals: the run's g-th planned time is origin + g x 1e9/R ns (one formula, so
 * every split of the same run computes bit-identical times) and stream s plans the
 * indices g = s, s + S, s + 2S, ...: rate R/S, phase s/R, and the union over all streams is
 * the single even schedule at rate R. Poisson arrivals: stream s draws exponential gaps of
 * mean S/R ns from its own generator (seeded by seed and s); the superposition of S
 * independent Poisson processes of rate R/S is a Poisson process of rate R.
 * One struct plan per worker thread; not shared. */
#ifndef LOADGEN_PLAN_H
#define LOADGEN_PLAN_H

#include <stdint.h>

#include "config.h"
#include "rng.h"

struct plan {
    enum arrivals arrivals;
    uint64_t origin_ns;
    double ns_per_req;  /* 1e9 / R, R the total rate over all streams */
    uint64_t stream;    /* s */
    uint64_t nstreams;  /* S */
    uint64_t k;         /* planned times handed out so far */
    uint64_t next_ns;   /* the next planned time */
    double poisson_ns;  /* poisson: next planned time - origin, unrounded */
    struct rng rng;
};

/* Stream index of thread `thread` of agent `agent` (both 0-based) among `agents` agents. */
unsigned plan_stream(unsigned agent, unsigned agents, unsigned thread);
/* Prepares the schedule of stream `stream` of `nstreams` (stream < nstreams) at total
 * rate `rate` (> 0 req/s) from origin_ns; seed picks the Poisson gaps. */
void plan_init(struct plan *p, enum arrivals arrivals, double rate, unsigned stream,
               unsigned nstreams, uint64_t origin_ns, uint64_t seed);
/* The next planned time (ns, same clock as origin_ns). */
static inline uint64_t plan_peek(const struct plan *p)
{
    return p->next_ns;
}
/* Moves to the planned time after plan_peek's. */
void plan_advance(struct plan *p);
/* Even arrivals: the g-th planned time of the whole run. */
uint64_t plan_even_time(uint64_t origin_ns, double ns_per_req, uint64_t g);

#endif
