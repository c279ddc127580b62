"""The differences between Apache Kafka and Hourglass that we keep, each with its reason.

An entry names the API, the versions (inclusive), the difference path (fnmatch pattern) and,
optionally, the two values; ``tests/differential/framework.py`` accepts a difference only when
an entry here matches it. "not yet fixed: ..." marks differences that are ours to fix.
"""
from __future__ import annotations

from tests.differential.framework import ANY, Kept  # noqa: F401

NO_FEATURES = ("Hourglass finalizes no feature levels (no KRaft metadata.version); clients learn what it "
               "serves from the API ranges, and a finalized transaction.version 2 would move them to the "
               "transaction protocol Hourglass does not serve (README: What it serves)")

REMOVED_IN_4 = ("not yet fixed: Kafka 4.0 removed this topic config (KIP-724/KIP-937 deprecations); Hourglass's "
                "topic config model is still Kafka 3.9's and lists and accepts it")
NEW_IN_4 = "not yet fixed: a topic config new in Kafka 4.x that Hourglass does not know yet"
CONFLUENT = ("Confluent Server's schema ID validation topic configs, which Hourglass serves "
             "(README: schema ID validation)")
OUR_DOCS = "Hourglass writes its own documentation strings for its configs (it does not copy Kafka's text)"

NO_SUCH_SHARE_GROUP = ("not yet fixed: Kafka 4.4 treats a share group that does not exist as an empty one "
                       "(describe lists its partitions, alter and delete succeed); Hourglass answers "
                       "GROUP_ID_NOT_FOUND")


def _group_not_found(message) -> bool:
    return isinstance(message, str) and message.startswith("Group ") and message.endswith(" not found.")


KEPT: list[Kept] = [
    # DescribeConfigs (32) and CreateTopics (19): the topic config model
    Kept(32, ANY, "*.documentation", OUR_DOCS),
    *[Kept(api, ANY, f"*configs[{name}]", reason)
      for api in (19, 32)
      for name, reason in (("confluent.*", CONFLUENT),
                           ("message.downconversion.enable", REMOVED_IN_4),
                           ("message.format.version", REMOVED_IN_4),
                           ("message.timestamp.difference.max.ms", REMOVED_IN_4),
                           ("errors.deadletterqueue.group.enable", NEW_IN_4),
                           ("max.decompressed.message.bytes", NEW_IN_4),
                           ("remote.copy.lag.bytes", NEW_IN_4),
                           ("remote.copy.lag.ms", NEW_IN_4))],
    Kept(32, ANY, "*configs[offsets.topic.replication.factor].synonyms[*].value",
         "Hourglass's default is 1 (one node, the only replica); Kafka's is 3", kafka="3", hourglass="1"),
    Kept(32, ANY, "*configs[sasl.jaas.config]",
         "Hourglass reads JAAS settings per listener and mechanism (listener.name.<l>.<mechanism>.sasl.jaas.config); "
         "the broker-wide key, which Kafka brokers ignore too, is not listed", kafka="present", hourglass="absent"),
    # Metadata (3): auto-creation
    Kept(3, ANY, "topics[*].error_code",
         "auto-creation: Hourglass, its own controller, creates the topic before it answers, so the first "
         "Metadata lists it; Kafka's broker forwards the creation to its controller and answers "
         "UNKNOWN_TOPIC_OR_PARTITION until its metadata image has the topic", kafka=3, hourglass=0),
    Kept(3, ANY, "topics[*].partitions.length", "the auto-created topic's partition (see above)",
         kafka=0, hourglass=1),
    # ConsumerGroupHeartbeat (68)
    Kept(68, ANY, "member_epoch",
         "not yet fixed: Kafka 4.4 gives the first member of a new consumer group epoch 2 (the group is "
         "created at epoch 1), Hourglass epoch 1; clients only compare epochs with the broker's own, and "
         "the KIP-848 coordinator is being reworked on its own branch", kafka=2, hourglass=1),
    Kept(68, ANY, "error_message",
         "an invalid regular expression: the rest of the message is the regex engine's own description "
         "(Java's, Python's)", kafka="SubscribedTopicRegex `(unclosed` is not a valid regular expression: "
         "missing closing ).", hourglass="SubscribedTopicRegex `(unclosed` is not a valid regular expression: "
         "missing ): (unclosed."),
    # ACLs (29, 30, 31)
    Kept(30, ANY, "results[*].error_code",
         "a binding with ANY or MATCH where a concrete value is needed: Kafka 4.4 answers "
         "UNKNOWN_SERVER_ERROR without a message (an exception escapes its controller's ACL "
         "validation); Hourglass answers INVALID_REQUEST naming the field", kafka=-1, hourglass=42),
    Kept(30, ANY, "results[*].error_message", "the message of the INVALID_REQUEST above", kafka=None),
    *[Kept(api, ANY, "<answer>",
           "a request carrying UNKNOWN (0) as a resource or pattern type: Kafka 4.4 cannot parse it and "
           "closes the connection; Hourglass answers it with INVALID_REQUEST for that entry and keeps "
           "the connection", kafka="connection closed", hourglass="answered") for api in (29, 30, 31)],
    # ShareFetch (78)
    Kept(78, ANY, "responses.length",
         "not yet fixed: a share fetch from a member the group does not know: Kafka answers no partitions, "
         "Hourglass each requested partition without records", kafka=0, hourglass=1),
    Kept(78, ANY, "responses[*].partitions[*].error_code",
         "Kafka's own race: for a member the group does not know, Kafka 4.4 sometimes answers the partition "
         "with UNKNOWN_SERVER_ERROR instead of no partitions, when its read of the share partition's state "
         "comes before the share coordinator initialized it ('Read on uninitialized share partition' in "
         "its log); Hourglass answers the partition with no error and no records", kafka=-1, hourglass=0),
    # Describe/Alter/DeleteShareGroupOffsets (90-92): a group that does not exist
    *[Kept(api, ANY, path, NO_SUCH_SHARE_GROUP, kafka=k, hourglass=h) for api, path, k, h in (
        (90, "groups[*].error_code", 0, 69), (90, "groups[*].error_message", None, _group_not_found),
        (90, "groups[*].topics.length", 1, 0),
        (91, "responses[*].partitions[*].error_code", ..., 69),
        (91, "responses[*].partitions[*].error_message", ..., _group_not_found),
        (92, "error_code", 0, 69), (92, "error_message", None, _group_not_found),
        (92, "responses[*]", "present", "absent"))],
    # IncrementalAlterConfigs (44)
    Kept(44, ANY, "responses[*].error_*",
         "an unknown config operation: Kafka 4.4 answers UNKNOWN_SERVER_ERROR (an exception escapes its "
         "handler); Hourglass answers INVALID_REQUEST naming the operation", kafka=-1, hourglass=42),
    Kept(44, ANY, "responses[*].error_message",
         "the message of the unknown-operation refusal above", kafka=None, hourglass="Unknown operations type 7"),
    # Fetch (1)
    Kept(1, ANY, "session_id",
         "fetch sessions (KIP-227) are declined: session id 0 makes clients send full fetches, which is "
         "always correct (README, broker/handlers/fetch.py)", kafka="<generated>", hourglass=0),
    Kept(1, ANY, "error_code", "an unknown fetch session: Hourglass keeps none, so it answers the full fetch "
         "(see the session id above)", kafka=70, hourglass=0),
    Kept(1, ANY, "responses.length", "an unknown fetch session (see above)", kafka=0, hourglass=1),
    Kept(1, ANY, "*.records.trailing_partial_bytes",
         "Kafka's fetch is a slice of the segment file cut at the byte limit, so it may end in a "
         "partial batch the client drops; Hourglass stops at the last whole batch within the limit "
         "(the same records reach the client, fewer bytes are sent)", hourglass=0),
    # ApiVersions (18)
    Kept(18, (3, 5), "supported_features*", NO_FEATURES),
    Kept(18, (3, 5), "finalized_features*", NO_FEATURES),
]

# ApiVersions: API key -> why Hourglass advertises another range than Kafka 4.4.
OLD = "older versions Kafka 4 removed (KIP-896) stay served for older clients"
ONE_NODE = "one node, its own only replica: no replica placement or log-dir moves to serve"
KRAFT = "no KRaft quorum: Hourglass is its own controller without a metadata log"
KEPT_RANGES: dict[int, str] = {
    1: OLD,
    2: OLD,
    8: OLD,
    9: OLD,
    19: OLD,
    20: OLD,
    23: OLD,
    29: OLD, 30: OLD, 31: OLD, 32: OLD,
    34: ONE_NODE + " (AlterReplicaLogDirs)",
    35: ONE_NODE + " (DescribeLogDirs)",
    38: "delegation tokens are not served (README)",
    39: "delegation tokens are not served (README)",
    40: "delegation tokens are not served (README)",
    41: "delegation tokens are not served (README)",
    43: ONE_NODE + " (ElectLeaders)",
    45: ONE_NODE + " (AlterPartitionReassignments)",
    46: ONE_NODE + " (ListPartitionReassignments)",
    55: KRAFT + " (DescribeQuorum)",
    57: "no feature levels to update: Hourglass finalizes no features (UpdateFeatures)",
    64: KRAFT + " (UnregisterBroker)",
    74: "client metrics resources (KIP-714 subscriptions) are not served (ListConfigResources)",
    80: KRAFT + " (AddRaftVoter)",
    81: KRAFT + " (RemoveRaftVoter)",
    83: "share-group state RPCs are Kafka's inter-broker path; Hourglass's share coordinator keeps "
        "its state in-process",
    84: "share-group state RPCs are inter-broker (see 83)",
    85: "share-group state RPCs are inter-broker (see 83)",
    86: "share-group state RPCs are inter-broker (see 83)",
    87: "share-group state RPCs are inter-broker (see 83)",
    93: "StreamsGroupTopologyDescriptionUpdate (KIP-1331) stores a topology description with a broker plugin "
        "(group.streams.topology.description.plugin.class); Hourglass has no such plugin, and Kafka without one "
        "answers it UNSUPPORTED_VERSION",
    94: KRAFT + " (UnregisterController)",
}
