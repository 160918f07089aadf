/* json: the JSON the servers read and write. Reading (POST /users bodies) goes through
 * jansson; writing is a small escaping writer into struct buf, so output bytes are
 * identical for both servers. Stateless; any thread. */
#ifndef COMMON_JSON_H
#define COMMON_JSON_H

#include <stddef.h>

#include "common/store/store.h"
#include "common/base/util.h"

/* Parses a POST /users body: a JSON object with string members "name" (1..64 bytes) and
 * "email" (3..128 bytes, containing '@'); other members are ignored. On success returns
 * 0 and fills out->name/email (+ lengths; id untouched). On failure returns -EINVAL and
 * points *reason at a static string for {"error":"<reason>"}:
 *   "invalid json", "body must be an object", "name must be a string of 1..64 bytes",
 *   "email must be a string of 3..128 bytes containing @".
 * Nesting deeper than 32 levels is "invalid json". Strings with NUL bytes are refused. */
int json_parse_user(const char *body, size_t len, struct user *out, const char **reason);

/* Appends s (n bytes, UTF-8 assumed valid) as a JSON string literal with quotes,
 * escaping '"', '\\' and control characters (\n \r \t \b \f, else \u00XX). */
void json_append_string(struct buf *b, const char *s, size_t n);
/* Appends {"id":1,"name":"...","email":"..."} */
void json_append_user(struct buf *b, const struct user *u);
/* Appends {"users":[...],"next":ID or null} */
void json_append_user_list(struct buf *b, const struct user *users, unsigned count,
                           int has_more);
/* Appends {"error":"<reason>"} */
void json_append_error(struct buf *b, const char *reason);

#endif
