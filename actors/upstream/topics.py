"""The controller's side of an upstream: its topics read into Cohort's image, and the topic
changes Cohort's users make (``cluster.create_topic``, ``cohort topics``) made upstream.

Kafka's topics live upstream, so Cohort's image follows them: the controller polls (every
``metadata.poll.interval.ms``, 5 s by default) and re-reads at once after a change made
through Cohort; a topic that appears, grows or goes is a change of the image like any other,
so a regex subscription matches the upstream's topics and a grown topic bumps group epochs as
seed 002 says. A refusal from the upstream reaches the caller as the upstream's error code.
"""

from __future__ import annotations

import uuid

from actors.upstream.link import UpstreamUnavailable
from actors.upstream.settings import UpstreamSettings
from actors.upstream.view import UpstreamView
from protocol.errors import CoordinatorError, Errors
from protocol.metadata import TopicMetadata

CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 19, 20, 37
ADMIN_TIMEOUT_MS = 30_000


class UpstreamTopics:
    """The upstream's topics, for the controller (see the module docstring)."""

    def __init__(self, settings: UpstreamSettings) -> None:
        self.settings = settings
        self.view = UpstreamView(settings)

    async def changes(self, known: dict[str, TopicMetadata]) -> dict[str, TopicMetadata | None]:
        """What differs between ``known`` and the upstream now: name -> its topic, or None
        for a topic gone. Raises ``UpstreamUnavailable`` when the upstream cannot be read."""
        await self.view.refresh()
        now = {t.name: t for t in self.view.topics}
        changed: dict[str, TopicMetadata | None] = {
            name: t for name, t in now.items() if known.get(name) != t}
        changed.update({name: None for name in known if name not in now})
        return changed

    async def create_topic(self, name: str, num_partitions: int,
                           configs: dict[str, str] | None = None,
                           replication_factor: int = -1) -> None:
        """CreateTopics upstream, with the topic's configs (a streams changelog's
        ``cleanup.policy=compact``, as Kafka's coordinator asks for it)."""
        reply = await self._call(CREATE_TOPICS, 7, {
            "topics": [{"name": name, "num_partitions": num_partitions,
                        "replication_factor": replication_factor, "assignments": [],
                        "configs": [{"name": k, "value": v}
                                    for k, v in sorted((configs or {}).items())]}],
            "timeout": ADMIN_TIMEOUT_MS, "validate_only": False})
        _raise_first(reply.get("topics", []))

    async def add_partitions(self, name: str, total: int) -> None:
        reply = await self._call(CREATE_PARTITIONS, 3, {
            "topics": [{"name": name, "count": total, "assignments": None}],
            "timeout": ADMIN_TIMEOUT_MS, "validate_only": False})
        _raise_first(reply.get("results", []))

    async def delete_topic(self, name: str) -> None:
        reply = await self._call(DELETE_TOPICS, 6, {
            "topics": [{"name": name, "topic_id": uuid.UUID(int=0)}], "topic_names": [name],
            "timeout": ADMIN_TIMEOUT_MS})
        _raise_first(reply.get("responses", []))

    async def _call(self, api_key: int, highest: int, body: dict) -> dict:
        link = await self._link()
        if api_key not in link.versions:
            raise CoordinatorError(Errors.UNSUPPORTED_VERSION,
                                   f"the upstream ({self.settings.text}) does not serve "
                                   f"API {api_key}: Cohort cannot do this in front of it")
        try:
            return await self.view.call(api_key, body, highest)
        except UpstreamUnavailable as e:
            raise CoordinatorError(Errors.COORDINATOR_NOT_AVAILABLE,
                                   f"the upstream cannot be reached: {e}") from None


    async def _link(self):
        try:
            return await self.view.link()
        except UpstreamUnavailable as e:
            raise CoordinatorError(Errors.COORDINATOR_NOT_AVAILABLE,
                                   f"the upstream cannot be reached: {e}") from None


def _raise_first(results: list[dict]) -> None:
    """The upstream's refusal, as Cohort's controller refuses (its code, its message)."""
    for r in results:
        code = r.get("error_code", 0)
        if code:
            try:
                error = Errors(code)
            except ValueError:
                error = Errors.UNKNOWN_SERVER_ERROR
            raise CoordinatorError(error, r.get("error_message") or
                                   f"the upstream refused it (error {code})")
