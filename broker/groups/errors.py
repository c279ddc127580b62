"""Errors shared by every group type: the error answer every group operation raises, and the
mapping of a failed append to ``__consumer_offsets`` onto the code a client is told.

Every group type's module uses these; none borrows them from a sibling."""
from __future__ import annotations

from typing import Optional

from protocol.errors import ErrorCode as E


class GroupError(Exception):
    """An error answer (Kafka's ApiException): code and message."""

    def __init__(self, code: int, message: Optional[str] = None):
        super().__init__(message or E(code).name)
        self.code = int(code)
        self.message = message


def append_error_code(exc: BaseException) -> int:
    """The code for an append to the offsets log that raised ``exc``, as Kafka's group
    coordinator converts it for an offset commit (GroupMetadataManager's
    appendGroupMetadataErrorToResponseError, with OffsetCommit's INVALID_COMMIT_OFFSET_SIZE for a
    batch too large). Callers writing group records (not offsets) turn INVALID_COMMIT_OFFSET_SIZE
    into their own answer."""
    from broker.errors import error_code_for
    code = error_code_for(exc)
    if code in (E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE):
        return E.INVALID_COMMIT_OFFSET_SIZE
    if code == E.KAFKA_STORAGE_ERROR:
        return E.NOT_COORDINATOR
    if code == E.UNKNOWN_SERVER_ERROR:
        return E.COORDINATOR_NOT_AVAILABLE
    return code
