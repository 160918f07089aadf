/* test_loadgen_plan: the constant-rate schedule split over agents and threads. Even
 * arrivals: the union of the planned times of N agents x T threads equals, time for
 * time, the single schedule at the total rate. Poisson: the split streams together keep
 * the total rate, and differ from one another. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "loadgen/plan.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Collects every planned time < limit of every stream of agents x threads into out
 * (sorted); returns how many. */
static size_t union_of(enum arrivals arr, double rate, unsigned agents, unsigned threads,
                       uint64_t origin, uint64_t limit, uint64_t *out, size_t cap)
{
    size_t n = 0;
    for (unsigned a = 0; a < agents; a++)
        for (unsigned t = 0; t < threads; t++) {
            struct plan p;
            plan_init(&p, arr, rate, plan_stream(a, agents, t), agents * threads, origin, 7);
            while (plan_peek(&p) < limit) {
                assert_true(n < cap);
                out[n++] = plan_peek(&p);
                plan_advance(&p);
            }
        }
    qsort(out, n, sizeof *out, cmp_u64);
    return n;
}

static void test_even_union_is_single_schedule(void **state)
{
    const double rates[] = {1000.0, 33333.3, 7.0, 123456.789};
    const unsigned splits[][2] = {{1, 1}, {2, 1}, {3, 1}, {1, 4}, {2, 3}, {5, 2}, {7, 1}};
    const uint64_t origin = 123456789012345ull;
    size_t cap = 200000;
    uint64_t *single = malloc(cap * sizeof *single);
    uint64_t *split = malloc(cap * sizeof *split);
    for (size_t r = 0; r < sizeof rates / sizeof rates[0]; r++) {
        uint64_t limit = origin + (uint64_t)(1e9 * 50000 / rates[r] + 0.5);
        if (rates[r] < 100)
            limit = origin + 20000000000ull;
        size_t n1 = union_of(ARRIVALS_EVEN, rates[r], 1, 1, origin, limit, single, cap);
        assert_true(n1 > 100);
        /* The single schedule is origin + g/R. */
        for (size_t g = 0; g < n1; g++)
            assert_int_equal(single[g], plan_even_time(origin, 1e9 / rates[r], g));
        for (size_t s = 0; s < sizeof splits / sizeof splits[0]; s++) {
            size_t n2 = union_of(ARRIVALS_EVEN, rates[r], splits[s][0], splits[s][1], origin,
                                 limit, split, cap);
            assert_int_equal(n2, n1);
            assert_memory_equal(split, single, n1 * sizeof *single);
        }
    }
    free(single);
    free(split);
}

static void test_even_agent_rate_and_phase(void **state)
{
    /* Agent i of N: rate R/N, phase i/R. */
    const double rate = 1000.0;
    for (unsigned i = 0; i < 4; i++) {
        struct plan p;
        plan_init(&p, ARRIVALS_EVEN, rate, plan_stream(i, 4, 0), 4, 0, 1);
        assert_int_equal(plan_peek(&p), (uint64_t)i * 1000000u);
        plan_advance(&p);
        assert_int_equal(plan_peek(&p), (uint64_t)i * 1000000u + 4000000u);
    }
}

static void test_poisson_split_keeps_rate(void **state)
{
    const double rate = 20000.0;
    const uint64_t dur = 5000000000ull; /* 5 s: 100,000 expected */
    size_t cap = 200000;
    uint64_t *t = malloc(cap * sizeof *t);
    const unsigned splits[][2] = {{1, 1}, {4, 1}, {2, 3}};
    for (size_t s = 0; s < sizeof splits / sizeof splits[0]; s++) {
        size_t n = union_of(ARRIVALS_POISSON, rate, splits[s][0], splits[s][1], 0, dur, t, cap);
        double want = rate * (double)dur / 1e9;
        /* Poisson count: sd = sqrt(want) ~ 316; 5 sd. */
        assert_true(fabs((double)n - want) < 5 * sqrt(want));
        /* Gaps of the union: mean 1/R, coefficient of variation ~1 (exponential). */
        double sum = 0, sum2 = 0;
        for (size_t k = 1; k < n; k++) {
            double g = (double)(t[k] - t[k - 1]);
            sum += g;
            sum2 += g * g;
        }
        double mean = sum / (double)(n - 1);
        double sd = sqrt(sum2 / (double)(n - 1) - mean * mean);
        assert_true(fabs(mean - 1e9 / rate) < 0.05 * 1e9 / rate);
        assert_true(fabs(sd / mean - 1.0) < 0.05);
    }
    /* Streams differ: agent 0 and agent 1 of 2 do not plan the same times. */
    struct plan a, b;
    plan_init(&a, ARRIVALS_POISSON, rate, plan_stream(0, 2, 0), 2, 0, 1);
    plan_init(&b, ARRIVALS_POISSON, rate, plan_stream(1, 2, 0), 2, 0, 1);
    int same = 0;
    for (int k = 0; k < 100; k++) {
        same += plan_peek(&a) == plan_peek(&b);
        plan_advance(&a);
        plan_advance(&b);
    }
    assert_true(same < 5);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_even_union_is_single_schedule),
        cmocka_unit_test(test_even_agent_rate_and_phase),
        cmocka_unit_test(test_poisson_split_keeps_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
