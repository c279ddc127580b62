"""How much one admin request may create or change: Kafka 4.4's controller bounds, pure.

Kafka's KRaft controller turns an admin request into metadata records and refuses, for the
whole request, one that would be too large (``QuorumController.MAX_RECORDS_PER_USER_OP`` and
``ReplicationControlManager.MAX_PARTITIONS_PER_BATCH``, both 10,000), answering every entry
of the request POLICY_VIOLATION (the request's ``getErrorResponse``). Two checks, in order:

1. before any other check, the partitions asked for (``validateTotalNumberOfPartitions``):
   CreateTopics sums, over the topics that reach the controller (not the duplicates, not
   ``__cluster_metadata``, not the unauthorized ones), the assignment count when assignments
   are given, else the default partition count for -1, the count when positive, 0 otherwise;
   CreatePartitions sums, over the existing topics with a count >= 0, the partitions each
   would add (when positive). Above 10,000: "Excessively large number of partitions per
   request." / "Excessively large number of additional partitions per request.";
2. after the per-entry checks, the records the valid entries would write (``BoundedList``):
   a topic is one TopicRecord, one ConfigRecord per config given and one PartitionRecord per
   partition; a new distinct valid ACL one AccessControlEntryRecord. Above 10,000: "Unable to
   perform excessively large batch operation." (``EventHandlerExceptionInfo``). So one topic
   of 10,000 partitions passes the first check and fails the second (10,001 records).
   DeleteAcls removing more than 10,000 ACLs answers INVALID_REQUEST "Cannot remove more than
   10000 acls in a single delete operation." on every filter instead.

Both hold for ``validate_only`` too (the controller builds the records before it looks at
the flag). Asked of the oracle with absurd counts (2^31-1, 1,000,000, 10,001): it answers
exactly this, whatever the count, so no request can make the broker create more than 10,000
partitions, ACLs or configs at once (tests/differential/test_admin_limits.py).
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional

MAX_RECORDS_PER_USER_OP = 10_000
MAX_PARTITIONS_PER_BATCH = 10_000

TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."
TOO_MANY_ADDITIONAL_PARTITIONS = "Excessively large number of additional partitions per request."
BATCH_TOO_LARGE = "Unable to perform excessively large batch operation."
# DeleteAcls checks its own count first, with INVALID_REQUEST (AclControlManager.deleteAcls)
TOO_MANY_ACLS_REMOVED = f"Cannot remove more than {MAX_RECORDS_PER_USER_OP} acls in a single delete operation."


def requested_partitions(num_partitions: int, assignments: int, default_partitions: int) -> int:
    """The partitions one CreatableTopic counts for in check 1 (``assignments``: how many
    manual assignments it gives)."""
    if assignments:
        return assignments
    if num_partitions == -1:
        return default_partitions
    return max(num_partitions, 0)


def create_topics_too_many(topics: Iterable[tuple[int, int]], default_partitions: int) -> bool:
    """Check 1 of CreateTopics over (num_partitions, assignment count) of each topic that
    reaches the controller: True when the request must be refused."""
    total = 0
    for num_partitions, assignments in topics:
        total += requested_partitions(num_partitions, assignments, default_partitions)
        if total > MAX_PARTITIONS_PER_BATCH:
            return True
    return False


def create_partitions_too_many(topics: Iterable[tuple[str, int]], current: Callable[[str], Optional[int]]) -> bool:
    """Check 1 of CreatePartitions over (name, count) of each topic that reaches the
    controller; ``current(name)`` is its partition count now, None for an unknown topic."""
    total = 0
    for name, count in topics:
        if count < 0:
            continue
        now = current(name)
        if now is None or count <= now:
            continue
        total += count - now
        if total > MAX_PARTITIONS_PER_BATCH:
            return True
    return False


def topic_records(partitions: int, configs: int) -> int:
    """The metadata records creating one topic writes (check 2)."""
    return 1 + configs + partitions


def batch_too_large(records: int) -> bool:
    return records > MAX_RECORDS_PER_USER_OP
