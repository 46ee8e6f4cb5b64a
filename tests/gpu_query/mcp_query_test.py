"""The MCP server on a GPU machine (issue 32): through the SDK's own stdio client, run_query on
examples/tma_gemm's mainloop with duration and inst_executed must answer both (duration with its
top regions by time, inst_executed attributed), a fork plus compare_versions must compare the
two versions region by region, and progress must arrive as notifications.
Usage: python3 mcp_query_test.py ARGUS_BIN OUTDIR (exit 77 without a GPU); the tool answers are
written to OUTDIR/mcp_query.json."""

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "examples" / "tma_gemm" / "argus.yaml"


def have_gpu() -> bool:
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "GPU " in out.stdout


async def call(s, name, args, **kw):
    r = await s.call_tool(name, args, **kw)
    if r.is_error:
        raise AssertionError(f"{name}: {r.content[0].text if r.content else r}")
    return r.structured_content


async def main(argus_bin: str, outdir: Path) -> int:
    env = dict(os.environ, ARGUS_BIN=argus_bin)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), env.get("PYTHONPATH", "")])
    params = StdioServerParameters(command=sys.executable, args=["-m", "argus.mcp"], env=env,
                                   cwd=str(ROOT))
    progress = []

    async def on_progress(value, total, message):
        progress.append(message)

    answers = {}
    with tempfile.TemporaryDirectory() as ws:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                q = await call(s, "run_query", {
                    "program": str(SPEC), "kernel": "tma_gemm", "region": "mainloop",
                    "signals": ["duration", "inst_executed"], "workspace": ws,
                    "require_gpu": True}, progress_callback=on_progress)
                answers["run_query"] = q
                by = {x["name"]: x for x in q["signals"]}
                assert by["duration"]["status"] == "succeeded", by["duration"]
                assert by["duration"]["qualification"] == "observed", by["duration"]
                tops = [r["path"] for r in by["duration"]["top_regions"]]
                assert "mainloop" in tops, tops
                assert by["inst_executed"]["status"] == "succeeded", by["inst_executed"]
                assert by["inst_executed"]["qualification"] == "attributed", by["inst_executed"]
                assert q["failures"] == [], q["failures"]
                assert progress and "done" in progress[-1], progress
                fork = await call(s, "fork_version", {
                    "workspace": ws, "base": q["workspace_version"], "label": "same code"})
                c = await call(s, "compare_versions", {
                    "workspace": ws, "a": q["workspace_version"], "b": fork["id"],
                    "kernel": "tma_gemm", "region": "mainloop"})
                answers["compare_versions"] = c
                assert c["regions"], c
    answers["progress_notifications"] = len(progress)
    (outdir / "mcp_query.json").write_text(json.dumps(answers, indent=2))
    print(f"mcp: run_query answered duration and inst_executed ({len(progress)} progress "
          f"notifications); compare_versions listed {len(c['regions'])} regions")
    return 0


if __name__ == "__main__":
    if not have_gpu():
        print("no GPU (nvidia-smi lists none)")
        sys.exit(77)
    sys.exit(asyncio.run(main(sys.argv[1], Path(sys.argv[2]))))
