/* options: getopt_long parsing of the servers' shared flags, --help and --version.
 * Never aborts on bad input: it says what was wrong in one line, points at --help, and
 * the caller exits 2. */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <llhttp.h>
#include <sched.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "common/base/util.h"

const char *const options_placement_names[OPTIONS_PLACEMENT_COUNT] = {"local", "spread"};
const char *const options_message_names[OPTIONS_MESSAGE_COUNT] = {"pointer", "malloc", "copy"};
const char *const options_mailbox_names[OPTIONS_MAILBOX_COUNT] = {"vyukov", "ring", "mutex"};

unsigned options_cpu_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0)
            return (unsigned)n;
    }
    return 1;
}

void options_usage(FILE *out, const char *prog, int features)
{
    fprintf(out,
            "usage: %s [options]   (--opt value or --opt=value)\n"
            "  --store=memory|sqlite   users store (default memory)\n"
            "  --host ADDR             IPv4 address to listen on (default 127.0.0.1)\n"
            "  --port N                TCP port, 0 picks a free one (default 8080); a port\n"
            "                          another process listens on is refused (exit 1)\n"
            "  --threads N             I/O event loops (default: the CPUs in the affinity\n"
            "                          mask, here %u)\n"
            "%s"
            "  --db PATH               SQLite database file (default %s.db)\n"
            "  --bearer TOKEN          token for Authorization: Bearer (default $BEARER, else\n"
            "                          test-token-aaaaaaaaaaaaaaaaaaaa)\n"
            "  --seed-users N          users 1..N created at start (default 10000)\n"
            "  --access-log PATH       access log file (default /dev/null)\n"
            "  --max-conns N           open connections before new ones are closed (default 10000)\n"
            "  --max-body BYTES        request body limit, 413 above (default 65536)\n"
            "%s"
            "%s"
            "  --store-timeout-ms MS   longest a store call waits for the database lock; then\n"
            "                          503 + Retry-After: 1 (default %u, 1..60000)\n"
            "  --header-timeout-ms MS  a request's header block must arrive within MS of its\n"
            "                          first byte, else 408 and close (default 10000)\n"
            "  --body-timeout-ms MS    a request body with no byte for MS: 408 and close\n"
            "                          (default 10000)\n"
            "  --send-timeout-ms MS    a client that takes none of its pending response for\n"
            "                          MS is closed (default 60000)\n"
            "  --idle-timeout-ms MS    a connection with nothing in flight closes after MS\n"
            "                          (default 60000)\n"
            "  -h, --help              this text\n"
            "  --version               the build's commit and library versions\n"
            "Prints 'listening on http://HOST:PORT' on stderr when ready. SIGINT/SIGTERM stop\n"
            "it gracefully: the listeners close, requests in flight are answered (connections\n"
            "still busy after 1.5 s are closed), exit 0. A second SIGINT/SIGTERM exits at once\n"
            "with 128 + the signal (130, 143); a stop still not finished 1.5 s + the store\n"
            "timeout + 0.5 s after the first signal exits 1. Exit 1 on a start-up failure\n"
            "(port in use, store), 2 on a usage error.\n",
            prog, options_cpu_count(),
            (features & OPT_WORKERS)
                ? "  --workers M             actor scheduler threads; 0 runs actors on the I/O\n"
                  "                          loop threads (default 0)\n"
                : "",
            prog,
            (features & OPT_GROUP_COMMIT)
                ? "  --group-commit N        most POSTs committed in one store transaction, 1..64;\n"
                  "                          1 commits each POST alone, as async-server does\n"
                  "                          (default 1)\n"
                : "  --group-commit 1        each POST committed alone (the only value here; the\n"
                  "                          actor server can batch, this server cannot)\n",
            (features & OPT_LADDER)
                ? "The actor runtime's design choices (the ladder; each default is the runtime\n"
                  "as designed, each other value a correct server that costs more):\n"
                  "  --placement=local|spread  local: the stateless actors run on the thread of\n"
                  "                          the loop (or worker) that read the request; spread:\n"
                  "                          one scheduler thread per actor kind (router,\n"
                  "                          request_id, auth, logger, store), so every hop\n"
                  "                          crosses a thread (not with --workers > 0)\n"
                  "  --message=pointer|malloc|copy  pointer: the request itself travels;\n"
                  "                          malloc: an envelope allocated and freed per hop;\n"
                  "                          copy: the request deep-copied per hop (isolated heaps)\n"
                  "  --mailbox=vyukov|ring|mutex  the cross-thread mailbox: Vyukov's bounded\n"
                  "                          MPSC queue, Concurrency Kit's MPSC ck_ring, or a\n"
                  "                          mutex + condition variable queue\n"
                  "  --drain=N               messages per actor run, 1..4096 (default 64)\n"
                  "  --spin=N                polls of an empty run queue before a worker thread\n"
                  "                          sleeps, 0..1000000 (default 64; 0: every hand-off\n"
                  "                          to an idle worker is a futex wake-up)\n"
                : "",
            OPTIONS_STORE_TIMEOUT_MS);
}

#ifndef BUILD_GIT_COMMIT
#define BUILD_GIT_COMMIT "" /* the Makefile passes -DBUILD_GIT_COMMIT="\"<commit>\"" */
#endif

void options_version(FILE *out, const char *prog)
{
    const char *commit = BUILD_GIT_COMMIT;
    fprintf(out, "%s %s (libuv %s, llhttp %d.%d.%d, sqlite %s)\n", prog,
            commit[0] ? commit : "(commit unknown)", uv_version_string(),
            LLHTTP_VERSION_MAJOR, LLHTTP_VERSION_MINOR, LLHTTP_VERSION_PATCH,
            sqlite3_libversion());
}

static int parse_num(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    uint64_t v;
    if (s == NULL || parse_u64(s, strlen(s), &v) != 0 || v < min || v > max)
        return -EINVAL;
    *out = v;
    return 0;
}

/* Looks s up in names[0..n): NULL and *out set, or `why` (nothing set). */
static const char *parse_name(const char *s, const char *const *names, unsigned n,
                              unsigned *out, const char *why)
{
    for (unsigned i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return NULL;
        }
    return why;
}

int options_parse(struct options *o, int argc, char **argv, const char *prog, int features)
{
    enum { O_STORE = 1, O_HOST, O_PORT, O_THREADS, O_DB, O_BEARER, O_SEED, O_LOG, O_MAXC,
           O_MAXB, O_WORKERS, O_GROUP, O_HELP, O_VERSION, O_STORE_TO, O_HDR_TO, O_BODY_TO,
           O_SEND_TO, O_IDLE_TO, O_PLACEMENT, O_MESSAGE, O_MAILBOX, O_DRAIN, O_SPIN };
    static const struct option longopts[] = {
        {"store", required_argument, NULL, O_STORE},
        {"host", required_argument, NULL, O_HOST},
        {"port", required_argument, NULL, O_PORT},
        {"threads", required_argument, NULL, O_THREADS},
        {"db", required_argument, NULL, O_DB},
        {"bearer", required_argument, NULL, O_BEARER},
        {"seed-users", required_argument, NULL, O_SEED},
        {"access-log", required_argument, NULL, O_LOG},
        {"max-conns", required_argument, NULL, O_MAXC},
        {"max-body", required_argument, NULL, O_MAXB},
        {"workers", required_argument, NULL, O_WORKERS},
        {"group-commit", required_argument, NULL, O_GROUP},
        {"help", no_argument, NULL, O_HELP},
        {"version", no_argument, NULL, O_VERSION},
        {"store-timeout-ms", required_argument, NULL, O_STORE_TO},
        {"header-timeout-ms", required_argument, NULL, O_HDR_TO},
        {"body-timeout-ms", required_argument, NULL, O_BODY_TO},
        {"send-timeout-ms", required_argument, NULL, O_SEND_TO},
        {"idle-timeout-ms", required_argument, NULL, O_IDLE_TO},
        {"placement", required_argument, NULL, O_PLACEMENT},
        {"message", required_argument, NULL, O_MESSAGE},
        {"mailbox", required_argument, NULL, O_MAILBOX},
        {"drain", required_argument, NULL, O_DRAIN},
        {"spin", required_argument, NULL, O_SPIN},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->store = STORE_MEMORY;
    o->host = "127.0.0.1";
    o->port = 8080;
    o->threads = options_cpu_count();
    o->db_path = NULL;
    const char *env = getenv("BEARER");
    o->bearer = env && env[0] ? env : "test-token-aaaaaaaaaaaaaaaaaaaa";
    o->seed_users = 10000;
    o->access_log = "/dev/null";
    o->max_conns = 10000;
    o->max_body = 65536;
    o->workers = (features & OPT_WORKERS) ? 0 : -1;
    o->group_commit = 1;
    o->store_timeout_ms = OPTIONS_STORE_TIMEOUT_MS;
    o->header_timeout_ms = 10000;
    o->body_timeout_ms = 10000;
    o->send_timeout_ms = 60000;
    o->idle_timeout_ms = 60000;
    o->placement = OPTIONS_PLACEMENT_LOCAL;
    o->message = OPTIONS_MESSAGE_POINTER;
    o->mailbox = OPTIONS_MAILBOX_VYUKOV;
    o->drain = OPTIONS_DRAIN_DEFAULT;
    o->spin = OPTIONS_SPIN_DEFAULT;

    optind = 1;
    opterr = 0;
    int c;
    uint64_t v;
    char why[160] = "";
    const char *bad = NULL;
    int plain = 0; /* bad says all: the value it came with is not worth repeating */
    /* the leading ':' makes a missing value ':' rather than '?' (an unknown option) */
    int li = -1;
    while ((c = getopt_long(argc, argv, ":h", longopts, &li)) != -1) {
        if (optarg != NULL && optarg[0] == '\0' && c != ':' && c != '?' && li >= 0) {
            /* --db= or --host "": never what was meant */
            snprintf(why, sizeof why, "option '--%s' has an empty value", longopts[li].name);
            bad = why;
            plain = 1;
            break;
        }
        switch (c) {
        case O_STORE:
            if (strcmp(optarg, "memory") == 0)
                o->store = STORE_MEMORY;
            else if (strcmp(optarg, "sqlite") == 0)
                o->store = STORE_SQLITE;
            else
                bad = "--store must be memory or sqlite";
            break;
        case O_HOST:
            o->host = optarg;
            break;
        case O_PORT:
            if (parse_num(optarg, 0, 65535, &v) == 0)
                o->port = (int)v;
            else
                bad = "--port must be 0..65535";
            break;
        case O_THREADS:
            if (parse_num(optarg, 1, 256, &v) == 0)
                o->threads = (unsigned)v;
            else
                bad = "--threads must be 1..256";
            break;
        case O_DB:
            o->db_path = optarg;
            break;
        case O_BEARER:
            if (strlen(optarg) > 256)
                bad = "--bearer must be 1..256 bytes";
            else
                o->bearer = optarg;
            break;
        case O_SEED:
            if (parse_num(optarg, 0, 100000000, &v) == 0)
                o->seed_users = v;
            else
                bad = "--seed-users must be 0..100000000";
            break;
        case O_LOG:
            o->access_log = optarg;
            break;
        case O_MAXC:
            if (parse_num(optarg, 1, 10000000, &v) == 0)
                o->max_conns = (unsigned)v;
            else
                bad = "--max-conns must be 1..10000000";
            break;
        case O_MAXB:
            if (parse_num(optarg, 1, 64ull << 20, &v) == 0)
                o->max_body = v;
            else
                bad = "--max-body must be 1..67108864";
            break;
        case O_WORKERS:
            if (!(features & OPT_WORKERS)) {
                bad = "unknown option --workers (the actor server's scheduler threads)";
                plain = 1;
            } else if (parse_num(optarg, 0, 256, &v) == 0)
                o->workers = (int)v;
            else
                bad = "--workers must be 0..256";
            break;
        case O_GROUP:
            if (parse_num(optarg, 1, OPTIONS_GROUP_COMMIT_MAX, &v) != 0)
                bad = "--group-commit must be 1..64";
            else if (v > 1 && !(features & OPT_GROUP_COMMIT)) {
                bad = "--group-commit must be 1 here: this server commits each POST in its own "
                      "transaction (batching POSTs is the actor server's store actor)";
                plain = 1;
            } else
                o->group_commit = (unsigned)v;
            break;
        case O_HELP:
        case 'h':
            o->help = 1;
            break;
        case O_VERSION:
            o->version = 1;
            break;
        case O_STORE_TO:
            if (parse_num(optarg, 1, 60000, &v) == 0)
                o->store_timeout_ms = v;
            else
                bad = "--store-timeout-ms must be 1..60000";
            break;
        case O_HDR_TO:
            if (parse_num(optarg, 1, 600000, &v) == 0)
                o->header_timeout_ms = v;
            else
                bad = "--header-timeout-ms must be 1..600000";
            break;
        case O_BODY_TO:
            if (parse_num(optarg, 1, 600000, &v) == 0)
                o->body_timeout_ms = v;
            else
                bad = "--body-timeout-ms must be 1..600000";
            break;
        case O_SEND_TO:
            if (parse_num(optarg, 1, 600000, &v) == 0)
                o->send_timeout_ms = v;
            else
                bad = "--send-timeout-ms must be 1..600000";
            break;
        case O_IDLE_TO:
            if (parse_num(optarg, 1, 600000, &v) == 0)
                o->idle_timeout_ms = v;
            else
                bad = "--idle-timeout-ms must be 1..600000";
            break;
        case O_PLACEMENT:
        case O_MESSAGE:
        case O_MAILBOX:
        case O_DRAIN:
        case O_SPIN:
            if (!(features & OPT_LADDER)) {
                bad = "unknown option (--placement, --message, --mailbox, --drain and --spin "
                      "are the actor server's)";
                plain = 1;
            } else if (c == O_PLACEMENT)
                bad = parse_name(optarg, options_placement_names, OPTIONS_PLACEMENT_COUNT,
                                 &o->placement, "--placement must be local or spread");
            else if (c == O_MESSAGE)
                bad = parse_name(optarg, options_message_names, OPTIONS_MESSAGE_COUNT,
                                 &o->message, "--message must be pointer, malloc or copy");
            else if (c == O_MAILBOX)
                bad = parse_name(optarg, options_mailbox_names, OPTIONS_MAILBOX_COUNT,
                                 &o->mailbox, "--mailbox must be vyukov, ring or mutex");
            else if (c == O_DRAIN) {
                if (parse_num(optarg, 1, OPTIONS_DRAIN_MAX, &v) == 0)
                    o->drain = (unsigned)v;
                else
                    bad = "--drain must be 1..4096";
            } else if (parse_num(optarg, 0, OPTIONS_SPIN_MAX, &v) == 0)
                o->spin = (unsigned)v;
            else
                bad = "--spin must be 0..1000000";
            break;
        case ':':
            bad = "an option is missing its value";
            break;
        default:
            bad = "unknown option";
            break;
        }
        if (bad)
            break;
        li = -1;
    }
    if (!bad && optind < argc)
        bad = "unexpected argument";
    if (!bad && o->placement == OPTIONS_PLACEMENT_SPREAD && o->workers > 0) {
        bad = "--placement=spread makes its own threads (one per actor kind): leave --workers "
              "at 0";
        plain = 1;
    }
    if (bad) {
        if (strcmp(bad, "unknown option") == 0 && optind > 0 && optind <= argc)
            fprintf(stderr, "%s: unknown option '%s'\n", prog, argv[optind - 1]);
        else if (c == ':' && optind > 0 && optind <= argc)
            fprintf(stderr, "%s: option '%s' needs a value\n", prog, argv[optind - 1]);
        else if (strcmp(bad, "unexpected argument") == 0)
            fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[optind]);
        else if (optarg != NULL && !plain) /* a value out of range: name it */
            fprintf(stderr, "%s: %s, not '%s'\n", prog, bad, optarg);
        else
            fprintf(stderr, "%s: %s\n", prog, bad);
        fprintf(stderr, "usage: %s [options]; try '%s --help'\n", prog, prog);
        return -EINVAL;
    }
    if (o->db_path == NULL) {
        snprintf(o->db_default, sizeof o->db_default, "%s.db", prog);
        o->db_path = o->db_default;
    }
    return 0;
}
