"""What every group type (classic, consumer, Streams) is built on, Kafka's Group interface
in part: the committed offsets a group carries (``GroupOffsets``, the base class of every
group type, Kafka's per-group state in OffsetMetadataManager), its ListGroups ``GroupOverview``,
and the request helpers of offset commits and fetches. Pure: no I/O, no event loop.

Each group type's module depends on this one, never on a sibling group type's."""
from __future__ import annotations

from typing import Iterable, Optional

from protocol.deferred import dataclass
from protocol.errors import ErrorCode


@dataclass(frozen=True)
class OffsetAndMetadata:
    """A committed offset. ``leader_epoch`` -1 means none; ``expire_timestamp`` is set only by
    OffsetCommit v2-4 requests with an explicit retention time (old expiry semantics)."""
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: Optional[int] = None


def resolve_topic_ids(topics, req_topics) -> None:
    """Requests that name topics by id (OffsetCommit/OffsetFetch v10, TxnOffsetCommit v6): each
    entry's ``name`` set to its topic's name, None for an id no topic has (UNKNOWN_TOPIC_ID)."""
    for t in req_topics:
        info = topics.by_id(t.topic_id)
        t.name = info.name if info is not None else None


def commit_partitions(topics, req_topics, denied, offset_of) -> tuple[dict, dict]:
    """Split the partitions of an OffsetCommit/TxnOffsetCommit request into ``(offsets,
    errors)`` keyed by (topic, partition): TOPIC_AUTHORIZATION_FAILED for topics in ``denied``,
    UNKNOWN_TOPIC_OR_PARTITION for partitions the broker does not have, else
    ``offset_of(partition_request)`` (an OffsetAndMetadata) for the coordinator to store."""
    offsets: dict = {}
    errors: dict = {}
    for t in req_topics:
        if t.name in denied:
            for p in t.partitions:
                errors[(t.name, p.partition_index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            continue
        info = topics.get(t.name)
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if info is None or not 0 <= p.partition_index < info.partitions:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                offsets[tp] = offset_of(p)
    return offsets, errors


@dataclass
class GroupOverview:
    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"


class GroupOffsets:
    """A group's committed offsets, whatever protocol its members speak (classic and
    consumer-protocol groups both carry one; a group converted from one protocol to the
    other hands its offsets over with ``adopt_offsets``)."""

    def __init__(self) -> None:
        self.offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
        # log offset of the batch holding each committed offset (-1: unknown), to order a
        # transaction's offsets against plain commits when its COMMIT marker arrives
        self.offset_positions: dict[tuple[str, int], int] = {}
        # offsets committed in open transactions: producer id -> {tp: (offset, batch position)}
        self.pending_txn_offsets: dict[int, dict[tuple[str, int], tuple[OffsetAndMetadata, int]]] = {}

    def adopt_offsets(self, other: "GroupOffsets") -> None:
        self.offsets = other.offsets
        self.offset_positions = other.offset_positions
        self.pending_txn_offsets = other.pending_txn_offsets

    def has_offsets(self) -> bool:
        return bool(self.offsets) or any(self.pending_txn_offsets.values())

    def commit_offsets(self, offsets: dict[tuple[str, int], OffsetAndMetadata], position: int = -1) -> None:
        """Plain commits, appended at log offset ``position``: they replace what was there."""
        self.offsets.update(offsets)
        for tp in offsets:
            self.offset_positions[tp] = position

    def add_pending_txn_offsets(self, producer_id: int, offsets: dict[tuple[str, int], OffsetAndMetadata],
                                position: int = -1) -> None:
        pending = self.pending_txn_offsets.setdefault(producer_id, {})
        for tp, om in offsets.items():
            pending[tp] = (om, position)

    def has_pending_txn_offset(self, tp: tuple[str, int]) -> bool:
        return any(tp in p for p in self.pending_txn_offsets.values())

    def complete_pending_txn_offsets(self, producer_id: int, commit: bool) -> int:
        """Kafka's completePendingTxnOffsetCommit: on COMMIT the producer's pending offsets
        become committed unless a plain commit written later in the log replaced them."""
        pending = self.pending_txn_offsets.pop(producer_id, {})
        if not commit:
            return 0
        n = 0
        for tp, (om, pos) in pending.items():
            if tp not in self.offsets or pos < 0 or self.offset_positions.get(tp, -1) < pos:
                self.offsets[tp] = om
                self.offset_positions[tp] = pos
                n += 1
        return n

    def remove_offsets(self, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], OffsetAndMetadata]:
        removed = {}
        for tp in partitions:
            for pending in self.pending_txn_offsets.values():
                pending.pop(tp, None)
            self.offset_positions.pop(tp, None)
            om = self.offsets.pop(tp, None)
            if om is not None:
                removed[tp] = om
        return removed

    def remove_all_offsets(self) -> dict[tuple[str, int], OffsetAndMetadata]:
        return self.remove_offsets(list(self.offsets))


    @staticmethod
    def pick_expired(offsets, now_ms: int, retention_ms: int, base, keep_topics=frozenset()) -> list:
        """Offsets past retention (counted from ``base(om)``) outside ``keep_topics``; an
        offset with an explicit expire timestamp (old OffsetCommit) expires at that time."""
        out = []
        for tp, om in offsets.items():
            if tp[0] in keep_topics:
                continue
            if om.expire_timestamp is not None:
                if now_ms >= om.expire_timestamp:
                    out.append(tp)
            elif now_ms - base(om) >= retention_ms:
                out.append(tp)
        return out
