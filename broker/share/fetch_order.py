"""How one ShareFetch spreads over its share session's partitions (KIP-932), pure: Kafka 4.4's
PartitionRotateStrategy (ROUND_ROBIN) and PartitionMaxBytesStrategy (UNIFORM).

A share session keeps its partitions in the order they joined it (Kafka's ShareSession
partition map: the opening request's order, later ones appended). Each ShareFetch walks them
rotated by the request's share session epoch (``rotate_round_robin``), reads each within an
even share of the request's ``max_bytes`` (``uniform_max_bytes``; the log read as a whole stays
within ``max_bytes``, and only the first partition that has data may exceed its share to
return one whole batch), and acquires records in that order until ``max_records`` is reached.
So a backlogged partition cannot starve the ones after it: each answer starts one partition
further on.
"""
from __future__ import annotations

from typing import Sequence, TypeVar

T = TypeVar("T")


def rotate_round_robin(partitions: Sequence[T], session_epoch: int) -> list[T]:
    """Kafka's PartitionRotateStrategy.rotateRoundRobin: ``partitions`` rotated left by
    ``session_epoch mod n`` (Collections.rotate by ``-(epoch % n)``); unchanged when there are
    fewer than two, or the epoch is the initial (0) or final (-1) one."""
    n = len(partitions)
    if n <= 1 or session_epoch < 1:
        return list(partitions)
    k = session_epoch % n
    return list(partitions[k:]) + list(partitions[:k])


def uniform_max_bytes(request_max_bytes: int, n: int) -> list[int]:
    """Kafka's PartitionMaxBytesStrategy.uniformPartitionMaxBytes for ``n`` partitions, in the
    fetch's (rotated) order: ``request_max_bytes // n`` each with the remainder on one; below
    one byte each, one byte to as many as it covers and none to the rest. Kafka gives the
    remainder (and, below one byte each, the bytes) to partitions picked at random; here they
    go to the first ones in order, which the rotation already moves from fetch to fetch."""
    if n <= 0:
        return []
    if request_max_bytes <= 0:
        return [0] * n
    if request_max_bytes >= n:
        out = [request_max_bytes // n] * n
        out[0] += request_max_bytes % n
        return out
    return [1] * request_max_bytes + [0] * (n - request_max_bytes)
