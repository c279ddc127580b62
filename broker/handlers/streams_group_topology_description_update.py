"""StreamsGroupTopologyDescriptionUpdate (93) v0: answered as Kafka 4.4 answers it without a
topology description plugin (``group.streams.topology.description.plugin.class`` unset):
UNSUPPORTED_VERSION with its message, whatever the group or member (after READ on the group:
GROUP_AUTHORIZATION_FAILED). Hourglass keeps no
topology descriptions (StreamsGroupDescribe v1 reports them NOT_STORED).
"""
from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode as E
from protocol.messages.streams_group_topology_description_update import (
    StreamsGroupTopologyDescriptionUpdateResponse as R,
)

GROUP_DENIED = "Not authorized to access group."
NO_PLUGIN = "The broker has no streams group topology description plugin configured."


@handles(93)
async def handle(ctx, req):
    az = active(ctx)
    if az is not None and not az.allowed("group", req.group_id):  # Kafka checks READ on the group first
        return R(throttle_time_ms=0, error_code=az.error("group"), error_message=GROUP_DENIED)
    return R(throttle_time_ms=0, error_code=E.UNSUPPORTED_VERSION, error_message=NO_PLUGIN)
