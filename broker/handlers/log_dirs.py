"""DescribeLogDirs (35) v1-5 and AlterReplicaLogDirs (34) v1-2: the broker's log dirs, what
each holds, and moving a partition between them (KIP-113, KIP-827).

DescribeLogDirs: every log dir in ``log.dirs`` order; an offline one (no longer a writable
directory) answers KAFKA_STORAGE_ERROR with no topics and unknown sizes; an online one lists
the partitions it holds (``topics`` null: all; else only those named that it holds), each
with its size in bytes, offset lag (0 for the current log: its high watermark is its log end
offset; for a ``-future`` log of a move, the current log's end minus the future's) and
``is_future_key``; v4+ the volume's total and usable bytes (statvfs); v5 ``is_cordoned``
(never: Hourglass has no cordoning). Without DESCRIBE on the cluster: no results (v3+ with
CLUSTER_AUTHORIZATION_FAILED at the top).

AlterReplicaLogDirs, per partition, in Kafka's order of checks (``ReplicaManager.
alterReplicaLogDirs``): CLUSTER_AUTHORIZATION_FAILED without ALTER on the cluster; INVALID_TOPIC
when ``<topic>-<partition>.<uuid>-future`` would not fit a file name; LOG_DIR_NOT_FOUND for a
path that is not one of the log dirs (absolute, as Kafka compares them); KAFKA_STORAGE_ERROR
when it is offline, or when another log dir is (no future log is made then, as in Kafka);
UNKNOWN_TOPIC_OR_PARTITION for a partition this broker does not have; else 0, the move
started (or nothing to do: already there). The move itself runs in the background
(``broker.log_dirs``).
"""
from __future__ import annotations

import os
from pathlib import Path

from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode as E
from protocol.messages.alter_replica_log_dirs import AlterReplicaLogDirsResponse as AR
from protocol.messages.describe_log_dirs import DescribeLogDirsResponse as DR
from storage.errors import LogDirNotFoundError, LogDirOfflineError

DResult = DR.DescribeLogDirsResult
DTopic = DResult.DescribeLogDirsTopic
DPartition = DTopic.DescribeLogDirsPartition
ATopic = AR.AlterReplicaLogDirTopicResult
APartition = ATopic.AlterReplicaLogDirPartitionResult

# Kafka's logFutureDirName: "<topic>-<partition>." + 32 hex digits + "-future", at most 255 bytes
_FUTURE_NAME_EXTRA = 1 + 32 + len("-future")


def dir_contents(logs, wanted) -> dict:
    """log dir -> {topic: [DescribeLogDirsPartition]} of the logs it holds (current and future),
    restricted to ``wanted`` ({topic: set(partitions)}, or None for all)."""
    out: dict = {d: {} for d in logs.log_dirs}

    def take(topic, p):
        return wanted is None or p in wanted.get(topic, ())
    for lg in logs.all_logs():
        if take(lg.topic, lg.partition):
            d = logs.dir_of(lg.topic, lg.partition)
            out[d].setdefault(lg.topic, []).append(DPartition(
                partition_index=lg.partition, partition_size=lg.size_in_bytes,
                offset_lag=max(0, lg.high_watermark - lg.log_end_offset), is_future_key=False))
    for (topic, p), fut in logs.future_logs.items():
        cur = logs.get(topic, p)
        if cur is not None and take(topic, p):
            d = Path(os.path.dirname(fut.dir_str))
            out.setdefault(d, {}).setdefault(topic, []).append(DPartition(
                partition_index=p, partition_size=fut.size_in_bytes,
                offset_lag=max(0, cur.log_end_offset - fut.log_end_offset), is_future_key=True))
    return out


@handles(35)
async def describe(ctx, req):
    logs = ctx.broker.logs
    az = active(ctx)
    if az is not None and not az.allowed("cluster"):
        return DR(throttle_time_ms=0, error_code=az.error("cluster") if ctx.api_version >= 3 else 0, results=[])
    wanted = None if req.topics is None else {}
    for t in req.topics or ():
        wanted.setdefault(t.topic, set()).update(t.partitions)
    contents = dir_contents(logs, wanted)
    results = []
    for d, online, total, usable in logs.log_dir_usage():
        if not online:
            results.append(DResult(error_code=E.KAFKA_STORAGE_ERROR, log_dir=str(d), topics=[],
                                   total_bytes=-1, usable_bytes=-1, is_cordoned=False))
            continue
        results.append(DResult(error_code=0, log_dir=str(d), total_bytes=total, usable_bytes=usable,
                               is_cordoned=False,
                               topics=[DTopic(name=t, partitions=ps) for t, ps in contents.get(d, {}).items()]))
    return DR(throttle_time_ms=0, error_code=0, results=results)


def _alter_one(b, path: str, topic: str, p: int, any_offline: bool) -> int:
    logs = b.logs
    if len(f"{topic}-{p}".encode()) + _FUTURE_NAME_EXTRA > 255:
        return E.INVALID_TOPIC_EXCEPTION
    try:
        dest = logs.log_dir_named(path)
    except LogDirNotFoundError:
        return E.LOG_DIR_NOT_FOUND
    except LogDirOfflineError:
        return E.KAFKA_STORAGE_ERROR
    if logs.get(topic, p) is None:
        return E.UNKNOWN_TOPIC_OR_PARTITION
    if any_offline and logs.dir_of(topic, p) != dest:
        return E.KAFKA_STORAGE_ERROR
    b.log_dir_moves.move(topic, p, dest)
    return 0


@handles(34)
async def alter(ctx, req):
    b = ctx.broker
    az = active(ctx)
    denied = az is not None and not az.allowed("cluster")
    any_offline = not all(online for _d, online, _t, _u in b.logs.log_dir_usage())
    by_topic: dict[str, list] = {}
    for d in req.dirs:
        for t in d.topics:
            for p in t.partitions:
                code = az.error("cluster") if denied else _alter_one(b, d.path, t.name, p, any_offline)
                by_topic.setdefault(t.name, []).append(APartition(partition_index=p, error_code=code))
    return AR(throttle_time_ms=0, results=[ATopic(topic_name=t, partitions=ps) for t, ps in by_topic.items()])
