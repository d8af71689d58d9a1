"""KIP-932's client APIs (ShareGroupHeartbeat v1, ShareGroupDescribe v1, ShareFetch and
ShareAcknowledge v1-v2, Describe/Alter/DeleteShareGroupOffsets) described for kafka-python's
message engine (which does not ship them), written here from Kafka 4.2's schemas;
``tests.gateway.test_codecs`` loads them so that the share APIs are cross-checked like every
other API.
"""

from kafka.protocol.api_message import ApiMessage

import tests.gateway.kip932 as _here


class ShareGroupHeartbeatRequest(ApiMessage, load_json=_here): pass  # noqa: E701
class ShareGroupHeartbeatResponse(ApiMessage, load_json=_here): pass  # noqa: E701
class ShareGroupDescribeRequest(ApiMessage, load_json=_here): pass  # noqa: E701
class ShareGroupDescribeResponse(ApiMessage, load_json=_here): pass  # noqa: E701
class ShareFetchRequest(ApiMessage, load_json=_here): pass  # noqa: E701
class ShareFetchResponse(ApiMessage, load_json=_here): pass  # noqa: E701
class ShareAcknowledgeRequest(ApiMessage, load_json=_here): pass  # noqa: E701
class ShareAcknowledgeResponse(ApiMessage, load_json=_here): pass  # noqa: E701
class DescribeShareGroupOffsetsRequest(ApiMessage, load_json=_here): pass  # noqa: E701
class DescribeShareGroupOffsetsResponse(ApiMessage, load_json=_here): pass  # noqa: E701
class AlterShareGroupOffsetsRequest(ApiMessage, load_json=_here): pass  # noqa: E701
class AlterShareGroupOffsetsResponse(ApiMessage, load_json=_here): pass  # noqa: E701
class DeleteShareGroupOffsetsRequest(ApiMessage, load_json=_here): pass  # noqa: E701
class DeleteShareGroupOffsetsResponse(ApiMessage, load_json=_here): pass  # noqa: E701
