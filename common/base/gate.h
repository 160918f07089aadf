/* gate: a one-shot start gate for threads. The creator makes its threads, then opens the
 * gate once, saying whether every thread it needed could be created; each thread waits at
 * the gate before it does anything, and ends at once when the start failed. So a start
 * is all or nothing, and barriers or counts after the gate see exactly the threads there
 * are. */
#ifndef COMMON_GATE_H
#define COMMON_GATE_H

#include <pthread.h>

struct gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int open;
    int failed;
};

void gate_init(struct gate *g);
void gate_destroy(struct gate *g);
/* Blocks until gate_open; returns its `failed` (nonzero: end without running). */
int gate_wait(struct gate *g);
/* Lets every waiting and later thread through. Once. */
void gate_open(struct gate *g, int failed);

#endif
