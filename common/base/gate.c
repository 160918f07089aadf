/* gate: the one-shot start gate (gate.h). */
#include "gate.h"

void gate_init(struct gate *g)
{
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->cond, NULL);
    g->open = 0;
    g->failed = 0;
}

void gate_destroy(struct gate *g)
{
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->lock);
}

int gate_wait(struct gate *g)
{
    pthread_mutex_lock(&g->lock);
    while (!g->open)
        pthread_cond_wait(&g->cond, &g->lock);
    int failed = g->failed;
    pthread_mutex_unlock(&g->lock);
    return failed;
}

void gate_open(struct gate *g, int failed)
{
    pthread_mutex_lock(&g->lock);
    g->failed = failed;
    g->open = 1;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}
