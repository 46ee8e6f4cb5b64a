"""Argus as an agent server over the Model Context Protocol (docs/mcp.md).

    python -m argus.mcp [--regions-dir DIR]        # stdio transport

Built on the official ``mcp`` SDK (``MCPServer``) and on the Python client in this package: every
tool runs the ``argus`` engine and returns a bounded, typed summary of its JSON answer (each
tool has an input and an output JSON Schema). An engine error -- a malformed selector, an unknown
region, a broken region file -- comes back as a tool error whose text is the engine's own message,
never a traceback.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import os
import re
import signal
import subprocess
import typing
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Iterator, Literal, Optional

import anyio
import anyio.to_thread
from pydantic import BaseModel, Field

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent

import argus

__all__ = ["server", "main", "summarize_report", "summarize_regions", "summarize_trace_document",
           "region_file_text"]

# ---------------------------------------------------------------------------------------------
# Output models (their JSON Schemas are the tools' output schemas).


class RegionInfo(BaseModel):
    path: str = Field(description="Region path from the kernel root, e.g. mainloop/tma_load")
    id: str = Field(description="Stable region ID (hash of kernel and path)")
    parent: Optional[str] = Field(None, description="Parent region's ID; null at the top")
    ptx_instructions: Optional[int] = Field(
        None, description="PTX instructions in the region (TTGIR: operations)")
    derived: Optional[str] = Field(
        None, description="The selector a derived region comes from (loops, op:wgmma, ...); "
                          "null for a marked region")
    source: Optional[str] = Field(None, description="file:line of the region's first begin")


class KernelInfo(BaseModel):
    name: str
    demangled: str
    entry: bool
    region_count: int = Field(description="Regions of the kernel in all")
    regions: list[RegionInfo] = Field(description="The first max_regions regions, in tree order")
    omitted_regions: int = Field(0, description="Regions left out by max_regions")
    warnings: list[str] = Field(default_factory=list)


class RegionTreeResult(BaseModel):
    source: str
    representation: str = Field(description="ptx or ttgir/ttir")
    kernels: list[KernelInfo]


class DefineRegionsResult(BaseModel):
    regions_file: str = Field(
        description="Path of the region file written: pass it as regions_file to plan_query, "
                    "run_query, list_kernels or fork_version")
    tree: RegionTreeResult = Field(description="The region tree with the file applied")


class PlanRun(BaseModel):
    partition: int
    task: str
    recipe: str
    variant: str
    key: str


class PlanSeparation(BaseModel):
    first: str
    second: str
    rule: str
    reason: str = Field(description="Why the two collections cannot share a run")


class PlanTask(BaseModel):
    id: str
    type: str
    executor: str
    requirements: list[str] = Field(default_factory=list)
    inputs: list[str] = Field(default_factory=list, description="Tasks this one reads from")


class PlanResult(BaseModel):
    kernel: str
    region: str
    region_id: str
    program_version: str
    subtree: list[str] = Field(description="Regions the query covers")
    answers: dict[str, str] = Field(description="Signal -> the task that answers it")
    runs: list[PlanRun] = Field(description="Collections, grouped into runs (partitions)")
    separations: list[PlanSeparation] = Field(description="Why runs are separate")
    task_count: int
    tasks: list[PlanTask] = Field(description="The first max_tasks tasks of the DAG")
    omitted_tasks: int = 0


class RegionTime(BaseModel):
    path: str
    id: str
    count: int
    mean: Optional[float] = None
    median: Optional[float] = None
    total: Optional[float] = None


class SignalSummary(BaseModel):
    name: str
    status: str = Field(description="succeeded, not collected, failed, ...")
    qualification: Optional[str] = Field(None, description="observed, attributed or derived")
    unit: Optional[str] = None
    scope: Optional[str] = None
    reason: Optional[str] = Field(None, description="Why it was not collected")
    error: Optional[str] = None
    task: Optional[str] = None
    provenance: Optional[dict[str, Any]] = Field(
        None, description="Workspace task and artifact ids (fetch_artifact reads them)")
    top_regions: Optional[list[RegionTime]] = Field(
        None, description="duration: the top_k regions by total time")
    region_count: Optional[int] = Field(None, description="duration: regions in the answer")
    value_scalars: Optional[dict[str, Any]] = Field(
        None, description="The value's top-level numbers, strings and booleans")
    value_shape: Optional[dict[str, str]] = Field(
        None, description="The value's other fields, by size only (not returned)")


class NotCollected(BaseModel):
    task: str
    reason: str


class QuerySummary(BaseModel):
    kernel: str
    region: str
    region_id: str
    program_version: str
    workspace: Optional[str] = Field(None, description="The workspace the results are kept in")
    workspace_version: Optional[str] = Field(
        None, description="The program's version id in the workspace: a fork_version base")
    signals: list[SignalSummary]
    not_collected: list[NotCollected] = Field(description="What did not run and why")
    omitted_not_collected: int = 0
    failures: list[dict[str, Any]]
    run: dict[str, Any] = Field(description="Task counts of the run")
    trace_cost: Optional[dict[str, Any]] = None
    report: Optional[str] = Field(
        None, description="The artifact the workspace kept this report as (a57): "
                          "fetch_artifact reads it, `argus report a57` prints it again")


class ForkResult(BaseModel):
    id: str = Field(description="The new version's id")
    base: str
    workspace: str


class RegionChange(BaseModel):
    path: str
    a_median: Optional[float] = Field(None, description="A's median occurrence duration")
    b_median: Optional[float] = None
    a_count: Optional[int] = None
    b_count: Optional[int] = None
    delta: Optional[float] = Field(None, description="median(B) - median(A)")
    relative: Optional[float] = Field(None, description="delta / median(A)")
    low: Optional[float] = Field(None, description="interval of delta, low end")
    high: Optional[float] = None
    within_noise: Optional[bool] = Field(None, description="the interval holds 0")
    only_in: Optional[str] = Field(None, description="`a` or `b`: the region one side lacks")


class Comparison(BaseModel):
    a: str
    b: str
    kernel: str
    region: str
    unit: str
    regions: list[RegionChange] = Field(description="By |delta| descending, at most max_regions")
    omitted_regions: int = 0
    traced_kernel: Optional[RegionChange] = Field(
        None, description="The traced launches' CUPTI kernel times, when both sides have them")
    method: dict = Field(description="Statistic, interval, resamples, confidence, seed")


class TraceRegion(BaseModel):
    path: str
    id: str
    count: int = Field(description="Occurrences in the trace (after region and scope)")
    median: Optional[float] = Field(None, description="Median occurrence duration, in unit")
    p95: Optional[float] = None
    total: Optional[float] = Field(None, description="Sum of the occurrences' durations")
    share: Optional[float] = Field(
        None, description="total / the top-level regions' summed total (nested regions are "
                          "counted in their parents too)")
    slowest_sm: Optional[str] = Field(None, description="The SM with the highest median")
    slowest_sm_median: Optional[float] = None
    fastest_sm: Optional[str] = None
    fastest_sm_median: Optional[float] = None
    roles: dict[str, float] = Field(default_factory=dict,
                                    description="Median per warp role (at most 8)")
    iterations: dict[str, float] = Field(
        default_factory=dict, description="Median per iteration, the first max_iterations")
    iteration_count: int = Field(0, description="Iterations the region has in all")


class TraceSummary(BaseModel):
    trace: str
    tool: str = Field(description="argus (a trace directory) or proton (a Proton Chrome trace)")
    kernel: str
    unit: str = Field(description="ns, or cycles (SM clock) for clock64 and Proton traces")
    launches: int
    occurrences: int
    dropped: int = Field(description="Records the trace buffers had no room for")
    invalid_records: int = 0
    region_count: int
    regions: list[TraceRegion] = Field(description="The top_k regions by total time")
    omitted_regions: int = 0
    note: Optional[str] = None


def summarize_trace_document(doc: dict, trace: str, top_k: int = 10,
                             max_iterations: int = 8) -> TraceSummary:
    """A bounded summary of ``argus trace --json``: per region its count, median, p95, total and
    share, the slowest and fastest SM, medians per role and the first iterations."""
    d = doc.get("duration") or {}
    source = doc.get("source") or {}
    regions = d.get("regions") or []
    top_total = sum((r.get("duration") or {}).get("total") or 0 for r in regions
                    if r.get("parent") is None)
    out = []
    for r in regions:
        st = r.get("duration") or {}
        tr = TraceRegion(path=r.get("path", ""), id=r.get("id", ""), count=int(st.get("count", 0)),
                         median=st.get("median"), p95=st.get("p95"), total=st.get("total"))
        if top_total and tr.total is not None:
            tr.share = tr.total / top_total
        sms = [(sm, v["median"]) for sm, v in (r.get("by_sm") or {}).items()
               if isinstance(v, dict) and v.get("median") is not None]
        if sms:
            (tr.slowest_sm, tr.slowest_sm_median) = max(sms, key=lambda x: x[1])
            (tr.fastest_sm, tr.fastest_sm_median) = min(sms, key=lambda x: x[1])
        tr.roles = {role or "(none)": v["median"]
                    for role, v in list((r.get("by_role") or {}).items())[:8]
                    if isinstance(v, dict) and v.get("median") is not None}
        its = r.get("by_iteration") or {}
        ordered = sorted(its.items(), key=lambda kv: int(kv[0]) if kv[0].lstrip("-").isdigit()
                         else 0)
        tr.iterations = {k: v["median"] for k, v in ordered[:max(0, max_iterations)]
                         if isinstance(v, dict) and v.get("median") is not None}
        tr.iteration_count = len(its)
        out.append(tr)
    out.sort(key=lambda t: -(t.total or 0))
    kept = out[:max(0, top_k)]
    return TraceSummary(trace=trace, tool=source.get("tool", "argus"),
                        kernel=d.get("kernel", source.get("kernel", "")),
                        unit=d.get("unit", "ns"), launches=int(d.get("launches", 0)),
                        occurrences=int(d.get("occurrences", 0)),
                        dropped=int(d.get("dropped", 0)),
                        invalid_records=int(d.get("invalid_records", 0)),
                        region_count=len(out), regions=kept, omitted_regions=len(out) - len(kept),
                        note=source.get("note"))


def _change(path: str, entry: dict) -> RegionChange:
    a, b, c = entry.get("a") or {}, entry.get("b") or {}, entry.get("change") or {}
    return RegionChange(path=path, a_median=a.get("median"), b_median=b.get("median"),
                        a_count=a.get("count"), b_count=b.get("count"), delta=c.get("delta"),
                        relative=c.get("relative"), low=c.get("low"), high=c.get("high"),
                        within_noise=c.get("within_noise"), only_in=entry.get("only_in"))


class ArtifactText(BaseModel):
    artifact: str
    total_bytes: int
    offset: int
    returned_bytes: int
    truncated: bool
    binary: bool = Field(description="The bytes are not UTF-8 text (shown with replacements)")
    text: str
    note: Optional[str] = None


class RegionSpec(BaseModel):
    """One entry of a region file (docs/regions-file.md)."""

    name: Optional[str] = Field(
        None, description="Region name ([A-Za-z_][A-Za-z0-9_.-]*); optional with select")
    select: Optional[str] = Field(
        None, description="Selector: loops, loop:[FILE:]LINE, op:KIND, func:NAME, "
                          "lines:[FILE:]A-B")
    refine: Optional[str] = Field(
        None, description="A marked region's path to split into parts (top level only)")
    children: list["RegionSpec"] = Field(
        default_factory=list, description="Regions selected within this one's instructions")


# ---------------------------------------------------------------------------------------------
# Summaries (pure functions of the engine's JSON; tested without the server).


def _source(region: dict) -> Optional[str]:
    begins = region.get("begins") or []
    src = (begins[0].get("source") if begins else None) or {}
    if not src.get("file"):
        return None
    return f"{Path(src['file']).name}:{src.get('line')}"


def summarize_regions(doc: dict, max_regions: int = 200) -> RegionTreeResult:
    """``argus regions --json`` bounded to ``max_regions`` regions per kernel."""
    kernels = []
    for k in doc.get("kernels", []):
        regions = k.get("regions", [])
        kept = [RegionInfo(path=r["path"], id=r["id"], parent=r.get("parent"),
                           ptx_instructions=r.get("ptx_instructions"), derived=r.get("derived"),
                           source=_source(r)) for r in regions[:max(0, max_regions)]]
        warnings = [f"line {w.get('ptx_line')}: {w.get('message')}" for w in k.get("warnings", [])]
        kernels.append(KernelInfo(name=k["name"], demangled=k.get("demangled", k["name"]),
                                  entry=bool(k.get("entry")), region_count=len(regions),
                                  regions=kept, omitted_regions=len(regions) - len(kept),
                                  warnings=warnings[:20]))
    return RegionTreeResult(source=doc.get("source", ""),
                            representation=doc.get("representation", ""), kernels=kernels)


def _shape(v: Any) -> str:
    if isinstance(v, list):
        return f"list of {len(v)}"
    if isinstance(v, dict):
        return f"object of {len(v)} fields"
    return type(v).__name__


def _signal_summary(name: str, entry: dict, top_k: int) -> SignalSummary:
    s = SignalSummary(name=name, status=entry.get("status", ""),
                      qualification=entry.get("qualification"), unit=entry.get("unit"),
                      scope=entry.get("scope"), reason=entry.get("reason"),
                      error=entry.get("error"), task=entry.get("task"),
                      provenance=entry.get("provenance"))
    value = entry.get("value")
    if not isinstance(value, dict):
        if value is not None:
            s.value_shape = {"value": _shape(value)}
        return s
    scalars, shape = {}, {}
    for key, v in value.items():
        if isinstance(v, (int, float, str, bool)) or v is None:
            if not isinstance(v, str) or len(v) <= 200:
                scalars[key] = v
                continue
        shape[key] = _shape(v)
    if name == "duration" and isinstance(value.get("regions"), list):
        times = []
        for r in value["regions"]:
            d = r.get("duration") or {}
            times.append(RegionTime(path=r.get("path", ""), id=r.get("id", ""),
                                    count=int(d.get("count", 0)), mean=d.get("mean"),
                                    median=d.get("median"), total=d.get("total")))
        times.sort(key=lambda t: -(t.total if t.total is not None
                                   else (t.mean or 0) * t.count))
        s.top_regions = times[:max(0, top_k)]
        s.region_count = len(times)
    s.value_scalars, s.value_shape = scalars, shape
    return s


def summarize_report(raw: dict, top_k: int = 10, workspace: Optional[str] = None,
                     max_not_collected: int = 50) -> QuerySummary:
    """A bounded summary of an ``argus.report/1`` document: never the raw records."""
    nc = [NotCollected(task=n.get("task", ""), reason=n.get("reason", ""))
          for n in raw.get("not_collected", [])]
    return QuerySummary(
        kernel=raw.get("kernel", ""), region=raw.get("region", ""),
        region_id=raw.get("region_id", ""), program_version=raw.get("program_version", ""),
        workspace=workspace or (raw.get("query") or {}).get("workspace") or None,
        workspace_version=raw.get("workspace_version"),
        signals=[_signal_summary(n, e, top_k) for n, e in raw.get("signals", {}).items()],
        not_collected=nc[:max_not_collected],
        omitted_not_collected=max(0, len(nc) - max_not_collected),
        failures=raw.get("failures", []), run=raw.get("run", {}),
        trace_cost=raw.get("trace_cost"))


def _plan_result(doc: dict, max_tasks: int) -> PlanResult:
    tasks = (doc.get("plan") or {}).get("tasks", [])
    kept = [PlanTask(id=t["id"], type=t.get("type", ""), executor=t.get("executor", ""),
                     requirements=t.get("requirements", []),
                     inputs=sorted({i.get("task", "") for i in t.get("inputs", [])}))
            for t in tasks[:max(0, max_tasks)]]
    return PlanResult(
        kernel=doc.get("kernel", ""), region=doc.get("region", ""),
        region_id=doc.get("region_id", ""), program_version=doc.get("program_version", ""),
        subtree=doc.get("subtree", []), answers=doc.get("answers", {}),
        runs=[PlanRun(**{k: c.get(k) for k in ("partition", "task", "recipe", "variant", "key")})
              for c in doc.get("collections", [])],
        separations=[PlanSeparation(**{k: s.get(k, "") for k in ("first", "second", "rule",
                                                                 "reason")})
                     for s in doc.get("separations", [])],
        task_count=len(tasks), tasks=kept, omitted_tasks=len(tasks) - len(kept))


def _region_entry(spec: RegionSpec) -> dict:
    out: dict[str, Any] = {}
    if spec.name is not None:
        out["name"] = spec.name
    if spec.select is not None:
        out["select"] = spec.select
    if spec.refine is not None:
        out["refine"] = spec.refine
    if spec.children:
        out["regions"] = [_region_entry(c) for c in spec.children]
    return out


def _yaml(value: Any, indent: int) -> list[str]:
    """Block-style YAML with JSON-quoted scalars (a JSON string is a YAML double-quoted one)."""
    pad = " " * indent
    lines = []
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, (dict, list)) and v:
                lines.append(f"{pad}{k}:")
                lines += _yaml(v, indent + 2)
            else:
                lines.append(f"{pad}{k}: {json.dumps(v)}")
    else:
        for item in value:
            if not isinstance(item, (dict, list)):
                lines.append(f"{pad}- {json.dumps(item)}")
                continue
            sub = _yaml(item, indent + 2)
            lines.append(f"{pad}- {sub[0].lstrip()}" if sub else f"{pad}- {{}}")
            lines += sub[1:]
    return lines


def region_file_text(regions: list[RegionSpec], kernel: Optional[str] = None,
                     derive: Optional[list[str]] = None, fmt: str = "yaml") -> str:
    """The region file (docs/regions-file.md) for a structured body."""
    doc: dict[str, Any] = {"argus_regions": 1}
    if kernel:
        doc["kernel"] = kernel
    if derive:
        doc["derive"] = list(derive)
    doc["regions"] = [_region_entry(r) for r in regions]
    if fmt == "json":
        return json.dumps(doc, indent=2) + "\n"
    if not doc["regions"]:
        return "\n".join(_yaml({k: v for k, v in doc.items() if k != "regions"}, 0)) + \
            "\nregions: []\n"
    return "\n".join(_yaml(doc, 0)) + "\n"


# ---------------------------------------------------------------------------------------------
# The server.

INSTRUCTIONS = """Argus measures GPU kernels around named regions. Start with list_kernels on a
program spec (argus.yaml), .cu, .ptx or .ttgir to see its region tree; define_regions adds
regions without editing the source (loops, operations, line ranges); plan_query shows what a
query would compile and run and why runs are separate; run_query answers it (a bounded summary:
drill down with fetch_artifact on the provenance ids); fork_version makes an edited program
version to query again. Errors are the engine's own messages: they name the place and the fix."""

server = MCPServer("argus", instructions=INSTRUCTIONS)

_REGIONS_DIR: Optional[Path] = None  # --regions-dir / $ARGUS_MCP_REGIONS_DIR; None: beside target


@contextmanager
def _engine_errors() -> Iterator[None]:
    """Engine and input errors become tool errors carrying their message, never a traceback."""
    try:
        yield
    except ToolError:
        raise
    except argus.ArgusError as e:
        raise ToolError(e.message) from None
    except Exception as e:  # noqa: BLE001 -- a message for the model, not a traceback
        raise ToolError(f"{type(e).__name__}: {e}") from None


def _tool(fn):
    """Registers ``fn`` (an async function returning one of the models above) as a tool whose
    output schema is that model's. Its answer goes out as structured content with the same JSON,
    compact, as text; an error as ``is_error`` with the message alone (the engine's own, without
    the SDK's "Error executing tool" prefix)."""
    hints = typing.get_type_hints(fn, include_extras=True)
    returns = Annotated[CallToolResult, hints["return"]]

    @functools.wraps(fn)
    async def wrapper(*args, **kwargs):
        try:
            with _engine_errors():
                answer = await fn(*args, **kwargs)
        except ToolError as e:
            return CallToolResult(content=[TextContent(type="text", text=str(e))], is_error=True)
        return CallToolResult(content=[TextContent(type="text", text=answer.model_dump_json())],
                              structured_content=answer.model_dump(mode="json"))

    signature = inspect.signature(fn)
    wrapper.__signature__ = signature.replace(
        parameters=[p.replace(annotation=hints[p.name]) for p in signature.parameters.values()],
        return_annotation=returns)
    wrapper.__annotations__ = {**hints, "return": returns}
    server.add_tool(wrapper, name=fn.__name__, description=inspect.getdoc(fn))
    return fn


async def _call(fn, *args, **kwargs):
    """A blocking client call in a worker thread, so the server keeps answering meanwhile."""
    with _engine_errors():
        return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))


Target = Annotated[str, Field(description="A program spec (argus.yaml), .cu, .ptx or Triton "
                                          ".ttgir/.ttir file; relative to the server's folder")]
Derive = Annotated[Optional[list[str]], Field(
    description="Derived-region selectors, e.g. [\"loops\", \"ops\"], [\"op:wgmma\"], "
                "[\"loop:kernel.cu:42\"], [\"lines:kernel.cu:10-20\"] (docs/regions-file.md)")]
RegionsFile = Annotated[Optional[str], Field(
    description="A region file (YAML or JSON), e.g. the path define_regions returned")]
Program = Annotated[str, Field(
    description="A program spec path (argus.yaml, .cu, .ptx), or a workspace version id "
                "(\"v5\", e.g. from fork_version; then give workspace)")]
Signals = Annotated[list[str], Field(
    min_length=1, description="Signals, e.g. [\"duration\"], [\"inst_mix\", \"stall_reasons\"], "
                              "[\"op_latency\"] (`argus recipes` lists them)")]
Kernel = Annotated[Optional[str], Field(description="Kernel name (default: the only kernel)")]
Region = Annotated[Optional[str], Field(
    description="Region path (mainloop, main/body) or ID; covers its subtree")]
Scope = Annotated[Optional[str], Field(
    description="Occurrences to measure: role, warp, warpgroup, iter, sm, cta, launch; "
                "e.g. role=producer,iter=0..7")]
Workspace = Annotated[Optional[str], Field(
    description="Workspace directory (default: .argus beside the program)")]
Ops = Annotated[Optional[list[str]], Field(
    description="op_latency: op IDs to probe (default every op site in the region's subtree)")]


@_tool
async def list_kernels(
        target: Target, derive: Derive = None, regions_file: RegionsFile = None,
        max_regions: Annotated[int, Field(ge=0, description="Regions listed per kernel at "
                                                            "most")] = 200,
) -> RegionTreeResult:
    """The kernels of a program and their region trees (path, id, PTX instruction count, the
    selector of a derived region), at most max_regions per kernel with a count of the rest."""
    doc = await _call(argus.regions, target, derive=derive, regions_file=regions_file)
    return summarize_regions(doc, max_regions)


@_tool
async def define_regions(
        target: Target,
        regions: Annotated[list[RegionSpec], Field(
            description="The region file's regions: each with select (a new region) or refine "
                        "(a marked region's path, top level only), optional name and "
                        "children")],
        kernel: Annotated[Optional[str], Field(
            description="Only kernels whose mangled name contains this")] = None,
        derive: Annotated[Optional[list[str]], Field(
            description="Selectors derived first, as list_kernels' derive")] = None,
        name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$",
                                   description="File name without extension")] = "regions",
        format: Annotated[Literal["yaml", "json"], Field(description="File format")] = "yaml",
        max_regions: Annotated[int, Field(ge=0)] = 200,
) -> DefineRegionsResult:
    """Writes a region file (docs/regions-file.md) into the server's region folder (default
    .argus/regions/ beside the target), checks it by reading the target's regions with it, and
    returns its path and the resulting tree. A file the engine refuses stays written (its
    message names the file's line and column) and the call is an error with that message."""
    with _engine_errors():
        folder = _REGIONS_DIR or Path(target).resolve().parent / ".argus" / "regions"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.{format}"
        path.write_text(region_file_text(regions, kernel, derive, format))
    doc = await _call(argus.regions, target, regions_file=path)
    return DefineRegionsResult(regions_file=str(path), tree=summarize_regions(doc, max_regions))


@_tool
async def plan_query(
        program: Program, signals: Signals, kernel: Kernel = None, region: Region = None,
        scope: Scope = None, derive: Derive = None, regions_file: RegionsFile = None,
        workspace: Workspace = None, ops: Ops = None,
        max_tasks: Annotated[int, Field(ge=0, description="Tasks listed at most")] = 100,
) -> PlanResult:
    """The plan Argus would run for a query (nothing runs): the collections grouped into runs,
    why runs are separate (each pair's rule and reason), and the task DAG."""
    doc = await _call(argus.plan, program, signals=signals, kernel=kernel, region=region,
                      scope=scope, ops=ops, workspace=workspace, derive=derive,
                      regions_file=regions_file)
    return _plan_result(doc, max_tasks)


_PROGRESS = re.compile(r"^argus: (\d+)/(\d+) done")


def _progress_token(ctx: Context) -> Any:
    try:
        meta = ctx.request_context.meta or {}
    except (ValueError, AttributeError):
        return None
    return meta.get("progress_token") or meta.get("progressToken")


# The engine's last stderr line of a query: `argus: query: report kept as a57 (...)`.
_REPORT_KEPT = re.compile(r"report kept as (a[0-9]+)")


def _kept_report(stderr: str) -> Optional[str]:
    """The artifact id the engine says it kept the query's report as, if it says so."""
    found = _REPORT_KEPT.findall(stderr)
    return found[-1] if found else None


async def _stream_progress(args: list[str], ctx: Context) -> tuple[dict, Optional[str]]:
    """Runs ``argus query ... --json --progress`` once: forwards every progress line the engine
    prints on stderr as an MCP progress notification, and returns the report from stdout (exit
    1, some task failed, still has one) with the artifact id it was kept as; another exit is the
    engine's error."""
    last = -1.0
    command = [argus.engine(), *args]
    process = await anyio.open_process(command, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = bytearray()
    other: list[str] = []  # stderr lines that are not progress: the engine's messages

    async def read_stdout() -> None:
        assert process.stdout is not None
        async for chunk in process.stdout:
            out.extend(chunk)

    async def read_stderr() -> None:
        nonlocal last
        buffer = b""
        assert process.stderr is not None
        async for chunk in process.stderr:
            buffer += chunk
            *lines, buffer = re.split(rb"[\r\n]", buffer)
            for raw in lines:
                line = raw.decode(errors="replace").strip()
                m = _PROGRESS.match(line)
                if not m:
                    if line:
                        other.append(line)
                    continue
                done, total = float(m.group(1)), float(m.group(2))
                # Progress must increase: a line that does not finish a task (one starting)
                # moves it a little.
                value = max(done, last + 0.001)
                last = value
                await ctx.report_progress(value, max(total, value), line[len("argus: "):])
        if buffer.strip():
            other.append(buffer.decode(errors="replace").strip())

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_stdout)
            tg.start_soon(read_stderr)
        await process.wait()
    finally:
        if process.returncode is None:  # cancelled: let the engine clean up, then stop it
            with anyio.CancelScope(shield=True):
                process.send_signal(signal.SIGINT)
                with anyio.move_on_after(10):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()
    stdout = out.decode(errors="replace")
    if process.returncode not in (0, 1):
        message = "\n".join(l[len("argus: "):] if l.startswith("argus: ") else l for l in other)
        raise argus.ArgusError(message or stdout.strip() or f"exit {process.returncode}",
                               command, process.returncode, stdout)
    try:
        return json.loads(stdout), _kept_report("\n".join(other))
    except json.JSONDecodeError as e:
        raise argus.ArgusError(f"the engine's output is not JSON ({e}): {stdout[:200]!r}",
                               command, process.returncode, stdout) from None


def _query_summary(raw_args: list[str], top_k: int, workspace: Optional[str]) -> QuerySummary:
    proc = argus._engine_run(raw_args, ok_codes=(0, 1))
    stdout = proc.stdout.decode(errors="replace")
    try:
        raw = json.loads(stdout)
    except json.JSONDecodeError as e:
        raise argus.ArgusError(f"the engine's output is not JSON ({e}): {stdout[:200]!r}",
                               proc.args, proc.returncode, stdout) from None
    summary = summarize_report(raw, top_k, workspace)
    summary.report = _kept_report(proc.stderr.decode(errors="replace"))
    return summary


@_tool
async def run_query(
        program: Program, signals: Signals, ctx: Context, kernel: Kernel = None,
        region: Region = None, scope: Scope = None, derive: Derive = None,
        regions_file: RegionsFile = None, workspace: Workspace = None, ops: Ops = None,
        require_gpu: Annotated[bool, Field(
            description="Fail when a GPU collection could not run on this machine")] = False,
        top_k: Annotated[int, Field(ge=0, description="duration: regions listed, by total "
                                                      "time")] = 10,
) -> QuerySummary:
    """Runs a region query (plan, build, run, synthesize; results kept in the workspace, a
    repeated query reuses them) and returns a bounded summary: per signal its status,
    qualification and unit, for duration the top_k regions by time, what was not collected and
    why, failures, and the provenance ids fetch_artifact reads. Never the raw records.
    Progress: with a progress token, the engine's progress lines arrive as notifications."""
    with _engine_errors():
        args = ["query", *argus._query_args(program, kernel, region, scope, signals, workspace,
                                            ops),
                *argus._derive_args(derive, regions_file)]
        if workspace is None and not argus._is_version_id(program):
            ws = str(Path(program).resolve().parent / ".argus")
        else:
            ws = workspace
    json_args = [*args, "--json"] + (["--require-gpu"] if require_gpu else [])
    if _progress_token(ctx) is not None:
        # One run: the report on stdout, the progress lines on stderr (--progress).
        with _engine_errors():
            raw, kept = await _stream_progress([*json_args, "--progress"], ctx)
        summary = summarize_report(raw, top_k, ws)
        summary.report = kept
        return summary
    return await _call(_query_summary, json_args, top_k, ws)


@_tool
async def fork_version(
        workspace: Annotated[str, Field(description="Workspace directory")],
        base: Annotated[str, Field(description="Version id to fork, e.g. v1 "
                                               "(run_query's workspace_version)")],
        files: Annotated[Optional[dict[str, str]], Field(
            description="File name in the version (e.g. kernel.ttgir) -> a path to a file, or "
                        "the new text itself")] = None,
        label: Annotated[Optional[str], Field(description="A label for the version")] = None,
        regions_file: Annotated[Optional[str], Field(
            description="A region file (define_regions' regions_file) that becomes part of the "
                        "fork: queries on it derive those regions without a source edit")] = None,
) -> ForkResult:
    """A new program version derived from base with files replaced or added (edited TTGIR must
    still parse into regions) and optionally a region file; query it with program=<the new id>
    and the same workspace."""
    new = await _call(argus.fork, base, files or {}, workspace=workspace, label=label,
                      regions_file=regions_file)
    return ForkResult(id=new, base=base, workspace=workspace)


@_tool
async def compare_versions(
        workspace: Annotated[str, Field(description="Workspace directory holding both")],
        a: Annotated[str, Field(description="The baseline version id, e.g. v1")],
        b: Annotated[str, Field(description="The candidate version id, e.g. a fork v2")],
        kernel: Kernel = None, region: Region = None, scope: Scope = None,
        derive: Derive = None, regions_file: RegionsFile = None,
        max_regions: Annotated[int, Field(ge=1, description="Regions listed at most")] = 20,
) -> Comparison:
    """Queries both versions alike (reusing the workspace's results) and compares them region
    by region: the change of the median occurrence duration from A to B with a bootstrap
    interval, within_noise where the interval holds 0. What an optimization loop asks after each
    candidate. Needs both versions' traces (a GPU run)."""
    doc = await _call(argus.compare, a, b, workspace=workspace, kernel=kernel, region=region,
                      scope=scope, derive=derive, regions_file=regions_file)
    d = doc.get("duration", {})
    changes = [_change(r.get("path", ""), r) for r in d.get("regions", [])]
    changes.sort(key=lambda c: -abs(c.delta) if c.delta is not None else 0)
    tk = d.get("traced_kernel")
    return Comparison(a=a, b=b, kernel=doc.get("kernel", ""), region=doc.get("region", ""),
                      unit=d.get("unit", "ns"), regions=changes[:max_regions],
                      omitted_regions=max(0, len(changes) - max_regions),
                      traced_kernel=_change("traced kernel", tk) if tk else None,
                      method=d.get("method", {}))


@_tool
async def fetch_artifact(
        workspace: Annotated[str, Field(description="Workspace directory")],
        artifact: Annotated[str, Field(description="An artifact id (a12, from a provenance) or "
                                                   "a version's file (v3:kernel.ttgir)")],
        max_bytes: Annotated[int, Field(ge=1, description="Bytes returned at most")] = 65536,
        offset: Annotated[int, Field(ge=0, description="First byte returned")] = 0,
) -> ArtifactText:
    """The bytes of a workspace artifact or version file as text, truncated to max_bytes from
    offset with a note saying how to read on."""
    data = await _call(argus.read_artifact, artifact, workspace=workspace)
    part = data[offset:offset + max_bytes]
    try:
        text, binary = part.decode(), b"\0" in part
    except UnicodeDecodeError as e:
        # A cut through a multi-byte character at the end is still text.
        binary = e.start < len(part) - 3
        text = part.decode(errors="replace")
    end = offset + len(part)
    note = None
    if end < len(data):
        note = f"truncated: bytes {offset}..{end} of {len(data)}; call again with offset={end}"
    return ArtifactText(artifact=artifact, total_bytes=len(data), offset=offset,
                        returned_bytes=len(part), truncated=end < len(data), binary=binary,
                        text=text, note=note)


@_tool
async def summarize_trace(
        trace: Annotated[str, Field(
            description="A trace directory libargus_inject.so wrote (ARGUS_TRACE_DIR), or a "
                        "Proton Chrome trace file (instrumentation backend, data=\"trace\")")],
        trace_map: Annotated[Optional[str], Field(
            description="A directory's trace_map.json (default: the one inside it)")] = None,
        kernel: Annotated[Optional[str], Field(
            description="Proton: the kernel (default: the trace's only one)")] = None,
        region: Region = None, scope: Scope = None,
        top_k: Annotated[int, Field(ge=0, description="Regions returned at most")] = 10,
        max_iterations: Annotated[int, Field(
            ge=0, description="Per-iteration medians returned per region at most")] = 8,
) -> TraceSummary:
    """A trace's region timings, bounded: the top_k regions by total time with count, median,
    p95, total and share of the kernel's regions, the slowest and fastest SM, medians per warp
    role and per iteration; launches, occurrences and dropped records. Never the records."""
    path = Path(trace)
    if not path.exists():
        raise ToolError(f"{trace} does not exist: give an ARGUS_TRACE_DIR of a traced run or a "
                        "Proton Chrome trace file")
    if path.is_dir():
        if kernel:
            raise ToolError("kernel is for a Proton trace; a trace directory's kernels come "
                            "from its trace_map.json")
        doc = await _call(argus.trace, path, trace_map=trace_map, region=region, scope=scope)
    else:
        if trace_map:
            raise ToolError(f"{trace} is a file, so it is read as a Proton trace, which has no "
                            "trace_map; give a trace directory to use one")
        doc = await _call(argus.proton_trace, path, kernel=kernel, region=region, scope=scope)
    return summarize_trace_document(doc, trace, top_k, max_iterations)


def main(argv: Optional[list[str]] = None) -> None:
    global _REGIONS_DIR
    p = argparse.ArgumentParser(prog="python -m argus.mcp",
                                description="Argus MCP server (stdio transport)")
    p.add_argument("--regions-dir", default=os.environ.get("ARGUS_MCP_REGIONS_DIR"),
                   help="Folder define_regions writes region files into (default: "
                        ".argus/regions/ beside each target; env ARGUS_MCP_REGIONS_DIR)")
    a = p.parse_args(argv)
    _REGIONS_DIR = Path(a.regions_dir).resolve() if a.regions_dir else None
    server.run("stdio")


if __name__ == "__main__":
    main()
