/* store_open: the one place that knows every store implementation: opens the one the
 * options name (memory or sqlite). Everything after the open goes through the store's
 * ops table (store.c), so nothing else depends on an implementation. */
#include <errno.h>
#include <stdio.h>

#include "store.h"
#include "store_impl.h"

int store_open(const struct store_options *opt, struct store **out, char *err, size_t errlen)
{
    *out = NULL;
    if (err && errlen)
        err[0] = '\0';
    switch (opt->kind) {
    case STORE_MEMORY:
        return store_memory_open(opt, out, err, errlen);
    case STORE_SQLITE:
        return store_sqlite_open(opt, out, err, errlen);
    }
    if (err && errlen)
        snprintf(err, errlen, "unknown store kind %d", (int)opt->kind);
    return -EINVAL;
}
