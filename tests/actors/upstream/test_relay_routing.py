"""Which requests Cohort relays to the upstream and which it answers (``goes_upstream``): the
ones whose answer depends on their body are decided by what they name."""

from __future__ import annotations

import pytest

from actors.upstream.relay import goes_upstream, relayed_keys
from protocol.wire.codec import read_header
from protocol.wire.upstream import encode_request

TOPIC, GROUP = 2, 32
UPSTREAM_KEYS = {0, 1, 3, 18, 19, 32, 44, 74}


def _goes(api_key: int, version: int, body: dict) -> bool:
    frame = encode_request(api_key, version, 7, "routing-test", body)[4:]
    header, _ = read_header(frame)
    return goes_upstream(header, frame, relayed_keys(UPSTREAM_KEYS))


@pytest.mark.parametrize(("types", "relayed"), [
    ([TOPIC], True), ([TOPIC, 4], True), ([GROUP], False), ([TOPIC, GROUP], False),
    ([], False)])
def test_list_config_resources_is_answered_by_cohort_whenever_it_may_list_groups(types, relayed):
    assert _goes(74, 1, {"resource_types": types}) is relayed


def test_list_config_resources_v0_lists_client_metrics_only_and_goes_upstream():
    assert _goes(74, 0, {}) is True


def test_describe_configs_of_a_group_is_cohorts_and_of_a_topic_the_upstreams():
    def describe(rtype: int) -> dict:
        return {"resources": [{"resource_type": rtype, "resource_name": "x",
                               "configuration_keys": None}],
                "include_synonyms": False, "include_documentation": False}

    assert _goes(32, 4, describe(TOPIC)) is True
    assert _goes(32, 4, describe(GROUP)) is False


def test_metadata_and_group_apis_are_never_relayed():
    assert 3 not in relayed_keys(UPSTREAM_KEYS)
    assert _goes(3, 12, {"topics": None, "allow_auto_topic_creation": False,
                         "include_topic_authorized_operations": False}) is False


def test_client_telemetry_is_neither_relayed_nor_advertised_in_front_of_an_upstream():
    # Tansu 0.6 serves GetTelemetrySubscriptions (71) and PushTelemetry (72) and answers
    # every client every 5 s: relayed, 1,000 consumers kept Cohort's coordinators busy with it.
    from actors.gateway.core import GatewayCore

    upstream = {k: (0, 0) for k in (71, 72)} | {0: (3, 11), 1: (4, 16), 2: (1, 8)}
    keys, advertised = GatewayCore.relay_plan(upstream)
    assert not {71, 72} & keys
    assert not {71, 72} & {key for key, _lo, _hi in advertised}
    assert {0, 1, 2} <= {key for key, _lo, _hi in advertised}
