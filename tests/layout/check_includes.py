#!/usr/bin/env python3
"""Checks the include rules that keep the tree a pipeline (docs/architecture.md, "Module map"):

  1. no file of an adapter (src/backends/X) includes another adapter's files or headers, or
     the planner (an adapter runs tasks; it does not plan them);
  2. nothing in the modules that adapters and the session build on or that read evidence
     (synthesis, report, evidence, collect, inject, probe: their src/ and include/argus/ files)
     includes an adapter (src/backends, argus/backends);
  3. the CLI (src/cli) includes only the session, the report, argument parsing (CLI11), the
     standard library and its own headers.

Usage: check_includes.py SOURCE_ROOT   (exit 1 and one line per violation when a rule is broken)
       check_includes.py --self-test   (the rules catch a tree made to break each of them)
"""
import pathlib
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
SOURCES = {".h", ".hpp", ".cpp", ".cu", ".cuh", ".inc"}

# Headers under include/argus/backends/ that every adapter may include: the adapters' shared
# interface, not any one adapter.
SHARED_BACKEND_HEADERS = {"argus/backends/adapter.h"}
# The CLI's allowed project headers, beside its own ("commands.h").
CLI_ALLOWED = ("argus/session/", "argus/report/", "argus/support/status.h")
# Modules that include no adapter (rule 2).
NO_ADAPTER = ("synthesis", "report", "evidence", "collect", "inject", "probe")


def backend_header_owners(root):
    """Owner adapter of each include/argus/backends header: the header's own adapter folder when
    it lives in include/argus/backends/<adapter>/, else the adapter whose .cpp includes it
    first (its implementation), else the only adapter that includes it."""
    owners = {}
    base = root / "include" / "argus" / "backends"
    adapters = {p.name for p in (root / "src" / "backends").iterdir() if p.is_dir()}
    for header in base.rglob("*.h") if base.exists() else []:
        name = "argus/backends/" + header.relative_to(base).as_posix()
        if name in SHARED_BACKEND_HEADERS:
            continue
        parts = header.relative_to(base).parts
        if len(parts) > 1 and parts[0] in adapters:
            owners[name] = parts[0]
            continue
        # A flat header: owned by the adapter that implements it (a .cpp including it first),
        # else by the only adapter that includes it at all.
        users = set()
        for adapter in sorted(adapters):
            for src in (root / "src" / "backends" / adapter).glob("*.cpp"):
                text = src.read_text(errors="replace")
                first = INCLUDE.search(text)
                if first and first.group(1) == name:
                    owners.setdefault(name, adapter)
                if name in INCLUDE.findall(text):
                    users.add(adapter)
        if name not in owners and len(users) == 1:
            owners[name] = users.pop()
    return owners


def files(directory):
    return sorted(p for p in directory.rglob("*") if p.suffix in SOURCES and p.is_file())


def check(root):
    root = pathlib.Path(root)
    problems = []
    owners = backend_header_owners(root)
    backends = root / "src" / "backends"
    for adapter_dir in sorted(p for p in backends.iterdir() if p.is_dir()):
        adapter = adapter_dir.name
        for f in files(adapter_dir):
            for inc in INCLUDE.findall(f.read_text(errors="replace")):
                where = f.relative_to(root)
                if inc.startswith("../"):
                    other = pathlib.PurePosixPath(inc).parts[1]
                    if other != adapter:
                        problems.append(f"{where}: includes {inc}, a file of adapter `{other}`")
                elif inc.startswith("argus/planner/"):
                    problems.append(f"{where}: includes {inc}: an adapter does not reach up "
                                    "into the planner")
                elif inc.startswith("argus/backends/") and inc not in SHARED_BACKEND_HEADERS:
                    owner = owners.get(inc)
                    if owner is None:
                        problems.append(f"{where}: includes {inc}, which no adapter implements")
                    elif owner != adapter:
                        problems.append(f"{where}: includes {inc}, a header of adapter `{owner}`")
    for module in NO_ADAPTER:
        dirs = [root / "src" / module, root / "include" / "argus" / module]
        for f in [f for d in dirs if d.exists() for f in files(d)]:
            for inc in INCLUDE.findall(f.read_text(errors="replace")):
                if inc.startswith("argus/backends/") or "backends/" in inc:
                    problems.append(f"{f.relative_to(root)}: includes {inc}: {module} reads "
                                    "evidence formats (argus/evidence), never an adapter")
    for f in files(root / "src" / "cli"):
        for inc in INCLUDE.findall(f.read_text(errors="replace")):
            if not inc.startswith("argus/"):
                continue  # the standard library, CLI11, fmt, nlohmann, or the CLI's own headers
            if not inc.startswith(CLI_ALLOWED):
                problems.append(f"{f.relative_to(root)}: includes {inc}: the CLI goes through "
                                "argus/session and argus/report only")
    return problems


def self_test():
    """Each rule must catch a tree made to break it, and pass a tree that keeps it."""
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        def write(path, text):
            p = root / path
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        write("include/argus/backends/adapter.h", "")
        write("include/argus/backends/alpha.h", "")
        write("src/backends/alpha/alpha.cpp", '#include "argus/backends/alpha.h"\n')
        write("src/backends/beta/beta.cpp", '#include "argus/backends/adapter.h"\n')
        write("src/synthesis/s.cpp", '#include "argus/evidence/bundle.h"\n')
        write("src/report/r.cpp", "#include <string>\n")
        write("src/cli/main.cpp", '#include "argus/session/query.h"\n#include "commands.h"\n')
        assert check(root) == [], check(root)
        cases = [
            ("src/backends/beta/x.cpp", '#include "../alpha/helper.h"\n', "adapter `alpha`"),
            ("src/backends/beta/y.cpp", '#include "argus/backends/alpha.h"\n', "adapter `alpha`"),
            ("src/synthesis/t.cpp", '#include "argus/backends/alpha.h"\n', "never an adapter"),
            ("src/report/u.cpp", '#include "argus/backends/adapter.h"\n', "never an adapter"),
            ("src/cli/v.cpp", '#include "argus/planner/planner.h"\n', "argus/session"),
            ("src/backends/beta/z.cpp", '#include "argus/planner/planner.h"\n', "planner"),
            ("include/argus/evidence/e.h", '#include "argus/backends/alpha.h"\n',
             "never an adapter"),
            ("src/inject/i.cpp", '#include "../backends/alpha/x.h"\n', "never an adapter"),
        ]
        for path, text, expected in cases:
            write(path, text)
            found = check(root)
            assert len(found) == 1 and expected in found[0], (path, found)
            (root / path).unlink()
    print("self-test: every rule caught its violation")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    problems = check(sys.argv[1])
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} include(s) break the pipeline's rules (docs/architecture.md)")
        return 1
    print("include rules hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
