"""Kafka error codes as Confluent REST errors (rest-utils' ``KafkaExceptionMapper``), pure.

Confluent's mapping: authorization failures 403/40301, authentication 401/40101, an unknown
topic or partition 404/40403, bad requests (topic exists, invalid config/partitions/
replication factor/topic, policy violation, deletion disabled, invalid request, unsupported
version, security disabled) 400/40002, retriable errors 500/50003, other Kafka errors
500/50002. Hourglass answers every other error a *caller* causes (an offset out of range, an
invalid timestamp, a record too large, a corrupt record, a non-empty group) as a bad request,
400/40002, not Confluent's 500: bad input never gets a 500. Only storage failures and
unknown server errors stay 500/50002.
"""
from __future__ import annotations

from protocol.errors import ErrorCode as E

KAFKA_BAD_REQUEST = 40002
KAFKA_AUTHENTICATION = 40101
KAFKA_AUTHORIZATION = 40301
TOPIC_NOT_FOUND = 40401
KAFKA_UNKNOWN_TOPIC_PARTITION = 40403
KAFKA_ERROR = 50002
KAFKA_RETRIABLE_ERROR = 50003

_AUTHORIZATION = {E.TOPIC_AUTHORIZATION_FAILED, E.GROUP_AUTHORIZATION_FAILED, E.CLUSTER_AUTHORIZATION_FAILED,
                  E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
_SERVER = {E.KAFKA_STORAGE_ERROR, E.UNKNOWN_SERVER_ERROR}


def http_error_for(code: int) -> tuple[int, int]:
    """(HTTP status, Confluent error_code) for a Kafka error code."""
    try:
        ec = E(code)
    except ValueError:
        return 500, KAFKA_ERROR
    if ec in _AUTHORIZATION:
        return 403, KAFKA_AUTHORIZATION
    if ec in (E.SASL_AUTHENTICATION_FAILED,):
        return 401, KAFKA_AUTHENTICATION
    if ec in (E.UNKNOWN_TOPIC_OR_PARTITION, E.UNKNOWN_TOPIC_ID):
        return 404, KAFKA_UNKNOWN_TOPIC_PARTITION
    if ec == E.GROUP_ID_NOT_FOUND:
        return 404, 404
    if ec in _SERVER:
        return 500, KAFKA_ERROR
    if ec.retriable:
        return 500, KAFKA_RETRIABLE_ERROR
    return 400, KAFKA_BAD_REQUEST
