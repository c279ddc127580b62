"""Small wrappers over the stock clients that several integration tests share.

kcat runs as a subprocess (``kcat_*``); the Python clients are used directly by tests, these
helpers only cover the repetitive parts (polling to a count with a deadline).
"""
from __future__ import annotations

import json
import subprocess
import time
from typing import Callable


def kcat(args: list[str], *, input: bytes | None = None, timeout: float = 30.0,
         check: bool = True) -> subprocess.CompletedProcess:
    """Run ``kcat ARGS`` (quiet); raises with its stderr on a non-zero exit when ``check``."""
    proc = subprocess.run(["kcat", "-q", *map(str, args)], input=input, capture_output=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise RuntimeError(f"kcat {args} exited {proc.returncode}:\n{proc.stderr.decode(errors='replace')}")
    return proc


def kcat_produce(bootstrap: str, topic: str, lines: list[str], *, key_delim: str = ":",
                 partition: int = 0, extra: list[str] = ()) -> None:
    """Produce one record per line; ``key<delim>value`` lines carry keys."""
    data = "".join(l + "\n" for l in lines).encode()
    kcat(["-b", bootstrap, "-t", topic, "-p", partition, "-P", "-K", key_delim, *extra], input=data)


def kcat_consume_json(bootstrap: str, topic: str, *, partition: int = 0, offset: int | str = 0,
                      count: int | None = None, extra: list[str] = ()) -> list[dict]:
    """Consume with ``-J`` from ``offset`` until ``count`` records (or the end with ``-e``).

    Each dict has kcat's JSON envelope keys: topic, partition, offset, tstype, ts, key, payload.
    """
    args = ["-b", bootstrap, "-t", topic, "-p", partition, "-C", "-J", "-o", offset, "-e"]
    if count is not None:
        args += ["-c", count]
    out = kcat([*args, *extra]).stdout.decode()
    return [json.loads(l) for l in out.splitlines() if l.strip().startswith("{")]


def kcat_offsets_for_times(bootstrap: str, topic: str, partition: int, ts: int) -> int:
    """``kcat -Q``: the first offset whose timestamp is >= ``ts``; -1 when there is none."""
    out = kcat(["-b", bootstrap, "-Q", "-t", f"{topic}:{partition}:{ts}"]).stdout.decode()
    # e.g. "topic [0] offset 3"
    for line in out.splitlines():
        parts = line.split()
        if "offset" in parts:
            return int(parts[parts.index("offset") + 1])
    raise RuntimeError(f"unexpected kcat -Q output: {out!r}")


def topic_configs(bootstrap: str, topic: str, timeout: float = 30.0) -> dict[str, str]:
    """A topic's configs as DescribeConfigs answers them: name -> value."""
    from confluent_kafka.admin import AdminClient, ConfigResource
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return {k: v.value for k, v in admin.describe_configs([res])[res].result(timeout).items()}


def wait_until(pred: Callable[[], object], timeout: float = 10.0, interval: float = 0.05,
               what: str | Callable[[], str] = "condition"):
    """Poll ``pred`` until it answers something true, and return that; raise ``TimeoutError``
    naming ``what`` otherwise (a callable ``what`` is asked then, to show the last state)."""
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what() if callable(what) else what} not reached within {timeout} s")
        time.sleep(interval)


def reading_message_class(package: str):
    """A Protobuf message class ``<package>.Reading {string sensor = 1; double value = 2;}``
    made from a hand-built descriptor, as generated code makes one (a fresh file name each
    call, so the serializers register it as given)."""
    import uuid

    from google.protobuf import descriptor_pb2, descriptor_pool
    from google.protobuf.message_factory import GetMessageClass
    fdp = descriptor_pb2.FileDescriptorProto(name=f"{package}_{uuid.uuid4().hex[:8]}.proto", package=package,
                                             syntax="proto3")
    m = fdp.message_type.add(name="Reading")
    m.field.add(name="sensor", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    m.field.add(name="value", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return GetMessageClass(pool.FindMessageTypeByName(f"{package}.Reading"))
