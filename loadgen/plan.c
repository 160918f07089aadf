/* plan: even and Poisson schedules of one stream out of agents x threads (plan.h). */
#include "plan.h"

#include <math.h>

unsigned plan_stream(unsigned agent, unsigned agents, unsigned thread)
{
    return agent + agents * thread;
}

uint64_t plan_even_time(uint64_t origin_ns, double ns_per_req, uint64_t g)
{
    return origin_ns + (uint64_t)((double)g * ns_per_req);
}

static void plan_set_next(struct plan *p)
{
    if (p->arrivals == ARRIVALS_POISSON) {
        p->poisson_ns += -log(rng_unit(&p->rng)) * p->ns_per_req * (double)p->nstreams;
        p->next_ns = p->origin_ns + (uint64_t)p->poisson_ns;
    } else {
        p->next_ns = plan_even_time(p->origin_ns, p->ns_per_req, p->stream + p->k * p->nstreams);
    }
}

void plan_init(struct plan *p, enum arrivals arrivals, double rate, unsigned stream,
               unsigned nstreams, uint64_t origin_ns, uint64_t seed)
{
    p->arrivals = arrivals;
    p->origin_ns = origin_ns;
    p->ns_per_req = 1e9 / rate;
    p->stream = stream;
    p->nstreams = nstreams;
    p->k = 0;
    p->poisson_ns = 0.0;
    rng_seed(&p->rng, seed * 0x9e3779b97f4a7c15ull + 0x5851f42d4c957f2dull * (stream + 1));
    plan_set_next(p);
}

void plan_advance(struct plan *p)
{
    p->k++;
    plan_set_next(p);
}
