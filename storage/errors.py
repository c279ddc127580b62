"""Typed storage errors.

The broker maps each class to a Kafka error code (``ERROR_CODE`` names the
``protocol.errors.ErrorCode`` member). Errors that concern individual records inside a
batch carry ``record_errors``: a list of ``(batch_index, message)`` where ``batch_index`` is
the index of the record within its batch, exactly as Kafka's ``ProduceResponse.RecordError``
(Produce v8+ ``record_errors``), so clients can tell which records were bad.
"""
from __future__ import annotations

from protocol.errors import CorruptRecordError as _ProtocolCorruptRecordError

#: Re-exported: a batch failed its CRC or framing check (CORRUPT_MESSAGE).
CorruptRecordError = _ProtocolCorruptRecordError


class StorageError(Exception):
    """Base of every error raised by ``storage``."""

    ERROR_CODE = "UNKNOWN_SERVER_ERROR"


class RecordValidationError(StorageError):
    """Base of errors that reject a produce because of some records' content.

    ``record_errors`` lists ``(batch_index, message)``; nothing of the request is appended.
    """

    def __init__(self, message: str, record_errors: list[tuple[int, str]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.record_errors: list[tuple[int, str]] = list(record_errors or [])


class InvalidTimestampError(RecordValidationError):
    """A CreateTime record timestamp outside ``[now - before.max.ms, now + after.max.ms]``,
    or a client batch claiming LogAppendTime (INVALID_TIMESTAMP)."""

    ERROR_CODE = "INVALID_TIMESTAMP"


class InvalidRecordError(RecordValidationError):
    """A batch or record that breaks a broker rule (INVALID_RECORD): control batch from a
    client, empty batch, inconsistent count/offset range, keyless record on a compacted
    topic, ..."""

    ERROR_CODE = "INVALID_RECORD"


class RecordTooLargeError(StorageError):
    """A batch larger than ``max.message.bytes`` (MESSAGE_TOO_LARGE)."""

    ERROR_CODE = "MESSAGE_TOO_LARGE"


class RecordBatchTooLargeError(StorageError):
    """A batch larger than a whole segment can hold (RECORD_LIST_TOO_LARGE)."""

    ERROR_CODE = "RECORD_LIST_TOO_LARGE"


class OffsetOutOfRangeError(StorageError):
    """A read below the log start offset or above the log end offset (OFFSET_OUT_OF_RANGE)."""

    ERROR_CODE = "OFFSET_OUT_OF_RANGE"

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int) -> None:
        super().__init__(
            f"Received request for offset {offset}, but we only have log segments in the "
            f"range {log_start_offset} to {log_end_offset}.")
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class OutOfOrderSequenceError(StorageError):
    """An idempotent producer's batch does not continue its sequence
    (OUT_OF_ORDER_SEQUENCE_NUMBER)."""

    ERROR_CODE = "OUT_OF_ORDER_SEQUENCE_NUMBER"


class InvalidProducerEpochError(StorageError):
    """A batch from an older epoch than the last seen for the producer id
    (INVALID_PRODUCER_EPOCH; Kafka 2.7+ sends this instead of PRODUCER_FENCED on produce)."""

    ERROR_CODE = "INVALID_PRODUCER_EPOCH"


class InvalidTxnStateError(StorageError):
    """A non-transactional batch from a producer whose transaction is open on this partition
    (INVALID_TXN_STATE, Kafka's ``ProducerAppendInfo.appendDataBatch``)."""

    ERROR_CODE = "INVALID_TXN_STATE"


class TransactionCoordinatorFencedError(StorageError):
    """A transaction marker from a coordinator epoch older than the last one this partition
    saw for the producer (TRANSACTION_COORDINATOR_FENCED, Kafka's ``checkCoordinatorEpoch``)."""

    ERROR_CODE = "TRANSACTION_COORDINATOR_FENCED"


class UnknownProducerIdError(StorageError):
    """UNKNOWN_PRODUCER_ID (kept for completeness; Kafka 2.5+ accepts unknown producers)."""

    ERROR_CODE = "UNKNOWN_PRODUCER_ID"


class DuplicateSequenceError(StorageError):
    """DUPLICATE_SEQUENCE_NUMBER. Not normally raised: a duplicate batch is answered with
    the original append's offsets instead."""

    ERROR_CODE = "DUPLICATE_SEQUENCE_NUMBER"


class KafkaStorageError(StorageError):
    """An I/O failure on a log directory (KAFKA_STORAGE_ERROR)."""

    ERROR_CODE = "KAFKA_STORAGE_ERROR"


class InvalidConfigError(StorageError):
    """A configuration value that does not parse or validate (INVALID_CONFIG).

    The message follows Kafka's ``ConfigException``:
    ``Invalid value <v> for configuration <key>: <reason>``.
    """

    ERROR_CODE = "INVALID_CONFIG"

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.message = message


class UnsupportedForMessageFormatError(StorageError):
    """A feature the record format in use cannot carry (UNSUPPORTED_FOR_MESSAGE_FORMAT)."""

    ERROR_CODE = "UNSUPPORTED_FOR_MESSAGE_FORMAT"


__all__ = [
    "StorageError", "RecordValidationError", "InvalidTimestampError", "InvalidRecordError",
    "CorruptRecordError", "RecordTooLargeError", "RecordBatchTooLargeError",
    "OffsetOutOfRangeError", "OutOfOrderSequenceError", "InvalidProducerEpochError",
    "UnknownProducerIdError", "DuplicateSequenceError", "InvalidTxnStateError",
    "TransactionCoordinatorFencedError", "KafkaStorageError",
    "InvalidConfigError", "UnsupportedForMessageFormatError",
]


class LogDirNotFoundError(StorageError):
    """A log dir named by a request is not one of this broker's (Kafka's
    ``LogDirNotFoundException``: LOG_DIR_NOT_FOUND)."""


class LogDirOfflineError(KafkaStorageError):
    """A log dir named by a request is offline: missing or not a writable directory."""
