/* test_loadgen_held: the hold clock. H(t) runs only inside holds, so the held part of a
 * wait is H(send) - H(due); times before the oldest kept mark count no hold (the own lag
 * is then overstated, never understated); begin/end are idempotent and keep time order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "loadgen/held.h"

static void empty_clock_is_zero(void **state)
{
    (void)state;
    struct held h;
    held_init(&h);
    assert_int_equal(held_at(&h, 0), 0);
    assert_int_equal(held_at(&h, 1000000), 0);
    held_end(&h, 50); /* no hold: nothing to end */
    assert_int_equal(held_at(&h, 100), 0);
}

static void runs_only_inside_holds(void **state)
{
    (void)state;
    struct held h;
    held_init(&h);
    held_begin(&h, 100);
    held_begin(&h, 150); /* already held: no-op */
    held_end(&h, 300);
    held_end(&h, 350);   /* not held: no-op */
    held_begin(&h, 1000);
    held_end(&h, 1100);
    assert_int_equal(held_at(&h, 50), 0);
    assert_int_equal(held_at(&h, 100), 0);
    assert_int_equal(held_at(&h, 200), 100);
    assert_int_equal(held_at(&h, 300), 200);
    assert_int_equal(held_at(&h, 999), 200);
    assert_int_equal(held_at(&h, 1050), 250);
    assert_int_equal(held_at(&h, 5000), 300);
    /* a request due at 150 and sent at 1050 waited 900, 150 + 50 of it held */
    assert_int_equal(held_at(&h, 1050) - held_at(&h, 150), 200);
}

static void between_equals_the_difference(void **state)
{
    (void)state;
    struct held h;
    held_init(&h);
    assert_int_equal(held_between(&h, 10, 20), 0);
    held_begin(&h, 100);
    held_end(&h, 300);
    held_begin(&h, 1000);
    held_end(&h, 1100);
    uint64_t t[] = {0, 50, 100, 200, 300, 999, 1050, 1100, 5000};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        for (size_t j = i; j < sizeof t / sizeof t[0]; j++)
            assert_int_equal(held_between(&h, t[i], t[j]), held_at(&h, t[j]) - held_at(&h, t[i]));
    held_begin(&h, 2000); /* an open hold: from before it, it runs to `to` */
    assert_int_equal(held_between(&h, 1500, 2500), 500);
    assert_int_equal(held_between(&h, 2100, 2500), 400);
}

static void open_hold_runs_to_now(void **state)
{
    (void)state;
    struct held h;
    held_init(&h);
    held_begin(&h, 10);
    held_end(&h, 20);
    held_begin(&h, 40);
    assert_int_equal(held_at(&h, 40), 10);
    assert_int_equal(held_at(&h, 100), 70);
}

static void end_before_begin_is_empty(void **state)
{
    (void)state;
    struct held h;
    held_init(&h);
    held_begin(&h, 500);
    held_end(&h, 400); /* a time before the hold's start: it ends where it began */
    assert_int_equal(held_at(&h, 1000), 0);
    held_begin(&h, 450); /* earlier than the newest mark: kept in order */
    held_end(&h, 700);
    assert_int_equal(held_at(&h, 1000), 200);
}

static void ring_forgets_oldest(void **state)
{
    (void)state;
    struct held h;
    held_init(&h);
    /* HELD_MARKS marks = HELD_MARKS / 2 holds of 10 ns, one every 100 ns, then as many more */
    for (uint64_t i = 0; i < HELD_MARKS; i++) {
        held_begin(&h, i * 100);
        held_end(&h, i * 100 + 10);
    }
    uint64_t total = held_at(&h, HELD_MARKS * 100);
    assert_int_equal(total, HELD_MARKS * 10);
    /* the first half of the holds' marks are gone: before the oldest kept mark, H is that
     * mark's (the held time before it is not subtracted from a wait that began there) */
    uint64_t oldest = (HELD_MARKS / 2) * 100;
    assert_int_equal(held_at(&h, 0), held_at(&h, oldest));
    assert_int_equal(held_at(&h, oldest), (HELD_MARKS / 2) * 10);
    /* recent differences are exact */
    uint64_t from = (HELD_MARKS - 3) * 100, to = (HELD_MARKS - 1) * 100 + 5;
    assert_int_equal(held_at(&h, to) - held_at(&h, from), 25);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(empty_clock_is_zero),
        cmocka_unit_test(runs_only_inside_holds),
        cmocka_unit_test(between_equals_the_difference),
        cmocka_unit_test(open_hold_runs_to_now),
        cmocka_unit_test(end_before_begin_is_empty),
        cmocka_unit_test(ring_forgets_oldest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
