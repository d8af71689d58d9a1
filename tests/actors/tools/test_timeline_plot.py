"""The ownership timeline: one lane per partition, bars per owner, rebalances as lines."""

from __future__ import annotations

from actors.tools.timeline_plot import Bar, draw_timeline, ownership_bars

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# a owns foo-0..2 from t=10; b joins at t=12 and takes foo-2 after a revokes it at 12.5;
# a is fenced at 15 and loses foo-0, foo-1; b then owns everything, bar-0 included.
TIMELINES = {
    "member-a": [
        {"t": 10.0, "event": "assigned", "partitions": [("foo", 0), ("foo", 1), ("foo", 2)],
         "epoch": 1},
        {"t": 12.5, "event": "revoked", "partitions": [("foo", 2)], "epoch": 2},
        {"t": 15.0, "event": "lost", "partitions": [["foo", 0], ["foo", 1]], "epoch": 2},
    ],
    "member-b": [
        {"t": 12.6, "event": "assigned", "partitions": [("foo", 2)], "epoch": 2},
        {"t": 16.0, "event": "assigned", "partitions": [("foo", 0), ("foo", 1), ("bar", 0)],
         "epoch": 3},
    ],
}
REBALANCES = [
    {"t": 12.0, "reason": "member-b joined"},
    {"time_ms": 15_500, "reason": "member-a fenced"},
]


def test_the_picture_is_a_png_with_one_lane_per_partition(tmp_path):
    out = tmp_path / "timeline.png"
    summary = draw_timeline(TIMELINES, out, rebalances=REBALANCES)
    data = out.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 1_000
    assert summary.lanes == (("bar", 0), ("foo", 0), ("foo", 1), ("foo", 2))
    assert len(summary.lanes) == len({tp for b in summary.bars for tp in [b.partition]})
    assert summary.members == ("member-a", "member-b")
    assert summary.rebalances == 2
    assert summary.t0_s == 10.0
    # b's last assignment is still open: drawn past the last event, not as a zero-width bar.
    assert all(b.end_s > 16.0 for b in summary.bars if b.member == "member-b")


def test_ownership_runs_from_assignment_to_revocation_or_loss_or_the_end():
    bars = ownership_bars(TIMELINES)
    assert bars == [
        Bar("member-b", ("bar", 0), 16.0, 16.0),
        Bar("member-a", ("foo", 0), 10.0, 15.0),
        Bar("member-b", ("foo", 0), 16.0, 16.0),
        Bar("member-a", ("foo", 1), 10.0, 15.0),
        Bar("member-b", ("foo", 1), 16.0, 16.0),
        Bar("member-a", ("foo", 2), 10.0, 12.5),
        Bar("member-b", ("foo", 2), 12.6, 16.0),
    ]
    assert ownership_bars(TIMELINES, end_s=20.0)[-1] == Bar("member-b", ("foo", 2), 12.6, 20.0)


def test_an_empty_timeline_still_draws(tmp_path):
    summary = draw_timeline({"idle": []}, tmp_path / "empty.png")
    assert (tmp_path / "empty.png").read_bytes().startswith(PNG_MAGIC)
    assert summary.lanes == () and summary.bars == ()


def test_many_members_and_partitions_stay_within_the_size_bounds(tmp_path):
    timelines = {
        f"m{i}": [{"t": float(i), "event": "assigned", "partitions": [("t", i)], "epoch": 1}]
        for i in range(300)
    }
    summary = draw_timeline(timelines, tmp_path / "big.png")
    assert len(summary.lanes) == 300
    assert (tmp_path / "big.png").stat().st_size > 0
