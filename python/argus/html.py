"""A query's report as one self-contained HTML file.

    python -m argus.html REPORT.json [--timeline TRACE.json] -o report.html

REPORT.json is ``argus query --json``'s document (argus.report/1); TRACE.json, optional, the
Chrome timeline ``argus query --chrome-trace`` wrote for the same query. The page needs nothing
at view time (no network, no script): inline CSS and SVG only. It shows, per signal, its status
and qualification (observed, attributed, derived) and what it was computed from (provenance);
durations as the region tree with bars and the per-iteration medians; attributed metrics per
region as bars with their share and ambiguity; op_latency per probed op and iteration; a
timeline per SM and warp from the trace; and what was not collected and why.
"""

from __future__ import annotations

import argparse
import json
import sys
from html import escape
from pathlib import Path
from typing import Any, Optional

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:20px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}td,th{padding:2px 8px;text-align:right}
th{border-bottom:1px solid #999}td.name,th.name{text-align:left;white-space:nowrap}
.q{display:inline-block;padding:0 6px;border-radius:3px;font-size:12px;color:#fff}
.observed{background:#2a7}.attributed{background:#37c}.derived{background:#a5c}
.none{background:#999}.note{color:#666;font-size:12px}.bad{color:#b22}
code{font-size:12px}svg text{font:11px system-ui,sans-serif}
"""

_PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
            "#ff9da7", "#9c755f", "#bab0ac"]


class ReportError(ValueError):
    """Not an argus.report/1 document; the message says what is wrong."""


def _q(qualification: Optional[str]) -> str:
    q = qualification or "none"
    return f'<span class="q {escape(q)}">{escape(q)}</span>'


def _num(v: Any, digits: int = 0) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return "" if v is None else escape(str(v))
    return f"{v:,.{digits}f}"


def _bar(value: float, scale: float, width: int = 220, color: str = "#4e79a7") -> str:
    w = 0 if scale <= 0 else max(1, round(width * value / scale))
    return (f'<svg width="{width}" height="12" role="img"><rect width="{w}" height="12" '
            f'fill="{color}"><title>{_num(value)}</title></rect></svg>')


def _duration(value: dict, unit: str) -> str:
    regions = value.get("regions") or []
    scale = max((r.get("duration", {}).get("total") or 0 for r in regions), default=0)
    rows = []
    for r in regions:
        d = r.get("duration", {})
        depth = r.get("path", "").count("/")
        name = r.get("path", "").rsplit("/", 1)[-1]
        rows.append(f'<tr><td class="name" style="padding-left:{8 + 16 * depth}px">'
                    f'{escape(name)}</td><td>{_num(d.get("count"))}</td>'
                    f'<td>{_num(d.get("mean"))}</td><td>{_num(d.get("median"))}</td>'
                    f'<td>{_num(d.get("p95"))}</td><td>{_num(d.get("total"))}</td>'
                    f'<td>{_bar(d.get("total") or 0, scale)}</td></tr>')
    out = [f'<table class="duration"><tr><th class="name">region</th><th>count</th>'
           f'<th>mean {escape(unit)}</th><th>median</th><th>p95</th><th>total</th><th></th></tr>',
           *rows, "</table>",
           f'<p class="note">launches {_num(value.get("launches"))}, dropped records '
           f'{_num(value.get("dropped"))}</p>']
    for r in regions:
        by_iteration = r.get("by_iteration") or {}
        if len(by_iteration) < 2:
            continue
        items = sorted(((int(k), v.get("median") or 0) for k, v in by_iteration.items()))
        top = max(m for _, m in items) or 1
        bars = "".join(
            f'<rect x="{4 + i * 14}" y="{64 - round(56 * m / top)}" width="10" '
            f'height="{round(56 * m / top)}" fill="#4e79a7"><title>iteration {it}: median '
            f'{_num(m)} {escape(unit)}</title></rect>' for i, (it, m) in enumerate(items))
        out.append(f'<p>{escape(r.get("path", ""))}: median per iteration '
                   f'({items[0][0]}..{items[-1][0]})</p><svg width="{8 + 14 * len(items)}" '
                   f'height="68" role="img">{bars}</svg>')
    return "\n".join(out)


def _attributed(value: dict) -> str:
    regions = value.get("regions") or {}
    if isinstance(regions, list):
        regions = {r.get("path", str(i)): r for i, r in enumerate(regions)}
    # A scalar per region (inst_executed) is one class, named after the signal.
    signal = str(value.get("signal", "value"))
    regions = {name: dict(r, value=r.get("value") if isinstance(r.get("value"), dict)
                          else {signal: r.get("value") or 0})
               for name, r in regions.items() if isinstance(r, dict)}
    classes = sorted({c for r in regions.values() for c in (r.get("value") or {})})
    color = {c: _PALETTE[i % len(_PALETTE)] for i, c in enumerate(classes)}
    totals = {name: sum((r.get("value") or {}).values()) for name, r in regions.items()}
    scale = max(totals.values(), default=0)
    rows = []
    for name, r in sorted(regions.items(), key=lambda kv: -totals[kv[0]]):
        x, parts = 0.0, []
        for c in classes:
            v = (r.get("value") or {}).get(c, 0)
            if not v or scale <= 0:
                continue
            w = 320 * v / scale
            parts.append(f'<rect x="{x:.1f}" width="{max(w, 0.5):.1f}" height="12" '
                         f'fill="{color[c]}"><title>{escape(c)}: {_num(v)}</title></rect>')
            x += w
        amb = r.get("ambiguity") or {}
        rows.append(f'<tr><td class="name">{escape(name)}</td><td>{_num(totals[name])}</td>'
                    f'<td>{_num(100 * (r.get("share") or 0), 1)} %</td>'
                    f'<td>{_num(100 * (amb.get("ambiguous_share") or 0), 1)} %</td>'
                    f'<td><svg width="320" height="12" role="img">{"".join(parts)}</svg></td></tr>')
    legend = " ".join(f'<span style="color:{color[c]}">&#9632;</span> {escape(c)}' for c in classes)
    exact = ("exact" if value.get("exact") else
             "estimate: " + "; ".join(map(str, value.get("estimate_reasons") or [])))
    return (f'<table class="attributed"><tr><th class="name">region</th><th>total '
            f'{escape(str(value.get("unit", "")))}</th><th>share</th><th>ambiguous</th><th></th>'
            f'</tr>{"".join(rows)}</table><p class="note">{legend}</p>'
            f'<p class="note">ownership: {escape(exact)}</p>')


def _op_latency(value: dict) -> str:
    rows = []
    for op in value.get("ops") or []:
        lat, exp = op.get("latency") or {}, op.get("exposed") or {}
        rows.append(f'<tr><td class="name"><code>{escape(str(op.get("op", "")))}</code></td>'
                    f'<td class="name">{escape(str(op.get("kind", "")))}</td>'
                    f'<td>{_num(op.get("iteration"))}</td><td>{_num(lat.get("median"))}</td>'
                    f'<td>{_num(lat.get("min"))}</td><td>{_num(lat.get("max"))}</td>'
                    f'<td>{_num(exp.get("median"))}</td><td>{_num(op.get("joined"))}</td>'
                    f'<td class="name note">{escape(str(op.get("method", "")))}</td></tr>')
    missing = [f'<li>{escape(json.dumps(n))}</li>' for n in
               (value.get("not_probed") or []) + (value.get("failed") or [])]
    return (f'<table class="op_latency"><tr><th class="name">op</th><th class="name">kind</th>'
            f'<th>iteration</th><th>latency median {escape(str(value.get("unit", "")))}</th>'
            f'<th>min</th><th>max</th><th>exposed</th><th>instances</th><th class="name">method'
            f'</th></tr>{"".join(rows)}</table>' +
            (f'<p>not probed or failed:</p><ul>{"".join(missing)}</ul>' if missing else ""))


def _timeline(trace: dict, max_rows: int = 48) -> str:
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X" and e.get("args")]
    if not events:
        return '<p class="note">the timeline holds no region occurrence</p>'
    rows: dict[tuple, list] = {}
    for e in events:
        a = e["args"]
        rows.setdefault((a.get("sm", 0), a.get("cta", 0), a.get("warp", 0)), []).append(e)
    keys = sorted(rows)[:max_rows]
    end = max(e["ts"] + e["dur"] for k in keys for e in rows[k]) or 1
    names = sorted({e["name"] for k in keys for e in rows[k]})
    color = {n: _PALETTE[i % len(_PALETTE)] for i, n in enumerate(names)}
    width, label, h = 900, 150, 14
    parts = []
    for i, k in enumerate(keys):
        y = i * (h + 2)
        parts.append(f'<text x="0" y="{y + 11}">SM {k[0]} CTA {k[1]} warp {k[2]}</text>')
        for e in rows[k]:
            x = label + (width - label) * e["ts"] / end
            w = max((width - label) * e["dur"] / end, 0.5)
            depth = e["name"].count("/")
            parts.append(f'<rect x="{x:.1f}" y="{y + depth * 3}" width="{w:.1f}" '
                         f'height="{h - depth * 3}" fill="{color[e["name"]]}"><title>'
                         f'{escape(e["name"])}: {_num(e["dur"] * 1000)} ns at {_num(e["ts"], 3)}'
                         f' us</title></rect>')
    legend = " ".join(f'<span style="color:{color[n]}">&#9632;</span> {escape(n)}' for n in names)
    more = len(rows) - len(keys)
    return (f'<svg width="{width}" height="{len(keys) * (h + 2)}" role="img" class="timeline">'
            f'{"".join(parts)}</svg><p class="note">{legend}</p>' +
            (f'<p class="note">{more} more warps not drawn</p>' if more > 0 else ""))


def render(report: dict, timeline: Optional[dict] = None) -> str:
    """The HTML page of an argus.report/1 document (and its Chrome timeline, optional)."""
    if not isinstance(report, dict) or not str(report.get("schema", "")).startswith("argus.report/"):
        raise ReportError("not an Argus query report: no `schema: argus.report/1` (give the JSON "
                          "`argus query --json` printed)")
    if report["schema"] != "argus.report/1":
        raise ReportError(f"report schema {report['schema']!r}: this module reads argus.report/1")
    title = f"argus query: {report.get('kernel', '')} {report.get('region') or '(whole kernel)'}"
    body = [f"<h1>{escape(title)}</h1>",
            f'<p>scope <code>{escape(str(report.get("query", {}).get("scope", "all")))}</code>, '
            f'program version <code>{escape(str(report.get("program_version", "")))}</code>, '
            f'workspace version <code>{escape(str(report.get("workspace_version", "")))}'
            f'</code></p>']
    for name, s in (report.get("signals") or {}).items():
        body.append(f'<h2>{escape(name)} {_q(s.get("qualification"))} '
                    f'<span class="note">{escape(str(s.get("unit") or ""))} — '
                    f'{escape(str(s.get("status", "")))}</span></h2>')
        value = s.get("value")
        if value is None:
            why = s.get("reason") or s.get("error") or "no value"
            body.append(f'<p class="bad">not collected: {escape(str(why))}</p>')
            continue
        if name == "duration":
            body.append(_duration(value, str(s.get("unit") or "")))
        elif name == "op_latency":
            body.append(_op_latency(value))
        elif isinstance(value.get("regions"), (dict, list)) and value.get("mapping") is not None:
            body.append(_attributed(value))
        else:
            body.append(f"<pre>{escape(json.dumps(value, indent=1)[:20000])}</pre>")
        if s.get("provenance"):
            body.append(f'<p class="note">provenance: <code>{escape(json.dumps(s["provenance"]))}'
                        f'</code></p>')
    if timeline is not None:
        body += ["<h2>timeline</h2>", _timeline(timeline)]
    if report.get("trace_cost"):
        tc = report["trace_cost"]
        body.append(f'<p>trace cost {_q("derived")}: traced median {_num(tc.get("traced_median"))}'
                    f' ns, untraced {_num(tc.get("untraced_median"))} ns</p>')
    missing = report.get("not_collected") or []
    if missing:
        body.append("<h2>not collected</h2><ul>" + "".join(
            f'<li><code>{escape(str(m.get("task", "")))}</code>: {escape(str(m.get("reason", "")))}'
            f'</li>' for m in missing) + "</ul>")
    failures = report.get("failures") or []
    if failures:
        body.append("<h2>failures</h2><ul>" + "".join(
            f'<li class="bad"><code>{escape(str(f.get("task", "")))}</code>: '
            f'{escape(str(f.get("error", "")))}</li>' for f in failures) + "</ul>")
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}'
            f'</title><style>{_CSS}</style></head><body>{"".join(body)}</body></html>\n')


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m argus.html", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report", help="argus query --json's document")
    parser.add_argument("--timeline", help="the query's --chrome-trace file")
    parser.add_argument("-o", "--output", required=True, help="the HTML file to write")
    args = parser.parse_args(argv)
    try:
        report = json.loads(Path(args.report).read_text())
        timeline = json.loads(Path(args.timeline).read_text()) if args.timeline else None
        page = render(report, timeline)
    except (OSError, json.JSONDecodeError, ReportError) as e:
        print(f"argus.html: {e}", file=sys.stderr)
        return 1
    try:
        Path(args.output).write_text(page)
    except OSError as e:
        print(f"argus.html: cannot write {args.output}: {e.strerror}", file=sys.stderr)
        return 1
    print(f"argus.html: wrote {args.output} ({len(page)} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
