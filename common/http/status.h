/* status: the one table of HTTP statuses the servers answer with (RFC 9110 section 15
 * reason phrases). STATUS_TABLE(X) expands X(code, reason) once per row; the reason
 * phrases and pre-rendered status lines (response.c) and the /metrics status columns
 * (metrics.c) are generated from it, so a new status is one line here. A status not in
 * the table renders as "Unknown" and is counted in the "other" column. Pure; any
 * thread. */
#ifndef COMMON_STATUS_H
#define COMMON_STATUS_H

#define STATUS_TABLE(X)                                                                   \
    X(200, "OK")                                                                          \
    X(201, "Created")                                                                     \
    X(400, "Bad Request")                                                                 \
    X(401, "Unauthorized")                                                                \
    X(404, "Not Found")                                                                   \
    X(405, "Method Not Allowed")                                                          \
    X(408, "Request Timeout")                                                             \
    X(413, "Content Too Large")                                                           \
    X(414, "URI Too Long")                                                                \
    X(415, "Unsupported Media Type")                                                      \
    X(431, "Request Header Fields Too Large")                                             \
    X(500, "Internal Server Error")                                                       \
    X(501, "Not Implemented")                                                             \
    X(503, "Service Unavailable")

/* A column per row of the table, in its order, then STATUS_COL_OTHER. */
enum status_col {
#define STATUS_COL_ENUM(code, reason) STATUS_COL_##code,
    STATUS_TABLE(STATUS_COL_ENUM)
#undef STATUS_COL_ENUM
    STATUS_COL_OTHER,
    STATUS_COL_COUNT
};

/* The column of a status code. */
static inline enum status_col status_col(unsigned status)
{
    switch (status) {
#define STATUS_COL_CASE(code, reason)                                                     \
    case code:                                                                            \
        return STATUS_COL_##code;
        STATUS_TABLE(STATUS_COL_CASE)
#undef STATUS_COL_CASE
    default:
        return STATUS_COL_OTHER;
    }
}

/* The status code of a column; 0 for STATUS_COL_OTHER. */
static inline unsigned status_col_code(enum status_col col)
{
    static const unsigned short codes[STATUS_COL_COUNT] = {
#define STATUS_COL_CODE(code, reason) code,
        STATUS_TABLE(STATUS_COL_CODE)
#undef STATUS_COL_CODE
        0,
    };
    return col < STATUS_COL_COUNT ? codes[col] : 0;
}

/* The reason phrase of a status code, "Unknown" outside the table. */
static inline const char *status_reason(unsigned status)
{
    switch (status) {
#define STATUS_REASON_CASE(code, reason)                                                  \
    case code:                                                                            \
        return reason;
        STATUS_TABLE(STATUS_REASON_CASE)
#undef STATUS_REASON_CASE
    default:
        return "Unknown";
    }
}

#endif
