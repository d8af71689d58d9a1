"""KIP-848's two client APIs described for kafka-python's message engine (which does not ship
them), written here from the KIP's field lists; ``tests.gateway.test_codecs`` loads them so
that ConsumerGroupHeartbeat and ConsumerGroupDescribe are cross-checked like every other API.
"""

from kafka.protocol.api_message import ApiMessage

import tests.gateway.kip848 as _here


class ConsumerGroupHeartbeatRequest(ApiMessage, load_json=_here): pass  # noqa: E701
class ConsumerGroupHeartbeatResponse(ApiMessage, load_json=_here): pass  # noqa: E701
class ConsumerGroupDescribeRequest(ApiMessage, load_json=_here): pass  # noqa: E701
class ConsumerGroupDescribeResponse(ApiMessage, load_json=_here): pass  # noqa: E701
