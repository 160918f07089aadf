/* app: the contract's request handling, as steps both servers run in the same order:
 *   app_route -> (users routes:) mw_request_id -> mw_auth -> app_validate ->
 *   app_store_exec -> accesslog_request -> app_render_body
 * The async server runs them inline (app_store_exec under its mutex); the actor server
 * runs each in a different actor. Steps only touch the request they are given, plus the
 * store in app_store_exec; none allocates per request once buffers have grown. */
#ifndef COMMON_APP_H
#define COMMON_APP_H

#include <stddef.h>
#include <stdint.h>

#include "common/http/metrics.h"
#include "common/http/request.h"
#include "common/store/store.h"

#define USER_BODY_MAX 4096 /* POST /users body limit (413 above) */

struct app {
    const char *bearer;
    size_t bearer_len;
    const struct metrics_registry *registry; /* for GET /metrics */
    uint64_t store_users;                    /* gauge, written by the store's owner */
    uint64_t store_full_rejections;          /* counter: calls refused for lack of space */
    uint8_t store_full;                      /* a full-disk episode is on (said on stderr) */
};

enum app_next {
    APP_RESPOND, /* req->resp.status is decided: render and send */
    APP_USERS,   /* a /users route: run the middleware, then the store */
    APP_STORE,   /* (from app_validate) the store operation is next */
};

/* Routes req. Returns APP_RESPOND for /ping, /metrics, 404/405/400 outside /users, and
 * APP_USERS for the /users routes (including their routing errors, which are answered
 * after auth). */
enum app_next app_route(struct request *req);

/* After request id and auth: checks the route's input (routing error, 415 for a
 * non-JSON POST, 413 above USER_BODY_MAX, 400 for invalid JSON or fields). Returns
 * APP_RESPOND with the error response filled, or APP_STORE. */
enum app_next app_validate(struct request *req);

/* The store operation for a validated /users request: sets req->resp.status (200, 201,
 * 404; 503 with Retry-After when the store timed out waiting for a lock or had no space
 * for a write, store.h; 500) and the results; updates app->store_users. A full disk is
 * counted (app->store_full_rejections) and said on stderr once per episode: at its first
 * refusal, and when a write succeeds again. Caller provides exclusion. */
void app_store_exec(struct app *app, struct store *store, struct request *req);

/* Group commit: performs the validated POST /users requests reqs[0..n) in one store
 * transaction (store_create_batch): every one gets 201 with its new id, or, if the
 * commit failed, 503 + Retry-After (the store timed out, or no space: counted and said as
 * in app_store_exec) or 500. Caller provides exclusion. n <= STORE_BATCH_MAX. */
#define STORE_BATCH_MAX 64
void app_store_create_batch(struct app *app, struct store *store, struct request **reqs,
                            unsigned n);

/* Renders the body (and content type, Location) from the decided status and results;
 * a no-op when the body is already rendered (errors). For /metrics it renders the
 * registry. */
void app_render_body(struct app *app, struct request *req);

#endif
