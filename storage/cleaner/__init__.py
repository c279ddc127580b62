"""Log compaction (``cleanup.policy=compact``): Kafka's log cleaner.

* ``offset_map``: the bounded ``key -> latest offset`` map (Kafka ``SkimpyOffsetMap``).
* ``decisions``: pure choices over plain data (dirty range and ratio, which log, which
  records and batches survive, delete horizons, segment grouping).
* ``cleaner``: cleaning one log (offset map, recopy into ``.cleaned`` segments, swap).
* ``manager``: ``LogCleaner``, the background cleaner with ``cleaner-offset-checkpoint``.

Public API for the broker: ``LogCleaner.from_broker_config(log_manager, cfg)`` and
``await cleaner.run()`` as a background task; tests use ``LogCleaner.clean_once()`` or
``Cleaner(OffsetMap(bytes)).clean(log, log_to_clean)``.
"""
from storage.cleaner.cleaner import Cleaner, CleanerStats, CleaningAbortedError
from storage.cleaner.decisions import LogToClean, should_retain_record
from storage.cleaner.manager import CLEANER_OFFSET_CHECKPOINT, LogCleaner, log_facts
from storage.cleaner.offset_map import OffsetMap

__all__ = ["Cleaner", "CleanerStats", "CleaningAbortedError", "LogToClean", "should_retain_record",
           "LogCleaner", "CLEANER_OFFSET_CHECKPOINT", "OffsetMap", "log_facts"]
