#!/usr/bin/env python3
"""Fails on an #include that crosses a module boundary of the adapters (issue 28):

- a file under src/backends/<X> includes another adapter's folder (a "../" path) or another
  adapter's header (include/argus/backends/<h> of adapter Y), or the planner;
- synthesis, the evidence formats, the collector helpers, the injection skeleton and the probe
  branches (src/ and include/argus/ of each) include an adapter's header.

Usage: module_boundaries.py SOURCE_DIR
"""
import pathlib
import re
import sys

# include/argus/backends/<header> -> the adapter folder (src/backends/<folder>) it belongs to.
ADAPTER_HEADERS = {
    "compile.h": "compile",
    "ncu.h": "ncu",
    "pc_collect.h": "cupti_sass",
    "ptx_analysis.h": "ptx_analysis",
    "run.h": "run",
    "trace_dir.h": "run",
    "system_trace.h": "system_trace",
}
# Modules below the adapters: they include no adapter.
LOWER = ["synthesis", "evidence", "collect", "inject", "probe"]
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)
SOURCES = ("*.h", "*.hpp", "*.cpp", "*.cc", "*.cu", "*.cuh")


def files(root: pathlib.Path):
    for pattern in SOURCES:
        yield from root.rglob(pattern)


def main() -> int:
    src = pathlib.Path(sys.argv[1])
    problems = []
    backends = src / "src" / "backends"
    for folder in sorted(p for p in backends.iterdir() if p.is_dir()):
        for f in files(folder):
            for included in INCLUDE.findall(f.read_text(errors="replace")):
                name = included.rsplit("/", 1)[-1]
                if included.startswith("../"):
                    problems.append(f"{f}: includes another adapter's folder: {included}")
                elif included.startswith("argus/backends/"):
                    owner = ADAPTER_HEADERS.get(name)
                    if owner != folder.name:
                        problems.append(f"{f}: includes adapter `{owner}`'s {included}")
                elif included.startswith("argus/planner/"):
                    problems.append(f"{f}: an adapter includes the planner: {included}")
    for module in LOWER:
        for root in (src / "src" / module, src / "include" / "argus" / module):
            if not root.is_dir():
                continue
            for f in files(root):
                for included in INCLUDE.findall(f.read_text(errors="replace")):
                    if included.startswith("argus/backends/") or "/backends/" in included:
                        problems.append(f"{f}: `{module}` includes an adapter: {included}")
    for p in problems:
        print(p)
    print(f"module_boundaries: {len(problems)} forbidden includes")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
