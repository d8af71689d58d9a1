"""Which of Cohort's files and functions one steady ConsumerGroupHeartbeat passes through.

Run: ``python bench/heartbeat_path.py [--members 3]``. A group of ``--members`` consumers joins
one shard and settles; then one member's ordinary heartbeat (no change, at its epoch) goes
through ``GroupCoordinatorShard.handle`` under ``sys.setprofile``, and the script prints every
project file and function the call entered, in first-entered order, with the counts. Only the
public contract (``protocol.shard``, ``protocol.messages``, ``protocol.metadata``) is used, so
the same script measures any revision of the pure path.
"""

from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from protocol import messages as m  # noqa: E402
from protocol.metadata import MetadataImage, TopicMetadata  # noqa: E402
from protocol.shard import GroupCoordinatorShard  # noqa: E402


def settled_group(members: int) -> tuple[GroupCoordinatorShard, list[tuple[str, int, list]]]:
    shard = GroupCoordinatorShard(metadata=MetadataImage([TopicMetadata("t1", "foo", 6)]))
    state: dict[str, tuple[int, list]] = {}
    for i in range(members):
        r = shard.handle(m.ConsumerGroupHeartbeatRequest(
            group_id="g", member_id=f"m{i}", member_epoch=0, rebalance_timeout_ms=5000,
            subscribed_topic_names=["foo"], topic_partitions=[])).response
        state[f"m{i}"] = (r.member_epoch, [])
    for _ in range(6):  # everyone reports what it owns until the group is stable
        for mid, (epoch, owned) in list(state.items()):
            r = shard.handle(m.ConsumerGroupHeartbeatRequest(
                group_id="g", member_id=mid, member_epoch=epoch, topic_partitions=owned)).response
            if r.assignment is not None:
                owned = [m.TopicPartitions(tp.topic_id, list(tp.partitions))
                         for tp in r.assignment.assigned_topic_partitions]
            state[mid] = (r.member_epoch, owned)
    return shard, [(mid, e, o) for mid, (e, o) in state.items()]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--members", type=int, default=3)
    args = p.parse_args()
    shard, members = settled_group(args.members)
    mid, epoch, owned = members[0]
    req = m.ConsumerGroupHeartbeatRequest(group_id="g", member_id=mid, member_epoch=epoch,
                                          topic_partitions=owned)
    files: dict[str, int] = {}
    funcs: dict[tuple[str, str], int] = {}

    def profile(frame, event, _arg):
        if event != "call":
            return
        path = frame.f_code.co_filename
        if not path.startswith(ROOT) or "/bench/" in path:
            return
        rel = os.path.relpath(path, ROOT)
        files[rel] = files.get(rel, 0) + 1
        key = (rel, frame.f_code.co_name)
        funcs[key] = funcs.get(key, 0) + 1

    sys.setprofile(profile)
    reply = shard.handle(req).response
    sys.setprofile(None)
    assert reply.error_code == 0, reply
    print(f"one steady heartbeat (member {mid} at epoch {epoch}, {args.members} members):")
    for rel, calls in files.items():
        names = [f for (r, f), _ in funcs.items() if r == rel]
        print(f"  {rel:45s} {calls:4d} calls  {', '.join(names)}")
    print(f"files: {len(files)}   functions: {len(funcs)}   calls: {sum(funcs.values())}")


if __name__ == "__main__":
    main()
