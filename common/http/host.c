/* host: the Host value scanner's slow path and table (see host.h): percent-encoding,
 * the port, trailing whitespace and IP-literals, which inet_pton checks (IPv6) or the
 * IPvFuture grammar does. */
#include "host.h"

#include <arpa/inet.h>
#include <string.h>

const uint8_t host_class[256] = {
    ['a' ... 'f'] = HOST_C_REG | HOST_C_HEX, ['g' ... 'z'] = HOST_C_REG,
    ['A' ... 'F'] = HOST_C_REG | HOST_C_HEX, ['G' ... 'Z'] = HOST_C_REG,
    ['0' ... '9'] = HOST_C_REG | HOST_C_DIGIT | HOST_C_HEX,
    ['-'] = HOST_C_REG, ['.'] = HOST_C_REG, ['_'] = HOST_C_REG, ['~'] = HOST_C_REG,
    ['!'] = HOST_C_REG, ['$'] = HOST_C_REG, ['&'] = HOST_C_REG, ['\''] = HOST_C_REG,
    ['('] = HOST_C_REG, [')'] = HOST_C_REG, ['*'] = HOST_C_REG, ['+'] = HOST_C_REG,
    [';'] = HOST_C_REG, ['='] = HOST_C_REG,
};

static int is_ows(unsigned char c)
{
    return c == ' ' || c == '\t';
}

/* IP-literal content between the brackets: IPv6address / IPvFuture. */
static int ip_literal_valid(const char *s, size_t n)
{
    if (n > 0 && (s[0] == 'v' || s[0] == 'V')) {
        /* IPvFuture = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" ) */
        size_t i = 1;
        while (i < n && (host_class[(unsigned char)s[i]] & HOST_C_HEX))
            i++;
        if (i == 1 || i >= n || s[i] != '.' || i + 1 == n)
            return 0;
        for (i++; i < n; i++)
            if (s[i] != ':' && s[i] != ',' && !(host_class[(unsigned char)s[i]] & HOST_C_REG))
                return 0;
        return 1;
    }
    char tmp[INET6_ADDRSTRLEN];
    struct in6_addr a;
    if (n == 0 || n >= sizeof tmp)
        return 0;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    return inet_pton(AF_INET6, tmp, &a) == 1;
}

uint8_t host_scan_slow(uint8_t st, struct buf *lit, const char *s, size_t n)
{
    for (size_t i = 0; i < n && st != HOST_BAD; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (st) {
        case HOST_START:
            if (c == '[') {
                st = HOST_LIT;
                buf_reset(lit);
                break;
            }
            /* fall through */
        case HOST_NAME:
            st = (host_class[c] & HOST_C_REG) ? HOST_NAME
                 : c == '%'                   ? HOST_PCT1
                 : c == ':'                   ? HOST_PORT
                 : is_ows(c)                  ? HOST_OWS
                                              : HOST_BAD;
            break;
        case HOST_PCT1:
            st = (host_class[c] & HOST_C_HEX) ? HOST_PCT2 : HOST_BAD;
            break;
        case HOST_PCT2:
            st = (host_class[c] & HOST_C_HEX) ? HOST_NAME : HOST_BAD;
            break;
        case HOST_PORT:
            if (!(host_class[c] & HOST_C_DIGIT))
                st = is_ows(c) ? HOST_OWS : HOST_BAD;
            break;
        case HOST_OWS:
            if (!is_ows(c))
                st = HOST_BAD;
            break;
        case HOST_LIT:
            if (c == ']')
                st = ip_literal_valid(lit->data, lit->len) ? HOST_AFTER_LIT : HOST_BAD;
            else if (lit->len >= HOST_LITERAL_MAX)
                st = HOST_BAD;
            else
                buf_append(lit, &c, 1);
            break;
        case HOST_AFTER_LIT:
            st = c == ':' ? HOST_PORT : is_ows(c) ? HOST_OWS : HOST_BAD;
            break;
        }
    }
    return st;
}

int host_valid(const char *s, size_t n)
{
    struct buf lit = {0};
    uint8_t st = host_scan(HOST_START, &lit, s, n);
    buf_free(&lit);
    return host_scan_valid(st);
}
