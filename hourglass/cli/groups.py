"""``hourglass groups list|describe|reset-offsets``: consumer and share groups of a running
broker, in the spirit of Kafka's ``kafka-consumer-groups.sh`` and ``kafka-share-groups.sh``,
over the wire (``hourglass.cli.wire``).

Usage (``--bootstrap-server`` defaults to ``$HOURGLASS_BOOTSTRAP`` or ``localhost:9092``)::

    hourglass groups list [--type consumer] [--state Stable]
    hourglass groups describe --group my-app            # state, members, offsets and lag
    hourglass groups reset-offsets --group my-app --topic orders --to-datetime 2026-01-01T00:00:00.000 \
                                   [--execute]

``list`` prints GROUP, TYPE (classic or consumer, KIP-848), PROTOCOL and STATE. ``describe``
prints three tables with Kafka's column names: the group (coordinator, assignor, state and,
for a consumer-protocol group, its group and target assignment epochs), its members (member
id, instance id, host, client id, epoch, current and target assignment; a classic group's
members with their assignment), and per partition with a committed offset or an owner:
CURRENT-OFFSET, LOG-END-OFFSET, LAG and the member consuming it. ``reset-offsets`` computes new
committed offsets for the group's partitions of ``--topic`` (all its topics when omitted):
``--to-datetime`` looks up the first offset whose timestamp is at or after the time (ListOffsets,
through the time index; the log end when none is), ``--to-earliest``/``--to-latest`` the log
start/end; it prints them (a dry run, as Kafka's default) and commits them with ``--execute``,
which needs the group inactive (Empty), as Kafka does. A datetime without a zone is local
time, as in Kafka (``yyyy-MM-dd'T'HH:mm:ss.SSS``, zone optional).

Share groups (KIP-932, type ``share`` in ``list``): ``describe`` prints the group (assignor
``simple``, group and assignment epochs), its members (epoch, assignment: one partition may be
assigned to several members) and per share-partition its START-OFFSET (the share-partition
start offset: every record below it is acknowledged or archived), LOG-END-OFFSET and LAG;
``reset-offsets`` moves the share-partition start offsets with AlterShareGroupOffsets (the
group must be Empty; in-flight records are forgotten), as ``kafka-share-groups.sh
--reset-offsets`` does.

Exit codes: 0 success, 1 the broker refused or could not be reached, 2 usage.
"""
from __future__ import annotations

import argparse
import sys
from datetime import datetime

from hourglass.cli.wire import CliError, add_cli_options as _common, cli_client, error_name as _error, \
    print_table as _table, run_cli
from protocol.errors import ErrorCode



def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("groups", help="list, describe or reset the offsets of consumer and share groups of a running broker",
                              description="Consumer and share groups of a running broker (kafka-consumer-groups.sh, "
                                          "kafka-share-groups.sh).")
    _common(p)
    sub = p.add_subparsers(dest="groups_cmd", required=True, metavar="{list,describe,reset-offsets}")
    ls = sub.add_parser("list", help="every group: id, type, protocol, state")
    ls.add_argument("--type", action="append", default=[], help="only this type (repeatable): classic, consumer, share")
    ls.add_argument("--state", action="append", default=[], help="only this state (repeatable): Stable, Empty, ...")
    d = sub.add_parser("describe", help="state, members with epochs and assignments, offsets and lag of a group")
    d.add_argument("--group", required=True)
    r = sub.add_parser("reset-offsets", help="move a group's committed offsets (dry run unless --execute)")
    r.add_argument("--group", required=True)
    r.add_argument("--topic", action="append", default=[], help="topic (repeatable; default: the group's topics)")
    how = r.add_mutually_exclusive_group(required=True)
    how.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss[ZONE]")
    how.add_argument("--to-earliest", action="store_true")
    how.add_argument("--to-latest", action="store_true")
    r.add_argument("--execute", action="store_true", help="commit the new offsets (default: only print them)")
    for sp in (ls, d, r):
        _common(sp, suppress=True)
    return p


def _client(args):
    return cli_client(args, "hourglass-groups")


def parse_datetime(text: str) -> int:
    """Kafka's ``Utils.getDateTime``: ``yyyy-MM-dd'T'HH:mm:ss.SSS`` with an optional zone
    (``Z``, ``+01:00``); local time without one. Epoch milliseconds."""
    t = text.strip()
    if t.endswith("Z"):
        t = t[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(t)
    except ValueError:
        raise CliError(f"invalid datetime {text!r}: expected yyyy-MM-dd'T'HH:mm:ss.SSS, optionally with a zone") from None
    if dt.tzinfo is None:
        dt = dt.astimezone()  # local time, as Kafka
    return int(dt.timestamp() * 1000)


# ---- reading a group ---------------------------------------------------------------------------

def _list_groups(c, states=(), types=()):
    from protocol.messages.list_groups import ListGroupsRequest
    r = c.request(16, 5, ListGroupsRequest(states_filter=list(states), types_filter=list(types)))
    if r.error_code:
        raise CliError(f"ListGroups failed: {_error(r.error_code)}")
    return r.groups


def _describe_consumer(c, group: str):
    from protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
    return c.request(69, 1, ConsumerGroupDescribeRequest(group_ids=[group])).groups[0]


def _describe_classic(c, group: str):
    from protocol.messages.describe_groups import DescribeGroupsRequest
    return c.request(15, 5, DescribeGroupsRequest(groups=[group])).groups[0]


def _describe_share(c, group: str):
    from protocol.messages.share_group_describe import ShareGroupDescribeRequest
    return c.request(77, 1, ShareGroupDescribeRequest(group_ids=[group])).groups[0]


def _share_start_offsets(c, group: str) -> dict:
    from protocol.messages.describe_share_group_offsets import DescribeShareGroupOffsetsRequest as D
    r = c.request(90, 0, D(groups=[D.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None)]))
    g = r.groups[0]
    if g.error_code:
        raise CliError(f"DescribeShareGroupOffsets for group {group}: {g.error_message or _error(g.error_code)}")
    return {(t.topic_name, p.partition_index): p.start_offset for t in g.topics for p in t.partitions}


def _group_type(c, group: str):
    return next((g.group_type for g in _list_groups(c) if g.group_id == group), None)


def _committed(c, group: str) -> dict:
    from protocol.messages.offset_fetch import OffsetFetchRequest
    r = c.request(9, 8, OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group,
                                                                                              topics=None)]))
    g = r.groups[0]
    if g.error_code:
        raise CliError(f"OffsetFetch for group {group}: {_error(g.error_code)}")
    return {(t.name, p.partition_index): p.committed_offset for t in g.topics for p in t.partitions
            if p.committed_offset >= 0}


def _list_offsets(c, tps, timestamp: int) -> dict:
    """{tp: offset} for ``timestamp`` (-1 latest, -2 earliest, else first offset at or after)."""
    from protocol.messages.list_offsets import ListOffsetsRequest as L
    by_topic: dict = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    if not by_topic:
        return {}
    r = c.request(2, 7, L(replica_id=-1, isolation_level=0, topics=[
        L.ListOffsetsTopic(name=t, partitions=[L.ListOffsetsTopic.ListOffsetsPartition(partition_index=p, timestamp=timestamp)
                                               for p in sorted(ps)])
        for t, ps in sorted(by_topic.items())]))
    out = {}
    for t in r.topics:
        for p in t.partitions:
            if p.error_code:
                raise CliError(f"ListOffsets {t.name}-{p.partition_index}: {_error(p.error_code)}")
            out[(t.name, p.partition_index)] = p.offset
    return out


def _topic_partitions(c, topics) -> list:
    from protocol.messages.metadata import MetadataRequest
    r = c.request(3, 12, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
                                         allow_auto_topic_creation=False))
    out = []
    for t in r.topics:
        if t.error_code:
            raise CliError(f"topic {t.name}: {_error(t.error_code)}")
        out += [(t.name, p.partition_index) for p in t.partitions]
    return sorted(out)


def _parts(tps) -> str:
    return ",".join(f"{t}:{p}" for t, p in sorted(tps)) or "-"


# ---- commands ---------------------------------------------------------------------------------

def _list(args, out) -> int:
    with _client(args) as c:
        groups = _list_groups(c, args.state, args.type)
    _table(out, ["GROUP", "TYPE", "PROTOCOL", "STATE"],
           [[g.group_id, g.group_type, g.protocol_type or "-", g.group_state]
            for g in sorted(groups, key=lambda g: g.group_id)])
    return 0


def _describe(args, out) -> int:
    from protocol.messages import consumer_protocol as cp
    gid = args.group
    with _client(args) as c:
        d = _describe_consumer(c, gid)
        owners: dict = {}  # tp -> (member id, host, client id)
        if d.error_code == 0:
            _table(out, ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH",
                         "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"],
                   [[gid, f"{c.address} (1)", d.assignor_name, d.group_state, d.group_epoch, d.assignment_epoch,
                     len(d.members)]])
            print(file=out)
            rows = []
            for m in sorted(d.members, key=lambda m: m.member_id):
                cur = {(tp.topic_name, p) for tp in m.assignment.topic_partitions for p in tp.partitions}
                tgt = {(tp.topic_name, p) for tp in m.target_assignment.topic_partitions for p in tp.partitions}
                for tp in cur:
                    owners[tp] = (m.member_id, m.client_host, m.client_id)
                rows.append([m.member_id, m.instance_id or "-", m.client_host, m.client_id, len(cur), m.member_epoch,
                             _parts(cur), _parts(tgt), {0: "classic", 1: "consumer"}.get(m.member_type, "-")])
            _table(out, ["CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
                         "CURRENT-ASSIGNMENT", "TARGET-ASSIGNMENT", "PROTOCOL"], rows)
        elif d.error_code == ErrorCode.GROUP_ID_NOT_FOUND and _group_type(c, gid) == "share":
            return _describe_share_group(c, gid, out)
        elif d.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
            g = _describe_classic(c, gid)
            if g.error_code:
                raise CliError(f"group {gid}: {_error(g.error_code)}")
            if g.group_state == "Dead":
                raise CliError(f"Consumer group '{gid}' does not exist.")
            _table(out, ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"],
                   [[gid, f"{c.address} (1)", g.protocol_data or "-", g.group_state, len(g.members)]])
            print(file=out)
            rows = []
            for m in g.members:
                try:
                    assigned = {(t, p) for t, ps in cp.assignment_partitions(m.member_assignment).items() for p in ps}
                except Exception:  # not the consumer embedded protocol
                    assigned = set()
                for tp in assigned:
                    owners[tp] = (m.member_id, m.client_host, m.client_id)
                rows.append([m.member_id, m.group_instance_id or "-", m.client_host, m.client_id, len(assigned),
                             _parts(assigned)])
            _table(out, ["CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"], rows)
        else:
            raise CliError(f"group {gid}: {d.error_message or _error(d.error_code)}")
        committed = _committed(c, gid)
        tps = sorted(set(committed) | set(owners))
        ends = _list_offsets(c, tps, -1)
    print(file=out)
    rows = []
    for tp in tps:
        cur = committed.get(tp)
        end = ends.get(tp, -1)
        member, host, client = owners.get(tp, ("-", "-", "-"))
        rows.append([gid, tp[0], tp[1], "-" if cur is None else cur, end,
                     "-" if cur is None or end < 0 else max(end - cur, 0), member, host, client])
    _table(out, ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
                 "CLIENT-ID"], rows)
    return 0


def _describe_share_group(c, gid: str, out) -> int:
    d = _describe_share(c, gid)
    if d.error_code:
        raise CliError(f"group {gid}: {d.error_message or _error(d.error_code)}")
    _table(out, ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH",
                 "#MEMBERS"],
           [[gid, f"{c.address} (1)", d.assignor_name, d.group_state, d.group_epoch, d.assignment_epoch,
             len(d.members)]])
    print(file=out)
    owners: dict = {}
    rows = []
    for m in sorted(d.members, key=lambda m: m.member_id):
        cur = {(tp.topic_name, p) for tp in m.assignment.topic_partitions for p in tp.partitions}
        for tp in cur:
            owners.setdefault(tp, []).append(m.member_id)
        rows.append([m.member_id, m.client_host, m.client_id, len(cur), m.member_epoch, _parts(cur)])
    _table(out, ["MEMBER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "MEMBER-EPOCH", "ASSIGNMENT"], rows)
    starts = _share_start_offsets(c, gid)
    tps = sorted(set(starts) | set(owners))
    ends = _list_offsets(c, tps, -1)
    print(file=out)
    rows = []
    for tp in tps:
        start = starts.get(tp, -1)
        end = ends.get(tp, -1)
        rows.append([gid, tp[0], tp[1], "-" if start < 0 else start, end,
                     "-" if start < 0 or end < 0 else max(end - start, 0), len(owners.get(tp, []))])
    _table(out, ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LOG-END-OFFSET", "LAG", "#MEMBERS"], rows)
    return 0


def _reset_share_offsets(c, args, out, state) -> int:
    from protocol.messages.alter_share_group_offsets import AlterShareGroupOffsetsRequest as A
    gid = args.group
    if args.execute and state not in (None, "Empty", "Dead"):
        raise CliError(f"Share group '{gid}' is not empty: its start offsets can only be reset while it has "
                       f"no members (state {state}).")
    topics = args.topic or sorted({t for t, _ in _share_start_offsets(c, gid)})
    if not topics:
        raise CliError(f"share group {gid} has no share-partitions: name the topics with --topic")
    tps = _topic_partitions(c, topics)
    new = _new_offsets(c, args, tps)
    if args.execute:
        by_topic: dict = {}
        for (t, p), o in sorted(new.items()):
            by_topic.setdefault(t, []).append(A.AlterShareGroupOffsetsRequestTopic.AlterShareGroupOffsetsRequestPartition(
                partition_index=p, start_offset=o))
        r = c.request(91, 0, A(group_id=gid, topics=[A.AlterShareGroupOffsetsRequestTopic(topic_name=t, partitions=ps)
                                                     for t, ps in by_topic.items()]))
        errs = [f"{t.topic_name}-{p.partition_index}: {p.error_message or _error(p.error_code)}"
                for t in r.responses for p in t.partitions if p.error_code]
        if errs:
            raise CliError("AlterShareGroupOffsets failed: " + "; ".join(errs))
    _table(out, ["GROUP", "TOPIC", "PARTITION", "NEW-START-OFFSET"],
           [[gid, t, p, o] for (t, p), o in sorted(new.items())])
    if not args.execute:
        print("dry run: add --execute to set these start offsets", file=sys.stderr)
    return 0


def _new_offsets(c, args, tps) -> dict:
    if args.to_earliest:
        return _list_offsets(c, tps, -2)
    if args.to_latest:
        return _list_offsets(c, tps, -1)
    ts = parse_datetime(args.to_datetime)
    found = _list_offsets(c, tps, ts)
    latest = _list_offsets(c, [tp for tp, o in found.items() if o < 0], -1)
    return {tp: (o if o >= 0 else latest[tp]) for tp, o in found.items()}


def _reset_offsets(args, out) -> int:
    from protocol.messages.offset_commit import OffsetCommitRequest as OC
    gid = args.group
    with _client(args) as c:
        listed = next((g for g in _list_groups(c) if g.group_id == gid), None)
        state = listed.group_state if listed is not None else None
        if listed is not None and listed.group_type == "share":
            return _reset_share_offsets(c, args, out, state)
        if args.execute and state not in (None, "Empty", "Dead"):
            raise CliError(f"Assignments can only be reset if the group '{gid}' is inactive, but the current "
                           f"state is {state}.")
        committed = _committed(c, gid)
        topics = args.topic or sorted({t for t, _ in committed})
        if not topics:
            raise CliError(f"group {gid} has no committed offsets: name the topics with --topic")
        tps = _topic_partitions(c, topics)
        new = _new_offsets(c, args, tps)
        if args.execute:
            topics_req = {}
            for (t, p), o in sorted(new.items()):
                topics_req.setdefault(t, []).append(OC.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                    partition_index=p, committed_offset=o, committed_metadata=""))
            r = c.request(8, 9, OC(group_id=gid, generation_id_or_member_epoch=-1, member_id="",
                                   topics=[OC.OffsetCommitRequestTopic(name=t, partitions=ps)
                                           for t, ps in topics_req.items()]))
            errs = [f"{t.name}-{p.partition_index}: {_error(p.error_code)}" for t in r.topics for p in t.partitions
                    if p.error_code]
            if errs:
                raise CliError("OffsetCommit failed: " + "; ".join(errs))
    _table(out, ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], [[gid, t, p, o] for (t, p), o in sorted(new.items())])
    if not args.execute:
        print("dry run: add --execute to commit these offsets", file=sys.stderr)
    return 0


_COMMANDS = {"list": _list, "describe": _describe, "reset-offsets": _reset_offsets}


def run(args, out=None, err=None) -> int:
    """Execute a parsed ``groups`` command; returns the exit code."""
    return run_cli("groups", _COMMANDS[args.groups_cmd], args, out, err)
