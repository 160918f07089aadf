/* mix: the scenario mix file (loadgen-scripts/README.md documents the format) parsed
 * into weighted request templates, and the cheap per-request rendering of them.
 * Lines without placeholders are rendered once at load time and copied per request.
 * A struct mix is immutable after mix_parse: any number of threads may render from it,
 * each with its own rng and scratch buffer. */
#ifndef LOADGEN_MIX_H
#define LOADGEN_MIX_H

#include <stddef.h>
#include <stdint.h>

#include "rng.h"
#include "common/base/util.h"

#define MIX_MAX_LINES 64
#define MIX_MAX_HEADERS 32
#define MIX_MAX_FILE_BYTES (1u << 20)

enum mix_seg_kind { MIX_SEG_LIT, MIX_SEG_RAND, MIX_SEG_SEQ };

struct mix_seg {
    enum mix_seg_kind kind;
    const char *lit; /* MIX_SEG_LIT: points into the owning template's pool */
    size_t lit_len;
    uint64_t lo, hi; /* MIX_SEG_RAND: inclusive range */
};

struct mix_tmpl {
    struct mix_seg *segs;
    unsigned nsegs;
    char *pool; /* literal bytes */
    int dynamic; /* has at least one placeholder */
};

struct mix_line {
    uint32_t weight;
    char method[16];
    int expect;       /* expected status code */
    int is_head;      /* HEAD: the response has no body */
    int has_body;
    struct mix_tmpl head; /* request line + headers, up to "Content-Length: " or the end */
    struct mix_tmpl body;
    struct buf fixed;     /* the whole request when neither template is dynamic */
};

struct mix {
    struct mix_line lines[MIX_MAX_LINES];
    unsigned nlines;
    uint64_t total_weight;
    uint64_t cum[MIX_MAX_LINES]; /* cumulative weights */
};

/* Parses mix text (NUL-terminated) into *out. `bearer` replaces ${BEARER}; `host` is the
 * Host header value ("127.0.0.1:8080"). Both are borrowed for the call only.
 * Returns 0, or -EINVAL with a message "line N: ..." in err (errlen bytes); on failure
 * *out holds nothing that needs freeing. Any thread. */
int mix_parse(const char *text, const char *bearer, const char *host, struct mix *out,
              char *err, size_t errlen);
/* Reads the file at path (capped at MIX_MAX_FILE_BYTES) and calls mix_parse. Returns 0,
 * -EINVAL (parse error, message in err), or a negative errno from reading. */
int mix_load_file(const char *path, const char *bearer, const char *host, struct mix *out,
                  char *err, size_t errlen);
/* Releases what mix_parse allocated. */
void mix_free(struct mix *m);

/* Picks a line index by weight. */
unsigned mix_pick(const struct mix *m, struct rng *r);
/* Appends line idx's request to out, expanding {rand:..} with r and {seq} with seq.
 * scratch is caller-owned working memory reused between calls (no malloc once grown).
 * The calling thread owns out, r and scratch. */
void mix_render(const struct mix *m, unsigned idx, struct rng *r, uint64_t seq,
                struct buf *out, struct buf *scratch);

#endif
