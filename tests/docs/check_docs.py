#!/usr/bin/env python3
"""The user documentation (README.md and docs/*.md) against the repository it describes.

  check_docs.py ROOT   exits 0 when every check passes, 1 with one line per problem otherwise.

- every local Markdown link resolves: the file exists, and its #anchor is a heading of that file
  by GitHub's rule (lower case; punctuation but '-' and '_' dropped; spaces to '-'; repeats -1, -2);
- every `make <target>` named (in code spans and code blocks) is a target of the Makefile;
- every alert in prometheus/p2pnode-alerts.yml has its heading in docs/runbook.md and a
  runbook_url "docs/runbook.md#<anchor>" that resolves to it;
- the alert table of docs/monitoring.md lists exactly the rules' alerts with their severities;
- no internal words: planning files (seed file names such as 000_f86c…, FACTS.md, ARCHITECTURE.md,
  STYLE.md), "seed", "issue #NN", the project's own machines (shared/reference).
"""
import os
import re
import sys

import yaml

ROOT = sys.argv[1] if len(sys.argv) > 1 else "."
problems = []


def bad(where, what):
    problems.append(f"{where}: {what}")


def doc_files():
    files = ["README.md"]
    d = os.path.join(ROOT, "docs")
    if os.path.isdir(d):
        files += sorted(os.path.join("docs", f) for f in os.listdir(d) if f.endswith(".md"))
    return files


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def prose_lines(text):
    """(line number, line, in_code_block) for every line; fenced blocks and 4-space indented blocks count as code."""
    fenced = False
    prev_blank = True
    in_indented = False
    for n, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            yield n, line, True
            continue
        if fenced:
            yield n, line, True
            continue
        if line.startswith("    ") and (prev_blank or in_indented) and not line.lstrip().startswith(("-", "*", "|")):
            in_indented = True
            yield n, line, True
        else:
            in_indented = in_indented and line.strip() == ""
            yield n, line, False
        prev_blank = line.strip() == ""


def github_anchor(heading):
    t = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links keep their text
    t = t.replace("`", "").replace("*", "")
    t = t.strip().lower()
    t = re.sub(r"[^\w\- ]", "", t)  # \w keeps letters, digits and '_'
    return t.replace(" ", "-")


_anchor_cache = {}


def anchors(rel):
    if rel not in _anchor_cache:
        seen = {}
        out = set()
        for _, line, code in prose_lines(read(rel)):
            m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if code or not m:
                continue
            a = github_anchor(m.group(2))
            n = seen.get(a, 0)
            out.add(a if n == 0 else f"{a}-{n}")
            seen[a] = n + 1
        _anchor_cache[rel] = out
    return _anchor_cache[rel]


def resolve(from_rel, target):
    """None when the link resolves, else why not."""
    path, _, anchor = target.partition("#")
    if path:
        rel = os.path.normpath(os.path.join(os.path.dirname(from_rel), path))
        if rel.startswith(".."):
            return f"{target} leaves the repository"
        if not os.path.exists(os.path.join(ROOT, rel)):
            return f"{target}: no such file ({rel})"
    else:
        rel = from_rel
    if anchor:
        if not rel.endswith(".md"):
            return f"{target}: an anchor into a file that is not Markdown"
        if anchor not in anchors(rel):
            return f"{target}: {rel} has no heading with the anchor #{anchor}"
    return None


def makefile_targets():
    targets = set()
    for line in read("Makefile").split("\n"):
        m = re.match(r"^([A-Za-z0-9_.-]+(?:\s+[A-Za-z0-9_.-]+)*)\s*:(?!=)", line)
        if m:
            targets.update(m.group(1).split())
        m = re.match(r"^\.PHONY:\s*(.*)", line)
        if m:
            targets.update(m.group(1).split())
    return targets


INTERNAL = [
    (re.compile(r"\b\d{3}_[0-9a-f]{4,}"), "a planning file's name"),
    (re.compile(r"\b(FACTS|ARCHITECTURE|STYLE)\.md\b"), "a planning file that is not in the repository"),
    (re.compile(r"\bseeds?\b|\bseed's\b", re.I), "the word 'seed' (an internal planning term)"),
    (re.compile(r"\bissues? #\d+", re.I), "an issue number of this project"),
    (re.compile(r"\bshared/(reference|docs)\b"), "the project's own machines and notes"),
]


def check_files():
    targets = makefile_targets()
    for rel in doc_files():
        if not os.path.exists(os.path.join(ROOT, rel)):
            bad(rel, "missing")
            continue
        for n, line, code in prose_lines(read(rel)):
            where = f"{rel}:{n}"
            for rx, what in INTERNAL:
                m = rx.search(line)
                if m:
                    bad(where, f"internal word {m.group(0)!r}: {what}")
            spans = [line] if code else re.findall(r"`([^`]*)`", line)
            for s in spans:
                for m in re.finditer(r"(?:^|[\s;&|(])make ([a-z][\w-]*)", s):
                    if m.group(1) not in targets:
                        bad(where, f"`make {m.group(1)}`: the Makefile has no target {m.group(1)!r}")
            if code:
                continue
            for m in re.finditer(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)\)", re.sub(r"`[^`]*`", "", line)):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # http:, https:, mailto:, file:
                why = resolve(rel, target)
                if why:
                    bad(where, f"broken link {why}")


def check_alerts():
    rules_rel = "prometheus/p2pnode-alerts.yml"
    doc = yaml.safe_load(read(rules_rel))
    rules = [r for g in doc["groups"] for r in g["rules"] if "alert" in r]
    runbook = "docs/runbook.md"
    if not os.path.exists(os.path.join(ROOT, runbook)):
        bad(runbook, "missing")
        return
    headings = {}
    for _, line, code in prose_lines(read(runbook)):
        m = re.match(r"^##\s+(\S+)\s*$", line)
        if m and not code:
            headings[m.group(1)] = github_anchor(m.group(1))
    for r in rules:
        name = r["alert"]
        if not re.match(r"^P2pnode[A-Z]", name):
            bad(rules_rel, f"alert {name} is not spelled P2pnode…")
        if name not in headings:
            bad(runbook, f"no section '## {name}' for the alert {name}")
        url = r.get("annotations", {}).get("runbook_url")
        if not url:
            bad(rules_rel, f"alert {name} has no runbook_url annotation")
            continue
        if url != f"{runbook}#{github_anchor(name)}":
            bad(rules_rel, f"alert {name}: runbook_url {url!r}, expected {runbook}#{github_anchor(name)}")
        why = resolve("README.md", url)  # the URL is relative to the repository's root
        if why:
            bad(rules_rel, f"alert {name}: runbook_url {why}")
    for h in headings:
        if h.startswith("P2pnode") and h not in {r["alert"] for r in rules}:
            bad(runbook, f"section {h} names no alert of {rules_rel}")
    # The table in docs/monitoring.md: | [`Name`](runbook.md#…) | severity | for | fires when |
    table = {}
    for n, line, code in prose_lines(read("docs/monitoring.md")):
        m = re.match(r"^\|\s*\[?`(P2\w+)`\]?(?:\([^)]*\))?\s*\|\s*(\w+)\s*\|", line)
        if m and not code:
            if m.group(1) in table:
                bad(f"docs/monitoring.md:{n}", f"{m.group(1)} is listed twice")
            table[m.group(1)] = m.group(2)
    want = {r["alert"]: r.get("labels", {}).get("severity", "") for r in rules}
    for name, sev in want.items():
        if name not in table:
            bad("docs/monitoring.md", f"the alert table lacks {name}")
        elif table[name] != sev:
            bad("docs/monitoring.md", f"the alert table gives {name} severity {table[name]}, the rules {sev}")
    for name in table:
        if name not in want:
            bad("docs/monitoring.md", f"the alert table lists {name}, which is not a rule")


check_files()
check_alerts()
for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
