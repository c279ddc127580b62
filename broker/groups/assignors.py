"""Server-side partition assignors of consumer-protocol groups (KIP-848): ``uniform`` and ``range``.

Pure functions over plain data, as Kafka's ``ConsumerGroupPartitionAssignor``s: given every
member's subscription (the topic ids it subscribes to that exist) and its current *target*
assignment, and each topic's partition count, they return the new target assignment of every
member. The coordinator reconciles members towards it incrementally (``consumer_group``).

Properties (tested with hypothesis in ``tests/broker/test_assignors.py``):
- every partition of a subscribed topic goes to exactly one member subscribed to it;
- ``uniform`` balances the number of partitions per member: with identical subscriptions
  (homogeneous) sizes differ by at most one; with different ones (heterogeneous) no
  partition can move to a member with at least two fewer partitions that subscribes to it;
- ``range`` gives each member subscribed to a topic ``n // m`` or ``n // m + 1`` of its
  partitions, in ranges, and the same partition numbers across co-partitioned topics;
- both are sticky: a member keeps what it had as long as balance allows (Kafka orders
  balance over stickiness).

Deterministic: members are taken in member id order (Kafka iterates a hash map). In the
homogeneous uniform case the members that already hold more than the minimum quota get the
"+1" partitions first, so a join moves only the partitions that must move (Kafka 4.0 hands the
extra quota in map order and can move one more partition than needed).
"""
from __future__ import annotations

from typing import Hashable, Mapping

from protocol.deferred import dataclass

TopicId = Hashable
Assignment = dict  # topic id -> frozenset[int]

UNIFORM = "uniform"
RANGE = "range"


@dataclass(frozen=True)
class MemberSpec:
    """One member as an assignor sees it."""
    subscribed: frozenset          # topic ids, only topics that exist
    assignment: Mapping            # topic id -> frozenset of partitions (current target)


class PartitionAssignorError(Exception):
    """Kafka's PartitionAssignorException: the coordinator answers UNKNOWN_SERVER_ERROR."""


def is_homogeneous(members: Mapping[str, MemberSpec]) -> bool:
    subs = {m.subscribed for m in members.values()}
    return len(subs) <= 1


def assign(name: str, members: Mapping[str, MemberSpec], partitions: Mapping[TopicId, int]) -> dict[str, Assignment]:
    """The target assignment of every member by assignor ``name``."""
    if not members:
        return {}
    for m in members.values():
        for t in m.subscribed:
            if t not in partitions:
                raise PartitionAssignorError(f"Members are subscribed to topic {t!r} which doesn't exist "
                                             "in the topic metadata.")
    if name == RANGE:
        return _range(members, partitions)
    if name == UNIFORM:
        if is_homogeneous(members):
            return _uniform_homogeneous(members, partitions)
        return _uniform_heterogeneous(members, partitions)
    raise PartitionAssignorError(f"unknown assignor {name}")


def _freeze(a: dict) -> Assignment:
    return {t: frozenset(ps) for t, ps in a.items() if ps}


# ---- uniform, homogeneous subscriptions (Kafka's UniformHomogeneousAssignmentBuilder) ------------
def _uniform_homogeneous(members: Mapping[str, MemberSpec], partitions: Mapping[TopicId, int]) -> dict[str, Assignment]:
    ids = sorted(members)
    topics = next(iter(members.values())).subscribed
    if not topics:
        return {m: {} for m in ids}
    total = sum(partitions[t] for t in topics)
    min_quota, extra = divmod(total, len(ids))
    # drop unsubscribed topics and partitions claimed twice (cannot happen from our own
    # targets; a hand-edited log could) before counting what each member holds
    owned: dict[str, list[tuple]] = {}
    taken: set = set()
    for m in ids:
        held = []
        for t in sorted(members[m].assignment, key=repr):
            if t not in topics:
                continue
            for p in sorted(members[m].assignment[t]):
                if 0 <= p < partitions[t] and (t, p) not in taken:
                    taken.add((t, p))
                    held.append((t, p))
        owned[m] = held
    # the "+1" quotas go first to members already holding more than the minimum
    order = sorted(ids, key=lambda m: (len(owned[m]) <= min_quota, m))
    quota = {}
    for m in order:
        quota[m] = min_quota + (1 if extra > 0 else 0)
        extra -= 1 if extra > 0 else 0
    result: dict[str, dict] = {m: {} for m in ids}
    pool = []
    for m in ids:
        keep, give = owned[m][:quota[m]], owned[m][quota[m]:]
        for t, p in keep:
            result[m].setdefault(t, set()).add(p)
        pool.extend(give)  # still in ``taken``: not added twice below
    for t in sorted(topics, key=repr):
        for p in range(partitions[t]):
            if (t, p) not in taken:
                pool.append((t, p))
    pool.sort(key=lambda tp: (repr(tp[0]), tp[1]))
    i = 0
    for m in ids:
        need = quota[m] - sum(len(ps) for ps in result[m].values())
        for _ in range(need):
            if i >= len(pool):
                break
            t, p = pool[i]
            i += 1
            result[m].setdefault(t, set()).add(p)
    if i < len(pool):
        raise PartitionAssignorError("Partitions were left unassigned")
    return {m: _freeze(a) for m, a in result.items()}


# ---- uniform, heterogeneous subscriptions ------------------------------------------------------
def _uniform_heterogeneous(members: Mapping[str, MemberSpec], partitions: Mapping[TopicId, int]) -> dict[str, Assignment]:
    """Balance under different subscriptions (the goal of Kafka's
    UniformHeterogeneousAssignmentBuilder): keep what members have, place the rest on the
    least loaded subscriber (most constrained topics first), then move partitions from a
    member to a subscriber holding at least two fewer until no such move is left."""
    ids = sorted(members)
    owner: dict[tuple, str] = {}
    load = {m: 0 for m in ids}
    for m in ids:
        spec = members[m]
        for t in sorted(spec.assignment, key=repr):
            if t not in spec.subscribed:
                continue
            for p in sorted(spec.assignment[t]):
                if 0 <= p < partitions[t] and (t, p) not in owner:
                    owner[(t, p)] = m
                    load[m] += 1
    subscribers: dict = {}
    for m in ids:
        for t in members[m].subscribed:
            subscribers.setdefault(t, []).append(m)
    for t in sorted(subscribers, key=lambda t: (len(subscribers[t]), repr(t))):
        for p in range(partitions[t]):
            if (t, p) in owner:
                continue
            m = min(subscribers[t], key=lambda x: (load[x], x))
            owner[(t, p)] = m
            load[m] += 1
    # balance: move one partition at a time from the most loaded member able to give one to a
    # subscriber with at least two fewer; each move lowers the sum of squared loads, so this ends
    by_member: dict[str, list] = {m: [] for m in ids}
    for tp, m in owner.items():
        by_member[m].append(tp)
    moved = True
    while moved:
        moved = False
        for src in sorted(ids, key=lambda x: (-load[x], x)):
            best = None
            for tp in sorted(by_member[src], key=lambda tp: (repr(tp[0]), -tp[1])):
                for dst in subscribers[tp[0]]:
                    if load[dst] + 1 < load[src] and (best is None or load[dst] < load[best[1]]):
                        best = (tp, dst)
            if best is not None:
                tp, dst = best
                by_member[src].remove(tp)
                by_member[dst].append(tp)
                load[src] -= 1
                load[dst] += 1
                moved = True
                break
    result: dict[str, dict] = {m: {} for m in ids}
    for m, tps in by_member.items():
        for t, p in tps:
            result[m].setdefault(t, set()).add(p)
    return {m: _freeze(a) for m, a in result.items()}


# ---- range (Kafka's RangeAssignor of the group coordinator: sticky ranges) ------------------------
def _range(members: Mapping[str, MemberSpec], partitions: Mapping[TopicId, int]) -> dict[str, Assignment]:
    ids = sorted(members)
    result: dict[str, dict] = {m: {} for m in ids}
    per_topic: dict = {}
    for m in ids:
        for t in members[m].subscribed:
            per_topic.setdefault(t, []).append(m)
    for t, subs in per_topic.items():
        n = partitions[t]
        min_quota, extra = divmod(n, len(subs))
        sticky: set[int] = set()
        unfilled: list[tuple[str, int]] = []
        for m in subs:
            current = sorted(p for p in members[m].assignment.get(t, ()) if 0 <= p < n and p not in sticky)
            keep = current[:min_quota]
            remaining = min_quota - len(current)
            if remaining < 0 and extra > 0:
                extra -= 1
                keep = current[:min_quota + 1]
            elif remaining >= 0:
                unfilled.append((m, remaining))
            sticky.update(keep)
            if keep:
                result[m].setdefault(t, set()).update(keep)
        free = [p for p in range(n) if p not in sticky]
        i = 0
        for m, remaining in unfilled:
            if extra > 0:
                remaining += 1
                extra -= 1
            if remaining > 0:
                got = free[i:i + remaining]
                i += remaining
                if got:
                    result[m].setdefault(t, set()).update(got)
    return {m: _freeze(a) for m, a in result.items()}
