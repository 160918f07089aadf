/* test_request: the request's deep copies (common/http/request.c, the actor server's
 * --message=copy): a clone owns buffers and list results of its own (changing it leaves
 * the source alone, and it outlives the source's reuse); copying back into the loop's
 * request writes the clone's contents into that request's own buffers and keeps its
 * connection bookkeeping (conn, next, done, close, user_data), which the connection may
 * have changed while the clone travelled. Run under ASan by make check-asan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/http/request.h"

/* A request as a handler leaves it: a target, a body, a response body, a list result. */
static struct request *filled(void)
{
    struct request *req = request_new();
    buf_append_str(&req->target, "/users?limit=3");
    buf_append_str(&req->body, "{\"name\":\"a\"}");
    buf_append_str(&req->resp.body, "[{\"id\":1}]");
    req->route = ROUTE_USER_LIST;
    req->resp.status = 200;
    req->users = malloc(sizeof(struct user) * STORE_LIST_MAX);
    req->user_count = 3;
    memset(req->users, 0, sizeof(struct user) * STORE_LIST_MAX);
    for (unsigned i = 0; i < 3; i++) {
        req->users[i].id = i + 1;
        req->users[i].name_len = (uint8_t)snprintf(req->users[i].name,
                                                   sizeof req->users[i].name, "user-%u", i + 1);
    }
    req->user_data = (void *)0x1234;
    req->next = (struct request *)0x5678;
    return req;
}

static void test_clone_is_independent(void **state)
{
    (void)state;
    struct request *src = filled();
    struct request clone;

    request_clone_into(&clone, src);
    assert_ptr_not_equal(clone.target.data, src->target.data);
    assert_ptr_not_equal(clone.body.data, src->body.data);
    assert_ptr_not_equal(clone.resp.body.data, src->resp.body.data);
    assert_ptr_not_equal(clone.users, src->users);
    assert_string_equal(clone.target.data, "/users?limit=3");
    assert_string_equal(clone.body.data, "{\"name\":\"a\"}");
    assert_string_equal(clone.resp.body.data, "[{\"id\":1}]");
    assert_int_equal(clone.user_count, 3);
    assert_int_equal(clone.users[2].id, 3);
    assert_string_equal(clone.users[2].name, "user-3");
    /* the clone carries the bookkeeping as it was (its holder finds its loop by it) */
    assert_ptr_equal(clone.user_data, (void *)0x1234);
    /* the source is reused meanwhile: the clone keeps its own contents */
    request_reset(src);
    buf_append_str(&src->target, "/ping");
    assert_string_equal(clone.target.data, "/users?limit=3");
    request_clone_release(&clone);
    request_free(src);
}

static void test_copy_back_keeps_bookkeeping(void **state)
{
    (void)state;
    struct request *orig = filled();
    struct request clone;
    char *orig_body = orig->resp.body.data;

    request_clone_into(&clone, orig);
    /* the clone's handler answers; the connection meanwhile links another request */
    buf_reset(&clone.resp.body);
    buf_append_str(&clone.resp.body, "{\"id\":7}");
    clone.resp.status = 201;
    clone.users[0].id = 42;
    orig->next = (struct request *)0x9abc;
    orig->done = 1;
    request_copy_into(orig, &clone);
    assert_int_equal(orig->resp.status, 201);
    assert_string_equal(orig->resp.body.data, "{\"id\":7}");
    assert_ptr_equal(orig->resp.body.data, orig_body); /* its own buffer, reused */
    assert_int_equal(orig->users[0].id, 42);
    assert_ptr_not_equal(orig->users, clone.users);
    assert_ptr_equal(orig->next, (struct request *)0x9abc);
    assert_int_equal(orig->done, 1);
    assert_ptr_equal(orig->user_data, (void *)0x1234);
    request_clone_release(&clone);
    request_free(orig);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clone_is_independent),
        cmocka_unit_test(test_copy_back_keeps_bookkeeping),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
