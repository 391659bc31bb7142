#!/usr/bin/env python3
"""Sends raw bytes to the daemon and prints what came back: the status code of each response and
whether the daemon closed the connection after them ("200 open", "400 closed", "200 200 open").

usage: raw_http.py PORT REQUEST [ANSWERS]  (REQUEST with Python escapes: \\r \\n \\x00 \\xff;
ANSWERS: how many responses to wait for, 1 by default)
Requests that need bytes curl would never send: a NUL inside a header line, an obs-fold line, a
method that is not a token, two requests in one write.
"""
import codecs
import re
import socket
import sys


def responses(data):
    """Status codes of the complete responses in data (each with a Content-Length)."""
    codes = []
    while True:
        m = re.match(rb"HTTP/1\.[01] (\d{3})[^\r\n]*\r\n(.*?)\r\n\r\n", data, re.S)
        if not m:
            return codes, data
        length = re.search(rb"(?im)^content-length:\s*(\d+)", m.group(2))
        end = m.end() + (int(length.group(1)) if length else 0)
        if len(data) < end:
            return codes, data
        codes.append(m.group(1).decode())
        data = data[end:]


def main():
    port, raw = int(sys.argv[1]), codecs.escape_decode(sys.argv[2].encode())[0]
    expected = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(raw)
    data, closed = b"", False
    try:
        while True:
            if len(responses(data)[0]) >= expected:
                s.settimeout(0.5)  # the answers are in: does the daemon close the connection?
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            data += chunk
    except socket.timeout:
        pass
    except ConnectionResetError:
        closed = True
    codes, _ = responses(data)
    print(" ".join(codes or ["none"]) + (" closed" if closed else " open"))


if __name__ == "__main__":
    main()
