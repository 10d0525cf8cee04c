#!/usr/bin/python3
"""Plots the memory report (/budget) of a qmlpipe results file.

usage: plot_budget.py RESULTS.h5 OUT.png

One PNG. Top row, two panels of grouped bars, one group per stage in the order the stages ran:
  left:  predicted peak rise beside the measured RSS peak rise (MiB)
  right: predicted peak beside the tracked peak (MiB); a stage whose two bars differ has
         terms that drifted between the model and the code (see `qmlpipe report`).
  third, for a device backend's run (cuda; hostdev in tests): the device's predicted peak
         beside its tracked peak (MiB).
Bottom row, when the file has a timeline (/budget/timeline, written when
memory.sample_interval_ms > 0, the default): RSS and the tracked bytes against time (MiB),
each stage a shaded span between its push and pop with its name, and a dashed segment over
each stage at its predicted RSS peak (overhead + predicted peak). Files without a timeline
get the top row only.
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
            if is_timeline(key, group):
                continue
            attrs = {k: group.attrs[k] for k in group.attrs}
            stages.append((str(attrs.get("stage", key)), attrs))
    stages.sort(key=lambda s: int(s[1].get("index", 0)))
    return stages


def is_timeline(key, group):
    """/budget/timeline: the sampled memory, not a stage (a stage group has a 'stage' attribute)."""
    return key == "timeline" and "stage" not in group.attrs


def read_timeline(path):
    """The columns and the stage spans of /budget/timeline, or None when the file has none."""
    with h5py.File(path, "r") as f:
        group = f.get("budget/timeline")
        if not isinstance(group, h5py.Group) or not is_timeline("timeline", group):
            return None
        timeline = {k: group[k][...] for k in ("t_seconds", "rss_bytes", "tracked_bytes")}
        timeline["interval_ms"] = float(group.attrs.get("interval_ms", float("nan")))
        events = group["events"][...] if "events" in group else []
    spans, open_stages = [], []  # (name, start, end, depth)
    for event in events:
        name, kind = event["stage"].decode(), event["kind"].decode()
        if kind == "push":
            open_stages.append((name, float(event["t_seconds"])))
        elif open_stages:
            name, start = open_stages.pop()
            spans.append((name, start, float(event["t_seconds"]), len(open_stages)))
    end = float(timeline["t_seconds"][-1]) if len(timeline["t_seconds"]) else 0.0
    for depth, (name, start) in enumerate(open_stages):  # never popped: up to the end
        spans.append((name, start, end, depth))
    timeline["spans"] = sorted(spans, key=lambda s: s[1])
    return timeline


def timeline_panel(ax, timeline, stages):
    t = timeline["t_seconds"]
    rss = [v / MIB if v >= 0 else float("nan") for v in timeline["rss_bytes"]]
    ax.plot(t, rss, lw=1.2, color="C0", label="RSS")
    # Tracked bytes change only at allocations: a step from each sample to the next.
    ax.plot(t, timeline["tracked_bytes"] / MIB, lw=1.2, color="C1", drawstyle="steps-post",
            label="tracked bytes")
    predicted = {name: a.get("predicted_peak_absolute_bytes", -1) for name, a in stages}
    t_end = float(t[-1]) if len(t) else 1.0
    labelled = False
    for k, (name, start, end, depth) in enumerate(timeline["spans"]):
        ax.axvspan(start, end, color=f"C{2 + k % 6}", alpha=0.12 if depth == 0 else 0.25, lw=0)
        narrow = (end - start) < 0.08 * t_end
        ax.text(start if narrow else 0.5 * (start + end), 0.02, name, rotation=90 if narrow else 0,
                transform=ax.get_xaxis_transform(), ha="left" if narrow else "center",
                va="bottom", fontsize=7)
        peak = mib(predicted.get(name, -1))
        if peak is not None and peak > 0:
            ax.hlines(peak, start, end, colors="k", linestyles="dashed", lw=0.8,
                      label=None if labelled else "predicted RSS peak (overhead + peak)")
            labelled = True
    ax.set_xlim(0, t_end)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("seconds since the sampler started (just before the first stage)")
    ax.set_ylabel("MiB")
    ax.set_title(f"memory over time ({len(t)} samples, final interval "
                 f"{timeline['interval_ms']:g} ms)")
    ax.legend(loc="center left", fontsize=8)


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
    timeline = read_timeline(path)
    device = any(int(a.get("predicted_device_peak_bytes", 0)) > 0 or
                 int(a.get("device_tracked_peak_bytes", 0)) > 0 for _, a in stages)
    panels = 3 if device else 2
    width = max(8.0, 2.2 * len(names) + 4.0) * panels / 2.0
    if timeline is None:
        fig, axes = plt.subplots(1, panels, figsize=(width, 4.8))
    else:
        fig = plt.figure(figsize=(width, 8.4))
        grid = fig.add_gridspec(2, panels, height_ratios=(1.0, 0.85))
        axes = [fig.add_subplot(grid[0, k]) for k in range(panels)]
        timeline_panel(fig.add_subplot(grid[1, :]), timeline, stages)
    ax1, ax2 = axes[0], axes[1]
    if device:
        bars(axes[2], names,
             [mib(a.get("predicted_device_peak_bytes", -1)) for _, a in stages],
             [mib(a.get("device_tracked_peak_bytes", -1)) for _, a in stages],
             ("predicted", "tracked"), "device: peak of tracked buffers")
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
