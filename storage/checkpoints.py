"""Offset checkpoint files in Kafka's format (``CheckpointFile`` / ``OffsetCheckpointFile``).

Used for ``recovery-point-offset-checkpoint`` and ``log-start-offset-checkpoint`` at the
root of each log directory. Format (UTF-8 text, ``\\n`` line ends)::

    0                      version
    2                      number of entries
    my-topic 0 1234        topic, partition, offset (space separated)
    other 3 0

Written atomically: ``<name>.tmp`` is written and fsynced, then renamed over the file and the
directory fsynced, so a crash leaves either the old or the new checkpoint. A malformed
file raises ``CheckpointError`` naming the line (Kafka raises on a bad version, count or
line too); a missing file reads as empty.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from storage.errors import StorageError
from storage.files import DEFAULT_FILE_OPS, FileOps

VERSION = 0
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"


class CheckpointError(StorageError):
    """A checkpoint file that does not parse."""


def format_checkpoint(entries: Mapping[tuple[str, int], int]) -> bytes:
    lines = [str(VERSION), str(len(entries))]
    for (topic, partition), offset in sorted(entries.items()):
        lines.append(f"{topic} {partition} {offset}")
    return ("\n".join(lines) + "\n").encode("utf-8")


def parse_checkpoint(data: bytes, name: str = "checkpoint") -> dict[tuple[str, int], int]:
    lines = data.decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise CheckpointError(f"{name}: empty checkpoint file")
    try:
        version = int(lines[0].strip())
    except ValueError:
        raise CheckpointError(f"{name}: malformed version line {lines[0]!r}") from None
    if version != VERSION:
        raise CheckpointError(f"{name}: unrecognized version {version}")
    try:
        count = int(lines[1].strip())
    except (IndexError, ValueError):
        raise CheckpointError(f"{name}: malformed entry count") from None
    out: dict[tuple[str, int], int] = {}
    for i, line in enumerate(lines[2:], start=3):
        parts = line.split()
        if len(parts) != 3:
            raise CheckpointError(f"{name}: malformed line {i}: {line!r}")
        try:
            out[(parts[0], int(parts[1]))] = int(parts[2])
        except ValueError:
            raise CheckpointError(f"{name}: malformed line {i}: {line!r}") from None
    if len(lines) - 2 != count:
        raise CheckpointError(f"{name}: expected {count} entries but found {len(lines) - 2}")
    return out


def read_checkpoint(path, file_ops: FileOps | None = None) -> dict[tuple[str, int], int]:
    ops = file_ops or DEFAULT_FILE_OPS
    path = Path(path)
    if not ops.exists(path):
        return {}
    return parse_checkpoint(ops.read_file(path), str(path))


def write_checkpoint(path, entries: Mapping[tuple[str, int], int], file_ops: FileOps | None = None) -> None:
    (file_ops or DEFAULT_FILE_OPS).write_atomic(Path(path), format_checkpoint(entries))


__all__ = [
    "CheckpointError", "format_checkpoint", "parse_checkpoint", "read_checkpoint",
    "write_checkpoint", "RECOVERY_POINT_CHECKPOINT", "LOG_START_OFFSET_CHECKPOINT",
    "CLEAN_SHUTDOWN_FILE", "VERSION",
]
