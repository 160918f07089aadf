/* request: the request object's lifecycle (new, reset, free) and the per-loop pool that
 * recycles it, so a keep-alive connection allocates nothing per request once buffers
 * have grown. Not thread-safe: a pool belongs to one loop. */
#include "request.h"

#include <stdlib.h>
#include <string.h>

#define POOL_KEEP 1024   /* free requests kept per loop */
#define POOL_KEEP_LIST 64 /* beyond this many, pooled requests drop their list array */

struct request *request_new(void)
{
    struct request *req = xcalloc(1, sizeof *req);
    request_reset(req);
    return req;
}

/* 16 bytes of any type, for clearing the reset region in whole-vector stores. */
typedef unsigned char request_chunk __attribute__((vector_size(16), aligned(8), may_alias));
_Static_assert(REQUEST_RESET_END % sizeof(request_chunk) == 0,
               "the reset region is whole 16-byte chunks");

void request_reset(struct request *req)
{
    /* The memset of the region, written as unrolled 16-byte stores: GCC turns a
     * constant-size memset of it (112 bytes) into `rep stos` (14 counted iterations),
     * this into 7 stores, so the reset costs no more instructions than the
     * field-by-field one did. */
#pragma GCC unroll 16
    for (size_t off = 0; off < REQUEST_RESET_END; off += sizeof(request_chunk))
        *(request_chunk *)((char *)req + off) = (request_chunk){0};
    req->http_minor = 1;
    req->route = ROUTE_OTHER;
    buf_reset(&req->resp.body);
    buf_reset(&req->target);
    buf_reset(&req->body);
    req->request_id[0] = '\0';
}

/* dst = a copy of src's contents in memory of its own (dst's memory is kept). */
static void buf_copy(struct buf *dst, const struct buf *src)
{
    buf_reset(dst);
    if (src->len > 0)
        buf_append(dst, src->data, src->len);
}

void request_copy_into(struct request *dst, const struct request *src)
{
    struct buf target = dst->target, body = dst->body, resp_body = dst->resp.body;
    struct user *users = dst->users;
    /* conn.c's bookkeeping stays dst's: the connection may have linked more requests
     * behind dst (next) or marked it while src travelled */
    enum close_mode close = dst->close;
    uint8_t done = dst->done;
    struct conn *conn = dst->conn;
    struct request *next = dst->next;
    void *user_data = dst->user_data;

    *dst = *src;
    dst->close = close;
    dst->done = done;
    dst->conn = conn;
    dst->next = next;
    dst->user_data = user_data;
    dst->target = target;
    dst->body = body;
    dst->resp.body = resp_body;
    buf_copy(&dst->target, &src->target);
    buf_copy(&dst->body, &src->body);
    buf_copy(&dst->resp.body, &src->resp.body);
    dst->users = users;
    if (src->users != NULL) {
        if (dst->users == NULL)
            dst->users = xmalloc(sizeof(struct user) * STORE_LIST_MAX);
        memcpy(dst->users, src->users, sizeof(struct user) * src->user_count);
    }
}

void request_clone_into(struct request *dst, const struct request *src)
{
    memset(&dst->target, 0, sizeof dst->target);
    memset(&dst->body, 0, sizeof dst->body);
    memset(&dst->resp.body, 0, sizeof dst->resp.body);
    dst->users = NULL;
    request_copy_into(dst, src);
    /* a clone is all src's, bookkeeping included (it is in no connection's FIFO) */
    dst->close = src->close;
    dst->done = src->done;
    dst->conn = src->conn;
    dst->next = src->next;
    dst->user_data = src->user_data;
}

void request_clone_release(struct request *req)
{
    buf_free(&req->target);
    buf_free(&req->body);
    buf_free(&req->resp.body);
    free(req->users);
    req->users = NULL;
}

void request_free(struct request *req)
{
    if (req == NULL)
        return;
    buf_free(&req->target);
    buf_free(&req->body);
    buf_free(&req->resp.body);
    free(req->users);
    free(req);
}

struct request *request_pool_get(struct request_pool *p)
{
    struct request *req = p->free;
    p->in_use++;
    if (req == NULL)
        return request_new();
    p->free = req->next;
    p->len--;
    request_reset(req);
    return req;
}

/* Frees b's memory when it grew above REQUEST_POOL_BUF_KEEP. */
static void buf_trim(struct buf *b)
{
    if (b->cap > REQUEST_POOL_BUF_KEEP)
        buf_free(b);
}

void request_pool_put(struct request_pool *p, struct request *req)
{
    ASSERT(p->in_use > 0); /* each put matches a get of this pool */
    p->in_use--;
    if (p->len >= POOL_KEEP) {
        request_free(req);
        return;
    }
    if (req->users != NULL && p->len >= POOL_KEEP_LIST) {
        free(req->users); /* list results are 20 KiB: keep only a few */
        req->users = NULL;
    }
    /* one compare each on the common path: buffers rarely grow past the cap */
    buf_trim(&req->body);
    buf_trim(&req->target);
    buf_trim(&req->resp.body);
    req->next = p->free;
    p->free = req;
    p->len++;
}

void request_pool_drain(struct request_pool *p)
{
    while (p->free != NULL) {
        struct request *r = p->free;
        p->free = r->next;
        request_free(r);
    }
    p->len = 0;
}
