"""Task assignment and reconciliation of a Streams group (KIP-1071), as pure functions.

Tasks are (subtopology id, partition). A ``Tasks`` value holds a member's active, standby and
warm-up tasks, each a frozenset of tasks.

``assign(members, tasks, num_standby)``: Kafka's sticky task assignor in its essentials. Every
task gets exactly one active owner; members get as equal a share as their count allows
(ceil/floor of tasks per member); a task stays with its previous active owner while that
owner is under its share, else goes to the least loaded member, preferring one of the
previous owner's process. Standby replicas (``group.streams.num.standby.replicas``) go to
members of other processes than the active owner, least loaded first, sticky to previous
standby owners. Warm-up tasks are not assigned.

``reconcile(member, target_epoch, target, owned, owner_of)``: Kafka's
CurrentAssignmentBuilder. A member keeps its epoch and is asked to revoke the active tasks it
holds that its target does not (UNREVOKED_TASKS) until its heartbeat reports them gone; then it
moves to the target epoch, getting each target active task another member still holds only
once that member released it (UNRELEASED_TASKS), and is STABLE when it holds its whole target.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from enum import IntEnum
from typing import Callable, Optional

EMPTY = frozenset()


@dataclass(frozen=True)
class Tasks:
    active: frozenset = EMPTY
    standby: frozenset = EMPTY
    warmup: frozenset = EMPTY

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)

    def all(self) -> frozenset:
        return self.active | self.standby | self.warmup


NO_TASKS = Tasks()


class MemberState(IntEnum):
    STABLE = 0
    UNREVOKED_TASKS = 1
    UNRELEASED_TASKS = 2
    UNKNOWN = 3


@dataclass(frozen=True)
class AssignmentState:
    member_epoch: int
    previous_member_epoch: int
    state: MemberState
    assigned: Tasks
    pending_revocation: Tasks


def all_tasks(tasks_per_subtopology: dict) -> list:
    return [(sid, p) for sid in sorted(tasks_per_subtopology, key=_sid_key) for p in range(tasks_per_subtopology[sid])]


def _sid_key(sid: str):
    return (0, int(sid), sid) if sid.isdigit() else (1, 0, sid)


def by_subtopology(tasks) -> list:
    """Tasks as the wire lists them: [(subtopology id, sorted partitions)], subtopologies in
    numeric order."""
    by: dict = {}
    for sid, p in tasks:
        by.setdefault(sid, []).append(p)
    return [(sid, sorted(by[sid])) for sid in sorted(by, key=_sid_key)]


def assign(members: dict, tasks_per_subtopology: dict, num_standby: int = 0,
           stateful: Optional[frozenset] = None) -> dict:
    """``members``: member id -> (process id, previous target ``Tasks``). Returns member id ->
    ``Tasks``. Standby replicas go only to the tasks of ``stateful`` subtopologies (those with
    state changelog topics, as Kafka's assignor reads ``isStateful``; None: every subtopology),
    since a standby of a task without state would restore nothing."""
    if not members:
        return {}
    ids = sorted(members)
    tasks = all_tasks(tasks_per_subtopology)
    active: dict[str, set] = {m: set() for m in ids}
    n, k = len(tasks), len(ids)
    quota = -(-n // k)  # ceil
    # how many members may take the ceil share: the rest take the floor
    ceil_slots = n - (quota - 1) * k if n % k else k
    full = 0

    def cap(m):
        return quota if (len(active[m]) < quota - 1 or full < ceil_slots) else quota - 1

    prev_owner = {}
    for m in ids:
        for t in members[m][1].active:
            prev_owner.setdefault(t, m)
    unassigned = []
    for t in tasks:
        m = prev_owner.get(t)
        if m is not None and len(active[m]) < cap(m):
            active[m].add(t)
            if len(active[m]) == quota:
                full += 1
        else:
            unassigned.append(t)
    for t in unassigned:
        prev = prev_owner.get(t)
        prev_process = members[prev][0] if prev is not None else None
        m = min(ids, key=lambda x: (len(active[x]), members[x][0] != prev_process, x))
        active[m].add(t)
        if len(active[m]) == quota:
            full += 1
    standby: dict[str, set] = {m: set() for m in ids}
    if num_standby > 0:
        prev_standby = {m: members[m][1].standby for m in ids}
        owner = {t: m for m in ids for t in active[m]}
        for t in tasks:
            if stateful is not None and t[0] not in stateful:
                continue
            used = {members[owner[t]][0]}
            for _ in range(num_standby):
                cands = [m for m in ids if members[m][0] not in used]
                if not cands:
                    break
                m = min(cands, key=lambda x: (t not in prev_standby[x], len(active[x]) + len(standby[x]), x))
                standby[m].add(t)
                used.add(members[m][0])
    return {m: Tasks(frozenset(active[m]), frozenset(standby[m])) for m in ids}


def reconcile(member: AssignmentState, target_epoch: int, target: Tasks, owned: Optional[Tasks],
              owner_of: Callable[[tuple], Optional[str]], member_id: str) -> AssignmentState:
    """The member's next assignment state. ``owned``: the tasks its heartbeat reported (None
    when unchanged); ``owner_of(task)``: the member currently holding a task as active."""
    if member.state is MemberState.UNREVOKED_TASKS:
        still = owned is None or bool(owned.active & member.pending_revocation.active)
        if still:
            return member
        member = replace(member, pending_revocation=NO_TASKS)
        return _next(member, member.member_epoch, target_epoch, target, owner_of, member_id)
    if member.member_epoch == target_epoch and member.state is MemberState.STABLE:
        return member
    return _next(member, member.member_epoch, target_epoch, target, owner_of, member_id)


def _next(member: AssignmentState, epoch: int, target_epoch: int, target: Tasks, owner_of, member_id: str):
    current = member.assigned
    revoke = current.active - target.active
    if revoke:
        keep = Tasks(current.active & target.active, current.standby & target.standby,
                     current.warmup & target.warmup)
        revoke_all = Tasks(revoke, current.standby - target.standby, current.warmup - target.warmup)
        return AssignmentState(epoch, member.previous_member_epoch, MemberState.UNREVOKED_TASKS, keep, revoke_all)
    free = frozenset(t for t in target.active if owner_of(t) in (None, member_id))
    # a standby or warm-up task waits until this member no longer runs it as active elsewhere
    state = MemberState.UNRELEASED_TASKS if free != target.active else MemberState.STABLE
    return AssignmentState(target_epoch, epoch, state, Tasks(free, target.standby, target.warmup), NO_TASKS)
