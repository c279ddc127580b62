"""A Streams-protocol (KIP-1071) group made of raw StreamsGroupHeartbeats, as Kafka Streams
would send them, for tests that need one to look at (the console's pages and REST answers).

The topology has two subtopologies: "0" reads ``source`` into a store (changelog
``{group}-store-changelog``) and writes the repartition topic ``{group}-repartition``;
"1" reads that repartition topic. Members run in distinct processes, so with
``group.streams.num.standby.replicas`` 1 each stateful task has a standby elsewhere.
"""
from __future__ import annotations

import threading
import time
import uuid

from hourglass.cli.wire import WireClient
from protocol.messages.offset_commit import OffsetCommitRequest as OC
from protocol.messages.streams_group_heartbeat import StreamsGroupHeartbeatRequest as HB

OVERRIDES = {"group.streams.initial.rebalance.delay.ms": 0, "group.streams.num.standby.replicas": 1,
             "group.streams.heartbeat.interval.ms": 500}


def topology(group: str, source: str, partitions: int) -> HB.Topology:
    def info(name, n):  # a changelog's count is the coordinator's (its subtopology's): 0 here
        return HB.TopicInfo(name=name, partitions=n, replication_factor=0, topic_configs=[])
    return HB.Topology(epoch=0, subtopologies=[
        HB.Topology.Subtopology(subtopology_id="0", source_topics=[source], source_topic_regex=[],
                                state_changelog_topics=[info(f"{group}-store-changelog", 0)],
                                repartition_sink_topics=[f"{group}-repartition"], repartition_source_topics=[],
                                copartition_groups=[]),
        HB.Topology.Subtopology(subtopology_id="1", source_topics=[], source_topic_regex=[],
                                state_changelog_topics=[], repartition_sink_topics=[],
                                repartition_source_topics=[info(f"{group}-repartition", partitions)], copartition_groups=[])])


def _ids(tasks: dict) -> list:
    return [HB.TaskIds(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(tasks.items()) if ps]


def _dict(task_ids) -> dict:
    return {t.subtopology_id: set(t.partitions) for t in task_ids}


class StreamsMember:
    """One member's side of the protocol: it gives up revoked tasks at once."""

    def __init__(self, w: WireClient, group: str, topo: HB.Topology, name: str, port: int):
        self.w, self.group, self.topo, self.name, self.port = w, group, topo, name, port
        self.id, self.epoch = str(uuid.uuid4()), 0  # KIP-1071: the member names itself
        self.active: dict = {}
        self.standby: dict = {}

    def beat(self):
        first = self.epoch == 0
        r = self.w.request(88, 1, HB(
            group_id=self.group, member_id=self.id, member_epoch=self.epoch, endpoint_information_epoch=0,
            rebalance_timeout_ms=30000 if first else -1, topology=self.topo if first else None,
            active_tasks=_ids(self.active), standby_tasks=_ids(self.standby), warmup_tasks=[],
            process_id=f"process-{self.name}" if first else None,
            user_endpoint=HB.Endpoint(host=f"{self.name}.streams.test", port=self.port) if first else None,
            client_tags=[] if first else None))
        assert r.error_code == 0, r
        self.id, self.epoch = r.member_id, r.member_epoch
        if r.active_tasks is not None:
            self.active, self.standby = _dict(r.active_tasks), _dict(r.standby_tasks or [])
        return r


class StreamsGroup:
    """``members`` members of ``group`` over one connection, settled (one epoch, every task
    owned), kept alive by a heartbeat thread until ``close``."""

    def __init__(self, bootstrap: str, group: str, source: str, partitions: int, members: int = 2):
        self.group = group
        self.w = WireClient(bootstrap, client_id=f"{group}-client")
        topo = topology(group, source, partitions)
        self.members = [StreamsMember(self.w, group, topo, chr(ord("a") + i), 7070 + i) for i in range(members)]
        self.tasks = 2 * partitions
        self._settle()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._keep_alive, name=f"streams-{group}", daemon=True)
        self._thread.start()

    def _settled(self) -> bool:
        owned = sum(len(ps) for m in self.members for ps in m.active.values())
        return len({m.epoch for m in self.members}) == 1 and owned == self.tasks

    def _settle(self, timeout: float = 30.0) -> None:
        # the first answers may hold no tasks (MISSING_INTERNAL_TOPICS while the coordinator
        # creates the changelog and repartition topics)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for m in self.members:
                m.beat()
            if self._settled():
                return
            time.sleep(0.05)
        raise AssertionError([(m.name, m.epoch, m.active) for m in self.members])

    def _keep_alive(self) -> None:
        while not self._stop.wait(0.5):
            with self._lock:
                for m in self.members:
                    m.beat()

    def commit(self, topic: str, partition: int, offset: int) -> None:
        """Commit ``offset`` as the member owning task (0, partition) does."""
        with self._lock:
            m = next(m for m in self.members if partition in m.active.get("0", ()))
            r = self.w.request(8, 9, OC(group_id=self.group, generation_id_or_member_epoch=m.epoch, member_id=m.id,
                                        group_instance_id=None, retention_time_ms=-1, topics=[
                                            OC.OffsetCommitRequestTopic(name=topic, partitions=[
                                                OC.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                                                    partition_index=partition, committed_offset=offset,
                                                    committed_leader_epoch=-1, commit_timestamp=-1,
                                                    committed_metadata="")])]))
        assert r.topics[0].partitions[0].error_code == 0, r

    def snapshot(self) -> list[dict]:
        """Each member's id, process, endpoint and tasks as it last heard them."""
        with self._lock:
            return [{"member_id": m.id, "epoch": m.epoch, "process_id": f"process-{m.name}",
                     "user_endpoint": f"{m.name}.streams.test:{m.port}",
                     "active": {s: sorted(ps) for s, ps in m.active.items() if ps},
                     "standby": {s: sorted(ps) for s, ps in m.standby.items() if ps}} for m in self.members]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.w.close()
