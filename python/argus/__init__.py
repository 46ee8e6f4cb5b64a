"""Python client for Argus.

Argus measures GPU kernels around named regions (CUDA C++ markers, Triton Proton scopes). This
package drives the Argus engine -- the ``argus`` binary -- and returns its JSON answers as Python
objects; it computes nothing itself, so it can never disagree with the command line.

    import argus
    report = argus.query("examples/tma_gemm/argus.yaml", kernel="tma_gemm",
                         region="mainloop", signals=["duration"], scope="role=consumer")
    for r in report.signal("duration").value["regions"]:
        print(r["path"], r["duration"]["median"])

The engine is found through ``$ARGUS_BIN``, else ``argus`` on ``PATH``, else the ``build/argus``
of the checkout this package lives in. Every error of the engine raises :class:`ArgusError`
carrying the engine's own message.
"""

from __future__ import annotations

import json
import re
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence, Union

__all__ = [
    "ArgusError",
    "Report",
    "Signal",
    "engine",
    "regions",
    "plan",
    "query",
    "fork",
    "versions",
    "proton_trace",
]

PathLike = Union[str, os.PathLike]


class ArgusError(RuntimeError):
    """The engine refused or failed; ``message`` is its own explanation (what and where)."""

    def __init__(self, message: str, command: Sequence[str], exit_code: int, stdout: str = ""):
        super().__init__(message)
        self.message = message
        self.command = list(command)
        self.exit_code = exit_code
        self.stdout = stdout


def engine() -> str:
    """Path of the argus binary this client drives."""
    explicit = os.environ.get("ARGUS_BIN")
    if explicit:
        return explicit
    found = shutil.which("argus")
    if found:
        return found
    checkout = Path(__file__).resolve().parents[2] / "build" / "argus"
    if checkout.is_file():
        return str(checkout)
    raise ArgusError(
        "the argus binary was not found: set ARGUS_BIN, put argus on PATH, or build the "
        "checkout (./scripts/setup.sh)", [], -1)


def _engine_run(args: Sequence[str], ok_codes: Iterable[int]) -> subprocess.CompletedProcess:
    """Runs the engine (stdout and stderr as bytes); raises with its message when its exit code
    is not one of ``ok_codes``."""
    command = [engine(), *args]
    # No stdin: the MCP server (argus.mcp) speaks over its own stdin, which no engine run may read.
    proc = subprocess.run(command, capture_output=True, stdin=subprocess.DEVNULL)
    if proc.returncode not in tuple(ok_codes):
        err, out = proc.stderr.decode(errors="replace"), proc.stdout.decode(errors="replace")
        message = err.strip() or out.strip() or f"exit {proc.returncode}"
        # The engine prefixes its errors with "argus: "; keep its message, not the prefix.
        lines = [l[len("argus: "):] if l.startswith("argus: ") else l for l in message.splitlines()]
        raise ArgusError("\n".join(lines), command, proc.returncode, out)
    return proc


def _run_bytes(args: Sequence[str], ok_codes: Iterable[int] = (0,)) -> bytes:
    """The engine's stdout as bytes."""
    return _engine_run(args, ok_codes).stdout


def _run(args: Sequence[str], ok_codes: Iterable[int] = (0,)) -> dict:
    """The engine's stdout as JSON."""
    proc = _engine_run(args, ok_codes)
    stdout = proc.stdout.decode(errors="replace")
    try:
        return json.loads(stdout)
    except json.JSONDecodeError as e:
        raise ArgusError(f"the engine's output is not JSON ({e}): {stdout[:200]!r}", proc.args,
                         proc.returncode, stdout) from None


def _is_version_id(program: PathLike) -> bool:
    """Whether ``program`` names a workspace version ("v5") rather than a file."""
    return (isinstance(program, str) and re.fullmatch(r"v[0-9]+", program) is not None
            and not Path(program).exists())


def _query_args(program: PathLike, kernel: Optional[str], region: Optional[str],
                scope: Optional[str], signals: Sequence[str],
                workspace: Optional[PathLike], ops: Optional[Sequence[str]] = None) -> list:
    if isinstance(signals, str):
        signals = [signals]
    if not signals:
        raise ArgusError("no signals: name at least one, e.g. signals=['duration'] "
                         "(`argus recipes` lists them)", [], -1)
    # A workspace version id ("v5", e.g. what fork() returned) names a program version.
    is_version = _is_version_id(program)
    if is_version and not workspace:
        raise ArgusError(f"program {program!r} is a workspace version: give workspace= too", [], -1)
    args = ["--version" if is_version else "--program", str(program), "--signals", ",".join(signals)]
    if kernel:
        args += ["--kernel", kernel]
    if region:
        args += ["--region", region]
    if scope:
        args += ["--scope", scope]
    if workspace:
        args += ["--workspace", str(workspace)]
    if ops:
        args += ["--ops", ",".join([ops] if isinstance(ops, str) else ops)]
    return args


def _derive_args(derive: Optional[Sequence[str]], regions_file: Optional[PathLike]) -> list:
    """``--derive`` / ``--regions-file``: regions derived without editing the source
    (docs/regions-file.md)."""
    args = []
    if derive:
        args += ["--derive", ",".join([derive] if isinstance(derive, str) else derive)]
    if regions_file:
        args += ["--regions-file", str(regions_file)]
    return args


def regions(target: PathLike, *, arch: Optional[str] = None,
            derive: Optional[Sequence[str]] = None,
            regions_file: Optional[PathLike] = None) -> dict:
    """Region tree of a program spec, .cu, .ptx, or Triton .ttgir/.ttir file (schema
    argus.regions/1): ``{"kernels": [{"name", "regions": [{"id", "path", ...}]}]}``. ``derive``
    (selectors such as ``["loops", "ops"]``) and ``regions_file`` add derived regions."""
    args = ["regions", str(target), "--json", *_derive_args(derive, regions_file)]
    if arch:
        args += ["--arch", arch]
    return _run(args)


def plan(program: PathLike, *, signals: Sequence[str], kernel: Optional[str] = None,
         region: Optional[str] = None, scope: Optional[str] = None,
         ops: Optional[Sequence[str]] = None, workspace: Optional[PathLike] = None,
         derive: Optional[Sequence[str]] = None,
         regions_file: Optional[PathLike] = None) -> dict:
    """The plan Argus would run for a query: tasks, run partitions and why runs are separate.
    ``program`` is a spec path, or a version id of ``workspace`` (e.g. a fork); ``derive`` and
    ``regions_file`` as for ``regions``."""
    return _run(["plan", *_query_args(program, kernel, region, scope, signals, workspace, ops),
                 *_derive_args(derive, regions_file), "--json"])


@dataclass
class Signal:
    """One answered signal: ``value`` with its ``unit``, ``qualification`` (observed,
    attributed or derived), ``scope``, ``status`` and ``provenance`` (workspace ids)."""

    name: str
    status: str
    value: Any = None
    unit: Optional[str] = None
    qualification: Optional[str] = None
    scope: Optional[str] = None
    provenance: Optional[dict] = None
    reason: Optional[str] = None
    error: Optional[str] = None

    @property
    def available(self) -> bool:
        return self.value is not None


@dataclass
class Report:
    """An ``argus query`` report (schema argus.report/1). ``raw`` is the engine's JSON."""

    kernel: str
    region: str
    signals: dict
    not_collected: list
    failures: list
    raw: dict = field(repr=False)
    #: With ``duration`` and ``kernel_duration`` both answered: what tracing cost the kernel
    #: (derived: the traced launches' CUPTI median less the untraced build's), else None.
    trace_cost: Optional[dict] = None

    def signal(self, name: str) -> Signal:
        if name not in self.signals:
            raise KeyError(f"signal {name!r} was not asked for; asked: {sorted(self.signals)}")
        return self.signals[name]

    def to_json(self) -> str:
        return json.dumps(self.raw, indent=2)

    def to_html(self, path: PathLike, timeline: Optional[PathLike] = None) -> None:
        """Writes the report as one self-contained HTML page (argus.html); ``timeline`` is the
        query's ``--chrome-trace`` file, drawn per SM and warp."""
        from . import html
        trace = json.loads(Path(timeline).read_text()) if timeline else None
        Path(path).write_text(html.render(self.raw, trace))


def query(program: PathLike, *, signals: Sequence[str], kernel: Optional[str] = None,
          region: Optional[str] = None, scope: Optional[str] = None,
          workspace: Optional[PathLike] = None, require_gpu: bool = False,
          ops: Optional[Sequence[str]] = None,
          concurrent_probes: Optional[int] = None,
          derive: Optional[Sequence[str]] = None,
          regions_file: Optional[PathLike] = None) -> Report:
    """Plan, build, run and synthesize a region query; results are kept in the workspace and a
    repeated query reuses them. ``program`` is a spec path, or a version id of ``workspace`` (what
    ``fork`` returned: a Triton kernel is then compiled from the fork's edited .ttgir). Collections that need a GPU the machine lacks are listed in
    ``Report.not_collected`` (or raise with ``require_gpu=True``). ``ops`` names the async op
    sites an ``op_latency`` query probes (op IDs from ``argus ptx discover``);
    ``concurrent_probes`` starts that many probe processes at once per GPU (default: 8, or the
    host's CPU threads if fewer; ``argus query --help`` says how that was checked). ``derive``
    and ``regions_file`` add regions derived without editing the source, as for ``regions``."""
    args = ["query", *_query_args(program, kernel, region, scope, signals, workspace, ops),
            *_derive_args(derive, regions_file), "--json"]
    if require_gpu:
        args.append("--require-gpu")
    if concurrent_probes is not None:
        args += ["--concurrent-probes", str(int(concurrent_probes))]
    # Exit 1: some task failed; the report still says which (failures), so it is returned.
    raw = _run(args, ok_codes=(0, 1))
    sigs = {}
    for name, entry in raw.get("signals", {}).items():
        sigs[name] = Signal(name=name, status=entry.get("status", ""), value=entry.get("value"),
                            unit=entry.get("unit"), qualification=entry.get("qualification"),
                            scope=entry.get("scope"), provenance=entry.get("provenance"),
                            reason=entry.get("reason"), error=entry.get("error"))
    return Report(kernel=raw.get("kernel", ""), region=raw.get("region", ""), signals=sigs,
                  not_collected=raw.get("not_collected", []), failures=raw.get("failures", []),
                  raw=raw, trace_cost=raw.get("trace_cost"))


def fork(version: str, edited: Optional[dict] = None, *, workspace: PathLike,
         label: Optional[str] = None, regions_file: Optional[PathLike] = None) -> str:
    """A new program version derived from ``version`` (e.g. "v3"), with files replaced or added:
    ``edited`` maps a file name in the version (e.g. "kernel.ttgir") to a path or to the new
    text. Edited TTGIR must still parse into regions. ``regions_file`` (docs/regions-file.md)
    becomes part of the fork: queries on it derive those regions. Returns the new version id."""
    args = ["ws", "fork", version, "--workspace", str(workspace), "--json"]
    if label:
        args += ["--label", label]
    if regions_file:
        args += ["--regions-file", str(regions_file)]
    temps = []
    try:
        for name, content in (edited or {}).items():
            path = Path(content) if isinstance(content, os.PathLike) else None
            if path is None and isinstance(content, str) and "\n" not in content and Path(content).is_file():
                path = Path(content)
            if path is None:
                import tempfile
                fd, tmp = tempfile.mkstemp(suffix=Path(name).suffix)
                with os.fdopen(fd, "w") as f:
                    f.write(content)
                temps.append(tmp)
                path = Path(tmp)
            args += ["--file", f"{name}={path}"]
        return _run(args)["id"]
    finally:
        for t in temps:
            os.unlink(t)


def compare(a: str, b: str, *, workspace: PathLike, kernel: Optional[str] = None,
            region: Optional[str] = None, scope: Optional[str] = None,
            derive: Optional[Sequence[str]] = None, regions_file: Optional[PathLike] = None,
            resamples: Optional[int] = None, confidence: Optional[float] = None) -> dict:
    """Two program versions of ``workspace`` (e.g. a baseline and a fork) queried alike, and per
    region the change of the median occurrence duration from ``a`` to ``b`` with a bootstrap
    interval, ``within_noise`` where it holds 0 (``argus compare --json``, argus.compare/1).
    Raises when a side's duration could not be collected (e.g. no GPU), with the reason."""
    args = ["compare", a, b, "--workspace", str(workspace), "--json",
            *_derive_args(derive, regions_file)]
    for flag, value in (("--kernel", kernel), ("--region", region), ("--scope", scope),
                        ("--resamples", resamples), ("--confidence", confidence)):
        if value is not None:
            args += [flag, str(value)]
    return _run(args)


def proton_trace(path: PathLike, *, kernel: Optional[str] = None,
                 workspace: Optional[PathLike] = None, region: Optional[str] = None,
                 scope: Optional[str] = None) -> dict:
    """A trace Proton wrote (``proton.start(..., backend="instrumentation", data="trace")``) as
    Argus region timings: observed, in SM cycles (Proton's nominal frequency undone), scopes as
    regions with the IDs Argus reads from the kernel's TTGIR. With ``workspace`` the trace and the
    timings are kept there. Returns ``argus trace --proton --json``'s document."""
    args = ["trace", "--proton", str(path), "--json"]
    for flag, value in (("--kernel", kernel), ("--workspace", workspace), ("--region", region),
                        ("--scope", scope)):
        if value:
            args += [flag, str(value)]
    return _run(args)


def trace(directory: PathLike, *, trace_map: Optional[PathLike] = None,
          region: Optional[str] = None, scope: Optional[str] = None) -> dict:
    """Region timings from a trace directory that ``libargus_inject.so`` wrote
    (``ARGUS_TRACE_DIR``), decoded with the variant's ``trace_map.json`` (default: the one in the
    directory); ``region`` keeps a subtree, ``scope`` the occurrences of a scope
    (``iter=2..5,role=consumer``). Returns ``argus trace --json``'s document."""
    args = ["trace", str(directory), "--json"]
    for flag, value in (("--trace-map", trace_map), ("--region", region), ("--scope", scope)):
        if value:
            args += [flag, str(value)]
    return _run(args)


def read_artifact(artifact: str, *, workspace: PathLike) -> bytes:
    """The bytes of a workspace artifact ("a12") or of a version's file ("v3:kernel.ttgir")."""
    return _run_bytes(["ws", "cat", str(artifact), "--workspace", str(workspace)])


def dumped_ttgir(workspace: PathLike, kernel: Optional[str] = None,
                 program: Optional[PathLike] = None) -> str:
    """The TTGIR Triton compiled for a Triton program's kernel, as the newest successful dump
    run in ``workspace`` (the first task of a Triton query) kept it: what an optimizer edits and
    passes to ``fork``. ``program`` narrows it to one program: a spec path, or a version id whose
    checkout was queried (``query(version_id, ...)``); default: the newest dump of any."""
    def wanted(target: str) -> bool:
        if program is None:
            return True
        if _is_version_id(str(program)):
            return f"{os.sep}checkouts{os.sep}{program}{os.sep}" in target
        return Path(target).resolve() == Path(program).resolve()

    listing = _run(["ws", "list", "--workspace", str(workspace), "--json"])
    for task in reversed(listing.get("tasks", [])):
        descriptor = task.get("descriptor") or {}
        if task.get("status") != "succeeded" or descriptor.get("executor") != "triton_dump":
            continue
        config = descriptor.get("config") or {}
        if kernel and config.get("kernel") != kernel:
            continue
        if not wanted(config.get("target", "")):
            continue
        for artifact in task.get("outputs", []):
            shown = _run(["ws", "show", artifact, "--workspace", str(workspace), "--json"])
            if ((shown.get("provenance") or {}).get("artifact") or {}).get("kind") == "ttgir":
                return read_artifact(artifact, workspace=workspace).decode()
    raise ArgusError(f"no Triton dump{' of kernel ' + kernel if kernel else ''} in {workspace}: "
                     "query the Triton program first (its dump run needs a GPU)", [], -1)


def versions(workspace: PathLike) -> list:
    """Every version in a workspace (programs, forks and measurement variants)."""
    return _run(["ws", "list", "--workspace", str(workspace), "--json"]).get("versions", [])
