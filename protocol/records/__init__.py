"""Kafka record formats: magic-2 record batches, magic-0/1 message sets, compression codecs.

Pure and sans-IO.  The hot path (``batch``) reads and patches batch headers in O(1) without
touching records; ``record`` and ``legacy`` decode/build records for the paths that need them
(validation of compressed or legacy input, down-conversion, compaction, tests).
"""
from protocol.records.batch import (
    COMPRESSION_MASK,
    CONTROL_FLAG,
    CRC_START,
    CREATE_TIME,
    DELETE_HORIZON_FLAG,
    HEADER,
    HEADER_SIZE,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG,
    BatchHeader,
    check_crc,
    compute_crc,
    iter_batch_positions,
    peek_magic,
    read_header,
    rewrite_crc,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
)
from protocol.records.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD, compress, decompress
from protocol.records.legacy import LegacyMessage, build_message_set, decode_message_set, down_convert, up_convert
from protocol.records.record import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    Record,
    build_batch,
    control_record_type,
    decode_batch,
    end_txn_marker,
    iter_record_timestamps,
    parse_end_txn_marker,
)

__all__ = [
    "COMPRESSION_MASK", "CONTROL_FLAG", "CRC_START", "CREATE_TIME", "DELETE_HORIZON_FLAG", "HEADER",
    "HEADER_SIZE", "LOG_APPEND_TIME", "LOG_OVERHEAD", "MIN_BATCH_LENGTH", "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH", "NO_PRODUCER_ID", "NO_SEQUENCE", "NO_TIMESTAMP", "TIMESTAMP_TYPE_MASK",
    "TRANSACTIONAL_FLAG", "BatchHeader", "check_crc", "compute_crc", "iter_batch_positions", "peek_magic",
    "read_header", "rewrite_crc", "set_base_offset", "set_log_append_time", "set_partition_leader_epoch",
    "GZIP", "LZ4", "NONE", "SNAPPY", "ZSTD", "compress", "decompress",
    "LegacyMessage", "build_message_set", "decode_message_set", "down_convert", "up_convert",
    "CONTROL_ABORT", "CONTROL_COMMIT", "Record", "build_batch", "control_record_type", "decode_batch",
    "end_txn_marker", "iter_record_timestamps", "parse_end_txn_marker",
]
