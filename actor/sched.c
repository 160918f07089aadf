/* sched: thread and libuv schedulers for actors (see sched.h). Does not own actors and
 * never allocates per message. Invariant: `idle` is the only word producers touch to
 * wake a scheduler, and only the producer that moves it from IDLE to AWAKE wakes it, so
 * a wake-up costs a futex/uv_async_send once per idle-to-busy edge. */
#include "sched.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cell.h"
#include "common/base/atomics.h"
#include "mailbox.h"
#include "common/base/util.h"

enum sched_kind { SCHED_THREAD, SCHED_UV };

/* Values of sched.idle. */
enum { AWAKE = 0, IDLE = 1, STOPPED = 2 };


struct sched {
    struct sched_local local; /* runnable local halves; s's own thread only */
    unsigned local_burst;    /* local runs since the run queue last had a look; own thread */
    struct mailbox runq;     /* runnable actors; any thread pushes, the scheduler pops */
    unsigned idle;           /* atomics.h, a futex word: AWAKE, IDLE (asleep or about to
                                be), STOPPED */
    unsigned stop;           /* atomics.h: thread kind: exit once the run queue is empty */
    unsigned actors;         /* atomics.h: actors homed here (bounds the run queue) */
    enum sched_kind kind;
    unsigned batch;
    unsigned spin;           /* thread kind: polls of an empty run queue before sleeping */
    bool started;
    char name[16];
    pthread_t thread;        /* thread kind */
    uv_async_t async;        /* uv kind; data = this */
    bool async_closed;       /* uv kind: close callback ran */
    uv_prepare_t prepare;    /* uv kind, bound: drains local sends before the loop blocks */
    unsigned bound;          /* atomics.h: uv kind: loop_thread is set (release: other
                                threads read it) */
    bool prepare_closed;
    pthread_t loop_thread;   /* uv kind: the loop's thread, once bound */
};

_Thread_local struct sched *sched_self_tls;

/* Actor runs one drain may do before it yields to the loop's I/O. */
#define SCHED_DRAIN_BUDGET 4096

static struct sched *sched_alloc(enum sched_kind kind)
{
    struct sched *s = xcalloc(1, sizeof(*s));

    /* The run queue: one slot per possible actor plus the mailbox's spare slot. */
    if (mailbox_init(&s->runq, SCHED_MAX_ACTORS + 1) != 0)
        panic("sched: bad run queue size");
    atomics_store_relaxed(&s->idle, AWAKE);
    atomics_store_relaxed(&s->stop, false);
    atomics_store_relaxed(&s->bound, false);
    atomics_store_relaxed(&s->actors, 0);
    s->kind = kind;
    s->batch = SCHED_DEFAULT_BATCH;
    s->spin = SCHED_DEFAULT_SPIN;
    return s;
}

/* Runs a once; queues it again at the back if messages remain. Returns true when the
 * run stopped at a message not yet published (the scheduler should come back later).
 * Scheduler thread. */
static bool sched_run_one(struct sched *s, struct actor *a)
{
    enum actor_run_result r = actor_run(a, s->batch);
    if (r != ACTOR_RUN_IDLE && mailbox_push(&s->runq, a) != 0)
        panic("sched %s: run queue full", s->name);
    return r == ACTOR_RUN_STALLED;
}

struct sched_local *sched_local_of(struct sched *s)
{
    return &s->local;
}

static struct actor *local_pop(struct sched *s)
{
    struct actor *a = s->local.head;

    if (a != NULL) {
        s->local.head = a->local_next;
        if (s->local.head == NULL)
            s->local.tail = NULL;
        ASSERT(a->home == s && a->local_ready && localq_depth(&a->local) != 0);
    }
    return a;
}

/* Runs a's local half once; back of the local list if messages remain. Own thread. */
static void sched_run_local(struct sched *s, struct actor *a)
{
    if (actor_run_local(a, s->batch))
        sched_local_push(&s->local, a);
}

/* Local runs in a row before the run queue gets a look: bounds how long actors made
 * runnable from other threads wait behind a busy local list (and the reverse: a run
 * queue entry never waits for more than this many local runs). */
#define SCHED_LOCAL_BURST 64u

/* What stopped a sched_run_some early (bits of *why). */
#define RUN_STOPPED 1u /* an actor stopped s (uv kind: no run after that) */
#define RUN_STALLED 2u /* a sender has claimed a slot of the run queue or of an actor's
                          mailbox and not yet published it: come back later, never wait */

/* Runs up to `budget` actors (batches), from the local list and the run queue, until
 * both are empty, s is stopped, or a message is not yet published (a sender preempted
 * between claim and publish: the run queue or that actor's mailbox stays non-empty).
 * Never waits for anybody. Returns the number of runs; *why (if not NULL) gets the
 * RUN_* bits of an early end. Scheduler thread. */
static unsigned sched_run_some(struct sched *s, unsigned budget, unsigned *why)
{
    unsigned runs = 0;
    struct actor *a;
    int rc;

    /* local_burst lives in s, not here: a caller with a small budget must not reset it
     * on every call (that would starve the run queue behind a busy local list). */
    while (runs < budget) {
        if (s->local_burst < SCHED_LOCAL_BURST && (a = local_pop(s)) != NULL) {
            sched_run_local(s, a);
            s->local_burst++;
        } else if (mailbox_depth(&s->runq) != 0 &&
                   (rc = mailbox_try_pop(&s->runq, (void **)&a)) != -EAGAIN) {
            if (rc != 0 || sched_run_one(s, a)) {
                if (why != NULL)
                    *why |= RUN_STALLED;
                break;
            }
            s->local_burst = 0;
        } else if (s->local_burst == SCHED_LOCAL_BURST) {
            s->local_burst = 0; /* the run queue is empty: back to the local list */
            continue;
        } else {
            break;
        }
        runs++;
        if (why != NULL && atomics_load_relaxed(&s->idle) == STOPPED) {
            *why |= RUN_STOPPED;
            break;
        }
    }
    return runs;
}

/* Counts a wake-up issued from this thread (its scheduler's counts). */
static void count_wakeup(void)
{
    struct sched *self = sched_self_tls;
    if (self != NULL)
        atomics_add64_one_writer(&self->local.counts.wakeups, 1);
}

void sched_count_send(const struct sched *to, int delta)
{
    struct sched *self = sched_self_tls;
    if (self == NULL)
        return;
    atomics_add64_one_writer(&self->local.counts.messages, (uint64_t)(int64_t)delta);
    if (to != self)
        atomics_add64_one_writer(&self->local.counts.cross_thread, (uint64_t)(int64_t)delta);
}

void sched_counts_add(const struct sched *s, struct sched_counts *sum)
{
    sum->messages += atomics_load64_relaxed(&s->local.counts.messages);
    sum->cross_thread += atomics_load64_relaxed(&s->local.counts.cross_thread);
    sum->wakeups += atomics_load64_relaxed(&s->local.counts.wakeups);
}

static void futex_wait(unsigned *word, unsigned expected)
{
    /* Returns at once if *word != expected; spurious returns are fine (callers loop). */
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void futex_wake(unsigned *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static bool runq_wait_briefly(struct sched *s)
{
    for (unsigned i = 0; i < s->spin; i++) {
        if (mailbox_depth(&s->runq) != 0)
            return true;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    return false;
}

static void *sched_thread_main(void *arg)
{
    struct sched *s = arg;

    sched_self_tls = s; /* sends from s's actors to s's actors go local */
    for (;;) {
        unsigned why = 0;
        if (sched_run_some(s, SCHED_LOCAL_BURST, &why) != 0)
            continue;
        if (why & RUN_STALLED) {
            sched_yield(); /* a worker has nothing else to do: let the sender finish */
            continue;
        }
        /* The local list is empty now, and only this thread fills it. */
        if (runq_wait_briefly(s))
            continue;
        /* Announce sleep, then look again: a producer either sees IDLE and wakes us, or
         * its push is visible here (both sides fence between their store and load). */
        atomics_store_seq_cst(&s->idle, IDLE);
        atomics_fence_seq_cst();
        if (mailbox_depth(&s->runq) != 0) {
            atomics_store_relaxed(&s->idle, AWAKE);
            continue;
        }
        if (atomics_load_seq_cst(&s->stop))
            break;
        futex_wait(&s->idle, IDLE);
        atomics_store_relaxed(&s->idle, AWAKE);
    }
    atomics_store_seq_cst(&s->idle, STOPPED);
    return NULL;
}

/* uv kind: up to `budget` actor runs. Returns false when an actor stopped this
 * scheduler meanwhile (no more sends or wake-ups then). A run that stopped at a message
 * not yet published leaves it queued: the caller sees work pending and asks the loop
 * for another turn (uv_async_send), so the loop polls its sockets in between instead of
 * waiting for the sender. Loop thread. */
static bool sched_run_budget(struct sched *s, unsigned budget)
{
    unsigned why = 0;

    sched_run_some(s, budget, &why);
    return !(why & RUN_STOPPED);
}

/* Work is queued that this loop must come back for. */
static bool sched_uv_pending(const struct sched *s)
{
    return s->local.head != NULL || mailbox_depth(&s->runq) != 0;
}

/* uv kind: runs the actors that were runnable on entry (one batch each), then yields to
 * the loop's I/O; asks for another turn while work remains. Loop thread. */
static void sched_async_cb(uv_async_t *handle)
{
    struct sched *s = handle->data;
    /* Bound: actors sent to from this thread run in the same turn (their hand-offs
     * need no wake-up). Unbound: the actors runnable on entry, one batch each. */
    unsigned budget = atomics_load_relaxed(&s->bound)
                          ? SCHED_DRAIN_BUDGET
                          : mailbox_depth(&s->runq);
    if (!sched_run_budget(s, budget))
        return;
    if (sched_uv_pending(s)) {
        count_wakeup();
        uv_async_send(&s->async);
        return;
    }
    atomics_store_seq_cst(&s->idle, IDLE);
    atomics_fence_seq_cst();
    if (mailbox_depth(&s->runq) != 0) {
        unsigned expected = IDLE;
        if (atomics_cas_seq_cst(&s->idle, &expected, AWAKE)) {
            count_wakeup();
            uv_async_send(&s->async);
        }
    }
}

static void sched_async_close_cb(uv_handle_t *handle)
{
    struct sched *s = handle->data;
    s->async_closed = true;
}

static void sched_prepare_close_cb(uv_handle_t *handle)
{
    struct sched *s = handle->data;
    s->prepare_closed = true;
}

void sched_uv_drain(struct sched *s)
{
    /* The common case on a busy loop: called several times per iteration, mostly with
     * nothing to do. */
    if (s->local.head == NULL && mailbox_depth(&s->runq) == 0)
        return;
    if (!sched_run_budget(s, SCHED_DRAIN_BUDGET))
        return;
    /* Work left over (budget spent): make sure the loop comes back for it. */
    if (sched_uv_pending(s)) {
        count_wakeup();
        uv_async_send(&s->async);
    }
}

static void sched_prepare_cb(uv_prepare_t *handle)
{
    sched_uv_drain(handle->data);
}

void sched_uv_bind(struct sched *s)
{
    if (s->kind != SCHED_UV || atomics_load_relaxed(&s->bound))
        return;
    s->loop_thread = pthread_self(); /* published by the release store of bound below */
    sched_self_tls = s;              /* sends made here to s's actors go local */
    /* acquire: the prepare handle (unreferenced: it must not keep the loop alive) */
    uv_prepare_init(s->async.loop, &s->prepare);
    s->prepare.data = s;
    uv_prepare_start(&s->prepare, sched_prepare_cb);
    uv_unref((uv_handle_t *)&s->prepare);
    atomics_store_release(&s->bound, true);
}

struct sched *sched_new_thread(const char *name)
{
    struct sched *s = sched_alloc(SCHED_THREAD);

    snprintf(s->name, sizeof(s->name), "%s", name);
    return s;
}

int sched_new_uv(uv_loop_t *loop, struct sched **out)
{
    struct sched *s = sched_alloc(SCHED_UV);
    int rc;

    *out = NULL;
    snprintf(s->name, sizeof(s->name), "uv-loop");
    /* acquire: the loop's wake-up handle; closed by sched_stop_and_join */
    rc = uv_async_init(loop, &s->async, sched_async_cb);
    if (rc != 0) {
        /* libuv's handle was never registered: nothing to close */
        mailbox_destroy(&s->runq);
        free(s);
        return rc;
    }
    s->async.data = s;
    /* Idle from the start: the first runnable actor sends the first wake-up. */
    atomics_store_relaxed(&s->idle, IDLE);
    *out = s;
    return 0;
}

void sched_set_batch(struct sched *s, unsigned batch)
{
    s->batch = batch > 0 ? batch : 1;
}

void sched_set_spin(struct sched *s, unsigned spin)
{
    s->spin = spin;
}

unsigned sched_batch(const struct sched *s)
{
    return s->batch;
}

int sched_start(struct sched *s)
{
    int rc;

    if (s->started)
        return 0;
    if (s->kind == SCHED_THREAD) {
        /* The worker thread; joined by sched_stop_and_join. */
        rc = pthread_create(&s->thread, NULL, sched_thread_main, s);
        if (rc != 0)
            return -rc;
        pthread_setname_np(s->thread, s->name);
    }
    s->started = true;
    return 0;
}

int sched_stop_and_join(struct sched *s)
{
    int rc;

    if (s->kind == SCHED_THREAD) {
        if (!s->started)
            return 0;
        atomics_store_seq_cst(&s->stop, true);
        atomics_store_seq_cst(&s->idle, AWAKE);
        futex_wake(&s->idle);
        rc = pthread_join(s->thread, NULL);
        s->started = false;
        return -rc;
    }
    /* uv kind: drain inline (requeued actors included), then no more wake-ups. The loop
     * serves nothing any more, so here a sender still publishing is waited for. */
    if (atomics_exchange_seq_cst(&s->idle, STOPPED) == STOPPED)
        return 0;
    for (;;) {
        unsigned why = 0;
        if (sched_run_some(s, SCHED_DRAIN_BUDGET, &why) == 0 && !(why & RUN_STALLED))
            break;
        if (why & RUN_STALLED)
            sched_yield();
    }
    if (sched_self_tls == s)
        sched_self_tls = NULL; /* later sends from here take the cross-thread path */
    uv_close((uv_handle_t *)&s->async, sched_async_close_cb);
    if (atomics_load_relaxed(&s->bound))
        uv_close((uv_handle_t *)&s->prepare, sched_prepare_close_cb);
    return 0;
}

void sched_free(struct sched *s)
{
    if (s == NULL)
        return;
    if (s->kind == SCHED_UV &&
        (!s->async_closed || (atomics_load_seq_cst(&s->bound) && !s->prepare_closed)))
        panic("sched_free: uv scheduler not stopped, or its loop did not run the close");
    if (s->kind == SCHED_THREAD && s->started)
        panic("sched_free: thread scheduler %s still running", s->name);
    if (atomics_load_seq_cst(&s->actors) != 0)
        panic("sched_free: %s still has %u actors", s->name, atomics_load_seq_cst(&s->actors));
    mailbox_destroy(&s->runq);
    free(s);
}

int sched_attach(struct sched *s)
{
    if (atomics_add_seq_cst(&s->actors, 1) >= SCHED_MAX_ACTORS) {
        atomics_sub_seq_cst(&s->actors, 1);
        return -ENOSPC;
    }
    return 0;
}

void sched_detach(struct sched *s)
{
    atomics_sub_seq_cst(&s->actors, 1);
}

void sched_ready(struct sched *s, struct actor *a)
{
    unsigned expected = IDLE;

    /* Cannot be full: each actor is queued at most once and SCHED_MAX_ACTORS fit. */
    ASSERT(a->home == s);
    if (mailbox_push(&s->runq, a) != 0)
        panic("sched %s: run queue full", s->name);
    /* On a bound loop's own thread no wake-up is needed: the loop drains its run queue
     * in the check phase (sched_uv_drain from the server's flush) and before it blocks
     * (the prepare handle), and inside the async callback. */
    if (atomics_load_acquire(&s->bound) &&
        pthread_equal(pthread_self(), s->loop_thread))
        return;
    /* Orders the push before reading `idle` (the scheduler orders its IDLE store before
     * re-reading the queue). For the uv kind this is also the full fence libuv 1.44's
     * uv_async_send needs between the enqueue and the send. */
    atomics_fence_seq_cst();
    if (atomics_load_relaxed(&s->idle) != IDLE ||
        !atomics_cas_seq_cst(&s->idle, &expected, AWAKE))
        return;
    count_wakeup();
    if (s->kind == SCHED_THREAD)
        futex_wake(&s->idle);
    else
        uv_async_send(&s->async);
}
