"""What Cohort knows of its upstream: its brokers (id, host, port), its cluster id, its topics
and their partitions' leaders, and one link of Cohort's own for the requests Cohort itself
sends (Metadata polls, topic admin). Client traffic never rides this link: each client
connection gets links of its own (``relay.ClientRelay``), so one slow client holds up no one
else's replies; Cohort's reads of records have links of their own too (``reader``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import Any

from actors.upstream.link import UpstreamLink, UpstreamUnavailable
from actors.upstream.settings import UpstreamSettings
from protocol.metadata import TopicMetadata
from protocol.wire.upstream import FETCH, METADATA, RELAY_CAPS, metadata_topics

log = logging.getLogger(__name__)

END_OFFSET_TRIES = 3
ALL_TOPICS = {"topics": None, "allow_auto_topic_creation": False,
              "include_cluster_authorized_operations": False,
              "include_topic_authorized_operations": False}


class UpstreamView:
    """The upstream's brokers and topics as last read, and Cohort's own link to it."""

    def __init__(self, settings: UpstreamSettings) -> None:
        self.settings = settings
        self.brokers: dict[int, tuple[str, int]] = {}
        self.cluster_id: str | None = None
        self.controller_id = -1
        self.topics: list[TopicMetadata] = []
        # (topic name, partition) -> its leader's node id: where Cohort's own reads of the
        # upstream's records go (``reader.UpstreamReader``).
        self.leaders: dict[tuple[str, int], int] = {}
        self.refreshed_at: float | None = None
        self.last_error: str | None = None
        self._link: UpstreamLink | None = None
        self._opening = asyncio.Lock()

    async def link(self) -> UpstreamLink:
        """Cohort's own link: the one open, else a new one to a known broker or a bootstrap
        address (the first that answers); ``UpstreamUnavailable`` naming them all if none."""
        async with self._opening:
            if self._link is not None and self._link.closed is None:
                return self._link
            errors = []
            for host, port in [*self.brokers.values(), *self.settings.bootstrap]:
                try:
                    self._link = await UpstreamLink(host, port, self.settings).open()
                    return self._link
                except UpstreamUnavailable as e:
                    errors.append(str(e))
            raise UpstreamUnavailable("; ".join(dict.fromkeys(errors)))

    async def call(self, api_key: int, body: Mapping[str, Any], highest: int) -> dict:
        """Cohort's own request at the highest version both sides speak."""
        link = await self.link()
        return await link.call(api_key, link.version_of(api_key, highest), body)

    async def call_at(self, api_key: int, version: int, body: Mapping[str, Any]) -> dict:
        """A client's request asked again by Cohort, at the client's version (one Cohort
        advertised, so one the upstream serves): Metadata, FindCoordinator."""
        return await (await self.link()).call(api_key, version, body)

    async def call_framed_at(self, api_key: int, version: int, body: Mapping[str, Any]) -> bytes:
        """``call_at``'s reply as the upstream framed it, undecoded."""
        return await (await self.link()).call_framed(api_key, version, body)

    async def refresh(self) -> dict:
        """Read the upstream's brokers and topics (Metadata for every topic); the reply."""
        try:
            body = await self.call(METADATA, ALL_TOPICS, RELAY_CAPS[METADATA])
        except (UpstreamUnavailable, OSError) as e:
            self.last_error = str(e)
            raise
        self.brokers = {b["node_id"]: (b["host"], b["port"]) for b in body["brokers"]}
        self.cluster_id = body.get("cluster_id")
        self.controller_id = body.get("controller_id", -1)
        self.topics = metadata_topics(body)
        self.leaders = {(t["name"], p["partition_index"]): p["leader_id"]
                        for t in body.get("topics", []) if t.get("name")
                        for p in t.get("partitions", []) if p.get("leader_id", -1) >= 0}
        self.refreshed_at = time.time()
        self.last_error = None
        return body

    async def end_offsets(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """Each partition's high watermark, from a Fetch of nothing to its leader (ListOffsets
        for the latest offset is wrong on Tansu 0.6: it answers 1 whatever the log holds; the
        high watermark in a Fetch reply is right everywhere). A partition whose leader does
        not answer is asked again, ``END_OFFSET_TRIES`` times in all (Tansu at times answers
        a Fetch with no partitions), then left out."""
        out: dict[tuple[str, int], int] = {}
        for _ in range(END_OFFSET_TRIES):
            missing = [tp for tp in partitions if tp not in out]
            if not missing:
                break
            await self._end_offsets(missing, out)
        return out

    async def _end_offsets(self, partitions: list[tuple[str, int]],
                           out: dict[tuple[str, int], int]) -> None:
        by_leader: dict[int, list[tuple[str, int]]] = {}
        for tp in partitions:
            by_leader.setdefault(self.leaders.get(tp, -1), []).append(tp)
        for leader, tps in by_leader.items():
            where = self.brokers.get(leader)
            if where is None:
                continue
            link = await UpstreamLink(*where, self.settings).open()
            try:
                reply = await link.call(FETCH, link.version_of(FETCH, 12), _fetch_nothing(tps))
            except (UpstreamUnavailable, OSError):
                continue
            finally:
                link.close()
            for t in reply.get("responses", []):
                for p in t.get("partitions", []):
                    if p.get("error_code", 0) == 0:
                        out[(t["topic"], p["partition_index"])] = p["high_watermark"]

    def status(self) -> dict:
        """What ``cohort status`` shows of the upstream."""
        return {"bootstrap": self.settings.text, "reachable": self.last_error is None and
                self.refreshed_at is not None, "brokers": dict(self.brokers),
                "cluster_id": self.cluster_id, "topics": len(self.topics),
                "refreshed_at": self.refreshed_at, "error": self.last_error,
                "config": self.settings.redacted()}

    def close(self) -> None:
        if self._link is not None:
            self._link.close()


def _fetch_nothing(partitions: list[tuple[str, int]]) -> dict:
    """A Fetch (v4-12: topics by name) that asks for no records, only each high watermark."""
    topics: dict[str, list[int]] = {}
    for name, p in partitions:
        topics.setdefault(name, []).append(p)
    # max_wait and max_bytes above 0: Tansu 0.6 answers no partition to a Fetch with either at 0.
    return {"replica_id": -1, "max_wait": 1, "min_bytes": 0, "max_bytes": 1,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
            "forgotten_topics_data": [],
            "topics": [{"topic": name, "partitions": [
                {"partition": p, "current_leader_epoch": -1, "fetch_offset": 0,
                 "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": 0}
                for p in ps]} for name, ps in topics.items()]}


async def probe(settings: UpstreamSettings, timeout_s: float = 10.0) -> dict:
    """Reach the upstream once (what ``Cluster.start`` does before starting anything): its
    status; ``UpstreamUnavailable`` naming the addresses and the settings to fix."""
    view = UpstreamView(settings)
    try:
        await asyncio.wait_for(view.refresh(), timeout_s)
    except (TimeoutError, asyncio.TimeoutError):
        raise UpstreamUnavailable(
            f"the upstream {settings.text} did not answer within {timeout_s:.0f} s; check "
            "--upstream (upstream=) and --upstream-config") from None
    finally:
        view.close()
    return view.status()
