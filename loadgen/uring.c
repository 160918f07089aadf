/* uring: io_uring set-up, submission and completion rings by hand (io_uring(7)).
 * Ring indices are shared with the kernel: tails we publish are release stores, heads
 * and tails we read are acquire loads. */
#include "uring.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/base/atomics.h"

static int sys_setup(unsigned entries, struct io_uring_params *p)
{
    long rc = syscall(__NR_io_uring_setup, entries, p);
    return rc < 0 ? -errno : (int)rc;
}

static int sys_enter(int fd, unsigned submit, unsigned min_complete, unsigned flags,
                     const void *arg, size_t argsz)
{
    long rc = syscall(__NR_io_uring_enter, fd, submit, min_complete, flags, arg, argsz);
    return rc < 0 ? -errno : (int)rc;
}

static void *ptr_at(void *base, unsigned off)
{
    return (char *)base + off;
}

int uring_init(struct uring *r, unsigned sq_entries, unsigned cq_entries)
{
    memset(r, 0, sizeof *r);
    r->fd = -1;
    /* Cheapest first: completions' task work run only when we wait (DEFER_TASKRUN,
     * 6.1+), then cooperative task work (5.19+), then plain. */
    static const unsigned modes[] = {
        IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
        IORING_SETUP_COOP_TASKRUN,
        0,
    };
    struct io_uring_params p;
    int fd = -EINVAL;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        memset(&p, 0, sizeof p);
        p.flags = modes[i] | IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL;
        p.cq_entries = cq_entries;
        fd = sys_setup(sq_entries, &p);
        if (fd >= 0 || fd != -EINVAL)
            break;
    }
    if (fd < 0)
        return fd;
    if (!(p.features & IORING_FEAT_EXT_ARG) || !(p.features & IORING_FEAT_NODROP) ||
        !(p.features & IORING_FEAT_SINGLE_MMAP)) {
        close(fd);
        return -EOPNOTSUPP;
    }
    r->fd = fd;
    r->flags = p.flags;
    r->cq_entries = p.cq_entries;
    r->sq_entries = p.sq_entries;
    size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    r->sq_map_len = sq_len > cq_len ? sq_len : cq_len; /* one mapping for both rings */
    r->sq_map = mmap(NULL, r->sq_map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                     IORING_OFF_SQ_RING);
    if (r->sq_map == MAP_FAILED) {
        int e = -errno;
        close(fd);
        r->fd = -1;
        return e;
    }
    r->cq_map = r->sq_map;
    r->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
    r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                   IORING_OFF_SQES);
    if (r->sqes == MAP_FAILED) {
        int e = -errno;
        munmap(r->sq_map, r->sq_map_len);
        close(fd);
        r->fd = -1;
        return e;
    }
    r->sq_head = ptr_at(r->sq_map, p.sq_off.head);
    r->sq_tail = ptr_at(r->sq_map, p.sq_off.tail);
    r->sq_mask = ptr_at(r->sq_map, p.sq_off.ring_mask);
    unsigned *array = ptr_at(r->sq_map, p.sq_off.array);
    for (unsigned i = 0; i < p.sq_entries; i++)
        array[i] = i; /* slot i of the ring always names sqes[i] */
    r->cq_head = ptr_at(r->cq_map, p.cq_off.head);
    r->cq_tail = ptr_at(r->cq_map, p.cq_off.tail);
    r->cq_mask = ptr_at(r->cq_map, p.cq_off.ring_mask);
    r->cqes = ptr_at(r->cq_map, p.cq_off.cqes);
    r->sq_local_tail = *r->sq_tail;
    return 0;
}

void uring_exit(struct uring *r)
{
    if (r->fd < 0)
        return;
    munmap(r->sqes, r->sqes_len);
    munmap(r->sq_map, r->sq_map_len);
    close(r->fd);
    r->fd = -1;
}

struct io_uring_sqe *uring_get_sqe(struct uring *r)
{
    unsigned head = atomics_load_acquire(r->sq_head);
    if (r->sq_local_tail - head >= r->sq_entries)
        return NULL;
    struct io_uring_sqe *s = &r->sqes[r->sq_local_tail & *r->sq_mask];
    r->sq_local_tail++;
    memset(s, 0, sizeof *s);
    return s;
}

void uring_prep_recv(struct io_uring_sqe *s, int fd, void *buf, size_t len, uint64_t data)
{
    s->opcode = IORING_OP_RECV;
    s->fd = fd;
    s->addr = (uint64_t)(uintptr_t)buf;
    s->len = (uint32_t)len;
    s->user_data = data;
}

void uring_prep_recvmsg(struct io_uring_sqe *s, int fd, struct msghdr *msg, uint64_t data)
{
    s->opcode = IORING_OP_RECVMSG;
    s->fd = fd;
    s->addr = (uint64_t)(uintptr_t)msg;
    s->len = 1;
    s->user_data = data;
}

void uring_prep_send(struct io_uring_sqe *s, int fd, const void *buf, size_t len,
                     uint64_t data)
{
    s->opcode = IORING_OP_SEND;
    s->fd = fd;
    s->addr = (uint64_t)(uintptr_t)buf;
    s->len = (uint32_t)len;
    s->msg_flags = MSG_NOSIGNAL | MSG_WAITALL;
    s->user_data = data;
}

void uring_prep_cancel(struct io_uring_sqe *s, uint64_t target, uint64_t data)
{
    s->opcode = IORING_OP_ASYNC_CANCEL;
    s->fd = -1;
    s->addr = target;
    s->user_data = data;
}

void uring_prep_poll_multishot(struct io_uring_sqe *s, int fd, unsigned events, uint64_t data)
{
    s->opcode = IORING_OP_POLL_ADD;
    s->fd = fd;
    s->poll32_events = events;
    s->len = IORING_POLL_ADD_MULTI;
    s->user_data = data;
}

int uring_enter(struct uring *r, unsigned min_complete, int64_t timeout_ns)
{
    unsigned submit = r->sq_local_tail - *r->sq_tail;
    atomics_store_release(r->sq_tail, r->sq_local_tail);
    struct __kernel_timespec ts;
    struct io_uring_getevents_arg arg = {0};
    unsigned flags = IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG;
    if (timeout_ns >= 0 && min_complete > 0) {
        ts.tv_sec = timeout_ns / 1000000000;
        ts.tv_nsec = timeout_ns % 1000000000;
        arg.ts = (uint64_t)(uintptr_t)&ts;
    }
    int rc = sys_enter(r->fd, submit, min_complete, flags, &arg, sizeof arg);
    if (rc >= 0 || rc == -ETIME || rc == -EINTR || rc == -EAGAIN || rc == -EBUSY)
        return 0;
    return rc;
}

int uring_submit(struct uring *r)
{
    return uring_enter(r, 0, -1);
}

unsigned uring_reap(struct uring *r, void (*fn)(const struct io_uring_cqe *cqe, void *ctx),
                    void *ctx)
{
    unsigned n = 0;
    for (;;) {
        unsigned head = *r->cq_head;
        unsigned tail = atomics_load_acquire(r->cq_tail);
        if (head == tail)
            return n;
        for (; head != tail; head++, n++) {
            fn(&r->cqes[head & *r->cq_mask], ctx);
            /* Release each as we go: fn may submit, and the kernel may post again. */
            atomics_store_release(r->cq_head, head + 1);
        }
    }
}
