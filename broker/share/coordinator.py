"""The share-group coordinator and share-partition manager of one node (KIP-932): Kafka's
GroupMetadataManager for share groups, SharePartitionManager, ShareSessionCache and share
coordinator, in one object (``broker.share_groups``).

Membership (ShareGroupHeartbeat): ``broker.share.group``; a member's session timeout is
``share.session.timeout.ms`` (group config, else ``group.share.session.timeout.ms``). A member
leaving (epoch -1) or expiring is removed and the group epoch bumped -- and nothing else: the
other members' epochs and assignments move only in their own heartbeats (as Kafka 4.4: never
fenced by a change they did not make), and the leaver's share session and the records it holds
are not touched.

Delivery (ShareFetch / ShareAcknowledge): share sessions keyed by (group id, member id):
epoch 0 opens (replacing an old one, whose records stay with the member id), -1 closes, any
other must be the session's next epoch (INVALID_SHARE_SESSION_EPOCH) of an existing session
(SHARE_SESSION_NOT_FOUND); each success moves the epoch on by one.

When a member's acquired records are released, as Kafka 4.2 (SharePartitionManager,
ShareSessionCache): only when nothing can acknowledge them any more, that is when its share
session ends --
- a final-epoch ShareFetch/ShareAcknowledge: its acknowledgements are applied first, then the
  session is removed and the rest released (``releaseSession``);
- the connection that opened the session closes (Kafka's ConnectionDisconnectListener ->
  ShareGroupListener.onMemberLeave -> ``releaseSession``; a consumer killed with -9);
- or record by record, when its acquisition lock expires.
Leaving the group is not among them: in Kafka the group coordinator never tells the share-
partition manager about a ShareGroupHeartbeat leave. That order matters on close: a client
sends its leave heartbeat and its final ShareAcknowledge together, on two connections, and
the acknowledgement must find the session and the records still held wherever it lands.
A member that stops without closing its connection keeps its records until their locks
expire. A share-partition
(``broker.share.partition.SharePartition``) is created on the first fetch of a group: from
its persisted state, else at ``share.auto.offset.reset`` (latest: the high watermark;
earliest: the log start; by_duration: the first offset stamped at or after now minus the
duration, through the time index, the log end when none is) -- and that start is written at
once, so a restart does not move it. Reads go up to the high watermark, or the last stable
offset under ``share.isolation.level=read_committed`` (aborted transactions' records are then
archived instead of delivered, as Kafka's share fetch does).

A parked ShareFetch wakes on appends and on records becoming available again (a release,
an expired lock: ``broker.waiters`` is notified for the partition), never by polling.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Optional

from broker.groups.timers import KeyedTimers
from broker.share.group import ShareGroup, epoch_error
from broker.share.partition import (
    ACKNOWLEDGED, ARCHIVED, InvalidRecordState, InvalidRequest, SharePartition, validate_batches,
)
from broker.share.state_log import ShareStateLog
from protocol.errors import ErrorCode as E
from protocol.records.batch import iter_batch_positions

log = logging.getLogger(__name__)

LEAVE_GROUP_MEMBER_EPOCH = -1
FINAL_EPOCH = -1
INITIAL_EPOCH = 0


class ShareError(Exception):
    def __init__(self, code: int, message: Optional[str] = None):
        super().__init__(message or E(code).name)
        self.code = int(code)
        self.message = message


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    epoch: int = 1  # the epoch the next request must carry
    # (topic id, partition) -> None: an ordered set, in the order the partitions joined the
    # session (Kafka's ShareSession partition map), which ShareFetch rotates
    partitions: dict = field(default_factory=dict)
    conn: object = None  # the connection that opened it: its close ends the session


def next_epoch(e: int) -> int:
    return 1 if e >= 2**31 - 1 else e + 1


class ShareCoordinator:
    def __init__(self, broker, *, scheduler=None):
        self.broker = broker
        self.cfg = broker.cfg
        self.clock = broker.clock
        self.topics = broker.topics
        self.scheduler = scheduler
        self.groups: dict[str, ShareGroup] = {}
        self.partitions: dict[tuple, SharePartition] = {}  # (group, topic id, partition)
        self.sessions: dict[tuple, ShareSession] = {}
        self._timers = KeyedTimers(lambda: self.scheduler, "share timer")
        self.store = ShareStateLog(broker.topics, self.cfg["share.coordinator.state.topic.num.partitions"],
                                   broker.clock, self.cfg["share.coordinator.snapshot.update.records.per.snapshot"])
        self.persisted: dict = {}

    def now(self) -> int:
        return self.clock.now_ms()

    # ---- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        if self.scheduler is None:
            from broker.groups.timers import LoopScheduler
            self.scheduler = LoopScheduler(loop)
        self.persisted = self.store.load()
        for (g, tid, p) in self.persisted:
            self.groups.setdefault(g, ShareGroup(g)).initialized.add((tid, p))
        if self.persisted:
            log.info("loaded the state of %d share-partition(s) of %d share group(s)", len(self.persisted),
                     len(self.groups))

    def stop(self) -> None:
        self._timers.cancel_all()

    def _timer(self, key: tuple, delay_ms: int, fn) -> None:
        self._timers.set(key, delay_ms, fn)

    def _cancel_timer(self, key: tuple) -> None:
        self._timers.cancel(key)

    # ---- configs -------------------------------------------------------------------------------
    def group_config(self, group_id: str, key: str):
        return self.broker.group_configs.get(group_id, key)

    # ---- membership ------------------------------------------------------------------------------
    def other_group_type(self, group_id: str) -> bool:
        gc = getattr(self.broker, "groups", None)
        return gc is not None and group_id in gc.groups

    def _topics_of(self, names) -> dict:
        out = {}
        for n in names:
            t = self.topics.get(n)
            if t is not None:
                out[n] = (t.topic_id, t.partitions)
        return out

    def heartbeat(self, req, client_id: str, client_host: str) -> dict:
        """Kafka's GroupMetadataManager.shareGroupHeartbeat. Returns the response fields."""
        gid, mid, epoch = req.group_id, req.member_id, req.member_epoch
        if not gid or not gid.strip():
            raise ShareError(E.INVALID_REQUEST, "GroupId can't be empty.")
        if not mid or not mid.strip():
            raise ShareError(E.INVALID_REQUEST, None)  # Kafka 4.4 answers this one without a message
        if epoch < LEAVE_GROUP_MEMBER_EPOCH:
            raise ShareError(E.INVALID_REQUEST, "MemberEpoch is invalid.")
        if epoch == 0 and not req.subscribed_topic_names:
            raise ShareError(E.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
        if self.other_group_type(gid):
            raise ShareError(E.GROUP_ID_NOT_FOUND, f"Group {gid} is not a share group.")
        interval = self.group_config(gid, "share.heartbeat.interval.ms")
        if epoch == LEAVE_GROUP_MEMBER_EPOCH:
            g = self.groups.get(gid)
            if g is None or mid not in g.members:
                raise ShareError(E.UNKNOWN_MEMBER_ID, f"Member {mid} is not a member of group {gid}.")
            self.remove_member(g, mid, "the member left")
            return dict(member_id=mid, member_epoch=LEAVE_GROUP_MEMBER_EPOCH, heartbeat_interval_ms=0)
        g = self.groups.get(gid)
        if g is None:
            if epoch != 0:
                raise ShareError(E.GROUP_ID_NOT_FOUND, f"Share group {gid} not found.")
            g = self.groups[gid] = ShareGroup(gid)
        m = g.members.get(mid)
        if m is None:
            if epoch != 0:
                raise ShareError(E.UNKNOWN_MEMBER_ID, f"Member {mid} is not a member of group {gid}.")
            if len(g.members) >= self.cfg["group.share.max.size"]:
                raise ShareError(E.GROUP_MAX_SIZE_REACHED,
                                 f"The share group has reached its maximum capacity of "
                                 f"{self.cfg['group.share.max.size']} members.")
            log.info("[GroupId %s] Member %s joins the share group using the share protocol.", gid, mid)
        else:
            fenced = epoch_error(m.member_epoch, m.previous_member_epoch, epoch)
            if fenced:
                raise ShareError(E.FENCED_MEMBER_EPOCH, fenced)
        # only this member's epoch and assignment move (broker.share.group)
        m, before = g.heartbeat(mid, req.subscribed_topic_names, self._topics_of, self.now(),
                                self.group_config(gid, "share.assignment.interval.ms"))
        # Kafka's share coordinator initializes the new share-partitions after the heartbeat:
        # they enter the assignment from the next one
        g.initialize()
        m.client_id, m.client_host = client_id, client_host
        if req.rack_id is not None:
            m.rack_id = req.rack_id
        self._timer(("session", gid, mid), self.group_config(gid, "share.session.timeout.ms"),
                    lambda: self._expire_member(gid, mid))
        assignment = m.assignment if epoch == 0 or m.assignment != before else None
        return dict(member_id=mid, member_epoch=m.member_epoch, heartbeat_interval_ms=interval, assignment=assignment)

    def _expire_member(self, gid: str, mid: str) -> None:
        g = self.groups.get(gid)
        if g is not None and mid in g.members:
            log.info("[GroupId %s] Member %s fenced from the share group because its session expired.", gid, mid)
            self.remove_member(g, mid, "session expired")

    def remove_member(self, g: ShareGroup, mid: str, reason: str) -> None:
        """The member leaves the group (its leave heartbeat, or its session timed out). Its
        share session and acquired records stay: see the module docstring for why."""
        g.remove(mid, self._topics_of)
        self._cancel_timer(("session", g.group_id, mid))

    def _release_member(self, gid: str, mid: str, only=None) -> None:
        for key, sp in list(self.partitions.items()):
            if key[0] != gid or (only is not None and (key[1], key[2]) not in only):
                continue
            if sp.release_member(mid):
                self._persist(key, sp)
                self._notify(key)

    def describe(self, group_id: str):
        g = self.groups.get(group_id)
        if g is None or self.other_group_type(group_id):
            return None
        return g

    def delete_group(self, group_id: str) -> int:
        g = self.groups.get(group_id)
        if g is None:
            return E.GROUP_ID_NOT_FOUND
        if g.members:
            return E.NON_EMPTY_GROUP
        del self.groups[group_id]
        for key in [k for k in list(self.partitions) + list(self.persisted) if k[0] == group_id]:
            self.partitions.pop(key, None)
            self.persisted.pop(key, None)
            self.store.delete(key)
        return 0

    # ---- share-group offsets (admin) ---------------------------------------------------------------
    def start_offsets(self, group_id: str) -> dict:
        """(topic id, partition) -> share-partition start offset of every initialized
        share-partition of the group (live or only persisted; -1 until its first fetch)."""
        g = self.groups.get(group_id)
        out = {tp: -1 for tp in (g.initialized if g is not None else ())}  # initialized, never fetched
        out.update({(k[1], k[2]): ps.start_offset for k, ps in self.persisted.items() if k[0] == group_id})
        out.update({(k[1], k[2]): sp.start_offset for k, sp in self.partitions.items() if k[0] == group_id})
        return out

    def delivery_complete_counts(self, group_id: str) -> dict:
        """(topic id, partition) -> how many records past the start offset are already in a
        final state (acknowledged or archived), for every initialized share-partition of the
        group: what KIP-1226's lag leaves out (lag = high watermark - start - this count)."""
        done = (ACKNOWLEDGED, ARCHIVED)
        out = {(k[1], k[2]): sum(1 for off, (st, _n) in ps.offsets.items() if off >= ps.start_offset and st in done)
               for k, ps in self.persisted.items() if k[0] == group_id}
        out.update({(k[1], k[2]): sum(1 for r in sp.records.values() if r.state in done)
                    for k, sp in self.partitions.items() if k[0] == group_id})
        return out

    def alter_start_offset(self, group_id: str, tid: bytes, p: int, offset: int) -> None:
        """AlterShareGroupOffsets on an empty group: a new start, nothing in flight (a new
        state epoch, as Kafka's InitializeShareGroupState)."""
        key = (group_id, tid, p)
        self.persisted.pop(key, None)
        sp = self.partitions.get(key)
        if sp is None:
            sp = self.partitions[key] = SharePartition(offset)
        sp.reset_start(offset)
        sp.state_epoch += 1
        self.groups.setdefault(group_id, ShareGroup(group_id)).initialized.add((tid, p))
        self.store.epochs.pop(key, None)  # a fresh snapshot
        self._persist(key, sp)

    def delete_start_offsets(self, group_id: str, tid: bytes) -> list[int]:
        """DeleteShareGroupOffsets of one topic: the partitions whose state was deleted."""
        g = self.groups.get(group_id)
        keys = {k for k in list(self.partitions) + list(self.persisted) if k[0] == group_id and k[1] == tid}
        if g is not None:
            keys |= {(group_id, t, p) for t, p in g.initialized if t == tid}
            g.initialized -= {(t, p) for t, p in g.initialized if t == tid}
        for key in keys:
            self.partitions.pop(key, None)
            self.persisted.pop(key, None)
            self.store.delete(key)
        return sorted(k[2] for k in keys)

    # ---- share-partitions ------------------------------------------------------------------------
    def _notify(self, key: tuple) -> None:
        t = self.topics.by_id(key[1])
        if t is not None:
            self.broker.waiters.notify((t.name, key[2]))

    def _persist(self, key: tuple, sp: SharePartition) -> None:
        try:
            self.store.write(key, sp.start_offset, sp.state_epoch, sp.state_batches())
        except Exception as exc:
            log.warning("writing share state of %s failed: %r", key, exc)

    def initial_offset(self, gid: str, plog) -> int:
        from broker.groups.group_configs import parse_auto_offset_reset
        kind, ms = parse_auto_offset_reset(self.group_config(gid, "share.auto.offset.reset"))
        if kind == "earliest":
            return plog.log_start_offset
        if kind == "latest":
            return plog.high_watermark
        hit = plog.offset_for_timestamp(max(self.now() - ms, 0))
        return hit[0] if hit is not None else plog.high_watermark

    def share_partition_initialized(self, gid: str, tid: bytes, p: int) -> bool:
        """Whether the group has state for this share-partition, or initialized it (after the
        heartbeat that first saw its topic subscribed: ``ShareGroup.initialize``; its state then
        starts at the first fetch). Kafka's share coordinator initializes a share-partition once
        the group subscribes to its topic (or AlterShareGroupOffsets sets its start); until then
        its ShareFetch answers without that partition, whoever asks."""
        key = (gid, tid, p)
        if key in self.partitions or key in self.persisted:
            return True
        g = self.groups.get(gid)
        return g is not None and (tid, p) in g.initialized

    def share_partition(self, gid: str, tid: bytes, p: int, plog) -> SharePartition:
        key = (gid, tid, p)
        sp = self.partitions.get(key)
        if sp is None:
            sp = SharePartition(0)
            ps = self.persisted.pop(key, None)
            if ps is not None:
                sp.load(ps.start_offset, ps.batches())
                sp.state_epoch = ps.state_epoch
            else:
                sp.reset_start(self.initial_offset(gid, plog))
                self._persist(key, sp)
            self.partitions[key] = sp
            self.groups.setdefault(gid, ShareGroup(gid))
        sp.lock_duration_ms = self.group_config(gid, "share.record.lock.duration.ms")
        sp.delivery_count_limit = self.group_config(gid, "share.delivery.count.limit")
        sp.max_record_locks = self.group_config(gid, "share.partition.max.record.locks")
        if sp.start_offset < plog.log_start_offset:  # retention removed records: Kafka moves the SPSO
            sp.reset_start(plog.log_start_offset)
        return sp

    # ---- sessions --------------------------------------------------------------------------------
    def session_for(self, gid: str, mid: str, epoch: int, *, fetch: bool, conn=None) -> Optional[ShareSession]:
        """Kafka's ShareSessionCache lookup; raises SHARE_SESSION_NOT_FOUND /
        INVALID_SHARE_SESSION_EPOCH. Epoch 0 opens a session (ShareFetch only) bound to
        ``conn``, the connection whose close ends it (as Kafka's connectionIdToSessionMap, the
        opening connection, not the last used); -1 returns the session to close."""
        key = (gid, mid)
        if epoch == INITIAL_EPOCH:
            if not fetch:
                raise ShareError(E.INVALID_SHARE_SESSION_EPOCH,
                                 "Acknowledge request with initial session epoch is invalid.")
            if key not in self.sessions and len(self.sessions) >= self.cfg["group.share.max.share.sessions"]:
                raise ShareError(E.SHARE_SESSION_LIMIT_REACHED, "The share session cache is full.")
            s = self.sessions[key] = ShareSession(gid, mid, conn=conn)
            return s
        s = self.sessions.get(key)
        if s is None:
            raise ShareError(E.SHARE_SESSION_NOT_FOUND, f"Share session not found for member {mid}.")
        if epoch == FINAL_EPOCH:
            return s
        if epoch != s.epoch:
            raise ShareError(E.INVALID_SHARE_SESSION_EPOCH,
                             f"Share session epoch {epoch} is invalid, expected {s.epoch}.")
        s.epoch = next_epoch(s.epoch)
        return s

    def on_connection_closed(self, conn) -> None:
        """Kafka 4.2's ShareSessionCache disconnect listener: the share sessions opened on a
        closed connection are removed and their members' records released at once (the
        member stays in the group until its heartbeats stop)."""
        for s in [s for s in self.sessions.values() if s.conn is conn]:
            log.info("[GroupId %s] Share session of member %s closed with its connection.", s.group_id, s.member_id)
            self.close_session(s)

    def close_session(self, s: ShareSession) -> None:
        self.sessions.pop((s.group_id, s.member_id), None)
        self._release_member(s.group_id, s.member_id, only=s.partitions)

    # ---- acknowledgements ------------------------------------------------------------------------
    def acknowledge(self, gid: str, mid: str, tid: bytes, p: int, batches, *, renew: bool = True
                    ) -> tuple[int, Optional[str]]:
        """Apply one partition's acknowledgement batches; returns (error, message). As Kafka
        4.2: an unknown topic id is UNKNOWN_TOPIC_ID, malformed batches (``validate_batches``;
        ``renew``: the request version knows RENEW) INVALID_REQUEST, a partition with no share-partition
        UNKNOWN_TOPIC_OR_PARTITION, then ``SharePartition.acknowledge_all`` (all or nothing).
        Membership is not checked: a member that left the group may still acknowledge what
        it holds, through its share session."""
        key = (gid, tid, p)
        triples = [(b.first_offset, b.last_offset, list(b.acknowledge_types)) for b in batches]
        t = self.topics.by_id(tid)
        if t is None:
            return E.UNKNOWN_TOPIC_ID, None
        bad = validate_batches(triples, renew=renew)
        if bad:
            return E.INVALID_REQUEST, bad
        if not 0 <= p < t.partitions:
            return E.UNKNOWN_TOPIC_OR_PARTITION, None
        sp = self.partitions.get(key)
        if sp is None:
            return E.UNKNOWN_TOPIC_OR_PARTITION, None
        err, msg = 0, None
        try:
            sp.acknowledge_all(mid, triples, self.now(),
                               renew_enabled=self.group_config(gid, "share.renew.acknowledge.enable"))
        except InvalidRecordState as exc:
            return E.INVALID_RECORD_STATE, str(exc)
        except InvalidRequest as exc:
            return E.INVALID_REQUEST, str(exc)
        self._persist(key, sp)
        self._notify(key)
        return err, msg

    # ---- fetching --------------------------------------------------------------------------------
    def can_acquire(self, gid: str, tid: bytes, p: int) -> bool:
        """Kafka's SharePartition.canAcquireRecords: a fetch may try the share-partition (not
        yet created, something available in flight, or room under the record-lock limit)."""
        sp = self.partitions.get((gid, tid, p))
        return sp is None or sp.can_acquire_records()

    def acquire(self, gid: str, mid: str, tid: bytes, p: int, max_records: int, max_bytes: int, *,
                batch_optimized: bool = True, min_one: bool = True):
        """Acquire records of one share-partition for ``mid``: (records bytes, [(first, last,
        count)], bytes read from the log) or an error code. The log is read up to
        ``max_bytes`` (one whole batch past it when ``min_one``); ``batch_optimized``: see
        ``SharePartition.acquire``."""
        t = self.topics.by_id(tid)
        if t is None:
            return E.UNKNOWN_TOPIC_ID
        if not 0 <= p < t.partitions:
            return E.UNKNOWN_TOPIC_OR_PARTITION
        plog = self.topics.log(t.name, p)
        if plog is None:
            return E.UNKNOWN_TOPIC_OR_PARTITION
        sp = self.share_partition(gid, tid, p, plog)
        now = self.now()
        committed = self.group_config(gid, "share.isolation.level") == "read_committed"
        limit = plog.last_stable_offset if committed else plog.high_watermark
        start = sp.next_fetch_offset(now)
        if start >= limit or (max_bytes <= 0 and not min_one):
            return b"", [], 0
        res = plog.read(max(start, plog.log_start_offset), max(max_bytes, 0), min_one=min_one, max_offset=limit)
        read = sum(len(c) for c in res.chunks)
        aborted = []
        if committed and res.chunks:
            upper = start
            for c in res.chunks:
                for _, h in iter_batch_positions(c):
                    upper = h.next_offset
            aborted = plog.collect_aborted_transactions(start, upper)
        spans = []  # (chunk index, position, header)
        batches = []
        for i, c in enumerate(res.chunks):
            for pos, h in iter_batch_positions(c):
                spans.append((i, pos, h))
                skip = h.is_control or (aborted and h.is_transactional and _aborted(h, aborted))
                batches.append((h.base_offset, h.next_offset - 1, skip))
        got = sp.acquire(mid, batches, now, max_records, batch_optimized=batch_optimized)
        if not got:
            return b"", [], read
        self._persist((gid, tid, p), sp)
        # the stored batches overlapping the acquired ranges, as Kafka returns them
        lo, hi = got[0][0], got[-1][1]
        out = []
        for i, pos, h in spans:
            if h.next_offset - 1 >= lo and h.base_offset <= hi:
                c = res.chunks[i]
                out.append(bytes(c[pos:pos + h.size]))
        self._arm_lock_timer(gid, tid, p, sp)
        return b"".join(out), got, read

    def give_back(self, gid: str, mid: str, tid: bytes, p: int, ranges) -> None:
        """Undo ``acquire`` of ``ranges`` (an answer throttled before delivery:
        ``SharePartition.give_back``); parked fetches of the partition wake."""
        key = (gid, tid, p)
        sp = self.partitions.get(key)
        if sp is not None and sp.give_back(mid, ranges):
            self._persist(key, sp)
            self._notify(key)

    def _arm_lock_timer(self, gid: str, tid: bytes, p: int, sp: SharePartition) -> None:
        """Wake parked fetches when the earliest acquisition lock of the partition expires."""
        deadlines = [r.deadline for r in sp.records.values() if r.state == 1]
        if not deadlines:
            return
        key = (gid, tid, p)

        def expire():
            cur = self.partitions.get(key)
            if cur is None:
                return
            if cur.expire(self.now()):
                self._persist(key, cur)
                self._notify(key)
            self._arm_lock_timer(gid, tid, p, cur)
        self._timer(("lock", gid, tid, p), max(min(deadlines) - self.now(), 0) + 1, expire)


def _aborted(h, aborted) -> bool:
    """Whether the transactional batch ``h`` belongs to an aborted transaction."""
    return any(a.producer_id == h.producer_id and a.first_offset <= h.base_offset
               and h.base_offset <= a.last_offset for a in aborted)
