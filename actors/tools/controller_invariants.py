"""Checks of the controller's promises across its own restart, for chaos runs and tests.

The controller keeps topics and dynamic group configs in its log and pushes every change to
the partitions. When its actor dies and Ray restarts it, two things must hold: what it had
acknowledged is still there (invariant 4, applied to the controller's own state), and every
partition ends up with its latest image (a push cut short by the kill is made good when the
controller returns, or by the next change). Pure functions over what a run read; no Ray.
"""

from __future__ import annotations

from collections.abc import Mapping

from actors.tools.invariants import Violation

# name -> (topic id, partition count), as read from the controller's image.
Topics = Mapping[str, tuple[str, int]]


def check_controller_kept(
    before: Topics,
    after: Topics,
    acknowledged_configs: Mapping[str, object],
    configs_after: Mapping[str, object],
) -> list[Violation]:
    """Invariant 4 for the controller: every topic it had before the kill is there after it,
    with the same id and partition count, and every group config it acknowledged (before
    the kill or by a call retried across it) is there with the acknowledged value."""
    out = []
    for name, (topic_id, count) in sorted(before.items()):
        now = after.get(name)
        if now is None:
            out.append(Violation(4, f"controller: topic {name} vanished across its restart"))
        elif now != (topic_id, count):
            out.append(Violation(
                4, f"controller: topic {name} was {topic_id}/{count}, after restart {now}"))
    for group_id, config in sorted(acknowledged_configs.items()):
        if configs_after.get(group_id) != config:
            out.append(Violation(
                4, f"controller: config of {group_id} acknowledged as {config}, after restart "
                   f"{configs_after.get(group_id)}"))
    return out


def check_images_caught_up(controller_version: int, partition_versions: Mapping[int, int]
                           ) -> list[Violation]:
    """Invariant 3 for metadata: once the controller is back and idle, each partition has
    applied its latest image (``partition_versions``: offsets partition -> image version)."""
    return [
        Violation(3, f"offsets-{p} holds image {v}, the controller is at {controller_version}")
        for p, v in sorted(partition_versions.items()) if v < controller_version
    ]
