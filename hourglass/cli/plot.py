"""``hourglass inspect TOPIC --plot FILE``: a picture of each partition in time.

x = offset, y = timestamp. Each segment is a box spanning its offsets and its timestamp range
(``segment-<partition>-<base offset>``); time index entries are ticks (``timeindex-<p>``);
records whose CreateTime is below an earlier record's are red crosses (``out-of-order-<p>``);
the retention horizon (now - retention.ms: segments whose largest timestamp is below it are
deleted) is a line (``retention-horizon``, one per partition plot); each segment's
``segment.ms`` roll boundary (first timestamp + segment.ms, KIP-33) is a dotted line
(``segment-ms-<p>-<base offset>``). The ids are SVG element ids, so the picture can be checked.

matplotlib is an optional extra: ``pip install hourglass[plot]``.
"""
from __future__ import annotations

import io
from pathlib import Path


def plot_topic(view, out_path: str, now_ms: int) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Rectangle
    except ImportError as exc:  # pragma: no cover - exercised by users without the extra
        raise RuntimeError("plotting needs matplotlib: pip install 'hourglass[plot]'") from exc
    parts = view.partitions or []
    fig, axes = plt.subplots(max(len(parts), 1), 1, figsize=(10, 3.2 * max(len(parts), 1)), squeeze=False)
    retention_ms = view.configs.get("retention.ms", -1)
    segment_ms = view.configs.get("segment.ms", None)
    for ax, p in zip(axes[:, 0], parts):
        ys = []
        for s in p.segments:
            if s.min_timestamp is None:
                continue
            width = max(s.next_offset - s.base_offset, 1)
            ax.add_patch(Rectangle((s.base_offset, s.min_timestamp), width, max(s.max_timestamp - s.min_timestamp, 1),
                                   fill=True, alpha=0.25, edgecolor="tab:blue", gid=f"segment-{p.partition}-{s.base_offset}"))
            ys += [s.min_timestamp, s.max_timestamp]
            if segment_ms is not None and segment_ms < 1 << 62:
                first_ts = s.min_timestamp
                ax.hlines(first_ts + segment_ms, s.base_offset, s.base_offset + width, colors="tab:gray",
                          linestyles="dotted", gid=f"segment-ms-{p.partition}-{s.base_offset}")
        ticks = [(off, ts) for s in p.segments for ts, off in s.time_index]
        if ticks:
            ax.scatter([o for o, _ in ticks], [t for _, t in ticks], marker="|", s=80, color="black",
                       gid=f"timeindex-{p.partition}", label="time index entries")
        ooo = [(o, t) for s in p.segments for o, t in s.out_of_order]
        if ooo:
            ax.scatter([o for o, _ in ooo], [t for _, t in ooo], marker="x", color="red",
                       gid=f"out-of-order-{p.partition}", label="out-of-order CreateTime")
        if retention_ms is not None and retention_ms >= 0:
            ax.axhline(now_ms - retention_ms, color="tab:orange", linestyle="--", gid="retention-horizon",
                       label="retention horizon")
        if ys:
            lo, hi = min(ys), max(ys)
            pad = max((hi - lo) * 0.1, 1000)
            ax.set_ylim(lo - pad, hi + pad)
        ax.set_xlim(min((s.base_offset for s in p.segments), default=0), max(p.log_end_offset, 1))
        ax.set_title(f"{view.topic}-{p.partition}: offsets {p.log_start_offset}..{p.log_end_offset}")
        ax.set_xlabel("offset")
        ax.set_ylabel("timestamp (ms)")
        if ticks or ooo:
            ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    path = Path(out_path)
    if path.suffix == ".html":
        buf = io.StringIO()
        fig.savefig(buf, format="svg")
        path.write_text(f"<!doctype html><html><head><meta charset='utf-8'><title>{view.topic} in time</title>"
                        f"</head><body>{buf.getvalue()}</body></html>")
    else:
        fig.savefig(path)
    plt.close(fig)
