"""What each served API authorizes, in one table (Kafka's ``KafkaApis`` / ``AclApis`` checks).

Each row is one check: a label the handler asks by, the operation and resource type Kafka's
authorizer is asked for, the error code a denial answers with, what a denial does, and the
request field that names the resource (``a.b`` walks into arrays; None: the cluster,
``kafka-cluster``). ``versions`` bounds a row to the versions it exists in; ``when`` states in
words a condition the handler tests (the table does not evaluate request contents).

Denial:
- ``REQUEST``: the request fails as a whole with the error (every item carries it where the
  response has no top-level error);
- ``ITEM``: each denied resource gets the error, the others are served;
- ``OMIT``: denied resources are left out silently (listing all topics, groups, ...).

Handlers consult it through ``RequestAuthz`` (``ctx.authz``): ``allowed(label, name)``,
``error(label)``, ``split(label, names)``, ``operations(resource_type, name)``; with no
authorizer configured every check passes and ``operations`` reports every supported
operation, as Kafka does. Adding a served API means adding its row here (a test checks every
registered handler has one and every field path exists in the request schema).
"""
from __future__ import annotations

import enum
import functools
from typing import Iterable, NamedTuple

from broker.security.acl import CLUSTER_NAME, SUPPORTED_OPERATIONS, AclOperation as Op, ResourceType as RT
from protocol.errors import ErrorCode as E


class Deny(enum.Enum):
    REQUEST = "request"
    ITEM = "item"
    OMIT = "omit"


class Check(NamedTuple):
    label: str
    op: Op
    resource: RT
    error: E
    deny: Deny
    field: str | None = None
    versions: str = "0+"
    when: str = ""


C = Check
TOPIC_AUTH, GROUP_AUTH = E.TOPIC_AUTHORIZATION_FAILED, E.GROUP_AUTHORIZATION_FAILED
CLUSTER_AUTH, TXN_AUTH = E.CLUSTER_AUTHORIZATION_FAILED, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
REQ, ITEM, OMIT = Deny.REQUEST, Deny.ITEM, Deny.OMIT

API_CHECKS: dict[int, tuple[Check, ...]] = {
    0: (  # Produce
        C("transactional_id", Op.WRITE, RT.TRANSACTIONAL_ID, TXN_AUTH, REQ, "transactional_id", "3+",
          when="the batches are transactional (a null id is denied too)"),
        C("topic", Op.WRITE, RT.TOPIC, TOPIC_AUTH, ITEM, "topic_data.name", "0-12",
          when="checked before the topic's existence: denied unknown topics answer 29, not 3"),
        C("topic", Op.WRITE, RT.TOPIC, TOPIC_AUTH, ITEM, "topic_data.topic_id", "13+",
          when="ids resolve to names first; an unknown id answers UNKNOWN_TOPIC_ID"),
    ),
    1: (  # Fetch
        C("follower", Op.CLUSTER_ACTION, RT.CLUSTER, TOPIC_AUTH, REQ, None,
          when="replica_id >= 0: denied, every partition answers TOPIC_AUTHORIZATION_FAILED"),
        C("topic", Op.READ, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.topic", "0-12"),
        C("topic", Op.READ, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.topic_id", "13+",
          when="ids resolve to names first; an unknown id answers UNKNOWN_TOPIC_ID"),
    ),
    2: (C("topic", Op.DESCRIBE, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.name"),),  # ListOffsets
    3: (  # Metadata
        C("topic", Op.DESCRIBE, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.name", when="topics are listed"),
        C("all_topics", Op.DESCRIBE, RT.TOPIC, TOPIC_AUTH, OMIT, None, when="all topics (null list; v0: empty)"),
        C("create_cluster", Op.CREATE, RT.CLUSTER, TOPIC_AUTH, REQ, None,
          when="auto-creating listed unknown topics; if denied, CREATE on each topic decides"),
        C("create", Op.CREATE, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.name", when="auto-creating an unknown topic"),
    ),
    8: (  # OffsetCommit
        C("group", Op.READ, RT.GROUP, GROUP_AUTH, REQ, "group_id", when="every partition carries the error"),
        C("topic", Op.READ, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.name", "0-9"),
        C("topic", Op.READ, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.topic_id", "10+", when="ids resolve to names first; an unknown id answers UNKNOWN_TOPIC_ID"),
    ),
    9: (  # OffsetFetch
        C("group", Op.DESCRIBE, RT.GROUP, GROUP_AUTH, REQ, "group_id", "0-7",
          when="v0-1: on every partition; v2+: the top-level error"),
        C("group", Op.DESCRIBE, RT.GROUP, GROUP_AUTH, ITEM, "groups.group_id", "8+"),
        C("topic", Op.DESCRIBE, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.name", "0-7", when="topics are listed"),
        C("topic", Op.DESCRIBE, RT.TOPIC, TOPIC_AUTH, ITEM, "groups.topics.name", "8-9", when="topics are listed"),
        C("topic", Op.DESCRIBE, RT.TOPIC, TOPIC_AUTH, ITEM, "groups.topics.topic_id", "10+",
          when="topics are listed; ids resolve to names first, an unknown id answers UNKNOWN_TOPIC_ID"),
        C("all_topics", Op.DESCRIBE, RT.TOPIC, TOPIC_AUTH, OMIT, None, when="all committed offsets (null topics)"),
    ),
    10: (  # FindCoordinator
        C("group", Op.DESCRIBE, RT.GROUP, GROUP_AUTH, ITEM, "key", "0-3", when="key_type 0"),
        C("group", Op.DESCRIBE, RT.GROUP, GROUP_AUTH, ITEM, "coordinator_keys", "4+", when="key_type 0"),
        C("transactional_id", Op.DESCRIBE, RT.TRANSACTIONAL_ID, TXN_AUTH, ITEM, "key", "1-3", when="key_type 1"),
        C("transactional_id", Op.DESCRIBE, RT.TRANSACTIONAL_ID, TXN_AUTH, ITEM, "coordinator_keys", "4+",
          when="key_type 1"),
    ),
    11: (C("group", Op.READ, RT.GROUP, GROUP_AUTH, REQ, "group_id"),),  # JoinGroup
    12: (C("group", Op.READ, RT.GROUP, GROUP_AUTH, REQ, "group_id"),),  # Heartbeat
    13: (C("group", Op.READ, RT.GROUP, GROUP_AUTH, REQ, "group_id"),),  # LeaveGroup
    14: (C("group", Op.READ, RT.GROUP, GROUP_AUTH, REQ, "group_id"),),  # SyncGroup
    15: (C("group", Op.DESCRIBE, RT.GROUP, GROUP_AUTH, ITEM, "groups"),),  # DescribeGroups
    16: (  # ListGroups
        C("cluster", Op.DESCRIBE, RT.CLUSTER, CLUSTER_AUTH, OMIT, None, when="allowed: every group is listed"),
        C("group", Op.DESCRIBE, RT.GROUP, GROUP_AUTH, OMIT, None, when="else each group is filtered"),
    ),
    19: (  # CreateTopics
        C("create_cluster", Op.CREATE, RT.CLUSTER, TOPIC_AUTH, ITEM, None,
          when="allowed: every topic may be created; else CREATE on each topic decides"),
        C("create", Op.CREATE, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.name"),
        C("describe_configs", Op.DESCRIBE_CONFIGS, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.name", "5+",
          when="the created topic's configs are returned; denied: topic_config_error_code 29, no configs"),
    ),
    20: (  # DeleteTopics
        C("delete", Op.DELETE, RT.TOPIC, TOPIC_AUTH, ITEM, "topic_names", "0-5"),
        C("describe", Op.DESCRIBE, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.topic_id", "6+",
          when="deleting by id: the name is revealed only to who may describe it"),
        C("delete", Op.DELETE, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.name", "6+"),
    ),
    21: (C("delete", Op.DELETE, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.name"),),  # DeleteRecords
    22: (  # InitProducerId
        C("transactional_id", Op.WRITE, RT.TRANSACTIONAL_ID, TXN_AUTH, REQ, "transactional_id",
          when="transactional_id is set"),
        C("idempotent_write", Op.IDEMPOTENT_WRITE, RT.CLUSTER, CLUSTER_AUTH, REQ, None,
          when="no transactional id; denied, WRITE on any topic (by resource type) is enough"),
        C("write_any_topic", Op.WRITE, RT.TOPIC, CLUSTER_AUTH, REQ, None, when="see idempotent_write"),
    ),
    23: (  # OffsetForLeaderEpoch
        C("follower", Op.CLUSTER_ACTION, RT.CLUSTER, CLUSTER_AUTH, REQ, None, "3+", when="replica_id >= 0"),
        C("topic", Op.DESCRIBE, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.topic"),
    ),
    24: (  # AddPartitionsToTxn
        C("transactional_id", Op.WRITE, RT.TRANSACTIONAL_ID, TXN_AUTH, REQ, "v3_and_below_transactional_id", "0-3",
          when="every partition carries the error"),
        C("topic", Op.WRITE, RT.TOPIC, TOPIC_AUTH, ITEM, "v3_and_below_topics.name", "0-3",
          when="the other partitions answer OPERATION_NOT_ATTEMPTED"),
        C("verify", Op.CLUSTER_ACTION, RT.CLUSTER, CLUSTER_AUTH, REQ, None, "4+", when="broker-to-broker batches"),
    ),
    25: (  # AddOffsetsToTxn
        C("transactional_id", Op.WRITE, RT.TRANSACTIONAL_ID, TXN_AUTH, REQ, "transactional_id"),
        C("group", Op.READ, RT.GROUP, GROUP_AUTH, REQ, "group_id"),
    ),
    26: (C("transactional_id", Op.WRITE, RT.TRANSACTIONAL_ID, TXN_AUTH, REQ, "transactional_id"),),  # EndTxn
    27: (C("cluster_action", Op.CLUSTER_ACTION, RT.CLUSTER, CLUSTER_AUTH, REQ, None),),  # WriteTxnMarkers
    28: (  # TxnOffsetCommit
        C("transactional_id", Op.WRITE, RT.TRANSACTIONAL_ID, TXN_AUTH, REQ, "transactional_id"),
        C("group", Op.READ, RT.GROUP, GROUP_AUTH, REQ, "group_id"),
        C("topic", Op.READ, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.name", "0-5"),
        C("topic", Op.READ, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.topic_id", "6+", when="ids resolve to names first; an unknown id answers UNKNOWN_TOPIC_ID"),
    ),
    29: (C("cluster", Op.DESCRIBE, RT.CLUSTER, CLUSTER_AUTH, REQ, None),),  # DescribeAcls
    30: (C("cluster", Op.ALTER, RT.CLUSTER, CLUSTER_AUTH, REQ, None),),     # CreateAcls
    31: (C("cluster", Op.ALTER, RT.CLUSTER, CLUSTER_AUTH, REQ, None),),     # DeleteAcls
    32: (  # DescribeConfigs
        C("topic", Op.DESCRIBE_CONFIGS, RT.TOPIC, TOPIC_AUTH, ITEM, "resources.resource_name", when="TOPIC resources"),
        C("broker", Op.DESCRIBE_CONFIGS, RT.CLUSTER, CLUSTER_AUTH, ITEM, None, when="BROKER, BROKER_LOGGER and CLIENT_METRICS resources"),
        C("group", Op.DESCRIBE_CONFIGS, RT.GROUP, GROUP_AUTH, ITEM, "resources.resource_name", when="GROUP resources"),
    ),
    33: (  # AlterConfigs
        C("topic", Op.ALTER_CONFIGS, RT.TOPIC, TOPIC_AUTH, ITEM, "resources.resource_name", when="TOPIC resources"),
        C("broker", Op.ALTER_CONFIGS, RT.CLUSTER, CLUSTER_AUTH, ITEM, None, when="BROKER, BROKER_LOGGER and CLIENT_METRICS resources"),
        C("group", Op.ALTER_CONFIGS, RT.GROUP, GROUP_AUTH, ITEM, "resources.resource_name", when="GROUP resources"),
    ),
    34: (C("cluster", Op.ALTER, RT.CLUSTER, CLUSTER_AUTH, ITEM, None),),  # AlterReplicaLogDirs
    35: (C("cluster", Op.DESCRIBE, RT.CLUSTER, CLUSTER_AUTH, REQ, None,
           when="v3+: the top-level error, no results; v1-2: no results"),),  # DescribeLogDirs
    37: (C("alter", Op.ALTER, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.name"),),  # CreatePartitions
    38: (C("owner", Op.CREATE_TOKENS, RT.USER, E.DELEGATION_TOKEN_AUTHORIZATION_FAILED, REQ, "owner_principal_name",
           "3+", when="the owner is not the requester (the resource is the owner's principal, User:name)"),),
    41: (  # DescribeDelegationToken: tokens the caller neither owns nor renews are left out unless
        C("token", Op.DESCRIBE, RT.DELEGATION_TOKEN, E.DELEGATION_TOKEN_AUTHORIZATION_FAILED, OMIT, None,
          when="a token the caller neither owns nor renews (the resource is its token id)"),
        C("owner", Op.DESCRIBE_TOKENS, RT.USER, E.DELEGATION_TOKEN_AUTHORIZATION_FAILED, OMIT,
          "owners.principal_name", when="... or DESCRIBE_TOKENS on its owner (User:name)"),
    ),
    42: (C("group", Op.DELETE, RT.GROUP, GROUP_AUTH, ITEM, "groups_names"),),  # DeleteGroups
    44: (  # IncrementalAlterConfigs
        C("topic", Op.ALTER_CONFIGS, RT.TOPIC, TOPIC_AUTH, ITEM, "resources.resource_name", when="TOPIC resources"),
        C("broker", Op.ALTER_CONFIGS, RT.CLUSTER, CLUSTER_AUTH, ITEM, None, when="BROKER, BROKER_LOGGER and CLIENT_METRICS resources"),
        C("group", Op.ALTER_CONFIGS, RT.GROUP, GROUP_AUTH, ITEM, "resources.resource_name", when="GROUP resources"),
    ),
    43: (C("cluster", Op.ALTER, RT.CLUSTER, CLUSTER_AUTH, REQ, None,
           when="every listed partition and the top-level error"),),  # ElectLeaders
    45: (C("cluster", Op.ALTER, RT.CLUSTER, CLUSTER_AUTH, REQ, None),),  # AlterPartitionReassignments
    46: (C("cluster", Op.DESCRIBE, RT.CLUSTER, CLUSTER_AUTH, REQ, None),),  # ListPartitionReassignments
    47: (  # OffsetDelete
        C("group", Op.DELETE, RT.GROUP, GROUP_AUTH, REQ, "group_id"),
        C("topic", Op.READ, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.name"),
    ),
    48: (C("cluster", Op.DESCRIBE_CONFIGS, RT.CLUSTER, CLUSTER_AUTH, REQ, None),),  # DescribeClientQuotas
    49: (C("cluster", Op.ALTER_CONFIGS, RT.CLUSTER, CLUSTER_AUTH, ITEM, None),),    # AlterClientQuotas
    50: (C("cluster", Op.DESCRIBE, RT.CLUSTER, CLUSTER_AUTH, REQ, None),),  # DescribeUserScramCredentials
    51: (C("cluster", Op.ALTER, RT.CLUSTER, CLUSTER_AUTH, REQ, None),),     # AlterUserScramCredentials
    55: (C("cluster", Op.DESCRIBE, RT.CLUSTER, CLUSTER_AUTH, REQ, None),),  # DescribeQuorum
    57: (C("cluster", Op.ALTER, RT.CLUSTER, CLUSTER_AUTH, REQ, None),),     # UpdateFeatures
    61: (C("topic", Op.READ, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.name"),),  # DescribeProducers
    65: (  # DescribeTransactions
        C("transactional_id", Op.DESCRIBE, RT.TRANSACTIONAL_ID, TXN_AUTH, ITEM, "transactional_ids"),
        C("topic", Op.DESCRIBE, RT.TOPIC, TOPIC_AUTH, OMIT, None, when="a transaction's partitions are filtered"),
    ),
    66: (C("transactional_id", Op.DESCRIBE, RT.TRANSACTIONAL_ID, TXN_AUTH, OMIT, None),),  # ListTransactions
    68: (  # ConsumerGroupHeartbeat
        C("group", Op.READ, RT.GROUP, GROUP_AUTH, REQ, "group_id"),
        C("topic", Op.DESCRIBE, RT.TOPIC, TOPIC_AUTH, REQ, "subscribed_topic_names",
          when="topic names are given: any denied one fails the heartbeat"),
        C("regex_topic", Op.DESCRIBE, RT.TOPIC, TOPIC_AUTH, OMIT, None, "1+",
          when="a regex resolution keeps the topics the heartbeat's caller may describe"),
    ),
    69: (  # ConsumerGroupDescribe
        C("group", Op.DESCRIBE, RT.GROUP, GROUP_AUTH, ITEM, "group_ids"),
        C("topic", Op.DESCRIBE, RT.TOPIC, TOPIC_AUTH, ITEM, None,
          when="a group whose members' assignments name a topic the caller may not describe answers "
               "the error with no members"),
    ),
    88: (  # StreamsGroupHeartbeat
        C("group", Op.READ, RT.GROUP, GROUP_AUTH, REQ, "group_id"),
        C("topic", Op.DESCRIBE, RT.TOPIC, TOPIC_AUTH, REQ, None,
          when="a topology is given: any denied source, repartition or changelog topic fails the heartbeat"),
    ),
    89: (  # StreamsGroupDescribe
        C("group", Op.DESCRIBE, RT.GROUP, GROUP_AUTH, ITEM, "group_ids"),
    ),
    74: (C("cluster", Op.DESCRIBE_CONFIGS, RT.CLUSTER, CLUSTER_AUTH, REQ, None),),  # ListConfigResources
    75: (  # DescribeTopicPartitions
        C("topic", Op.DESCRIBE, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.name", when="topics are listed"),
        C("all_topics", Op.DESCRIBE, RT.TOPIC, TOPIC_AUTH, OMIT, None, when="all topics"),
    ),
    76: (  # ShareGroupHeartbeat
        C("group", Op.READ, RT.GROUP, GROUP_AUTH, REQ, "group_id"),
        C("topic", Op.DESCRIBE, RT.TOPIC, TOPIC_AUTH, REQ, "subscribed_topic_names",
          when="topic names are given: any denied one fails the heartbeat"),
    ),
    77: (  # ShareGroupDescribe
        C("group", Op.DESCRIBE, RT.GROUP, GROUP_AUTH, ITEM, "group_ids"),
        C("topic", Op.DESCRIBE, RT.TOPIC, TOPIC_AUTH, ITEM, None,
          when="a group whose members' assignments name a topic the caller may not describe answers "
               "the error with no members"),
    ),
    78: (  # ShareFetch
        C("group", Op.READ, RT.GROUP, GROUP_AUTH, REQ, "group_id", when="the top-level error"),
        C("topic", Op.READ, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.topic_id",
          when="the session's partitions of a denied topic answer it, as do their acknowledgements"),
    ),
    79: (  # ShareAcknowledge
        C("group", Op.READ, RT.GROUP, GROUP_AUTH, REQ, "group_id", when="the top-level error"),
        C("topic", Op.READ, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.topic_id"),
    ),
    90: (  # DescribeShareGroupOffsets
        C("group", Op.DESCRIBE, RT.GROUP, GROUP_AUTH, ITEM, "groups.group_id"),
        C("topic", Op.DESCRIBE, RT.TOPIC, TOPIC_AUTH, ITEM, "groups.topics.topic_name",
          when="topics are listed; with all topics (null) the denied ones are left out"),
    ),
    91: (  # AlterShareGroupOffsets
        C("group", Op.READ, RT.GROUP, GROUP_AUTH, REQ, "group_id", when="every partition carries the error"),
        C("topic", Op.READ, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.topic_name"),
    ),
    93: (C("group", Op.READ, RT.GROUP, GROUP_AUTH, REQ, "group_id"),),  # StreamsGroupTopologyDescriptionUpdate
    92: (  # DeleteShareGroupOffsets
        C("group", Op.DELETE, RT.GROUP, GROUP_AUTH, REQ, "group_id"),
        C("topic", Op.READ, RT.TOPIC, TOPIC_AUTH, ITEM, "topics.topic_name"),
    ),
}

# Answered to anyone (before or after authentication); DescribeCluster checks nothing but
# reports cluster_authorized_operations when asked; Renew/ExpireDelegationToken check the
# token's owner and renewers, not ACLs (as Kafka); a client's own telemetry (71, 72) is not
# authorized either (KafkaApis asks no ACL for it).
NO_CHECKS = frozenset({17, 18, 36, 39, 40, 60, 71, 72})


@functools.lru_cache(maxsize=None)
def checks_for(api_key: int, version: int) -> dict[str, Check]:
    """The rows that apply to one version, by label (a later row of a label wins)."""
    from protocol.schema import Versions
    return {c.label: c for c in API_CHECKS.get(api_key, ()) if version in Versions.parse(c.versions)}


_ALL_OPS = {rt: sum(1 << op for op in ops) for rt, ops in SUPPORTED_OPERATIONS.items()}


class RequestAuthz:
    """The authorization view of one request: the caller, and the table rows of its API."""

    __slots__ = ("authorizer", "principal", "host", "api_key", "checks")

    def __init__(self, authorizer, principal: str, host: str, api_key: int, api_version: int):
        self.authorizer = authorizer
        self.principal = principal
        self.host = host
        self.api_key = api_key
        self.checks = checks_for(api_key, api_version)

    @property
    def enabled(self) -> bool:
        return self.authorizer is not None

    def check(self, label: str) -> Check:
        return self.checks[label]

    def error(self, label: str) -> int:
        return int(self.checks[label].error)

    def allowed(self, label: str, name: str = CLUSTER_NAME) -> bool:
        c = self.checks[label]
        if self.authorizer is None:
            return True
        return self.authorizer.authorize(self.principal, self.host, c.op, c.resource, name,
                                         log_denied=c.deny is not Deny.OMIT)

    def allowed_any(self, label: str) -> bool:
        """Allowed on at least one resource of the row's type (``authorizeByResourceType``)."""
        c = self.checks[label]
        if self.authorizer is None:
            return True
        return self.authorizer.authorize_by_resource_type(self.principal, self.host, c.op, c.resource)

    def split(self, label: str, names: Iterable[str]) -> tuple[set[str], set[str]]:
        """(allowed, denied) among distinct names, each decided once."""
        ok: set[str] = set()
        no: set[str] = set()
        for n in names:
            if n in ok or n in no:
                continue
            (ok if self.allowed(label, n) else no).add(n)
        return ok, no

    def operations(self, resource_type: RT, name: str = CLUSTER_NAME) -> int:
        """An ``*_authorized_operations`` field."""
        if self.authorizer is None:
            return _ALL_OPS[resource_type]
        return self.authorizer.authorized_operations(self.principal, self.host, resource_type, name)


def active(ctx) -> RequestAuthz | None:
    """The request's authorization view when ACLs are on, else None (handlers then skip every
    check: no cost on the hot path of a broker without an authorizer)."""
    az = getattr(ctx, "authz", None)
    return az if az is not None and az.authorizer is not None else None


def operations(ctx, resource_type: RT, name: str = CLUSTER_NAME) -> int:
    """An ``*_authorized_operations`` field for this request's caller (every supported
    operation when ACLs are off, as Kafka reports it)."""
    az = getattr(ctx, "authz", None)
    if az is None:
        return _ALL_OPS[resource_type]
    return az.operations(resource_type, name)


def acl_api_refusal(authz: RequestAuthz) -> tuple[int, str] | None:
    """Why an ACL admin API (Describe/Create/DeleteAcls) refuses this caller, as (error code,
    message), or None: no authorizer configured, then the row ``cluster`` of the API denied
    (Kafka's ``AclApis``)."""
    if authz.authorizer is None:
        return int(E.SECURITY_DISABLED), "No Authorizer is configured."
    if not authz.allowed("cluster"):
        return authz.error("cluster"), "Cluster authorization failed."
    return None


def split_described_groups(az: RequestAuthz | None, ids, cls) -> tuple[list, list]:
    """For Consumer/ShareGroupDescribe: (the group ids the caller may describe, ``cls`` entries
    answering GROUP_AUTHORIZATION_FAILED for the others, which Kafka lists first)."""
    if az is None:
        return list(ids), []
    ok, _ = az.split("group", ids)
    return [g for g in ids if g in ok], [cls(error_code=E.GROUP_AUTHORIZATION_FAILED, group_id=g)
                                         for g in ids if g not in ok]


def hide_groups_naming_denied_topics(az: RequestAuthz | None, groups: list, topics_of, cls) -> list:
    """Clients may not see topics they cannot describe: a described group whose assignments
    (``topics_of(group)``: names) name one answers TOPIC_AUTHORIZATION_FAILED with no members."""
    if az is None:
        return groups
    _, denied = az.split("topic", {n for g in groups for n in topics_of(g)})
    if not denied:
        return groups
    return [cls(group_id=g.group_id, error_code=E.TOPIC_AUTHORIZATION_FAILED, members=[],
                error_message="The group has described topic(s) that the client is not authorized to describe.")
            if any(n in denied for n in topics_of(g)) else g for g in groups]
