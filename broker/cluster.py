"""Single-node cluster identity and topic metadata, persisted beside the logs.

Kafka's files are kept where Kafka keeps them, so a data dir reads as Kafka's:
- ``meta.properties`` in every log dir (``version=1``, ``cluster.id``, ``node.id``);
- ``partition.metadata`` in every partition dir (``version: 0`` / ``topic_id: <base64>``).
Topic-level facts that KRaft keeps in its metadata log (partition count, config overrides)
live in ``<first log dir>/.hourglass/topics/<topic>.json``, one small file per topic, written
atomically (temp file, fsync, rename), so no save rewrites more than one topic.

Invariant: ``topics`` and ``by_id`` always describe the same set of topics, and every
partition ``0 .. partitions-1`` of a live topic has an open log.
"""
from __future__ import annotations

import base64
import json
import logging
import os
import re
from dataclasses import field
from pathlib import Path

from protocol.deferred import dataclass
from storage.log import parse_topic_partition
from storage.log_config import DEPRECATED_TOPIC_CONFIGS, REMOVED_TOPIC_CONFIGS, deprecation_warning, drop_removed

log = logging.getLogger(__name__)

MAX_TOPIC_NAME = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
# One node, one leadership: every partition's leader epoch is 0, and every leader append (a
# client's produce and the coordinators' own records alike) stamps it on its batches, as
# Kafka's leader does.
LEADER_EPOCH = 0


def validate_topic_name(name: str) -> str | None:
    """Kafka's ``Topic.validate`` rules; returns an error message (Kafka 4's wording) or None."""
    if not name:
        return "Topic name is invalid: the empty string is not allowed"
    if name in (".", ".."):
        return f"Topic name is invalid: '{name}' is not allowed"
    if len(name) > MAX_TOPIC_NAME:
        return f"Topic name is invalid: the length of '{name}' is longer than the max allowed length {MAX_TOPIC_NAME}"
    if not _LEGAL.match(name):
        return (f"Topic name is invalid: '{name}' contains one or more characters other than ASCII "
                "alphanumerics, '.', '_' and '-'")
    return None


def uuid_to_base64(u: bytes) -> str:
    """Kafka prints Uuids as URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(u).decode().rstrip("=")


def base64_to_uuid(s: str) -> bytes:
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def new_uuid() -> bytes:
    """Kafka's ``Uuid.randomUuid``: a random v4 UUID that is neither of the reserved sentinels
    (zero, one) and whose printed form does not start with '-', which a command line would
    read as an option (``kafka-storage format -t "$(kafka-storage random-uuid)"``)."""
    while True:
        # what uuid.uuid4() does, without importing uuid (and platform) at start-up
        b = bytearray(os.urandom(16))
        b[6] = (b[6] & 0x0F) | 0x40   # version 4
        b[8] = (b[8] & 0x3F) | 0x80   # RFC 4122 variant
        u = bytes(b)
        # base64's first character is the top 6 bits of the first byte; 62 prints as '-'
        if u != bytes(16) and u != bytes(15) + b"\x01" and b[0] >> 2 != 62:
            return u


def read_json(path: Path):
    """The JSON document of a store file, or None when it does not exist yet."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None


def write_private_json(path: Path, doc) -> None:
    """``doc`` as JSON, written atomically (``atomic_write``) into a file only the broker's user
    may read (mode 0600 from the temp file on): for files holding secrets or key material."""
    path.parent.mkdir(parents=True, exist_ok=True)
    old = os.umask(0o077)
    try:
        atomic_write(path, json.dumps(doc, indent=1).encode())
    finally:
        os.umask(old)


def atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def read_meta_properties(log_dir: Path) -> dict[str, str] | None:
    """The keys of ``log_dir/meta.properties``, or None when the dir is not formatted yet."""
    p = log_dir / "meta.properties"
    if not p.exists():
        return None
    return dict(line.split("=", 1) for line in p.read_text().splitlines()
                if "=" in line and not line.startswith("#"))


def write_meta_properties(log_dir: Path, node_id: int, cluster_id: str) -> None:
    """Format ``log_dir`` as Kafka's ``kafka-storage format`` does (KRaft ``version=1``, a new
    ``directory.id``), atomically: a crash leaves either no file or the whole one."""
    log_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(log_dir / "meta.properties",
                 (f"#\n#Hourglass\nnode.id={node_id}\ndirectory.id={uuid_to_base64(new_uuid())}\n"
                  f"version=1\ncluster.id={cluster_id}\n").encode())


@dataclass
class TopicInfo:
    name: str
    topic_id: bytes
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


class ClusterMeta:
    """Cluster id, node id and the topic table, loaded from and saved to the first log dir."""

    def __init__(self, log_dirs: list[Path], node_id: int, cluster_id: str | None = None):
        self.log_dirs = log_dirs
        self.node_id = node_id
        self.meta_dir = log_dirs[0] / ".hourglass" / "topics"
        for d in log_dirs:
            d.mkdir(parents=True, exist_ok=True)
        self.meta_dir.mkdir(parents=True, exist_ok=True)
        self.cluster_id = self._load_or_create_meta(cluster_id)
        self.topics: dict[str, TopicInfo] = {}
        self.by_id: dict[bytes, TopicInfo] = {}
        # Topic records applied since start-up (loaded ones included): what DescribeQuorum
        # reports as the metadata partition's offsets, Hourglass having no metadata log
        self.metadata_offset = 0
        self.next_producer_id_path = log_dirs[0] / ".hourglass" / "producer-id-block"

    def _load_or_create_meta(self, wanted: str | None) -> str:
        found = None
        for d in self.log_dirs:
            p = d / "meta.properties"
            props = read_meta_properties(d)
            if props is not None:
                cid = props.get("cluster.id")
                if found and cid and cid != found:
                    raise RuntimeError(f"log dirs disagree on cluster.id: {found} vs {cid} ({p})")
                found = found or cid
                nid = props.get("node.id") or props.get("broker.id")
                if nid is not None and int(nid) != self.node_id:
                    raise RuntimeError(f"{p} belongs to node {nid}, but node.id is {self.node_id}")
        cid = found or wanted or uuid_to_base64(new_uuid())
        for d in self.log_dirs:
            if read_meta_properties(d) is None:
                write_meta_properties(d, self.node_id, cid)
        return cid

    # ---- topics -------------------------------------------------------------------------------
    def load_topics(self) -> list[TopicInfo]:
        for p in sorted(self.meta_dir.glob("*.json")):
            try:
                d = json.loads(p.read_text())
                t = TopicInfo(d["name"], base64_to_uuid(d["topic_id"]), int(d["partitions"]),
                              dict(d.get("configs", {})))
            except (OSError, ValueError, KeyError) as exc:
                log.error("ignoring unreadable topic metadata %s: %s", p, exc)
                continue
            t.configs, dropped = drop_removed(t.configs)
            if dropped:
                # written by an older Hourglass (Kafka 3.9's config model): the topic loads as it
                # would on Kafka 4, without them, and its record is rewritten without them
                log.warning("topic %s: dropping config(s) Kafka 4.0 removed: %s", t.name,
                            ", ".join(f"{k} ({REMOVED_TOPIC_CONFIGS[k]})" for k in dropped))
                self.save_topic(t)
            else:
                self._add(t)
            for k in DEPRECATED_TOPIC_CONFIGS.keys() & t.configs.keys():   # honoured, see log_config
                log.warning("topic %s: %s", t.name, deprecation_warning(k))
        self._adopt_orphan_partition_dirs()
        return list(self.topics.values())

    def _adopt_orphan_partition_dirs(self) -> None:
        """Partition dirs with no topic record (e.g. copied from a Kafka broker) become topics."""
        found: dict[str, int] = {}
        ids: dict[str, bytes] = {}
        for d in self.log_dirs:
            with os.scandir(d) as entries:  # d_type: no stat per partition dir at start-up
                children = [(e.name, e.path) for e in entries if e.is_dir()]
            for name, path in children:
                try:
                    topic, part = parse_topic_partition(name)
                except ValueError:
                    continue
                if topic in self.topics or name.endswith("-delete") or validate_topic_name(topic):
                    continue
                found[topic] = max(found.get(topic, 0), part + 1)
                pm = Path(path) / "partition.metadata"
                if pm.exists():
                    for line in pm.read_text().splitlines():
                        if line.startswith("topic_id:"):
                            ids[topic] = base64_to_uuid(line.split(":", 1)[1].strip())
        for topic, n in found.items():
            log.info("adopting topic %s (%d partitions) found on disk without metadata", topic, n)
            self.save_topic(TopicInfo(topic, ids.get(topic) or new_uuid(), n, {}))

    def _add(self, t: TopicInfo) -> None:
        self.topics[t.name] = t
        self.by_id[t.topic_id] = t
        self.metadata_offset += 1

    def _topic_path(self, name: str) -> Path:
        if len(name) > 200:  # a legal 249-char name plus ".json" must still fit a file name
            import hashlib  # rare: only names over 200 characters
            name = name[:200] + "-" + hashlib.sha1(name.encode()).hexdigest()
        return self.meta_dir / f"{name}.json"

    def save_topic(self, t: TopicInfo) -> None:
        self.write_topic_record(t)
        self._add(t)

    def write_topic_record(self, t: TopicInfo) -> None:
        """The topic's file alone (no in-memory change): safe off the event loop."""
        data = json.dumps({"name": t.name, "topic_id": uuid_to_base64(t.topic_id),
                           "partitions": t.partitions, "configs": t.configs}, indent=1)
        atomic_write(self._topic_path(t.name), data.encode())

    def add_topic(self, t: TopicInfo) -> None:
        """Serve a topic whose record ``write_topic_record`` wrote."""
        self._add(t)

    def remove_topic(self, name: str) -> TopicInfo | None:
        t = self.topics.pop(name, None)
        if t is not None:
            self.metadata_offset += 1
            self.by_id.pop(t.topic_id, None)
            try:
                os.remove(self._topic_path(name))
            except FileNotFoundError:
                pass
        return t

    @staticmethod
    def write_partition_metadata(partition_dir: str | Path, topic_id: bytes) -> None:
        p = os.path.join(partition_dir, "partition.metadata")
        try:
            if os.stat(p).st_size > 0:  # once per partition at every start: a plain stat
                return
        except FileNotFoundError:
            pass
        # Derived from the topic record (which is durable), so written without fsyncs, as
        # Kafka does not flush its directory either: thousands of partitions created at
        # once were two fsyncs each. A power loss may leave it missing or empty (a file this
        # small is never half-written); the next start writes it again.
        tmp = p + ".tmp"
        with open(tmp, "wb") as f:
            f.write(f"version: 0\ntopic_id: {uuid_to_base64(topic_id)}\n".encode())
        os.replace(tmp, p)

    # ---- producer ids -----------------------------------------------------------------------
    def allocate_producer_id_block(self, size: int = 1000) -> int:
        """Reserve ``size`` producer ids durably; returns the first id of the block."""
        start = 0
        try:
            start = int(self.next_producer_id_path.read_text().strip())
        except (OSError, ValueError):
            pass
        atomic_write(self.next_producer_id_path, str(start + size).encode())
        return start
