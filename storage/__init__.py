"""Hourglass storage: Kafka's on-disk log format and log layer.

Layering (each module opens with its format/behaviour notes):
``files`` (all file I/O) -> ``index`` (offset/time indexes, ``index.txn_index`` for aborted
transactions) -> ``segment`` -> ``segments`` ->
``loader`` (load + crash recovery) -> ``log`` (PartitionLog) -> ``manager`` (LogManager);
pure policies: ``validator``, ``roll``, ``retention``, ``producer_state``, ``log_config``;
``checkpoints`` (Kafka checkpoint files), ``dump`` (kafka-dump-log-like inspection).

Imports from ``protocol`` are limited to ``protocol.records`` and ``protocol.errors``.
"""
from storage.log import AppendInfo, PartitionLog, ReadResult
from storage.manager import LogManager

__all__ = ["LogManager", "PartitionLog", "AppendInfo", "ReadResult"]
