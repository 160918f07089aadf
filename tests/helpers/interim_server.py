#!/usr/bin/env python3
"""interim_server.py: a small HTTP/1.1 server that sends 1xx interim responses, for the tests
of the load generator and of verify (tests/it_interim.sh, tests/test_verify.py): RFC 9110
15.2 says a client must accept any number of 1xx responses before the final one.

Modes (--mode):
  hints     `103 Early Hints` before every final response;
  some      `103 Early Hints` before every third final response only;
  many      `102 Processing` and then `103 Early Hints` before every final response;
  continue  `100 Continue` after the header block of a request with a body, before its body
            is read (the final response follows the body); none for a request without one;
  switch    `101 Switching Protocols` (which no request asked for) instead of an answer to
            every fifth request, then the connection is closed.
Final responses: `GET /ping` 200 text/plain "pong", `POST ...` 201 with a JSON body, anything
else 200 with a JSON body; every one carries X-Request-Id (echoed, or made up). Requests
that arrive together (pipelined) are answered together, in one write, so a client reads
interim and final responses of several requests in one buffer.

Prints `port N` once listening (on 127.0.0.1, --port 0: a free one) and, on SIGTERM,
`final F interim I` (responses sent) before it exits. A thread per connection; stdlib only;
not a server to measure.
"""
import argparse
import signal
import socket
import sys
import threading

MODES = ("hints", "some", "many", "continue", "switch")
HINTS = b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n"
PROCESSING = b"HTTP/1.1 102 Processing\r\n\r\n"
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
SWITCH = (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
          b"Connection: upgrade\r\n\r\n")
MAX_HEADER_BYTES = 16384


class Counts:
    """Responses sent, over all connections."""

    def __init__(self):
        self.lock = threading.Lock()
        self.final = 0
        self.interim = 0

    def add(self, final, interim):
        with self.lock:
            self.final += final
            self.interim += interim


def final_response(method, path, headers, seq):
    """The final response to one request, as bytes."""
    rid = headers.get("x-request-id") or "interim-%d" % seq
    if method == "GET" and path == "/ping":
        status, ctype, body = "200 OK", "text/plain", b"pong"
    elif method == "POST":
        status, ctype, body = "201 Created", "application/json", b'{"id":1}'
    else:
        status, ctype, body = "200 OK", "application/json", b'{"ok":true}'
    head = ("HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nX-Request-Id: %s\r\n\r\n"
            % (status, ctype, len(body), rid))
    return head.encode() + (b"" if method == "HEAD" else body)


def serve(conn, mode, counts):
    """One connection: reads requests, answers each (pipelined ones in one write)."""
    buf = b""
    seq = 0
    continued = False  # the 100 for the request at the head of buf went out
    try:
        while True:
            data = conn.recv(65536)
            if not data:
                return
            buf += data
            out = []
            final = interim = 0
            while True:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    if len(buf) > MAX_HEADER_BYTES:
                        return
                    break
                lines = buf[:end].decode("latin-1").split("\r\n")
                method, path = lines[0].split(" ")[:2]
                headers = {}
                for line in lines[1:]:
                    k, _, v = line.partition(":")
                    headers[k.strip().lower()] = v.strip()
                length = int(headers.get("content-length", "0"))
                if mode == "continue" and length > 0 and not continued:
                    # the 100 goes out before the body is read, once per request
                    conn.sendall(b"".join(out) + CONTINUE)
                    out = []
                    interim += 1
                    continued = True
                if len(buf) < end + 4 + length:
                    break  # the body is still to come
                continued = False
                buf = buf[end + 4 + length:]
                seq += 1
                if mode == "switch" and seq % 5 == 0:
                    out.append(SWITCH)
                    conn.sendall(b"".join(out))
                    counts.add(final, interim + 1)
                    return
                if mode == "hints" or (mode == "some" and seq % 3 == 0):
                    out.append(HINTS)
                    interim += 1
                elif mode == "many":
                    out += [PROCESSING, HINTS]
                    interim += 2
                out.append(final_response(method, path, headers, seq))
                final += 1
            if out:
                conn.sendall(b"".join(out))
            counts.add(final, interim)
    except (OSError, ValueError, IndexError):
        return
    finally:
        conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=MODES, default="hints")
    ap.add_argument("--port", type=int, default=0)
    opt = ap.parse_args()
    counts = Counts()
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", opt.port))
    lsock.listen(128)

    def on_term(*_):
        print("final %d interim %d" % (counts.final, counts.interim), flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_term)
    print("port %d" % lsock.getsockname()[1], flush=True)
    while True:
        sock, _ = lsock.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=serve, args=(sock, opt.mode, counts),
                         daemon=True).start()


if __name__ == "__main__":
    main()
