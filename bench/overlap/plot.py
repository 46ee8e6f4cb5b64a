#!/usr/bin/env python3
"""Plots argus_overlap's JSON (--json OUT): for every GEMM shape, the predicted and the measured
pipeline time over the (S, R) grid at P = 1 as two heat maps, and predicted against measured for
every configuration, with the model's top 3 and the exhaustive best marked.

    .venv/bin/python bench/overlap/plot.py overlap.json out.png"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def surface(candidates, key, splits, ctas):
    grid = np.full((len(splits), len(ctas)), np.nan)
    for c in candidates:
        if c["P"] == 1 and key in c:
            grid[splits.index(c["S"]), ctas.index(c["R"])] = c[key] / 1e3
    return grid


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    report = json.load(open(argv[1]))
    shapes = report["shapes"]
    fig, axes = plt.subplots(len(shapes), 3, figsize=(13, 3.2 * len(shapes)), squeeze=False)
    for row, shape in enumerate(shapes):
        cands = shape["candidates"]
        splits = sorted({c["S"] for c in cands})
        ctas = sorted({c["R"] for c in cands})
        title = f"{shape['M']}x{shape['N']}x{shape['K']}"
        pred = surface(cands, "predicted_ns", splits, ctas)
        meas = surface(cands, "measured_ns", splits, ctas)
        low, high = np.nanmin([pred, meas]), np.nanmax([pred, meas])
        for col, (grid, what) in enumerate(((pred, "predicted"), (meas, "measured"))):
            ax = axes[row][col]
            im = ax.imshow(grid, cmap="viridis_r", vmin=low, vmax=high, aspect="auto")
            ax.set_xticks(range(len(ctas)), [str(r) for r in ctas])
            ax.set_yticks(range(len(splits)), [str(s) for s in splits])
            ax.set_xlabel("R (communication CTAs)")
            ax.set_ylabel("S (chunks)")
            ax.set_title(f"{title}: {what} µs, P=1")
            for i in range(len(splits)):
                for j in range(len(ctas)):
                    if not np.isnan(grid[i, j]):
                        ax.text(j, i, f"{grid[i, j]:.0f}", ha="center", va="center", fontsize=7,
                                color="white" if grid[i, j] > (low + high) / 2 else "black")
            fig.colorbar(im, ax=ax)
        ax = axes[row][2]
        both = [c for c in cands if "measured_ns" in c]
        x = [c["predicted_ns"] / 1e3 for c in both]
        y = [c["measured_ns"] / 1e3 for c in both]
        ax.scatter(x, y, s=12, c=["tab:blue" if c["P"] == 1 else "tab:orange" for c in both])
        top = [c for c in cands[:3] if "measured_ns" in c]
        ax.scatter([c["predicted_ns"] / 1e3 for c in top], [c["measured_ns"] / 1e3 for c in top],
                   s=60, facecolors="none", edgecolors="red", label="model's top 3")
        best = min(both, key=lambda c: c["measured_ns"])
        ax.scatter([best["predicted_ns"] / 1e3], [best["measured_ns"] / 1e3], marker="*", s=120,
                   c="gold", edgecolors="black", label="exhaustive best")
        lim = [min(x + y) * 0.9, max(x + y) * 1.1]
        ax.plot(lim, lim, "k--", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("predicted µs")
        ax.set_ylabel("measured µs")
        rho = shape.get("validation", {}).get("spearman_predicted_vs_measured")
        ax.set_title(f"{title}: Spearman {rho:.2f}\n(blue P=1, orange P=2)"
                     if rho is not None else title, fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(report.get("what", ""), fontsize=11)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=80)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
