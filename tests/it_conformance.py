#!/usr/bin/env python3
# it_conformance: the RFC 9110/9112 requirements a request can reach, as a table of cases
# (RFC section, bytes sent, expected statuses, connection kept or closed), run over raw TCP
# against each server ($SERVER, or $BUILD/async-server and $BUILD/actor-server) with both
# stores; HEAD answered like GET without a body; real clients (curl, ab, wrk, Python's
# http.client) complete without an error or a stall. Where nginx is installed the same
# table is replayed against it and printed side by side (information, not a pass
# condition). TAP on stdout. Hostile-input robustness is tests/it_hostile.py's job.
#
# Every response is also checked for: a status line "HTTP/1.1 NNN reason" (RFC 9112 4: the
# space before the reason is sent), a Date in IMF-fixdate (RFC 9110 6.6.1, 5.6.7), a
# Content-Length and no Transfer-Encoding (9112 6.1, 6.2). A closing answer must say
# "Connection: close" and end with a FIN; a kept connection must then serve GET /ping.
#
# ---- Review: every MUST / MUST NOT of RFC 9112 sections 2-9 and RFC 9110 sections 6-9
# ---- that a request can exercise, with the case(s) below that cover it or the reason none
# ---- can. Requirements on clients, proxies, gateways, caches, TLS and the registries are
# ---- left out: no request to this origin server reaches them.
#
# RFC 9112 (HTTP/1.1)
#  2.2  MUST parse a message as octets in a superset of US-ASCII ........ obs-text-value
#  2.2  bare CR: MUST treat the element as invalid (or replace with SP) .. bare-cr
#  2.2  whitespace between start-line and first field: MUST reject or
#       ignore the whitespace-preceded lines ............................ ws-after-start-line
#  2.2  (SHOULD ignore empty lines before the request-line) ............. leading-crlf
#  2.2  a sender MUST NOT generate a bare CR: every response (global check: parsed by
#       CRLF lines only)
#  2.3  version is case-sensitive (grammar) ............................. version-lowercase
#       (SHOULD serve a higher minor as the highest supported) ......... version-1.2, -1.9
#  3    a request-target longer than the server parses: MUST 414 ........ target-8k, target-too-long
#  3    method is case-sensitive (grammar) .............................. method-lowercase
#  3.2  MUST 400 an HTTP/1.1 request without Host ....................... host-missing, host-missing-1.2
#       ... more than one Host line ..................................... host-twice-same,
#                                                       host-twice-different, host-twice-1.0
#       ... an invalid Host value ........................................ host-userinfo, host-path,
#                                 host-list, host-bad-port, host-open-bracket
#       (valid values served) ............................................ host-ipv6-port, host-empty,
#                                                                         host-pct-port
#  3.2.2 MUST accept the absolute-form; MUST ignore Host for it: NOT MET.
#       absolute-form-404 pins 404, as tests/it_hostile.py ("absolute-form target",
#       400 or 404) does; accepting it means changing that case, which this change was not
#       to touch. The router would match the path of "http://host/path" and refuse an
#       "https" target with 421 (RFC 9110 7.4).
#  3.2.3 authority-form (CONNECT): only a proxy serves it; see RFC 9110 9.3.6 below.
#  3.2.4 asterisk-form only with OPTIONS ................................ asterisk-options, asterisk-get
#  5.1  MUST 400 whitespace between field name and colon ................ ws-before-colon
#  5.2  obs-fold: MUST 400 (or replace with SP) ......................... obs-fold
#  6.1  MUST be able to parse chunked ................................... chunked-post
#       a sender MUST NOT apply chunked twice: refused ................... te-chunked-twice
#       MUST close after a request with both Content-Length and
#       Transfer-Encoding (we answer 400) ................................ cl-and-te
#       HTTP/1.0 with Transfer-Encoding: MUST treat as faulty framing and
#       close (we answer 400) ............................................ te-http10
#       (SHOULD 501 a coding not understood) ............................ te-gzip-chunked, te-two-lines
#       a server MUST NOT send Transfer-Encoding to an HTTP/1.0 request, nor
#       in any response it sends here: global check
#  6.2  a sender MUST NOT send Content-Length with Transfer-Encoding: global check
#  6.3  Transfer-Encoding present, chunked not final: MUST 400 and close . te-chunked-gzip, te-gzip,
#                                                         te-empty-with-cl, te-empty
#       invalid Content-Length: MUST 400 and close ....................... cl-not-number, cl-two-values,
#                                                                         cl-list
#       no Content-Length or Transfer-Encoding: body length 0 ............ post-no-length
#       Content-Length frames the body exactly ............................ cl-body-then-request
#       sender closes before the body is complete: MUST consider it
#       incomplete and close (no response is sent) ......................... incomplete-body
#  7.1  MUST anticipate large chunk sizes (overflow) ..................... chunk-size-overflow
#  7.1.1 MUST ignore unrecognized chunk extensions ........................ chunk-extension
#       NOT MET for a few valid shapes that llhttp 8.1.0 refuses with 400: a token value
#       followed by another extension (";a=1;b=2"), whitespace around ";" (BWS), a
#       quoted-pair inside a quoted value. Fixing it means a newer llhttp; clients send
#       no chunk extensions in practice.
#  7.1.2 MUST NOT merge a trailer field into the header section; trailer
#       fields read and discarded ........................................ trailer-discarded,
#       trailer-not-merged; fields only a header section may carry are refused (400):
#       trailer-authorization (the regression case), trailer-content-type; the trailer is
#       checked as a header block ........................................ trailer-obs-fold
#  9.3  MUST read the whole body or close after the response .............. get-with-body, body-too-large
#       a server that does not support persistence MUST send "close":
#       persistence is supported; HTTP/1.0 keep-alive is confirmed with
#       "Connection: keep-alive" and the connection kept ................... http10-keep-alive,
#       http10-keep-alive-close, http10-default-close
#  9.3.2 MUST send responses to pipelined requests in order .............. pipeline-order
#  9.6  a "close" option: MUST close after the response and MUST NOT process
#       further requests ................................................... connection-close,
#                                                                         close-then-request
#       a server that sends "close" MUST close: every "close" case checks the FIN
#  9.8  TLS closure: no TLS here.
#
# RFC 9110 (HTTP Semantics), sections 6-9
#  6.2  a server MUST NOT send a version it does not conform to: HTTP/1.1 on every
#       response (global check; version-1.2 asks 1.2 and gets 1.1)
#  6.5.1 a recipient MUST NOT merge a trailer field unless its definition allows it:
#       see 9112 7.1.2 above
#  6.6.1 an origin server with a clock MUST send Date in 2xx, 3xx, 4xx: global check
#  7.2  Host: see 9112 3.2 (the only server-side MUSTs)
#  7.4  MUST reject a request whose scheme-specific requirements are not met (https
#       over plain TCP): only reachable with the absolute-form, which is not served
#       (see 9112 3.2.2); an origin-form request here is always "http".
#  7.6.1 Connection: "close" handled (connection-close); other options name fields that
#       are ignored; the intermediary MUSTs do not apply.
#  7.6.2 Max-Forwards, 7.6.3 Via, 7.7: intermediaries only.
#  7.8  MUST ignore Upgrade in an HTTP/1.0 request ........................ upgrade-http10
#       (MAY ignore it in 1.1; 101/426 MUSTs apply only when switching) ... upgrade-ignored
#  8.3-8.5 Content-Type, -Encoding, -Language: the MUSTs bind senders of content; a
#       request's Content-Type is read by POST /users (415 otherwise: it_contract.py).
#  8.6  a recipient MUST anticipate large Content-Length numerals ........ cl-huge
#       a server MUST NOT send a Content-Length to HEAD other than GET's .... head-parity (all
#       GET routes, errors included); MUST NOT send Content-Length in 1xx/204: never sent
#  8.7  Content-Location in a request MUST be treated as transitory and MUST NOT change
#       the request's semantics: it is ignored (content-location-ignored).
#  8.8  validators (ETag, Last-Modified): none are sent, so their MUSTs do not arise.
#  9.1  MUST support GET and HEAD ......................................... head-* cases, head-parity
#       (405 with Allow naming HEAD wherever GET is allowed: RFC 9110 15.5.6) method-not-allowed
#  9.2.1 an unsafe action MUST NOT be done for a safe method: GET/HEAD only read
#       (head-parity runs HEAD /users and checks no user was created)
#  9.3.2 HEAD: MUST NOT send content ....................................... head-ping, head-404,
#       head-bad-host, head-parity
#  9.3.4 PUT: the MUSTs bind servers that implement PUT; it is not (405) .. method-not-allowed
#  9.3.6 CONNECT: MUST reject an empty or invalid port; MUST NOT send
#       Content-Length or Transfer-Encoding in a 2xx to CONNECT: CONNECT is never
#       served (404, connection stays HTTP) .............................. connect-empty-port,
#                                                                         connect-then-request
#  9.3.7 OPTIONS, 9.3.8 TRACE: the MUSTs bind clients; both are 405 here . options-405, trace-405
#
# Outside the sections reviewed but met on the way: 100-continue (RFC 9110 10.1.1) is not
# implemented: a client that sends "Expect: 100-continue" waits its own timeout (curl: 1 s)
# before sending the body; no client of this suite sends it.
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import http.client

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reliability_lib import (BEARER, Reader, Response, Server, Tap, connect,  # noqa: E402
                             healthy, server_binaries)

TOK = BEARER.encode()
H = b"Host: t\r\n"
AUTH = b"Authorization: Bearer " + TOK + b"\r\n"
JSON = b"Content-Type: application/json\r\n"
PING = b"GET /ping HTTP/1.1\r\nHost: t\r\n\r\n"
CLIENT_TIMEOUT_S = 60  # one real-client run; a stall fails the test instead of hanging it

# (id, RFC section, what it checks, request bytes (several = pipelined), statuses of the
#  responses in order, then "keep" (the connection serves GET /ping next) or "close" (FIN
#  after the last response) or "none" (no response: the connection just closes))
CASES = []


def case(cid, section, what, parts, statuses, conn, half_close=False, check=None):
    parts = parts if isinstance(parts, list) else [parts]
    statuses = statuses if isinstance(statuses, list) else [statuses]
    CASES.append(dict(id=cid, section=section, what=what, parts=parts, statuses=statuses,
                      conn=conn, half_close=half_close, check=check))


def get(path, extra=b"", version=b"HTTP/1.1", host=H, method=b"GET"):
    return method + b" " + path + b" " + version + b"\r\n" + host + extra + b"\r\n"


def post(body, extra=b"", path=b"/users"):
    return (b"POST " + path + b" HTTP/1.1\r\n" + H + AUTH + JSON + extra +
            b"Content-Length: %d\r\n\r\n" % len(body) + body)


def chunked_post(chunks, trailer=b"", extra=AUTH + JSON):
    body = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks)
    return (b"POST /users HTTP/1.1\r\n" + H + extra + b"Transfer-Encoding: chunked\r\n\r\n" +
            body + b"0\r\n" + trailer + b"\r\n")


USER = b"{\"name\":\"conf\",\"email\":\"c@example.com\"}"
HALVES = [USER[:10], USER[10:]]


def header_is(name, value):
    def check(resps):
        got = resps[-1].headers.get(name)
        return None if got == value else "%s: %r, want %r" % (name, got, value)
    return check


def body_has(index, needle):
    def check(resps):
        b = resps[index].body
        return None if needle in b else "response %d body %r lacks %r" % (index, b[:120], needle)
    return check


def rfc9112_cases():
    case("obs-text-value", "9112 2.2", "a field value with obs-text octets is accepted",
         get(b"/ping", b"X-A: caf\xe9\r\n"), 200, "keep")
    case("bare-cr", "9112 2.2", "a bare CR in a field value is invalid",
         get(b"/ping", b"X-A: a\rb\r\n"), 400, "close")
    case("ws-after-start-line", "9112 2.2", "whitespace before the first field line is refused",
         b"GET /ping HTTP/1.1\r\n Host: t\r\n\r\n", 400, "close")
    case("leading-crlf", "9112 2.2", "empty lines before the request-line are ignored",
         b"\r\n\r\n" + PING, 200, "keep")
    case("garbage", "9112 2.2", "bytes that are not HTTP: 400 and close",
         b"\x16\x03\x01\x02\x00\x01\r\n\r\n", 400, "close")
    case("version-1.2", "9112 2.3, 9110 6.2", "HTTP/1.2 is served as HTTP/1.1",
         get(b"/ping", version=b"HTTP/1.2"), 200, "keep", check=body_has(0, b"pong"))
    case("version-1.9", "9112 2.3, 9110 6.2", "HTTP/1.9 is served as HTTP/1.1",
         get(b"/ping", version=b"HTTP/1.9"), 200, "keep")
    case("version-2.0", "9112 2.3", "another major version is refused",
         get(b"/ping", version=b"HTTP/2.0"), 400, "close")
    case("version-lowercase", "9112 2.3", "the version is case-sensitive",
         get(b"/ping", version=b"http/1.1"), 400, "close")
    case("http10-default-close", "9112 9.3", "HTTP/1.0 without keep-alive: answered, then closed",
         b"GET /ping HTTP/1.0\r\n\r\n", 200, "close")
    case("target-8k", "9112 3", "a request-target of 8 KiB is served",
         get(b"/ping?" + b"a" * (8192 - 6)), 200, "keep")
    case("target-too-long", "9112 3", "a request-target above the limit: 414",
         get(b"/ping?" + b"a" * 9000), 414, "close")
    case("method-lowercase", "9112 3", "the method is case-sensitive",
         b"get /ping HTTP/1.1\r\n" + H + b"\r\n", 400, "close")

    case("host-missing", "9112 3.2", "HTTP/1.1 without Host: 400",
         b"GET /ping HTTP/1.1\r\n\r\n", 400, "close")
    case("host-missing-1.2", "9112 3.2", "HTTP/1.2 (served as 1.1) without Host: 400",
         b"GET /ping HTTP/1.2\r\n\r\n", 400, "close")
    case("host-missing-1.0", "9112 3.2", "HTTP/1.0 without Host is allowed",
         b"GET /ping HTTP/1.0\r\n\r\n", 200, "close")
    case("host-twice-same", "9112 3.2", "two identical Host lines: 400",
         get(b"/ping", b"Host: t\r\n"), 400, "close")
    case("host-twice-different", "9112 3.2", "two different Host lines: 400",
         get(b"/ping", b"X-A: 1\r\nHost: other\r\n"), 400, "close")
    case("host-twice-1.0", "9112 3.2", "two Host lines in HTTP/1.0: 400",
         b"GET /ping HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n", 400, "close")
    case("host-userinfo", "9112 3.2, 9110 4.2.4", "Host with userinfo: 400",
         get(b"/ping", host=b"Host: user@t\r\n"), 400, "close")
    case("host-path", "9112 3.2", "Host with a path: 400",
         get(b"/ping", host=b"Host: t/ping\r\n"), 400, "close")
    case("host-list", "9112 3.2", "Host 'a, b' (a list): 400",
         get(b"/ping", host=b"Host: a, b\r\n"), 400, "close")
    case("host-bad-port", "9112 3.2", "Host with a non-numeric port: 400",
         get(b"/ping", host=b"Host: t:80x\r\n"), 400, "close")
    case("host-open-bracket", "9112 3.2", "Host with an unclosed IP-literal: 400",
         get(b"/ping", host=b"Host: [::1\r\n"), 400, "close")
    case("host-ipv6-port", "9112 3.2", "Host [::1]:8080 is valid",
         get(b"/ping", host=b"Host: [::1]:8080\r\n"), 200, "keep")
    case("host-empty", "9112 3.2", "an empty Host is valid (no authority)",
         get(b"/ping", host=b"Host:\r\n"), 200, "keep")
    case("host-pct-port", "9112 3.2", "Host with pct-encoding and a port is valid",
         get(b"/ping", host=b"Host: ex%41mple.org:80\r\n"), 200, "keep")
    case("absolute-form-404", "9112 3.2.2", "absolute-form: NOT served (see the review)",
         get(b"http://t/ping"), 404, "keep")
    case("asterisk-options", "9112 3.2.4", "OPTIONS *: no server-wide options (404)",
         b"OPTIONS * HTTP/1.1\r\n" + H + b"\r\n", 404, "keep")
    case("asterisk-get", "9112 3.2.4", "'*' with GET is an invalid request-line: 400",
         get(b"*"), 400, "keep")

    case("ws-before-colon", "9112 5.1", "whitespace between field name and colon: 400",
         b"GET /ping HTTP/1.1\r\nHost : t\r\n\r\n", 400, "close")
    case("obs-fold", "9112 5.2", "obs-fold: 400",
         get(b"/ping", b"X-A: a\r\n b\r\n"), 400, "close")

    case("chunked-post", "9112 6.1, 7.1", "a chunked body is decoded",
         chunked_post(HALVES), 201, "keep", check=body_has(0, b"\"name\":\"conf\""))
    case("te-chunked-twice", "9112 6.1", "chunked applied twice: 400",
         b"POST /users HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n",
         400, "close")
    case("cl-and-te", "9112 6.1, 6.3", "Content-Length and Transfer-Encoding: 400 and close",
         b"POST /users HTTP/1.1\r\n" + H + b"Content-Length: 5\r\nTransfer-Encoding: chunked"
         b"\r\n\r\n0\r\n\r\n", 400, "close")
    case("te-http10", "9112 6.1", "HTTP/1.0 with Transfer-Encoding: faulty framing, 400 and close",
         b"POST /users HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"
         b"0\r\n\r\n", 400, "close")
    case("te-gzip-chunked", "9112 6.1", "a coding under chunked is not implemented: 501",
         b"POST /users HTTP/1.1\r\n" + H + b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
         501, "close")
    case("te-two-lines", "9112 6.1", "gzip and chunked in two lines: 501",
         b"POST /users HTTP/1.1\r\n" + H + b"Transfer-Encoding: gzip\r\n"
         b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501, "close")
    case("te-chunked-gzip", "9112 6.3", "chunked not the final coding: 400",
         b"POST /users HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n",
         400, "close")
    case("te-gzip", "9112 6.3", "Transfer-Encoding without chunked: 400",
         b"POST /users HTTP/1.1\r\n" + H + b"Transfer-Encoding: gzip\r\n\r\nabc", 400, "close")
    case("te-empty-with-cl", "9112 6.3", "an empty Transfer-Encoding with Content-Length: 400",
         b"POST /users HTTP/1.1\r\n" + H + b"Transfer-Encoding: \r\nContent-Length: 5\r\n\r\n"
         b"hello", 400, "close")
    case("te-empty", "9112 6.3", "an empty Transfer-Encoding alone: 400",
         b"POST /users HTTP/1.1\r\n" + H + b"Transfer-Encoding:\r\n\r\n", 400, "close")
    case("cl-not-number", "9112 6.3", "Content-Length 'abc': 400",
         b"POST /users HTTP/1.1\r\n" + H + b"Content-Length: abc\r\n\r\n", 400, "close")
    case("cl-two-values", "9112 6.3", "two different Content-Lengths: 400",
         b"POST /users HTTP/1.1\r\n" + H + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}x",
         400, "close")
    case("cl-list", "9112 6.3", "Content-Length '2, 2' (allowed to refuse): 400",
         b"POST /users HTTP/1.1\r\n" + H + b"Content-Length: 2, 2\r\n\r\n{}", 400, "close")
    case("post-no-length", "9112 6.3", "no length: the body is empty; the next bytes are a request",
         [b"POST /users HTTP/1.1\r\n" + H + AUTH + JSON + b"\r\n", PING], [400, 200], "keep")
    case("cl-body-then-request", "9112 6.3", "Content-Length frames the body exactly",
         [post(USER), PING], [201, 200], "keep")
    case("incomplete-body", "9112 6.3, 8", "the client closes mid-body: no response, closed",
         b"POST /users HTTP/1.1\r\n" + H + AUTH + JSON + b"Content-Length: 50\r\n\r\n{\"na",
         [], "none", half_close=True)
    case("cl-huge", "9110 8.6", "a Content-Length of 22 digits: 413, no overflow",
         b"POST /users HTTP/1.1\r\n" + H + b"Content-Length: 1000000000000000000000\r\n\r\n",
         413, "close")

    case("chunk-size-overflow", "9112 7.1", "a chunk size over 64 bits: 400",
         b"POST /users HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n"
         b"1ffffffffffffffff\r\nab\r\n", 400, "close")
    case("chunk-extension", "9112 7.1.1", "chunk extensions are ignored",
         b"POST /users HTTP/1.1\r\n" + H + AUTH + JSON + b"Transfer-Encoding: chunked\r\n\r\n" +
         b"%x;q=\"a b\";x\r\n%s\r\n0;last=\"y\"\r\n\r\n" % (len(USER), USER), 201, "keep")
    case("trailer-discarded", "9112 7.1.2, 9110 6.5", "trailer fields are read and discarded",
         [chunked_post(HALVES, b"X-Checksum: abc\r\nX-Note: v\r\n",
                       extra=AUTH + JSON + b"X-Request-Id: head-id\r\n"), PING], [201, 200],
         "keep", check=lambda rs: None if rs[0].headers.get("x-request-id") == "head-id"
         else "X-Request-Id %r" % rs[0].headers.get("x-request-id"))
    case("trailer-authorization", "9112 7.1.2, 9110 6.5.1",
         "Authorization in a trailer is never merged: 400",
         chunked_post(HALVES, b"Authorization: Bearer " + TOK + b"\r\n", extra=JSON), 400,
         "close")
    case("trailer-content-type", "9112 7.1.2, 9110 6.5.1", "Content-Type in a trailer: 400",
         chunked_post(HALVES, JSON, extra=AUTH), 400, "close")
    case("trailer-obs-fold", "9112 7.1.2, 5.2", "obs-fold in a trailer: 400",
         chunked_post(HALVES, b"X-A: a\r\n b\r\n"), 400, "close")

    case("get-with-body", "9112 9.3, 9110 9.3.1", "a GET body is read and ignored",
         [get(b"/ping", b"Content-Length: 5\r\n") + b"hello", PING], [200, 200], "keep")
    case("body-too-large", "9112 9.3", "a body above the limit: 413, then close",
         b"POST /users HTTP/1.1\r\n" + H + AUTH + JSON + b"Content-Length: 70000\r\n\r\n" +
         b"x" * 1000, 413, "close")
    case("http10-keep-alive", "9112 9.3, C.2.2",
         "HTTP/1.0 keep-alive: confirmed with 'Connection: keep-alive', kept",
         b"GET /ping HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", 200, "keep",
         check=header_is("connection", "keep-alive"))
    case("http10-keep-alive-close", "9112 9.3, 9.6", "HTTP/1.0 'keep-alive, close': closed",
         b"GET /ping HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", 200, "close")
    case("pipeline-order", "9112 9.3.2", "pipelined responses come in request order",
         [PING, get(b"/users/1", AUTH), get(b"/nope"), get(b"/ping", method=b"HEAD"),
          get(b"/users/2", AUTH)], [200, 200, 404, 200, 200], "keep",
         check=lambda rs: body_has(1, b"\"id\":1")(rs) or body_has(4, b"\"id\":2")(rs))
    case("connection-close", "9112 9.6", "'Connection: close': answered, then closed",
         get(b"/ping", b"Connection: close\r\n"), 200, "close")
    case("close-then-request", "9112 9.6", "nothing after a 'close' request is processed",
         [get(b"/ping", b"Connection: close\r\n"), post(USER)], [200], "close")


def rfc9110_cases():
    case("upgrade-ignored", "9110 7.8", "Upgrade is ignored; the connection stays HTTP/1.1",
         [get(b"/ping", b"Connection: Upgrade\r\nUpgrade: websocket\r\n"), PING], [200, 200],
         "keep")
    case("upgrade-http10", "9110 7.8", "Upgrade in HTTP/1.0 is ignored",
         b"GET /ping HTTP/1.0\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n", 200, "close")
    case("content-location-ignored", "9110 8.7", "Content-Location in a request changes nothing",
         post(USER, b"Content-Location: /users/1\r\n"), 201, "keep",
         check=lambda rs: None if rs[0].headers.get("location", "") != "/users/1"
         else "Content-Location used as the target")
    case("head-ping", "9110 9.1, 9.3.2", "HEAD /ping: 200, no body",
         get(b"/ping", method=b"HEAD"), 200, "keep", check=header_is("content-length", "4"))
    case("head-404", "9110 9.3.2", "HEAD on an unknown path: 404, no body",
         get(b"/nope", method=b"HEAD"), 404, "keep")
    case("head-bad-host", "9110 9.3.2", "HEAD refused by the parser: 400, no body",
         get(b"/ping", b"Host: x\r\n", method=b"HEAD"), 400, "close")
    case("head-1.0-keep-alive", "9110 9.3.2, 9112 9.3", "HEAD in HTTP/1.0 with keep-alive",
         b"HEAD /ping HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 200, "keep",
         check=header_is("connection", "keep-alive"))
    case("method-not-allowed", "9110 9.1, 15.5.6", "405 lists HEAD with GET in Allow",
         get(b"/users/1", AUTH, method=b"PUT"), 405, "keep",
         check=header_is("allow", "GET, HEAD"))
    case("options-405", "9110 9.3.7", "OPTIONS /ping: 405 with Allow",
         get(b"/ping", method=b"OPTIONS"), 405, "keep", check=header_is("allow", "GET, HEAD"))
    case("trace-405", "9110 9.3.8", "TRACE is not reflected: 405",
         get(b"/ping", AUTH, method=b"TRACE"), 405, "keep")
    case("connect-empty-port", "9110 9.3.6", "CONNECT with an empty port is rejected",
         b"CONNECT t: HTTP/1.1\r\n" + H + b"\r\n", 404, "keep")
    case("connect-then-request", "9110 9.3.6", "CONNECT opens no tunnel: HTTP/1.1 continues",
         [b"CONNECT t:80 HTTP/1.1\r\nHost: t:80\r\n\r\n", PING], [404, 200], "keep")


rfc9112_cases()
rfc9110_cases()


# ---- reading responses ----

IMF_DATE = re.compile(r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|"
                      r"Sep|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d GMT$")


def read_response(r, head):
    """One response from Reader r; for a HEAD request the head only (RFC 9112 6.3: it
    ends at the empty line whatever Content-Length says)."""
    if not head:
        return r.response()
    status, headers, raw_head = r.head()
    return Response(status, headers, b"", raw_head)


def response_problems(resp):
    """The properties every response must have (see the header comment)."""
    p = []
    lines = resp.raw_head.split(b"\r\n")
    if not re.match(rb"^HTTP/1\.1 \d{3} [A-Za-z]", lines[0]):
        p.append("status line %r" % lines[0])
    if any(b"\r" in l or b"\n" in l for l in lines):
        p.append("bare CR or LF in the head")
    if not IMF_DATE.match(resp.headers.get("date", "")):
        p.append("Date %r is not IMF-fixdate" % resp.headers.get("date"))
    if "content-length" not in resp.headers:
        p.append("no Content-Length")
    if "transfer-encoding" in resp.headers:
        p.append("Transfer-Encoding in a response")
    return p


def methods_of(parts):
    return [p.lstrip(b"\r\n").split(b" ", 1)[0] for p in parts]


def run_case(port, c):
    """Sends one case; returns (list of statuses got, problems)."""
    s = connect(port, timeout_s=5.0)
    r = Reader(s)
    resps, problems = [], []
    try:
        s.sendall(b"".join(c["parts"]))
        if c["half_close"]:
            s.shutdown(socket.SHUT_WR)
        heads = [m == b"HEAD" for m in methods_of(c["parts"])]
        for i in range(len(c["statuses"])):
            resps.append(read_response(r, heads[i] if i < len(heads) else False))
    except (OSError, EOFError, ValueError) as e:
        problems.append("after %d responses: %r" % (len(resps), e))
    got = [x.status for x in resps]
    if not problems:
        if got != c["statuses"]:
            problems.append("statuses %s, want %s" % (got, c["statuses"]))
        for x in resps:
            problems += response_problems(x)
        if c["check"] is not None and resps:
            bad = c["check"](resps)
            if bad:
                problems.append(bad)
        last_close = bool(resps) and resps[-1].headers.get("connection", "").lower() == "close"
        if c["conn"] in ("close", "none"):
            if c["conn"] == "close" and not last_close:
                problems.append("no 'Connection: close' on the last response")
            state = r.closed(3.0)
            if state != "eof":
                problems.append("connection '%s' after the last response, want FIN" % state)
        else:
            if last_close:
                problems.append("'Connection: close'; want the connection kept")
            try:
                s.sendall(PING)
                nxt = r.response()
                if nxt.status != 200 or nxt.body != b"pong":
                    problems.append("GET /ping on the kept connection: %r" % (nxt,))
            except (OSError, EOFError, ValueError) as e:
                problems.append("kept connection unusable: %r" % (e,))
    s.close()
    return got, problems


def conn_label(c):
    return {"keep": "kept", "close": "closed", "none": "closed, no response"}[c["conn"]]


def check_cases(tap, label, port, results):
    for c in CASES:
        got, problems = run_case(port, c)
        results[c["id"]] = (got, problems)
        want = "/".join(str(x) for x in c["statuses"]) or "-"
        tap.ok(not problems, "%s: [%s] %s (%s) -> %s, %s" % (
            label, c["section"], c["what"], c["id"], want, conn_label(c)), "\n".join(problems))


# ---- HEAD answered like GET ----

HEAD_TARGETS = [  # (target, headers)
    (b"/ping", b""), (b"/metrics", b""), (b"/users/1", AUTH), (b"/users?limit=3&after=1", AUTH),
    (b"/users/999999", AUTH), (b"/users/0", AUTH), (b"/users/1", b""), (b"/nope", b""),
    (b"/users/%zz", AUTH),
]
VARYING = {"date", "x-request-id"}  # per response, not per method


def user_count(port):
    resp, r = None, None
    s = connect(port)
    r = Reader(s)
    s.sendall(get(b"/metrics"))
    resp = r.response()
    s.close()
    m = re.search(rb"(?m)^store_users (\d+)", resp.body)
    return int(m.group(1)) if m else None


def check_head_parity(tap, label, port):
    """GET then HEAD of one target on one connection, then GET /ping: HEAD has GET's status
    and headers (Content-Length included, /metrics aside: it counts the GET) and no body."""
    before = user_count(port)
    for target, extra in HEAD_TARGETS:
        s = connect(port)
        r = Reader(s)
        problems = []
        try:
            s.sendall(get(target, extra) + get(target, extra, method=b"HEAD") + PING)
            g = r.response()
            h = read_response(r, head=True)
            p = r.response()
            if h.status != g.status:
                problems.append("HEAD %d, GET %d" % (h.status, g.status))
            skip = VARYING | ({"content-length"} if target == b"/metrics" else set())
            gh = {k: v for k, v in g.headers.items() if k not in skip}
            hh = {k: v for k, v in h.headers.items() if k not in skip}
            if gh != hh:
                problems.append("headers differ:\n GET  %r\n HEAD %r" % (gh, hh))
            if target != b"/metrics" and h.headers.get("content-length") != str(len(g.body)):
                problems.append("HEAD Content-Length %r, GET body %d bytes" % (
                    h.headers.get("content-length"), len(g.body)))
            if p.status != 200 or p.body != b"pong":
                problems.append("the request after HEAD got %r (HEAD sent a body?)" % (p,))
            problems += response_problems(h)
        except (OSError, EOFError, ValueError) as e:
            problems.append(repr(e))
        s.close()
        tap.ok(not problems, "%s: [9110 9.3.2, 8.6] HEAD %s = GET without the body (head-parity)"
               % (label, target.decode()), "\n".join(problems))
    after = user_count(port)
    tap.ok(before is not None and before == after,
           "%s: [9110 9.2.1] GET and HEAD created no user (%s -> %s users)" %
           (label, before, after))


# ---- real clients ----

def run_client(argv, timeout_s=CLIENT_TIMEOUT_S):
    """(exit code or 'timeout', stdout, stderr)."""
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout_s)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8",
                                                                                 "replace")
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace")
        return "timeout", out, (e.stderr or b"").decode("utf-8", "replace")


def client_tests(tap, label, port):
    base = "http://127.0.0.1:%d" % port
    auth = "Authorization: Bearer " + BEARER
    if shutil.which("curl"):
        rc, out, err = run_client(["curl", "-sS", "-I", "--max-time", "10", base + "/ping"])
        tap.ok(rc == 0 and out.startswith("HTTP/1.1 200") and "Content-Length: 4" in out,
               "%s: curl -I /ping" % label, "rc %s\n%s%s" % (rc, out, err))
        rc, body, err = run_client(["curl", "-sS", "--max-time", "10", "-H", auth,
                                    base + "/users/1"])
        rc2, out, err2 = run_client(["curl", "-sS", "-I", "--max-time", "10", "-H", auth,
                                     base + "/users/1"])
        tap.ok(rc == 0 and rc2 == 0 and "Content-Length: %d\r\n" % len(body.encode()) in out,
               "%s: curl -I /users/1 has the Content-Length of the GET body" % label,
               "rc %s/%s\n%s\n%s%s%s" % (rc, rc2, body, out, err, err2))
        rc, out, err = run_client(["curl", "-sS", "--http1.0", "--max-time", "10",
                                   base + "/ping"])
        tap.ok(rc == 0 and out == "pong", "%s: curl --http1.0 /ping" % label,
               "rc %s\n%s%s" % (rc, out, err))
        rc, out, err = run_client(["curl", "-sS", "-v", "--http1.0", "--max-time", "10", "-H",
                                   "Connection: keep-alive", base + "/ping", base + "/ping"])
        tap.ok(rc == 0 and out == "pongpong" and "Re-using existing connection" in err,
               "%s: curl --http1.0 with keep-alive reuses the connection" % label,
               "rc %s\n%s\n%s" % (rc, out, err[-1500:]))
    else:
        tap.skip("%s: curl" % label, "not installed")
    if shutil.which("ab"):
        for flags, name in (([], "ab"), (["-k"], "ab -k"), (["-k", "-i"], "ab -k -i (HEAD)")):
            rc, out, err = run_client(["ab", "-q", "-n", "500", "-c", "4", "-s", "10"] + flags +
                                      [base + "/ping"])
            ok = (rc == 0 and re.search(r"Complete requests:\s+500\b", out) and
                  re.search(r"Failed requests:\s+0\b", out) and "Non-2xx" not in out)
            if "-k" in flags:
                ok = ok and re.search(r"Keep-Alive requests:\s+500\b", out)
            tap.ok(bool(ok), "%s: %s completes 500 requests, none failed" % (label, name),
                   "rc %s\n%s%s" % (rc, out[-1500:], err[-500:]))
    else:
        tap.skip("%s: ab" % label, "not installed (apache2-utils)")
    if shutil.which("wrk"):
        rc, out, err = run_client(["wrk", "-t1", "-c4", "-d1s", "--timeout", "2s",
                                   base + "/ping"])
        m = re.search(r"(\d+) requests in", out)
        tap.ok(rc == 0 and m and int(m.group(1)) > 0 and "Socket errors" not in out and
               "Non-2xx" not in out, "%s: wrk 1 s on /ping, no errors" % label,
               "rc %s\n%s%s" % (rc, out, err))
    else:
        tap.skip("%s: wrk" % label, "not installed")
    python_client(tap, label, port)


def python_client(tap, label, port):
    problems = []
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        steps = [("GET", "/ping", {}, 200, b"pong"), ("HEAD", "/ping", {}, 200, b""),
                 ("HEAD", "/users/1", {"Authorization": "Bearer " + BEARER}, 200, b""),
                 ("GET", "/users/1", {"Authorization": "Bearer " + BEARER}, 200, b"\"id\":1"),
                 ("HEAD", "/nope", {}, 404, b""),
                 ("POST", "/users", {"Authorization": "Bearer " + BEARER,
                                     "Content-Type": "application/json"}, 201, b"\"name\"")]
        sock = None
        for method, path, hdrs, status, want in steps:
            body = USER if method == "POST" else None
            c.request(method, path, body=body, headers=hdrs)
            resp = c.getresponse()
            data = resp.read()
            if resp.status != status or (want and want not in data) or (not want and data):
                problems.append("%s %s: %d %r" % (method, path, resp.status, data[:80]))
            if sock is None:
                sock = c.sock
            elif c.sock is not sock:
                problems.append("%s %s: reconnected (the connection was not kept)" % (method,
                                                                                      path))
        c.close()
        # HTTP/1.0 with keep-alive: the client keeps the socket only if told so
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c._http_vsn, c._http_vsn_str = 10, "HTTP/1.0"
        for i in range(2):
            c.request("GET", "/ping", headers={"Connection": "keep-alive"})
            resp = c.getresponse()
            if resp.read() != b"pong" or resp.will_close:
                problems.append("HTTP/1.0 keep-alive request %d: will_close=%s" %
                                (i, resp.will_close))
        c.close()
    except (OSError, http.client.HTTPException) as e:
        problems.append(repr(e))
    tap.ok(not problems, "%s: python http.client (GET, HEAD, POST, HTTP/1.0 keep-alive) on "
           "one connection each" % label, "\n".join(problems))


# ---- nginx, side by side (printed, not a pass condition) ----

NGINX_CONF = """master_process off;
daemon off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location = /ping {{ return 200 "pong"; }}
        location / {{ return 404; }}
    }}
}}
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def raw_exchange(port, c):
    """Status codes seen and whether the connection closed within 1 s (no framing: for
    the printed comparison only)."""
    try:
        s = connect(port, timeout_s=2.0)
        s.sendall(b"".join(c["parts"]))
        if c["half_close"]:
            s.shutdown(socket.SHUT_WR)
        data, closed, deadline = b"", False, time.monotonic() + 1.0
        while time.monotonic() < deadline:
            s.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            data += chunk
        s.close()
        codes = [m.group(1).decode() for m in re.finditer(rb"HTTP/1\.[01] (\d{3}) ", data)]
        return "/".join(codes) or "-", "closed" if closed else "kept"
    except OSError as e:
        return "error %s" % e.__class__.__name__, "-"


def nginx_side_by_side(tap, ours, ours_label):
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK)
                                      else None)
    if nginx is None:
        tap.note("nginx side by side: skipped, nginx not installed")
        return
    d = tempfile.mkdtemp(prefix="it-conf-nginx-")
    port = free_port()
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(NGINX_CONF.format(d=d, port=port))
    proc = subprocess.Popen([nginx, "-p", d, "-e", os.path.join(d, "error.log"), "-c",
                             os.path.join(d, "nginx.conf")], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        up = False
        for _ in range(50):
            if proc.poll() is not None:
                break
            try:
                connect(port, 0.2).close()
                up = True
                break
            except OSError:
                time.sleep(0.1)
        if not up:
            err = proc.stderr.read().decode("utf-8", "replace") if proc.poll() is not None else ""
            tap.note("nginx side by side: nginx did not start: %s" % err.strip()[:300])
            return
        ver = subprocess.run([nginx, "-v"], stderr=subprocess.PIPE).stderr.decode().strip()
        tap.note("side by side with %s (/ping returns pong, every other path 404; status "
                 "codes seen, connection after 1 s); ours = %s:" % (ver, ours_label))
        tap.note("%-26s %-16s %-22s %-22s" % ("case", "section", "ours", "nginx"))
        differ = 0
        for c in CASES:
            got, problems = ours.get(c["id"], ([], ["not run"]))
            mine = "%s %s" % ("/".join(str(x) for x in got) or "-",
                              conn_label(c) if not problems else "FAILED")
            theirs = " ".join(raw_exchange(port, c))
            mark = "" if mine.split()[0] == theirs.split()[0] else "  *"
            differ += bool(mark)
            tap.note("%-26s %-16s %-22s %-22s%s" % (c["id"], c["section"], mine, theirs, mark))
        tap.note("%d of %d cases answered with other statuses by nginx (*): its /users is a 404 "
                 "and its choices differ where the RFC leaves a choice" % (differ, len(CASES)))
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGQUIT)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(d, ignore_errors=True)


def main():
    tap = Tap()
    only = os.environ.get("CONFORMANCE_FILTER", "")
    if only:
        CASES[:] = [c for c in CASES if only in c["id"]]
    first = None
    for sname, path in server_binaries(tap):
        for store in ("memory", "sqlite"):
            label = "%s/%s" % (sname, store)
            srv = Server(path, store).start()
            results = {}
            try:
                check_cases(tap, label, srv.port, results)
                check_head_parity(tap, label, srv.port)
                client_tests(tap, label, srv.port)
                tap.ok(srv.alive() and healthy(srv.port) is None,
                       "%s: alive and serving at the end" % label, "\n".join(srv.log[-10:]))
            finally:
                rc = srv.stop()
            tap.ok(rc == 0, "%s: SIGTERM exit code 0" % label, "rc=%s" % rc)
            reports = srv.sanitizer_reports()
            tap.ok(not reports, "%s: no sanitizer reports" % label, "\n".join(reports))
            if first is None:
                first = (results, label)
    if first is not None:
        nginx_side_by_side(tap, *first)
    tap.finish()


if __name__ == "__main__":
    main()
