#!/usr/bin/python3
"""Plots the memory report (/budget) of a qmlpipe results file.

usage: plot_budget.py RESULTS.h5 OUT.png

Two panels of grouped bars, one group per stage in the order the stages ran:
  left:  predicted peak rise beside the measured RSS peak rise (MiB)
  right: predicted peak beside the tracked peak (MiB); a stage whose two bars differ has
         terms that drifted between the model and the code (see `qmlpipe report`).
Needs h5py and matplotlib (Debian: python3-h5py, python3-matplotlib).
"""
import os
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

MIB = 1024.0 * 1024.0


def mib(value):
    """Bytes to MiB; None for the report's 'unknown' (negative) figures."""
    value = int(value)
    return value / MIB if value >= 0 else None


def read_stages(path):
    """[(name, attrs)] of every stage group under /budget, in the order they ran."""
    with h5py.File(path, "r") as f:
        if "budget" not in f:
            raise SystemExit(f"plot_budget.py: {path} has no /budget group (not a results file?)")
        stages = []
        for key, group in f["budget"].items():
            if not isinstance(group, h5py.Group):
                continue
            attrs = {k: group.attrs[k] for k in group.attrs}
            stages.append((str(attrs.get("stage", key)), attrs))
    stages.sort(key=lambda s: int(s[1].get("index", 0)))
    return stages


def bars(ax, names, left, right, labels, title):
    width = 0.38
    xs = range(len(names))
    for offset, values, label in ((-width / 2, left, labels[0]), (width / 2, right, labels[1])):
        heights = [v if v is not None else 0.0 for v in values]
        rects = ax.bar([x + offset for x in xs], heights, width, label=label)
        for rect, v in zip(rects, values):
            text = f"{v:.1f}" if v is not None else "n/a"
            ax.annotate(text, (rect.get_x() + rect.get_width() / 2, rect.get_height()),
                        ha="center", va="bottom", fontsize=7)
    ax.set_xticks(list(xs))
    ax.set_xticklabels(names, rotation=20, ha="right")
    ax.set_ylabel("MiB")
    ax.set_title(title)
    ax.legend()


def main(argv):
    if len(argv) != 3 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr if len(argv) != 2 else sys.stdout)
        return 0 if len(argv) == 2 and argv[1] in ("-h", "--help") else 2
    path, out = argv[1], argv[2]
    stages = read_stages(path)
    if not stages:
        raise SystemExit(f"plot_budget.py: {path}: /budget holds no stages")
    names = [name for name, _ in stages]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(max(8.0, 2.2 * len(names) + 4.0), 4.8))
    bars(ax1, names,
         [mib(a.get("predicted_peak_rise_bytes", -1)) for _, a in stages],
         [mib(a.get("measured_peak_rise_bytes", -1)) if int(a.get("rss_start_bytes", -1)) >= 0
          else None for _, a in stages],
         ("predicted", "measured (RSS)"), "peak rise in the stage")
    bars(ax2, names,
         [mib(a.get("predicted_peak_bytes", -1)) for _, a in stages],
         [mib(a.get("tracked_peak_bytes", -1)) for _, a in stages],
         ("predicted", "tracked"), "peak of tracked buffers")
    fig.suptitle(f"qmlpipe memory budget: {os.path.basename(path)}")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
