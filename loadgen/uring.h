/* uring: a minimal io_uring ring over the raw system calls (no liburing): set-up with
 * the cheapest task-run mode the kernel offers, socket recv/send, cancel and multishot
 * poll submissions, and one call that submits everything queued and waits for
 * completions with a ns timeout. Lets a worker send and receive on all its connections
 * with one system call per wake-up instead of one per read and per write.
 * One ring per thread, used by the thread that created it only (SINGLE_ISSUER). */
#ifndef LOADGEN_URING_H
#define LOADGEN_URING_H

#include <linux/io_uring.h>
#include <stddef.h>
#include <stdint.h>

struct uring {
    int fd;
    unsigned sq_entries;
    unsigned *sq_head, *sq_tail, *sq_mask;
    unsigned sq_local_tail; /* queued, not yet published to the kernel */
    unsigned *cq_head, *cq_tail, *cq_mask;
    struct io_uring_sqe *sqes;
    struct io_uring_cqe *cqes;
    void *sq_map, *cq_map;
    size_t sq_map_len, cq_map_len, sqes_len;
    unsigned flags; /* IORING_SETUP_* in force */
    unsigned cq_entries;
};

/* Creates a ring with room for `sq_entries` queued submissions and `cq_entries`
 * completions (both rounded up to powers of two by the kernel). Returns 0, or a negative
 * errno when io_uring is missing, disabled or lacks what loadgen needs (EXT_ARG waits,
 * NODROP completions): callers fall back to epoll. */
int uring_init(struct uring *r, unsigned sq_entries, unsigned cq_entries);
void uring_exit(struct uring *r);
/* A zeroed submission slot, or NULL when the queue is full (call uring_submit first). */
struct io_uring_sqe *uring_get_sqe(struct uring *r);
/* Submissions queued but not yet handed to the kernel. */
static inline unsigned uring_unsubmitted(const struct uring *r)
{
    return r->sq_local_tail - *r->sq_tail;
}
void uring_prep_recv(struct io_uring_sqe *s, int fd, void *buf, size_t len, uint64_t data);
struct msghdr;
void uring_prep_recvmsg(struct io_uring_sqe *s, int fd, struct msghdr *msg, uint64_t data);
void uring_prep_send(struct io_uring_sqe *s, int fd, const void *buf, size_t len,
                     uint64_t data);
void uring_prep_cancel(struct io_uring_sqe *s, uint64_t target, uint64_t data);
void uring_prep_poll_multishot(struct io_uring_sqe *s, int fd, unsigned events, uint64_t data);
/* Hands every queued submission to the kernel and, when min_complete > 0, waits until
 * that many completions are ready or timeout_ns passes (timeout_ns < 0: no timeout).
 * Returns 0 (also on timeout or signal), or a negative errno. */
int uring_enter(struct uring *r, unsigned min_complete, int64_t timeout_ns);
/* Submits without waiting. Same returns as uring_enter. */
int uring_submit(struct uring *r);
/* Calls fn for each ready completion, in order, then releases them. Returns how many. */
unsigned uring_reap(struct uring *r, void (*fn)(const struct io_uring_cqe *cqe, void *ctx),
                    void *ctx);

#endif
