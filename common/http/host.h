/* host: the syntax of a Host field value (RFC 9110 7.2, RFC 3986 3.2.2), checked by a
 * scanner that takes the value in the pieces llhttp delivers, so nothing is copied but
 * an IP-literal (at most HOST_LITERAL_MAX bytes, into the caller's buffer). The common
 * value, a plain reg-name, is one table lookup a byte and no call (host_scan is inline
 * for the parser's hot path). Pure apart from the caller's state; any thread. */
#ifndef COMMON_HOST_H
#define COMMON_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "common/base/util.h"

/* Character classes (RFC 3986): HOST_C_REG = unreserved / sub-delims without ','
 * (see host_valid), HOST_C_DIGIT, HOST_C_HEX. */
#define HOST_C_REG 1
#define HOST_C_DIGIT 2
#define HOST_C_HEX 4
extern const uint8_t host_class[256];

/* The scanner's states (a uint8_t the caller keeps between pieces). */
enum host_state {
    HOST_START,     /* nothing yet (an empty value is valid) */
    HOST_NAME,      /* in a reg-name */
    HOST_PCT1,      /* after "%" */
    HOST_PCT2,      /* after "%" HEXDIG */
    HOST_PORT,      /* after ":" */
    HOST_OWS,       /* trailing whitespace */
    HOST_LIT,       /* inside "[...]" (its bytes go to the literal buffer) */
    HOST_AFTER_LIT, /* after "]" */
    HOST_BAD
};
#define HOST_LITERAL_MAX 64 /* bytes between the brackets */

/* Every state but the fast reg-name one, one byte at a time (host_scan's slow path). */
uint8_t host_scan_slow(uint8_t st, struct buf *lit, const char *s, size_t n);

/* Feeds one piece s[0..n) of a Host value to a scan in state st (HOST_START for a new
 * value); returns the new state. lit is the caller's scratch buffer for an IP-literal. */
static inline __attribute__((always_inline)) uint8_t host_scan(uint8_t st, struct buf *lit,
                                                               const char *s, size_t n)
{
    if (st <= HOST_NAME) {
        const unsigned char *u = (const unsigned char *)s;
        size_t i = 0;
        while (i + 4 <= n && (host_class[u[i]] & host_class[u[i + 1]] & host_class[u[i + 2]] &
                              host_class[u[i + 3]] & HOST_C_REG))
            i += 4;
        while (i < n && (host_class[u[i]] & HOST_C_REG))
            i++;
        if (i == n)
            return i ? HOST_NAME : st;
        if (i) {
            st = HOST_NAME;
            s += i;
            n -= i;
        }
    }
    return host_scan_slow(st, lit, s, n);
}

/* 1 when a scan that ended in state st read a valid Host value. */
static inline int host_scan_valid(uint8_t st)
{
    return ((1u << HOST_START | 1u << HOST_NAME | 1u << HOST_PORT | 1u << HOST_OWS |
             1u << HOST_AFTER_LIT) >> st) & 1u;
}

/* 1 when s[0..n) is a valid Host field value: uri-host [ ":" port ] with uri-host an
 * RFC 3986 IP-literal ("[" IPv6address / IPvFuture "]") or reg-name (unreserved,
 * pct-encoded, sub-delims; IPv4 addresses are reg-names too) and port *DIGIT; trailing
 * SP/HTAB is ignored. Refused: userinfo ("@"), a path ("/"), and "," although it is a
 * sub-delim: a comma is how two Host lines look once joined into a list. An empty value
 * is valid (RFC 9112 3.2). */
int host_valid(const char *s, size_t n);

#endif
