"""Topology configuration of a Streams group (KIP-1071): Kafka's InternalTopicManager,
RepartitionTopics, CopartitionedTopicsEnforcer and ChangelogTopics as pure functions.

``configure_topology(topology, partitions_of)`` decides, from the topology a member sent and
the partition counts of the topics that exist (``partitions_of(name)`` -> count or None):

1. every source topic must exist (repartition topics are not source topics: the Streams client
   names them only as repartition source topics), else the MISSING_SOURCE_TOPICS status
   ("Source topics a, b are missing.");
2. a repartition topic without a fixed partition count gets the largest task count of the
   subtopologies writing to it (iterated until every count is known; a repartition topic no
   subtopology writes to, or a cycle, is an INCORRECTLY_PARTITIONED_TOPICS status);
3. copartition groups are made equal: their external topics must already agree, and their
   repartition topics take that count (or, when the group has only repartition topics, the
   largest of theirs; a fixed count that disagrees is an error);
4. each subtopology has as many tasks as its largest source (or repartition source) topic,
   and its changelog topics have one partition per task;
5. internal topics that exist with another partition count are INCORRECTLY_PARTITIONED_TOPICS;
   the missing ones are returned to be created (status MISSING_INTERNAL_TOPICS meanwhile).

The topology is *ready* (tasks may be assigned) only with no status and nothing to create.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional
from broker.java_hash import java_hash_order

STALE_TOPOLOGY = 0
MISSING_SOURCE_TOPICS = 1
INCORRECTLY_PARTITIONED_TOPICS = 2
MISSING_INTERNAL_TOPICS = 3
SHUTDOWN_APPLICATION = 4
ASSIGNMENT_DELAYED = 5


@dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: int = 0             # 0: decided by the coordinator
    replication_factor: int = 0     # 0: the broker default
    configs: tuple = ()             # ((key, value), ...)


@dataclass(frozen=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple = ()
    repartition_sink_topics: tuple = ()
    state_changelog_topics: tuple = ()      # TopicInfo
    repartition_source_topics: tuple = ()   # TopicInfo
    copartition_groups: tuple = ()          # frozensets of topic names


@dataclass(frozen=True)
class StreamsTopology:
    epoch: int
    subtopologies: tuple  # Subtopology, in the member's order


@dataclass
class ConfiguredTopology:
    epoch: int
    tasks: dict = field(default_factory=dict)          # subtopology id -> number of tasks
    to_create: list = field(default_factory=list)      # TopicInfo with its partition count
    internal_partitions: dict = field(default_factory=dict)  # internal topic -> its partition count
    status: Optional[tuple] = None                     # (status code, detail) that blocks assignment

    @property
    def ready(self) -> bool:
        return self.status is None and not self.to_create


class TopicConfigurationError(Exception):
    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status = status
        self.detail = detail


def summarize_topics(names: list) -> str:
    """Kafka's summary of a topic list in a status: the first three, then a count."""
    if not names:
        return "<none>"
    head = ", ".join(names[:3])
    return head + (f" and {len(names) - 3} additional topics" if len(names) > 3 else "")


def topology_from_request(t) -> StreamsTopology:
    """The wire Topology of a StreamsGroupHeartbeat as a ``StreamsTopology``."""
    def info(ti):
        return TopicInfo(ti.name, ti.partitions, ti.replication_factor,
                         tuple((kv.key, kv.value) for kv in ti.topic_configs))
    subs = []
    for s in t.subtopologies:
        groups = []
        for g in s.copartition_groups:
            names = {s.source_topics[i] for i in g.source_topics}
            names |= {s.repartition_source_topics[i].name for i in g.repartition_source_topics}
            groups.append(frozenset(names))
        subs.append(Subtopology(s.subtopology_id, tuple(s.source_topics), tuple(s.repartition_sink_topics),
                                tuple(info(x) for x in s.state_changelog_topics),
                                tuple(info(x) for x in s.repartition_source_topics), tuple(groups)))
    return StreamsTopology(t.epoch, tuple(subs))


def _repartition_counts(topology: StreamsTopology, partitions_of) -> dict[str, int]:
    fixed = {ti.name: ti.partitions for s in topology.subtopologies for ti in s.repartition_source_topics}
    counts = {n: p for n, p in fixed.items() if p > 0}
    writers = {n: [s for s in topology.subtopologies if n in s.repartition_sink_topics] for n in fixed}
    for n, ws in writers.items():
        if n not in counts and not ws:
            raise TopicConfigurationError(
                INCORRECTLY_PARTITIONED_TOPICS, "Failed to compute number of partitions for all repartition topics, "
                "because a repartition source topic is never used as a sink topic.")
    while len(counts) < len(fixed):
        progress = False
        for n in fixed:
            if n in counts:
                continue
            best, known = 0, True
            for w in writers[n]:
                for src in w.source_topics:
                    c = partitions_of(src)
                    best = max(best, c or 0)
                for ti in w.repartition_source_topics:
                    if ti.name in counts:
                        best = max(best, counts[ti.name])
                    else:
                        known = False
            if known and best > 0:  # the largest task count among the writers
                counts[n] = best
                progress = True
        if not progress:
            raise TopicConfigurationError(
                INCORRECTLY_PARTITIONED_TOPICS, "Failed to compute number of partitions for all repartition topics. "
                "There may be loops in the topology that cannot be resolved.")
    return counts


def _enforce_copartitioning(topology: StreamsTopology, repartition: dict[str, int], partitions_of) -> None:
    fixed = {ti.name for s in topology.subtopologies for ti in s.repartition_source_topics if ti.partitions > 0}
    for s in topology.subtopologies:
        for group in s.copartition_groups:
            external = sorted(n for n in group if n not in repartition)
            internal = sorted(n for n in group if n in repartition)
            if external:
                counts = {n: partitions_of(n) for n in external}
                if len(set(counts.values())) > 1:
                    listing = ", ".join(f"{n}:{c}" for n, c in counts.items())
                    raise TopicConfigurationError(
                        INCORRECTLY_PARTITIONED_TOPICS,
                        f"Following topics do not have the same number of partitions: [{listing}]")
                target = counts[external[0]]
            else:
                pinned = [repartition[n] for n in internal if n in fixed]
                target = max(pinned) if pinned else max(repartition[n] for n in internal)
            for n in internal:
                if n in fixed and repartition[n] != target:
                    raise TopicConfigurationError(
                        INCORRECTLY_PARTITIONED_TOPICS,
                        f"Number of partitions [{repartition[n]}] of repartition topic [{n}] doesn't match number "
                        f"of partitions [{target}] of the source topic.")
                repartition[n] = target


def configure_topology(topology: StreamsTopology, partitions_of: Callable[[str], Optional[int]]) -> ConfiguredTopology:
    out = ConfiguredTopology(topology.epoch)
    repartition_names = {ti.name for s in topology.subtopologies for ti in s.repartition_source_topics}
    missing = sorted({t for s in topology.subtopologies for t in s.source_topics if partitions_of(t) is None})
    if missing:
        out.status = (MISSING_SOURCE_TOPICS, f"Source topics {summarize_topics(missing)} are missing.")
        return out
    try:
        repartition = _repartition_counts(topology, partitions_of)
        _enforce_copartitioning(topology, repartition, partitions_of)
    except TopicConfigurationError as exc:
        out.status = (exc.status, exc.detail)
        return out
    internal: dict[str, TopicInfo] = {}
    for s in topology.subtopologies:
        n = max([partitions_of(t) or 0 for t in s.source_topics if t not in repartition_names]
                + [repartition[t] for t in s.source_topics if t in repartition_names]
                + [repartition[ti.name] for ti in s.repartition_source_topics] + [0])
        out.tasks[s.subtopology_id] = n
        for ti in s.repartition_source_topics:
            internal[ti.name] = TopicInfo(ti.name, repartition[ti.name], ti.replication_factor, ti.configs)
        for ti in s.state_changelog_topics:
            internal[ti.name] = TopicInfo(ti.name, n, ti.replication_factor, ti.configs)
    out.internal_partitions = {name: ti.partitions for name, ti in internal.items()}
    for name, ti in internal.items():
        have = partitions_of(name)
        if have is None:
            out.to_create.append(ti)
        elif have != ti.partitions:
            out.status = (INCORRECTLY_PARTITIONED_TOPICS, f"Existing topic {name} has different number of "
                                                          f"partitions: expected {ti.partitions}, found {have}")
            return out
    if out.to_create:
        out.status = (MISSING_INTERNAL_TOPICS,
                      f"Internal topics are missing: {summarize_topics(java_hash_order([t.name for t in out.to_create]))}")
    return out
