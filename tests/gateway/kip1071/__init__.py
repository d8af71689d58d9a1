"""KIP-1071's client APIs (StreamsGroupHeartbeat, StreamsGroupDescribe, and KIP-1331's
StreamsGroupTopologyDescriptionUpdate) described for
kafka-python's message engine (which does not ship them): the structure of Kafka 4.4's
schemas, without their comments; ``tests.gateway.test_codecs`` loads them so that the streams
APIs are cross-checked like every other API."""

from kafka.protocol.api_message import ApiMessage

import tests.gateway.kip1071 as _here


class StreamsGroupHeartbeatRequest(ApiMessage, load_json=_here): pass  # noqa: E701
class StreamsGroupHeartbeatResponse(ApiMessage, load_json=_here): pass  # noqa: E701
class StreamsGroupDescribeRequest(ApiMessage, load_json=_here): pass  # noqa: E701
class StreamsGroupDescribeResponse(ApiMessage, load_json=_here): pass  # noqa: E701
class StreamsGroupTopologyDescriptionUpdateRequest(ApiMessage, load_json=_here): pass  # noqa: E701
class StreamsGroupTopologyDescriptionUpdateResponse(ApiMessage, load_json=_here): pass  # noqa: E701
