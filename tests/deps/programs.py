#!/usr/bin/env python3
"""Which programs the test scripts run, and whether `make test` installs each one.

A program counts as installed by `make test` when the Debian package that ships it is one that
scripts/install-deps.sh installs (its list, with everything those packages depend on), or one a
minimal Debian has (debootstrap --variant=minbase: the packages of Priority required, and apt).

The programs are read from the scripts: the words in command position (a line's first word, the
first after |, ;, &&, ||, $(, `, then, do, else, !, exec, time, timeout N) outside heredocs and
comments, that are neither shell words nor functions the scripts define, and resolve to a file on
this machine's PATH; plus every program a script names in `require` (tests/lib/require.sh), which
must resolve. Scripts that run inside a VM or a Debian root (tests/vm/guest, tests/node/guest)
are not this machine's.

Usage: programs.py REPO   (exit 1 with a line per program not installed by make test)
"""
import os
import re
import shutil
import subprocess
import sys

SHELL_WORDS = set("""
if then else elif fi for while until do done case esac in function select return exit break
continue local export declare readonly typeset unset set shift source . eval exec trap wait read
echo printf cd pwd pushd popd test [ [[ ]] true false : let shopt command builtin type hash
getopts umask ulimit kill jobs fg bg disown alias unalias mapfile readarray enable help times
caller compgen complete coproc dirs history logout suspend time
""".split())
# Prefix words after which the next word is the command (their own arguments skipped as noted).
PREFIXES = {"then", "do", "else", "!", "exec", "time", "command", "nohup", "env", "if", "while", "until",
            "elif", "{", "(", "sudo"}
SKIP_DIRS = ("tests/vm/guest", "tests/node/guest", "tests/gpu")  # run elsewhere: in a VM, a root, a GPU box
SEP = re.compile(r"\|\||&&|\$\(|[|;`(]")
ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
WORD = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$|^/[A-Za-z0-9_./+-]+$")
HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


def scripts(repo):
    for top in ("tests", "scripts"):
        for d, _, files in os.walk(os.path.join(repo, top)):
            rel = os.path.relpath(d, repo)
            if any(rel == s or rel.startswith(s + "/") for s in SKIP_DIRS):
                continue
            for f in files:
                if f.endswith(".sh"):
                    yield os.path.join(d, f)


def logical_lines(text):
    """Lines outside heredocs, comments stripped (a # that starts a word), continuations joined."""
    out, pending, end = [], "", None
    for raw in text.splitlines():
        if end is not None:
            if raw.strip() == end:
                end = None
            continue
        m = HEREDOC.search(raw)
        line = re.sub(r"(^|\s)#.*$", "", raw)
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        out.append(pending + line)
        pending = ""
        if m:
            end = m.group(2)
    return out


def command_words(line):
    words = []
    for part in SEP.split(line):
        toks = part.strip().split()
        i = 0
        while i < len(toks):
            t = toks[i].strip("\"'")
            if ASSIGN.match(t) or t in PREFIXES:
                i += 1
                continue
            if t == "timeout":  # timeout [-s SIG] N CMD
                i += 1
                while i < len(toks) and toks[i].startswith("-"):
                    i += 2 if toks[i] in ("-s", "-k") else 1
                i += 1
                continue
            if t == "flock":  # flock [-opts] FILE CMD / flock FD
                i += 1
                while i < len(toks) and toks[i].startswith("-"):
                    i += 1
                i += 1
                continue
            words.append(t)
            break
    return words


def functions_defined(texts):
    names = set()
    for t in texts:
        names.update(re.findall(r"^\s*(?:function\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*\(\)", t, re.M))
    return names


def required(text):
    names = []
    for line in logical_lines(text):
        m = re.match(r"^\s*require\s+(.*)$", line)
        if m:
            names += [w for w in m.group(1).split() if WORD.match(w)]
    return names


SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # not a user's own (pyenv, ~/bin)


def which(prog):
    if prog.startswith("/"):
        return prog if os.path.isfile(prog) and os.access(prog, os.X_OK) else None
    return shutil.which(prog, path=SYSTEM_PATH)


def file_owners():
    """Every file dpkg knows, mapped to its package (from /var/lib/dpkg/info/*.list)."""
    owners = {}
    info = "/var/lib/dpkg/info"
    for f in os.listdir(info):
        if f.endswith(".list"):
            pkg = f[:-5].split(":")[0]
            with open(os.path.join(info, f), encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    owners.setdefault(line.rstrip("\n"), pkg)
    return owners


def package_of(path, owners):
    cands = {path, os.path.realpath(path)}
    for p in list(cands):  # merged /usr: dpkg may know the file by either name
        cands.add(p[4:] if p.startswith("/usr/") else "/usr" + p)
    for p in sorted(cands):
        if p in owners:
            return owners[p]
    return None


def allowed_packages(repo):
    want = subprocess.run(["bash", os.path.join(repo, "scripts/install-deps.sh"), "test", "--list"],
                          capture_output=True, text=True, check=True).stdout.split()
    q = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\t${Priority}\t${Depends}, ${Pre-Depends}\t${Provides}\n"],
                       capture_output=True, text=True, check=True).stdout
    deps, provided_by, minimal = {}, {}, {"apt"}
    for line in q.splitlines():
        pkg, prio, dep, prov = (line.split("\t") + ["", "", ""])[:4]
        deps[pkg] = [re.split(r"[\s:(]", alt.strip())[0] for d in dep.split(",") for alt in d.split("|") if alt.strip()]
        for p in prov.split(","):
            if p.strip():
                provided_by.setdefault(re.split(r"[\s(]", p.strip())[0], []).append(pkg)
        if prio == "required":
            minimal.add(pkg)
    closure, todo = set(), list(want)
    while todo:  # every alternative counts: apt installs one of them, whichever the machine had
        p = todo.pop()
        if p in closure:
            continue
        closure.add(p)
        todo += deps.get(p, []) + provided_by.get(p, [])
    return want, closure, minimal


def main(repo):
    files = list(scripts(repo))
    texts = {f: open(f, encoding="utf-8", errors="replace").read() for f in files}
    funcs = functions_defined(texts.values()) | {"require", "skip", "fail", "die", "check", "say"}
    used = {}
    problems = []
    for f, t in texts.items():
        rel = os.path.relpath(f, repo)
        for w in required(t):
            used.setdefault(w, set()).add(rel)
            if not which(w):
                problems.append(f"{w}: named by require in {rel} and not installed")
        for line in logical_lines(t):
            for w in command_words(line):
                if w in SHELL_WORDS or w in funcs or not WORD.match(w) or "$" in w:
                    continue
                if which(w):
                    used.setdefault(w, set()).add(rel)
    want, closure, minimal = allowed_packages(repo)
    owners = file_owners()
    for prog in sorted(used):
        path = which(prog)
        if not path:
            continue
        pkg = package_of(path, owners)
        where = ", ".join(sorted(used[prog])[:3])
        if pkg is None:
            problems.append(f"{prog} ({path}): no Debian package ships it (used in {where})")
        elif pkg not in closure and pkg not in minimal:
            problems.append(f"{prog} (package {pkg}): neither in scripts/install-deps.sh test nor in a minimal "
                            f"Debian (used in {where})")
    print(f"{len(used)} programs run by {len(files)} scripts; install-deps.sh test lists {len(want)} packages "
          f"({len(closure)} with their dependencies), a minimal Debian has {len(minimal)}")
    for p in problems:
        print("FAIL: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
