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

CONFLUENT = ("Confluent Server's schema ID validation topic configs, which Hourglass serves "
             "(README: schema ID validation)")
OUR_DOCS = "Hourglass writes its own documentation strings for its configs (it does not copy Kafka's text)"

KEPT: list[Kept] = [
    # DescribeConfigs (32) and CreateTopics (19): the topic config model
    Kept(32, ANY, "*.documentation", OUR_DOCS),
    *[Kept(api, ANY, f"*configs[{name}]", reason)
      for api in (19, 32)
      for name, reason in (("confluent.*", CONFLUENT),)],
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
         "Kafka's own race: for a member the group does not know, Kafka 4.4 sometimes answers the partition "
         "with UNKNOWN_SERVER_ERROR instead of leaving it out, when its read of the share partition's state "
         "comes before the share coordinator initialized it ('Read on uninitialized share partition' in "
         "its log); Hourglass leaves it out (Kafka's answer without the race)", kafka=1, hourglass=0),
    Kept(78, ANY, "responses[*].partitions[*].records.trailing_partial_bytes",
         "a ShareFetch partition read within its share of max_bytes: Kafka returns the log bytes as read, "
         "ending inside the batch that did not fit (clients drop the partial batch), as its Fetch does; "
         "Hourglass returns whole batches only (see Fetch's entry). The acquired records are the same",
         hourglass=0),
    Kept(78, ANY, "draws.partition_order",
         "which partition leads each ShareFetch answer of a backlogged session: both rotate the session's "
         "partitions by the share session epoch (Kafka's PartitionRotateStrategy.ROUND_ROBIN), but Kafka 4.4's "
         "DelayedShareFetch then acquires first from the partitions whose cached log position it did not have "
         "to re-read in tryComplete (combineLogReadResponse appends the ones it re-read), an artefact of its "
         "fetch-offset-metadata cache; Hourglass acquires in the rotated order. Compared alike: the partitions "
         "each answer draws from (how many), the records it carries, each partition's total and the answers "
         "needed to drain the session"),
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
