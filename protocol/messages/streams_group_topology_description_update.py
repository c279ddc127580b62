"""StreamsGroupTopologyDescriptionUpdate (key 93), version 0, flexible from 0 (KIP-1331).

A Streams client pushes its topology's description for the broker to store through the
plugin named by ``group.streams.topology.description.plugin.class``. Hourglass has no such
plugin and answers as Kafka 4.4 without one answers (see the handler).
"""
from protocol.codec import compile_api
from protocol.messages.streams_group_describe import topology_description_fields
from protocol.schema import EMPTY_STRUCT, F, api

API = api(93, "StreamsGroupTopologyDescriptionUpdate", valid="0", flexible="0+", request=[
    F("group_id", "string", "0+"),
    F("member_id", "string", "0+"),
    F("topology_epoch", "int32", "0+"),
    F("topology_description", "TopologyDescription", "0+", default=EMPTY_STRUCT,
      fields=topology_description_fields("0+", default=EMPTY_STRUCT)),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
])

StreamsGroupTopologyDescriptionUpdateRequest, StreamsGroupTopologyDescriptionUpdateResponse = compile_api(API)
