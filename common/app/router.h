/* router: maps method + request-target to a route of the contract, decoding and
 * validating path parameters and the list query. Pure functions; any thread.
 * Decides 404 (unknown path, or a target not in origin-form), 405 (+ Allow) and 400
 * (bad id, bad query, bad percent-encoding, "*" without OPTIONS); never allocates.
 * HEAD matches wherever GET does. */
#ifndef COMMON_ROUTER_H
#define COMMON_ROUTER_H

#include <stddef.h>
#include <stdint.h>

#include "common/http/request.h"

struct route_match {
    uint8_t route;        /* enum route; ROUTE_OTHER when status != 0 */
    uint8_t users_group;  /* 1 for paths under /users (they run the middleware) */
    uint16_t status;      /* 0 matched, else 400/404/405 */
    const char *reason;   /* for the error body when status != 0 */
    const char *allow;    /* Allow header for 405 */
    uint64_t id;          /* GET /users/:id */
    uint64_t after;       /* list */
    unsigned limit;       /* list, default 10, 1..100 */
};

/* Matches `target` (the raw request-target, len bytes) for llhttp method `method`.
 * Always fills *m. Paths are percent-decoded before matching ("/users/%31" is user 1);
 * invalid percent-encoding, NUL or bytes >= 0x80 in the decoded path give 400. */
void router_match(uint8_t method, const char *target, size_t len, struct route_match *m);

/* Fills the routing fields of req from its target and method. */
void router_apply(struct request *req);

#endif
