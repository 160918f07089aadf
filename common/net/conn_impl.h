/* conn_impl: a connection's state and the few operations conn.c lends conn_sweep.c
 * (the deadlines and the stops), private to those two files (conn.h is the connection
 * layer's contract). Loop thread only, like everything of a connection. */
#ifndef COMMON_CONN_IMPL_H
#define COMMON_CONN_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/base/util.h"
#include "common/http/http.h"

struct conn {
    uv_tcp_t tcp; /* first member: handle->data not needed */
    struct server_loop *loop;
    struct http_parser parser;
    struct request *head, *tail; /* in-flight requests, request order */
    unsigned inflight;
    unsigned refs;               /* see conn.c's file comment */
    struct buf out;              /* rendered, not yet written */
    struct buf pending_in;       /* unparsed bytes while reading is paused */
    /* progress, counted on the request path; the sweep compares with what it saw */
    unsigned feeds;              /* input fed to the parser (and resumes of reading) */
    unsigned begun;              /* requests begun (and resumes of reading) */
    unsigned writes;             /* writes started, partly or wholly done */
    unsigned seen_feeds, seen_begun, seen_writes;
    size_t seen_write_queue;     /* tcp.write_queue_size at the last sweep */
    uint64_t read_ms;            /* loop clock when the sweep last saw input progress */
    uint64_t begin_ms;           /* ... first saw the current request begun */
    uint64_t write_ms;           /* ... last saw output progress */
    uint64_t linger_end_ms;
    const char *fail_reason;
    uint16_t fail_status;        /* refused input's answer, not yet queued (pipeline full) */
    uint8_t closed;              /* uv_close called */
    uint8_t paused;              /* reading stopped (pipeline cap, unread output, refused) */
    uint8_t close_after_flush;   /* a response said Connection: close */
    uint8_t lingering;           /* shut down for writing, discarding input */
    uint8_t writing;             /* a uv_write is in flight */
    uint8_t dirty;               /* on the loop's dirty list */
    uint8_t in_feed;
    uint8_t peer_eof;            /* the peer half-closed: answer what is in flight, then close */
    uint8_t failed;              /* input refused (parse error, read deadline): never read
                                    again except to discard during the linger */
    uint8_t read_done;           /* a closing request was parsed: nothing after it is read,
                                    even while it is still in flight */
    struct conn *prev, *next;    /* loop's connection list */
    struct conn *dirty_next;
};

/* Takes a reference (see conn.c's file comment for who holds one). */
static inline void conn_ref(struct conn *c)
{
    c->refs++;
}

/* Drops a reference; the last one frees c (and counts the connection gone). */
void conn_unref(struct conn *c);

/* Closes c now (idempotent): off the loop's list, decided replies dropped, the handle
 * closed; its memory goes with its last reference. */
void conn_close(struct conn *c);

/* Refuses the rest of c's input (input the parser refused, a read deadline): reading
 * stops for good (the linger after the answer only discards), unparsed input is
 * dropped, and `status` is owed, answered in order after the requests in flight and
 * queued only once the pipeline has room (conn_queue_fail). At most once per
 * connection: whatever the peer sends afterwards takes no request and no memory. */
void conn_fail(struct conn *c, uint16_t status, const char *reason);

#endif
