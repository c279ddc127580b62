"""Kafka 4.4's own operator tools, from the oracle's jars, run against Kafka and against
Hourglass with the same inputs: ``kafka-log-dirs --describe``, ``kafka-metadata-quorum
describe --status/--replication``, ``kafka-leader-election --election-type preferred`` and
``kafka-reassign-partitions --list/--execute/--verify``. Their exit codes and outputs must be
the same once ids, ports, hosts, paths, offsets of the metadata log and times are normalized
(``normalize``; the quorum's epoch too); the quorum's voter endpoint names its listener, the one kept difference of
DescribeQuorum (``kept.py``: Hourglass answers controller requests on its broker listener)."""
from __future__ import annotations

import json
import re
import time

import pytest

from tests.differential.wire import batch, now_ms, produce
from tests.helpers.kafka_oracle import run_tool

pytestmark = pytest.mark.xdist_group("differential")

LOG_DIRS = "org.apache.kafka.tools.LogDirsCommand"
QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


def normalize(text: str, side_dir: str) -> str:
    """What two correct brokers print differently: their log dir paths, endpoints (host, port
    and, for the quorum's voter, the listener's name), cluster ids, metadata offsets and times."""
    text = text.replace(side_dir, "<log dir>")
    text = re.sub(r"\b[A-Z_]+://[\w.\-]+:\d+", "<endpoint>", text)
    text = re.sub(r"(ClusterId:\s+)\S+", r"\1<cluster id>", text)
    text = re.sub(r"(HighWatermark:\s+)\d+", r"\1<offset>", text)
    text = re.sub(r"(LeaderEpoch:\s+)\d+", r"\1<epoch>", text)   # grows with each election, per cluster
    text = re.sub(r"\b1\d{12}\b", "<time>", text)          # epoch milliseconds
    # --replication's LogEndOffset column: the metadata log's offset
    text = re.sub(r"^(1\s+AAAAAAAAAAAAAAAAAAAAAA\s+)\d+ *", r"\1<offset>", text, flags=re.M)
    return text


def run_both(ex, *args, per_side=None, check_rc=True):
    """Run the tool on both sides (``per_side(side) -> extra args``); return normalized
    (rc, stdout) pairs, asserted equal."""
    outs = []
    for side, proc in (("kafka", ex.pair.kafka), ("hourglass", ex.pair.hourglass)):
        extra = per_side(side, proc) if per_side else []
        r = run_tool(args[0], "--bootstrap-server", proc.bootstrap, *args[1:], *extra, check=False, timeout=120)
        out = normalize(r.stdout, str(proc.data_dir))
        if args[0] == LOG_DIRS and r.returncode == 0:
            out = _sorted_json(out)
        outs.append((r.returncode, out, r.stderr))
    (krc, kout, kerr), (hrc, hout, herr) = outs
    assert (krc, kout) == (hrc, hout), f"kafka rc {krc}:\n{kout}\n{kerr[-2000:]}\nhourglass rc {hrc}:\n{hout}\n{herr[-2000:]}"
    return krc, kout


def _topic(ex, partitions=3, records=300):
    topic = ex.topic_name()
    ex.create_topic(topic, partitions=partitions)
    for p in range(partitions):
        ts = now_ms()
        ex.each(lambda s: s.request(0, 9, produce(topic, {p: batch([ts] * (records // partitions))}, 9)))
    return topic


def test_kafka_log_dirs_describe(ex):
    topic = _topic(ex)
    _, out = run_both(ex, LOG_DIRS, "--describe", "--topic-list", topic)
    doc = json.loads(out.splitlines()[-1])
    parts = {p["partition"]: p for b in doc["brokers"] for d in b["logDirs"] for p in d["partitions"]}
    assert set(parts) == {f"{topic}-{p}" for p in range(3)} and all(p["size"] > 0 for p in parts.values())


def _sorted_json(out: str) -> str:
    """kafka-log-dirs lists the dirs and a dir's partitions in hash maps' orders (of paths
    that differ between the brokers): compared sorted."""
    lines = out.splitlines()
    doc = json.loads(lines[-1])
    for b in doc["brokers"]:
        for d in b["logDirs"]:
            d["partitions"] = sorted(d["partitions"], key=lambda p: p["partition"])
        b["logDirs"] = sorted(b["logDirs"], key=lambda d: d["logDir"])
    return "\n".join(lines[:-1] + [json.dumps(doc, sort_keys=True)])


def test_kafka_metadata_quorum(ex):
    for what in ("--status", "--replication"):
        rc, out = run_both(ex, QUORUM, "describe", what)
        assert rc == 0 and ("LeaderId" in out or "Leader" in out)


def test_kafka_leader_election_preferred(ex):
    topic = _topic(ex, partitions=1)
    rc, out = run_both(ex, ELECTION, "--election-type", "preferred", "--topic", topic, "--partition", "0")
    assert rc == 0 and f"Valid replica already elected for partitions {topic}-0" in out
    rc, out = run_both(ex, ELECTION, "--election-type", "preferred", "--topic", topic, "--partition", "7")
    assert rc != 0
    rc, _ = run_both(ex, ELECTION, "--election-type", "unclean", "--topic", topic, "--partition", "0")
    assert rc == 0


def test_kafka_reassign_partitions(ex, tmp_path):
    topic = _topic(ex, partitions=2)
    rc, out = run_both(ex, REASSIGN, "--list")
    assert rc == 0 and "No partition reassignments found." in out

    def plan(side, proc, name, partitions):
        f = tmp_path / f"{name}-{side}.json"
        f.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": topic, "partition": p, "replicas": r, **({"log_dirs": [str(proc.data_dir)]} if d else {})}
            for p, r, d in partitions]}))
        return ["--reassignment-json-file", str(f)]
    onto_only = lambda side, proc: plan(side, proc, "only", [(0, [1], True), (1, [1], False)])  # noqa: E731
    rc, out = run_both(ex, REASSIGN, "--execute", per_side=onto_only)
    assert rc == 0 and "Successfully started partition reassignments" in out
    rc, out = run_both(ex, REASSIGN, "--verify", per_side=onto_only)
    assert rc == 0 and f"Reassignment of partition {topic}-0 is completed." in out
    rc, out = run_both(ex, REASSIGN, "--execute",
                       per_side=lambda side, proc: plan(side, proc, "bad", [(0, [2], False)]))
    assert rc != 0 and "Unknown broker id 2" in out
    rc, out = run_both(ex, REASSIGN, "--list")
    assert "No partition reassignments found." in out


def test_a_log_dir_move_with_the_tools(tmp_path_factory, tmp_path):
    """Two log dirs on each broker: ``kafka-reassign-partitions --execute`` with ``log_dirs``
    moves a partition holding records into the second dir (AlterReplicaLogDirs), ``--verify``
    waits for the copy and swap, and ``kafka-log-dirs --describe`` then shows it there, with
    its size, on both brokers alike."""
    from tests.differential.conftest import start_pair, stop_pair
    from tests.differential.framework import Exchange, Report
    base = tmp_path_factory.mktemp("twodirs")
    dirs = {s: (base / s / "data", base / s / "second") for s in ("kafka", "hourglass")}
    pair = start_pair(tmp_path_factory, {"log.dirs": ",".join(map(str, dirs["kafka"]))},
                      {"log.dirs": ",".join(map(str, dirs["hourglass"]))}, name="twodirs")
    try:
        ex = Exchange(pair, Report(), "log-dir move")
        topic = _topic(ex, partitions=1, records=3000)

        def both(*args, per_side=None, until=None):
            """Each side's normalized (rc, stdout), asserted equal; with ``until``, each side's
            tool is run again (for up to a minute) until its output says so (a move's copy
            takes its own time on each broker)."""
            outs = []
            for side, proc in (("kafka", pair.kafka), ("hourglass", pair.hourglass)):
                extra = per_side(side) if per_side else []
                deadline = time.monotonic() + 60
                while True:
                    r = run_tool(args[0], "--bootstrap-server", proc.bootstrap, *args[1:], *extra, check=False,
                                 timeout=120)
                    if until is None or until in r.stdout or time.monotonic() > deadline:
                        break
                out = r.stdout.replace(str(dirs[side][1]), "<second dir>").replace(str(dirs[side][0]), "<first dir>")
                out = normalize(out, "<no such dir>")
                outs.append((r.returncode, _sorted_json(out) if args[0] == LOG_DIRS and r.returncode == 0 else out))
            assert outs[0] == outs[1], f"kafka:\n{outs[0]}\nhourglass:\n{outs[1]}"
            return outs[0]

        # where Kafka first placed the partition is its own choice (a hash map's order): moved
        # to the first dir, then to the second, it is where both were told
        for target in (0, 1):
            def to(side, target=target):
                f = tmp_path / f"move-{side}-{target}.json"
                f.write_text(json.dumps({"version": 1, "partitions": [
                    {"topic": topic, "partition": 0, "replicas": [1], "log_dirs": [str(dirs[side][target])]}]}))
                return ["--reassignment-json-file", str(f)]
            rc, out = both(REASSIGN, "--execute", per_side=to)
            assert rc == 0 and "Successfully started moving log directory to" in out
            rc, out = both(REASSIGN, "--verify", per_side=to, until="completed successfully")
            assert rc == 0 and f"Reassignment of replica {topic}-0-1 completed successfully" in out
        rc, out = both(LOG_DIRS, "--describe", "--topic-list", topic)
        doc = json.loads(out.splitlines()[-1])
        where = {d["logDir"]: [p["partition"] for p in d["partitions"]] for b in doc["brokers"] for d in b["logDirs"]}
        assert where == {"<first dir>": [], "<second dir>": [f"{topic}-0"]}
        ex.close()
    finally:
        stop_pair(pair)
