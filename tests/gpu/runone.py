#!/usr/bin/env python3
"""Runs one command and prints 'wall_s maxrss_kb rc' for that process alone (os.wait4), so that
the peak resident set of each run is its own (getrusage(RUSAGE_CHILDREN) keeps the largest child
of all). Usage: runone.py STDOUT_FILE CMD [ARGS...]; the command's stderr passes through."""
import os
import sys
import time

out = open(sys.argv[1], "wb")
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    os.dup2(out.fileno(), 1)
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, ru = os.wait4(pid, 0)
wall = time.monotonic() - t0
rc = os.waitstatus_to_exitcode(status)
print(f"{wall:.3f} {ru.ru_maxrss} {rc}")
