/* app: the request steps of the contract; see app.h for the order. */
#include "app.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/http/json.h"
#include "common/http/response.h"
#include "router.h"

enum app_next app_route(struct request *req)
{
    router_apply(req);
    struct response *resp = &req->resp;
    if (req->users_group)
        return APP_USERS;
    if (req->route_error) {
        response_error(resp, req->route_error, req->error_reason);
        return APP_RESPOND;
    }
    if (req->route == ROUTE_PING) {
        resp->status = 200;
        resp->content_type = CT_TEXT;
        buf_reset(&resp->body);
        buf_append(&resp->body, "pong", 4);
        return APP_RESPOND;
    }
    /* ROUTE_METRICS: rendered in app_render_body, where the response is sent */
    resp->status = 200;
    resp->content_type = CT_PROMETHEUS;
    return APP_RESPOND;
}

enum app_next app_validate(struct request *req)
{
    struct response *resp = &req->resp;
    if (req->route_error) {
        response_error(resp, req->route_error, req->error_reason);
        return APP_RESPOND;
    }
    if (req->route == ROUTE_USER_CREATE) {
        if (req->content_type != BODY_JSON) {
            response_error(resp, 415, "content type must be application/json");
            return APP_RESPOND;
        }
        if (req->body.len > USER_BODY_MAX) {
            response_error(resp, 413, "body too large");
            return APP_RESPOND;
        }
        const char *reason = NULL;
        if (json_parse_user(req->body.data ? req->body.data : "", req->body.len, &req->user,
                            &reason) != 0) {
            response_error(resp, 400, reason);
            return APP_RESPOND;
        }
    }
    return APP_STORE;
}

/* The status of a failed store call: 503 with Retry-After when it timed out waiting
 * for the store (a lock held elsewhere) or the disk had no space for the write: retrying
 * later can succeed, the server is not broken. Else 500. */
static uint16_t __attribute__((noinline)) store_failed(struct request *req, int rc)
{
    if (rc != -EBUSY && rc != -ENOSPC)
        return 500;
    req->resp.flags |= RESP_RETRY_AFTER;
    return 503;
}

/* Notes a store call's result rc for n requests: refusals for lack of space are counted,
 * and an episode of them is said on stderr at its first one and when a write (write
 * set) succeeds again. Runs under the caller's exclusion (the store's owner). */
static void __attribute__((noinline))
store_note_space(struct app *app, int rc, unsigned n, int write)
{
    if (rc == -ENOSPC) {
        counter_set(&app->store_full_rejections, counter_get(&app->store_full_rejections) + n);
        if (!app->store_full) {
            app->store_full = 1;
            fprintf(stderr,
                    "store: a write failed: %s (the database's filesystem is full); "
                    "writes are answered 503 + Retry-After until one succeeds\n",
                    strerror(ENOSPC));
        }
    } else if (rc == 0 && write && app->store_full) {
        app->store_full = 0;
        fprintf(stderr, "store: writes succeed again after %llu refused for lack of space\n",
                (unsigned long long)counter_get(&app->store_full_rejections));
    }
}

void app_store_exec(struct app *app, struct store *store, struct request *req)
{
    struct response *resp = &req->resp;
    int rc;
    switch (req->route) {
    case ROUTE_USER_GET:
        rc = store_get(store, req->id, &req->user);
        resp->status = rc == 0 ? 200 : rc == -ENOENT ? 404 : store_failed(req, rc);
        break;
    case ROUTE_USER_LIST:
        if (req->users == NULL)
            req->users = xmalloc(sizeof(struct user) * STORE_LIST_MAX);
        rc = store_list(store, req->after, req->limit, req->users, &req->user_count,
                        &req->has_more);
        resp->status = rc == 0 ? 200 : store_failed(req, rc);
        if (rc == -ENOSPC)
            store_note_space(app, rc, 1, 0);
        break;
    case ROUTE_USER_CREATE:
        rc = store_create(store, req->user.name, req->user.name_len, req->user.email,
                          req->user.email_len, &req->user);
        resp->status = rc == 0 ? 201 : store_failed(req, rc);
        if (rc == 0)
            counter_set(&app->store_users, store_count(store));
        if (rc == 0 || rc == -ENOSPC)
            store_note_space(app, rc, 1, 1);
        break;
    default:
        rc = -EINVAL;
        resp->status = 500;
        break;
    }
    req->store_rc = rc;
}

void app_store_create_batch(struct app *app, struct store *store, struct request **reqs,
                            unsigned n)
{
    struct user users[STORE_BATCH_MAX];
    if (n > STORE_BATCH_MAX)
        panic("app_store_create_batch: %u > %u", n, STORE_BATCH_MAX);
    for (unsigned i = 0; i < n; i++)
        users[i] = reqs[i]->user;
    int rc = store_create_batch(store, users, n);
    for (unsigned i = 0; i < n; i++) {
        reqs[i]->store_rc = rc;
        reqs[i]->resp.status = rc == 0 ? 201 : store_failed(reqs[i], rc);
        if (rc == 0)
            reqs[i]->user = users[i];
    }
    if (rc == 0)
        counter_set(&app->store_users, store_count(store));
    if (rc == 0 || rc == -ENOSPC)
        store_note_space(app, rc, n, 1);
}

void app_render_body(struct app *app, struct request *req)
{
    struct response *resp = &req->resp;
    if (resp->content_type != CT_NONE && req->route != ROUTE_METRICS)
        return; /* already rendered (ping, errors) */
    buf_reset(&resp->body);
    switch (resp->status) {
    case 200:
        if (req->route == ROUTE_METRICS) {
            resp->content_type = CT_PROMETHEUS;
            metrics_render(app->registry, &resp->body);
            return;
        }
        resp->content_type = CT_JSON;
        if (req->route == ROUTE_USER_LIST)
            json_append_user_list(&resp->body, req->users, req->user_count, req->has_more);
        else
            json_append_user(&resp->body, &req->user);
        return;
    case 201:
        resp->content_type = CT_JSON;
        resp->flags |= RESP_LOCATION;
        resp->location_id = req->user.id;
        json_append_user(&resp->body, &req->user);
        return;
    case 404:
        response_error(resp, 404, "user not found");
        return;
    case 503: /* the store timed out or is full (Retry-After set by store_failed) */
        response_error(resp, 503, req->store_rc == -ENOSPC ? "store full" : "store busy");
        return;
    default:
        response_error(resp, resp->status, "internal error");
        return;
    }
}
