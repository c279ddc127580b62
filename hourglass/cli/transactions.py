"""``hourglass transactions list|describe|describe-producers|abort``: transactions of a running
broker, in the spirit of Kafka's ``kafka-transactions.sh`` (KIP-664), over the wire.

Usage (``--bootstrap-server`` defaults to ``$HOURGLASS_BOOTSTRAP`` or ``localhost:9092``)::

    hourglass transactions list [--state Ongoing] [--producer-id 7] [--duration-filter 60000]
    hourglass transactions describe --transactional-id my-app-1
    hourglass transactions describe-producers --topic orders --partition 0
    hourglass transactions abort --topic orders --partition 0 --start-offset 1234
    hourglass transactions abort --topic orders --partition 0 --producer-id 7 --producer-epoch 3 \
                                 --coordinator-epoch 0

``abort`` ends a hanging transaction the way ``kafka-transactions.sh abort`` does: an ABORT
marker written into the partition through WriteTxnMarkers, for the producer whose open
transaction starts at ``--start-offset`` (found with DescribeProducers) or for the producer,
epoch and coordinator epoch given. Output is a table with Kafka's column names (``list``,
``describe``, ``describe-producers``); errors go to stderr as ``hourglass transactions:
error: ...``. Exit codes: 0 success, 1 the broker refused or could not be reached, 2 usage.
"""
from __future__ import annotations

import argparse
import sys
import time

from hourglass.cli.wire import CliError, add_cli_options as _common, cli_client, error_name as _error, \
    print_table as _table, run_cli
from protocol.api_keys import APIS

TRANSACTION = 1


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("transactions", help="list, describe or abort transactions of a running broker",
                              description="Transactions of a running broker (kafka-transactions.sh).")
    _common(p)
    sub = p.add_subparsers(dest="txn_cmd", required=True, metavar="{list,describe,describe-producers,abort}")
    ls = sub.add_parser("list", help="transactional ids the coordinator knows")
    ls.add_argument("--state", action="append", default=[], help="only this state (repeatable): Ongoing, Empty, ...")
    ls.add_argument("--producer-id", type=int, action="append", default=[], help="only this producer id (repeatable)")
    ls.add_argument("--duration-filter", type=int, default=-1, metavar="MS",
                    help="only transactions running longer than MS milliseconds")
    d = sub.add_parser("describe", help="the state of one transactional id")
    d.add_argument("--transactional-id", required=True)
    dp = sub.add_parser("describe-producers", help="the active producers of one partition")
    dp.add_argument("--topic", required=True)
    dp.add_argument("--partition", type=int, required=True)
    a = sub.add_parser("abort", help="abort a hanging transaction with an ABORT marker")
    a.add_argument("--topic", required=True)
    a.add_argument("--partition", type=int, required=True)
    a.add_argument("--start-offset", type=int, help="first offset of the open transaction (see describe-producers)")
    a.add_argument("--producer-id", type=int)
    a.add_argument("--producer-epoch", type=int)
    a.add_argument("--coordinator-epoch", type=int)
    for sp in (ls, d, dp, a):
        _common(sp, suppress=True)
    return p


def _client(args):
    return cli_client(args, "hourglass-transactions")


def _coordinator(c, transactional_id: str) -> int:
    from protocol.messages.find_coordinator import FindCoordinatorRequest
    r = c.request(10, 3, FindCoordinatorRequest(key=transactional_id, key_type=TRANSACTION))
    if r.error_code:
        raise CliError(f"no transaction coordinator for {transactional_id!r}: {_error(r.error_code)}")
    return r.node_id


# ---- commands ---------------------------------------------------------------------------------

def _list(args, out) -> int:
    from protocol.messages.list_transactions import ListTransactionsRequest
    with _client(args) as c:
        # Kafka's tool asks every broker from Metadata, no FindCoordinator (which would need
        # DESCRIBE on a transactional id with ACLs on): here, the one node
        node = c.request(3, 12, APIS[3].request.cls(topics=[])).brokers[0].node_id
        r = c.request(66, 1, ListTransactionsRequest(state_filters=args.state, producer_id_filters=args.producer_id,
                                                     duration_filter=args.duration_filter))
    if r.error_code:
        raise CliError(f"ListTransactions failed: {_error(r.error_code)}")
    if r.unknown_state_filters:
        print(f"hourglass transactions: unknown states ignored: {', '.join(r.unknown_state_filters)}",
              file=sys.stderr)
    _table(out, ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"],
           [[t.transactional_id, node, t.producer_id, t.transaction_state]
            for t in sorted(r.transaction_states, key=lambda t: t.transactional_id)])
    return 0


def _describe(args, out) -> int:
    from protocol.messages.describe_transactions import DescribeTransactionsRequest
    tid = args.transactional_id
    with _client(args) as c:
        node = _coordinator(c, tid)
        [s] = c.request(65, 0, DescribeTransactionsRequest(transactional_ids=[tid])).transaction_states
    if s.error_code:
        raise CliError(f"transactional id {tid!r}: {_error(s.error_code)}")
    start = s.transaction_start_time_ms
    duration = int(time.time() * 1000) - start if start >= 0 else None
    parts = ",".join(f"{t.topic}-{p}" for t in s.topics for p in t.partitions)
    _table(out, ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                 "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions"],
           [[node, s.transactional_id, s.producer_id, s.producer_epoch, s.transaction_state, s.transaction_timeout_ms,
             start if start >= 0 else "None", duration if duration is not None else "None", parts]])
    return 0


def _producers(c, topic: str, partition: int):
    from protocol.messages.describe_producers import DescribeProducersRequest
    r = c.request(61, 0, DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(
        name=topic, partition_indexes=[partition])]))
    p = r.topics[0].partitions[0]
    if p.error_code:
        raise CliError(f"{topic}-{partition}: {p.error_message or _error(p.error_code)}")
    return p.active_producers


def _describe_producers(args, out) -> int:
    with _client(args) as c:
        producers = _producers(c, args.topic, args.partition)
    _table(out, ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                 "CurrentTransactionStartOffset"],
           [[p.producer_id, p.producer_epoch, p.coordinator_epoch, p.last_sequence, p.last_timestamp,
             p.current_txn_start_offset if p.current_txn_start_offset >= 0 else "None"] for p in producers])
    return 0


def _abort(args, out) -> int:
    from protocol.messages.write_txn_markers import WriteTxnMarkersRequest as W
    explicit = (args.producer_id, args.producer_epoch, args.coordinator_epoch)
    if (args.start_offset is None) == all(x is None for x in explicit):
        raise CliError("give either --start-offset, or --producer-id, --producer-epoch and --coordinator-epoch")
    with _client(args) as c:
        if args.start_offset is not None:
            found = [p for p in _producers(c, args.topic, args.partition)
                     if p.current_txn_start_offset == args.start_offset]
            if not found:
                raise CliError(f"no open transaction starts at offset {args.start_offset} of "
                               f"{args.topic}-{args.partition}")
            p = found[0]
            pid, epoch, coord_epoch = p.producer_id, p.producer_epoch, max(p.coordinator_epoch, 0)
        else:
            if any(x is None for x in explicit):
                raise CliError("--producer-id, --producer-epoch and --coordinator-epoch go together")
            pid, epoch, coord_epoch = explicit
        marker = W.WritableTxnMarker(producer_id=pid, producer_epoch=epoch, transaction_result=False,
                                     coordinator_epoch=coord_epoch, topics=[W.WritableTxnMarker.WritableTxnMarkerTopic(
                                         name=args.topic, partition_indexes=[args.partition])])
        r = c.request(27, 1, W(markers=[marker]))
    code = r.markers[0].topics[0].partitions[0].error_code
    if code:
        raise CliError(f"aborting the transaction of producer {pid} in {args.topic}-{args.partition}: {_error(code)}")
    print(f"aborted the transaction of producer {pid} (epoch {epoch}) in {args.topic}-{args.partition}", file=out)
    return 0


_COMMANDS = {"list": _list, "describe": _describe, "describe-producers": _describe_producers, "abort": _abort}


def run(args, out=None, err=None) -> int:
    """Execute a parsed ``transactions`` command; returns the exit code."""
    return run_cli("transactions", _COMMANDS[args.txn_cmd], args, out, err)
