"""Draw who owned which partition when: one lane per topic-partition, one colour per member.

The input is what consumer actors record (``c.timeline.remote()``): per member, events
``{"t": seconds, "event": "assigned"|"revoked"|"lost", "partitions": [(topic, p), ...],
"epoch": int}``. A partition is owned from the ``assigned`` event that gives it to a member
until the ``revoked`` or ``lost`` event that takes it away (or the end of the picture).
Rebalances are drawn as vertical lines labelled with their reason; they may carry ``t``
(seconds, the consumers' clock) or ``time_ms`` (a ``rebalances`` table row: the coordinator's
clock, ``time.monotonic()`` in milliseconds, which is the consumers' clock on one machine).

Rendering uses matplotlib's Agg canvas directly (no pyplot), so it changes no global backend
and works in headless workers.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

TopicPartition = tuple[str, int]

# Bounds: the picture stays legible and its size finite however long the run.
MAX_FIGURE_HEIGHT_IN = 40.0
LANE_HEIGHT_IN = 0.25
MAX_REBALANCE_LABELS = 40
MAX_LEGEND_MEMBERS = 30
MEMBER_LABEL_CHARS = 10
MIN_BAR_S = 1e-3  # an ownership shorter than this is still drawn
# Open ownerships run this far past the last event (a fraction of the span, at least 0.5 s).
END_PADDING = 0.05
MIN_END_PADDING_S = 0.5


@dataclass(frozen=True)
class Bar:
    member: str
    partition: TopicPartition
    start_s: float
    end_s: float


@dataclass(frozen=True)
class TimelineSummary:
    """What was drawn: for tests and captions."""

    path: str
    lanes: tuple[TopicPartition, ...]  # top to bottom
    members: tuple[str, ...]
    bars: tuple[Bar, ...]
    rebalances: int
    t0_s: float  # the time drawn as 0 (the consumers' clock)


def ownership_bars(timelines: Mapping[str, Iterable[Mapping]],
                   end_s: float | None = None) -> list[Bar]:
    """Each member's ownership intervals; ones still open close at ``end_s`` (default: the
    last event seen)."""
    events = {mid: sorted(evs, key=lambda e: e["t"]) for mid, evs in timelines.items()}
    last = max((e["t"] for evs in events.values() for e in evs), default=0.0)
    end = last if end_s is None else max(end_s, last)
    bars: list[Bar] = []
    for mid, evs in events.items():
        since: dict[TopicPartition, float] = {}
        for e in evs:
            tps = [_tp(tp) for tp in e.get("partitions", ())]
            if e["event"] == "assigned":
                for tp in tps:
                    since.setdefault(tp, e["t"])
            elif e["event"] in ("revoked", "lost"):
                for tp in tps:
                    if tp in since:
                        bars.append(Bar(mid, tp, since.pop(tp), e["t"]))
        bars += [Bar(mid, tp, t, end) for tp, t in since.items()]
    return sorted(bars, key=lambda b: (b.partition, b.start_s, b.member))


def draw_timeline(timelines: Mapping[str, Iterable[Mapping]], out_path: str | os.PathLike,
                  rebalances: Iterable[Mapping] | None = None,
                  title: str | None = None, end_s: float | None = None) -> TimelineSummary:
    """Write a PNG of partition ownership over time to ``out_path``; return what it shows.

    Ownerships still open end at ``end_s`` (e.g. ``time.monotonic()`` when the timelines were
    read); by default a little after the last event, so a final assignment stays visible.
    """
    timelines = {mid: list(evs) for mid, evs in timelines.items()}
    marks = [(_seconds(r), str(r.get("reason") or "")) for r in (rebalances or ())]
    times = [e["t"] for evs in timelines.values() for e in evs] + [t for t, _ in marks]
    t0 = min(times, default=0.0)
    if end_s is None:
        last = max(times, default=0.0)
        end_s = last + max(END_PADDING * (last - t0), MIN_END_PADDING_S)
    bars = ownership_bars(timelines, end_s)
    lanes = tuple(sorted(
        {_tp(tp) for evs in timelines.values() for e in evs for tp in e.get("partitions", ())}
    ))
    members = tuple(sorted(timelines))

    height = min(MAX_FIGURE_HEIGHT_IN, 1.5 + LANE_HEIGHT_IN * max(1, len(lanes)))
    fig = Figure(figsize=(12, height), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    colors = _member_colors(members)
    row = {tp: i for i, tp in enumerate(lanes)}
    segments: dict[tuple[str, TopicPartition], list[tuple[float, float]]] = {}
    for b in bars:
        segments.setdefault((b.member, b.partition), []).append(
            (b.start_s - t0, max(b.end_s - b.start_s, MIN_BAR_S))
        )
    for (mid, tp), segs in segments.items():
        ax.broken_barh(segs, (row[tp] - 0.4, 0.8), facecolors=colors[mid])
    _draw_rebalances(ax, [(t - t0, reason) for t, reason in sorted(marks)])
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels([f"{t}-{p}" for t, p in lanes], fontsize=7)
    ax.set_ylim(len(lanes) - 0.5 if lanes else 0.5, -0.5)
    ax.set_xlabel("seconds")
    ax.set_ylabel("topic-partition")
    ax.set_title(title or f"partition ownership: {len(members)} members, {len(lanes)} partitions")
    _legend(ax, members, colors)
    fig.tight_layout()
    fig.savefig(out_path, format="png")
    return TimelineSummary(str(out_path), lanes, members, tuple(bars), len(marks), t0)


def _draw_rebalances(ax, marks: list[tuple[float, str]]) -> None:
    for i, (x, reason) in enumerate(marks):
        ax.axvline(x, color="black", linestyle="--", linewidth=0.8, alpha=0.7)
        if i < MAX_REBALANCE_LABELS and reason:
            ax.annotate(reason, xy=(x, 0), xycoords=("data", "axes fraction"),
                        xytext=(2, 4), textcoords="offset points", rotation=90,
                        fontsize=7, va="bottom")


def _legend(ax, members: tuple[str, ...], colors: dict) -> None:
    from matplotlib.patches import Patch

    shown = members[:MAX_LEGEND_MEMBERS]
    handles = [Patch(color=colors[m], label=m[:MEMBER_LABEL_CHARS]) for m in shown]
    if handles:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7,
                  title="member" if len(shown) == len(members) else f"{len(shown)} of "
                  f"{len(members)} members")


def _member_colors(members: tuple[str, ...]) -> dict[str, tuple]:
    from matplotlib import colormaps

    cmap = colormaps["tab20"] if len(members) > 10 else colormaps["tab10"]
    return {m: cmap(i % cmap.N) for i, m in enumerate(members)}


def _tp(tp) -> TopicPartition:
    topic, p = tp
    return (str(topic), int(p))


def _seconds(r: Mapping) -> float:
    return float(r["t"]) if "t" in r else float(r["time_ms"]) / 1000.0
