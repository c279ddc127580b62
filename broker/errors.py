"""The one table from storage/broker exceptions to Kafka error codes."""
from __future__ import annotations

from protocol.errors import CorruptRecordError, DecodeError, ErrorCode, UnsupportedCompressionError
from storage import errors as se

_TABLE: list[tuple[type, ErrorCode]] = [
    (se.InvalidTimestampError, ErrorCode.INVALID_TIMESTAMP),
    (se.InvalidRecordError, ErrorCode.INVALID_RECORD),
    (se.RecordTooLargeError, ErrorCode.MESSAGE_TOO_LARGE),
    (se.RecordBatchTooLargeError, ErrorCode.RECORD_LIST_TOO_LARGE),
    (se.OffsetOutOfRangeError, ErrorCode.OFFSET_OUT_OF_RANGE),
    (se.OutOfOrderSequenceError, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),
    (se.InvalidProducerEpochError, ErrorCode.INVALID_PRODUCER_EPOCH),
    (se.InvalidTxnStateError, ErrorCode.INVALID_TXN_STATE),
    (se.TransactionCoordinatorFencedError, ErrorCode.TRANSACTION_COORDINATOR_FENCED),
    (se.UnknownProducerIdError, ErrorCode.UNKNOWN_PRODUCER_ID),
    (se.KafkaStorageError, ErrorCode.KAFKA_STORAGE_ERROR),
    (se.LogDirNotFoundError, ErrorCode.LOG_DIR_NOT_FOUND),
    (se.InvalidConfigError, ErrorCode.INVALID_CONFIG),
    (se.UnsupportedForMessageFormatError, ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT),
    (UnsupportedCompressionError, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE),
    (CorruptRecordError, ErrorCode.CORRUPT_MESSAGE),
    (DecodeError, ErrorCode.CORRUPT_MESSAGE),
    (OSError, ErrorCode.KAFKA_STORAGE_ERROR),
]


def error_code_for(exc: BaseException) -> ErrorCode:
    for cls, code in _TABLE:
        if isinstance(exc, cls):
            return code
    return ErrorCode.UNKNOWN_SERVER_ERROR


# Kafka's description of INVALID_REQUEST (Errors.INVALID_REQUEST.message()), the message it
# answers where it gives no more specific one
INVALID_REQUEST_MESSAGE = ("This most likely occurs because of a request being malformed by the client "
                           "library or the message was sent to an incompatible broker. See the broker logs "
                           "for more details.")
