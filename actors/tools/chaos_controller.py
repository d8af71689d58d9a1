"""A chaos run's controller kill: changes in flight, a restart, and what must survive it.

The controller is killed right after a topic creation and a group config change were sent to
it, so the kill may land before, during or after either is written. Ray retries both calls on
the restarted actor (the controller is declared with ``max_task_retries=-1``), so both end up
acknowledged: a creation whose first attempt was written before the kill is answered
TOPIC_ALREADY_EXISTS by the retry, which is an acknowledgement too, as Kafka's admin client
treats it. Then every topic and config the controller held or acknowledged must be there
(``check_controller_kept``), and every partition must catch up on its image
(``check_images_caught_up``): the restarted controller pushes it, and a partition that was
loading pulls it.
"""

from __future__ import annotations

import time

import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

from actors.cluster import Cluster
from actors.tools.controller_invariants import check_controller_kept, check_images_caught_up
from actors.tools.invariants import Violation
from protocol.config import GroupConfig
from protocol.errors import CoordinatorError, Errors

RESTART_TIMEOUT_S = 60.0
CATCH_UP_TIMEOUT_S = 30.0
POLL_S = 0.1


def kill_controller(cluster: Cluster, name: str) -> list[Violation]:
    """Kill the controller with a topic ``<name>-topic`` and a config of group ``<name>-cfg``
    in flight; return what broke once it is back and the partitions caught up."""
    controller = cluster.controller()
    before = ray.get(controller.image.remote())
    topic, group = f"{name}-topic", f"{name}-cfg"
    interval_ms = cluster.config.group_consumer_heartbeat_interval_ms
    create = controller.create_topic.remote(topic, 1)
    configure = controller.set_group_config.remote(
        group, consumer_heartbeat_interval_ms=interval_ms
    )
    cluster.kill_controller()
    try:
        topic_id = _acknowledged(create, Errors.TOPIC_ALREADY_EXISTS)
        _acknowledged(configure)
    except (GetTimeoutError, RayActorError) as e:
        return [Violation(3, f"controller: changes in flight not answered after restart: {e}")]
    after = ray.get(controller.image.remote())
    expected = _topics(before)
    if topic_id is not None:
        expected[topic] = (topic_id, 1)
    violations = check_controller_kept(
        expected,
        _topics(after),
        {**before.group_configs, group: GroupConfig(None, interval_ms)},
        after.group_configs,
    )
    if topic not in _topics(after):
        violations.append(Violation(4, f"controller: acknowledged topic {topic} is missing"))
    return violations + _wait_caught_up(cluster, after.version)


def _acknowledged(ref, also_ok: Errors | None = None) -> str | None:
    """The call's result, or None when it was refused with ``also_ok``; other refusals raise."""
    try:
        return ray.get(ref, timeout=RESTART_TIMEOUT_S)
    except RayTaskError as e:
        cause = e.cause
        if isinstance(cause, CoordinatorError) and cause.error == also_ok:
            return None
        raise


def _topics(image) -> dict[str, tuple[str, int]]:
    return {t.name: (t.topic_id, t.num_partitions) for t in image.metadata.topics()}


def _wait_caught_up(cluster: Cluster, version: int) -> list[Violation]:
    deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
    while True:
        versions = {}
        for p in range(cluster.num_partitions):
            try:
                versions[p] = ray.get(cluster.partition(p).info.remote(), timeout=10)[
                    "image_version"]
            except (GetTimeoutError, RayActorError):
                versions[p] = -1
        behind = check_images_caught_up(version, versions)
        if not behind or time.monotonic() > deadline:
            return behind
        time.sleep(POLL_S)
