#!/usr/bin/env python3
"""A hostile client and a well-behaved one, against one `p2pnode serve` (tests/serve/test_flood.sh).

From --flood-source (127.0.0.1) it holds --idle TCP connections that send nothing and --trickle
connections that send one byte of a never-ending request head per second each; a connection the
server closes is opened again a second later, so the pressure never lets up. After --settle
seconds (past TCP_DEFER_ACCEPT and every accept, handshake or request-head limit) it measures, for
--seconds, GET /livez, /readyz and /metrics from --probe-source (127.0.0.2), a new connection per
request (a Prometheus scrape or a kubelet probe does the same), 5 s client time limit. Prints one
JSON document: per path count, failures (with the first few errors), p50/p90/p99/max ms; and what
the flood saw (connections opened, closed by the server, refused at connect). With --hold it only
floods (scripts/bench-serve.sh runs wrk beside it).
"""
import argparse
import http.client
import json
import multiprocessing
import resource
import selectors
import socket
import ssl
import sys
import time


def raise_nofile(need):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, need))
    if want > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return want


class Flood:
    # The trickled head: a request line, then header bytes forever (never the blank line).
    HEAD = b"GET /livez HTTP/1.1\r\nHost: p2pnode\r\nX-Trickle: " + b"a" * 100000

    def __init__(self, host, port, source, idle, trickle):
        self.addr = (host, port)
        self.source = source
        self.want = [("idle", i) for i in range(idle)] + [("trickle", i) for i in range(trickle)]
        self.sel = None  # made in run(), in the flood's own process
        self.socks = {}  # key -> (sock, sent)
        self.retry_at = {}  # key -> time to reopen
        self.stats = {"opened": 0, "closed_by_server": 0, "connect_failed": 0, "trickled_bytes": 0}
        self.stop = None  # a multiprocessing.Event, set by the parent

    def open(self, key):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.bind((self.source, 0))
            err = s.connect_ex(self.addr)
            if err not in (0, 115):  # EINPROGRESS
                raise OSError(err, "connect")
        except OSError:
            s.close()
            self.stats["connect_failed"] += 1
            self.retry_at[key] = time.monotonic() + 1.0
            return
        self.socks[key] = (s, 0)
        self.sel.register(s, selectors.EVENT_READ, key)
        self.stats["opened"] += 1

    def lost(self, key):
        s, _ = self.socks.pop(key)
        try:
            self.sel.unregister(s)
        except (KeyError, ValueError):
            pass
        s.close()
        self.stats["closed_by_server"] += 1
        self.retry_at[key] = time.monotonic() + 1.0

    def run(self, stop, settle, report):
        """In its own process (no GIL shared with the probes): floods until `stop`, then sends its
        figures through the pipe `report`."""
        raise_nofile(len(self.want) + 256)
        self.sel = selectors.DefaultSelector()
        self.stop = stop
        settled_at = time.monotonic() + settle
        held_at_start = None
        for k in self.want:
            self.open(k)
        next_tick = time.monotonic()
        while not self.stop.is_set():
            if held_at_start is None and time.monotonic() >= settled_at:
                held_at_start = self.held()
            timeout = max(0.0, next_tick - time.monotonic())
            for key, _ in self.sel.select(timeout):
                k = key.data
                try:
                    data = key.fileobj.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if not data:  # closed (or reset) by the server; whatever it answered, we go on
                    self.lost(k)
            now = time.monotonic()
            if now < next_tick:
                continue
            next_tick = now + 1.0
            for k in [k for k, t in self.retry_at.items() if t <= now]:
                del self.retry_at[k]
                self.open(k)
            for k, (s, sent) in list(self.socks.items()):
                if k[0] != "trickle":
                    continue
                try:
                    s.send(self.HEAD[sent % len(self.HEAD): sent % len(self.HEAD) + 1])
                    self.socks[k] = (s, sent + 1)
                    self.stats["trickled_bytes"] += 1
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    self.lost(k)
        report.send(dict(self.stats, held_at_start=held_at_start if held_at_start is not None else self.held(),
                         held_at_end=self.held()))
        for s, _ in self.socks.values():
            s.close()

    def held(self):
        return len(self.socks)


def probe(host, port, source, path, ctx, timeout):
    t0 = time.perf_counter()
    if ctx is None:
        c = http.client.HTTPConnection(host, port, timeout=timeout, source_address=(source, 0))
    else:
        c = http.client.HTTPSConnection(host, port, timeout=timeout, source_address=(source, 0), context=ctx)
    try:
        c.request("GET", path, headers={"Connection": "close"})
        r = c.getresponse()
        body = r.read()
        if r.status != 200:
            return None, f"{path}: HTTP {r.status}: {body[:200]!r}"
        if path == "/metrics" and b"p2pnode_" not in body:
            return None, f"{path}: no p2pnode_ metric in {len(body)} bytes"
        return (time.perf_counter() - t0) * 1000.0, None
    except Exception as e:  # noqa: BLE001 -- every failure is counted and reported
        return None, f"{path}: {type(e).__name__}: {e}"
    finally:
        c.close()


def pct(sorted_ms, p):
    if not sorted_ms:
        return None
    i = min(len(sorted_ms) - 1, max(0, int(round(p / 100.0 * len(sorted_ms) + 0.5)) - 1))
    return round(sorted_ms[i], 3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--flood-source", default="127.0.0.1")
    ap.add_argument("--probe-source", default="127.0.0.2")
    ap.add_argument("--idle", type=int, default=1000)
    ap.add_argument("--trickle", type=int, default=100)
    ap.add_argument("--settle", type=float, default=15)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--interval", type=float, default=0.1, help="between probe requests")
    ap.add_argument("--cacert", help="HTTPS: trust this PEM")
    ap.add_argument("--timeout", type=float, default=5)
    ap.add_argument("--hold", type=float, default=0,
                    help="flood only (no probes) for this many seconds after --settle, then print the flood's figures")
    a = ap.parse_args()

    raise_nofile(a.idle + a.trickle + 256)
    ctx = None
    if a.cacert:
        ctx = ssl.create_default_context(cafile=a.cacert)
    flood = Flood(a.host, a.port, a.flood_source, a.idle, a.trickle)
    stop = multiprocessing.Event()
    mine, theirs = multiprocessing.Pipe()
    proc = multiprocessing.Process(target=flood.run, args=(stop, a.settle, theirs), daemon=True)
    proc.start()
    time.sleep(a.settle)

    def finish():
        stop.set()
        stats = mine.recv() if mine.poll(10) else {"error": "the flood process did not report"}
        proc.join(5)
        return stats

    if a.hold > 0:  # scripts/bench-serve.sh: the flood beside another load generator
        time.sleep(a.hold)
        json.dump({"flood": dict(finish(), idle=a.idle, trickle=a.trickle)}, sys.stdout)
        print()
        return
    paths = ["/livez", "/readyz", "/metrics"]
    ms = {p: [] for p in paths}
    errors = {p: [] for p in paths}
    end = time.monotonic() + a.seconds
    i = 0
    while time.monotonic() < end:
        p = paths[i % len(paths)]
        i += 1
        took, err = probe(a.host, a.port, a.probe_source, p, ctx, a.timeout)
        if err:
            errors[p].append(err)
        else:
            ms[p].append(took)
        time.sleep(a.interval)
    out = {"flood": dict(finish(), idle=a.idle, trickle=a.trickle, settle_s=a.settle),
           "seconds": a.seconds, "paths": {}}
    for p in paths:
        s = sorted(ms[p])
        out["paths"][p] = {"ok": len(s), "failures": len(errors[p]), "errors": errors[p][:5],
                           "p50_ms": pct(s, 50), "p90_ms": pct(s, 90), "p99_ms": pct(s, 99),
                           "max_ms": round(s[-1], 3) if s else None}
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
