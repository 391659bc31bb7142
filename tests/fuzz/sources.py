#!/usr/bin/env python3
"""The daemon sources a fuzz target needs, found the way the linker would need them: every header the
target includes (transitively, through the sources found so far) brings in the sources that implement
it, those whose first include is that header (the related header first, as STYLE.md's layout has it).
core/embedded.hpp is implemented by the generated embedded_data.cpp, passed as --embedded.

  sources.py --embedded BUILD/daemon/embedded_data.cpp TARGET.cpp   prints one source per line
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)


def implementers(root):
    """header (as included, e.g. "nvidia/breakage.hpp") -> the daemon sources whose first include it is."""
    out = {}
    for d, _, files in os.walk(os.path.join(root, "daemon")):
        for f in files:
            if f.endswith(".cpp"):
                path = os.path.relpath(os.path.join(d, f), root)
                first = INCLUDE.search(open(os.path.join(root, path), encoding="utf-8").read())
                if first:
                    out.setdefault(first[1], []).append(path)
    return out


def closure(root, target, embedded):
    impl = implementers(root)
    impl.setdefault("core/embedded.hpp", []).append(embedded)
    seen, todo = set(), [target]
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        if f == embedded:
            continue  # generated: it includes only its header
        for h in INCLUDE.findall(open(os.path.join(root, f), encoding="utf-8").read()):
            todo += impl.get(h, [])
            header = os.path.join("daemon", h)
            if os.path.exists(os.path.join(root, header)):
                todo.append(header)
    return sorted(f for f in seen if f.endswith(".cpp"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--embedded", required=True)
    p.add_argument("target")
    a = p.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for f in closure(root, a.target, a.embedded):
        print(f)


if __name__ == "__main__":
    sys.exit(main())
