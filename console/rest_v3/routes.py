"""Kafka REST v3 (Confluent's paths and shapes) and Hourglass's additions, under ``/v3``.

Thin: each route parses its input, calls ``console.model`` as the request's principal and
shapes the answer with ``console.rest_v3.shapes``. Errors leave as Confluent's error JSON
(``{"error_code", "message"}``): model errors through ``errors.http_error_for``, malformed
input 400, unknown paths 404, and never a 500 for bad input.
"""
from __future__ import annotations

import json

from aiohttp import web

from console import model, serde
from console.rest_v3 import errors, shapes
from console.rest_v3.produce import (ProduceInputError, encode_data, needs_registry, parse_headers,
                                     parse_partition, parse_timestamp, split_stream)
from web.http import HttpError, add_routes_slash_tolerant, json_response, middlewares, read_json
from web.openapi import responds


CT = "application/json"
BROKER = web.AppKey("broker", object)
RATE_HISTORY = web.AppKey("rate_history", model.RateHistory)
LAG_HISTORY = web.AppKey("lag_history", model.LagHistory)
MAX_BODY = 16 * 1024 * 1024


def _raise_model(e: model.ModelError):
    if isinstance(e, model.NotFound):
        raise HttpError(404, 404, e.message)
    if isinstance(e, model.BadRequest):
        raise HttpError(400, errors.KAFKA_BAD_REQUEST, e.message)
    if isinstance(e, model.Conflict):
        raise HttpError(409, 409, e.message)
    status, code = errors.http_error_for(e.code) if e.code is not None else (400, errors.KAFKA_BAD_REQUEST)
    raise HttpError(status, code, e.message)


@web.middleware
async def model_errors(request: web.Request, handler):
    try:
        return await handler(request)
    except model.ModelError as e:
        _raise_model(e)


def _kafka(request) -> model.Kafka:
    return model.Kafka(request.app[BROKER], request["principal"], request.remote or "127.0.0.1",
                       client_id="hourglass-rest-v3")


def _links(request) -> shapes.Links:
    b = request.app[BROKER]
    cid = request.match_info.get("cluster_id")
    if cid is not None and cid != b.cluster_id:
        raise HttpError(404, 404, f"Cluster {cid} could not be found.")
    return shapes.Links(f"{request.url.origin()}/v3", b.cluster_id, b.node_id)


def _ok(body, status: int = 200) -> web.Response:
    return json_response(body, CT, status)


def _int(request, name: str, default: int | None = None, *, lo: int | None = None, hi: int | None = None) -> int | None:
    v = request.query.get(name)
    if v is None or v == "":
        return default
    try:
        n = int(v)
    except ValueError:
        raise HttpError(400, 400, f"Query parameter {name} must be an integer, got {v!r}") from None
    if (lo is not None and n < lo) or (hi is not None and n > hi):
        raise HttpError(400, 400, f"Query parameter {name} must be between {lo} and {hi}")
    return n


def _path_int(request, name: str) -> int:
    v = request.match_info[name]
    try:
        return int(v)
    except ValueError:
        raise HttpError(404, errors.KAFKA_UNKNOWN_TOPIC_PARTITION,
                        f"{name.replace('_', ' ').capitalize()} {v!r} is not a number.") from None


def parse_time(text: str) -> int:
    """Epoch milliseconds from epoch ms digits or an ISO 8601 date-time (UTC unless zoned)."""
    try:
        return parse_timestamp(text)
    except ProduceInputError:
        raise HttpError(400, 400, f"Invalid time {text!r}: expected ISO 8601 or epoch milliseconds") from None


def _obj(body, what: str) -> dict:
    if not isinstance(body, dict):
        raise HttpError(400, 400, f"Expected a JSON object for {what}")
    return body


def _field(body: dict, name: str, typ, *, required: bool = False, default=None):
    v = body.get(name, default)
    if v is None:
        if required:
            raise HttpError(400, 400, f"Missing required field {name}")
        return default
    if isinstance(v, bool) and typ is not bool or not isinstance(v, typ):
        raise HttpError(400, 400, f"Field {name} has the wrong type")
    return v


# ---- clusters and brokers -------------------------------------------------------------------

@responds({200: "ClusterDataList"})
async def list_clusters(request):
    L = _links(request)
    c = await model.cluster(_kafka(request))
    return _ok(shapes.resource_list("KafkaClusterList", f"{L.base}/clusters", [shapes.cluster(L, c)]))


@responds({200: "ClusterData"})
async def get_cluster(request):
    L = _links(request)
    return _ok(shapes.cluster(L, await model.cluster(_kafka(request))))


@responds({200: "BrokerDataList"})
async def list_brokers(request):
    L = _links(request)
    c = await model.cluster(_kafka(request))
    return _ok(shapes.resource_list("KafkaBrokerList", L.url("brokers"), [shapes.broker(L, b) for b in c["brokers"]]))


@responds({200: "BrokerData"})
async def get_broker(request):
    L = _links(request)
    bid = _path_int(request, "broker_id")
    c = await model.cluster(_kafka(request))
    for b in c["brokers"]:
        if b["broker_id"] == bid:
            return _ok(shapes.broker(L, b))
    raise HttpError(404, 404, f"Broker {bid} could not be found.")


async def _broker_id(request) -> int:
    """The path's broker id, 404 as Confluent when the cluster has no such broker."""
    bid = _path_int(request, "broker_id")
    if not any(b["broker_id"] == bid for b in (await model.cluster(_kafka(request)))["brokers"]):
        raise HttpError(404, 404, f"Broker {bid} could not be found.")
    return bid


@responds({200: "BrokerConfigDataList"})
async def list_broker_configs(request):
    L = _links(request)
    bid = await _broker_id(request)
    cs = await model.broker_configs(_kafka(request), bid)
    return _ok(shapes.resource_list("KafkaBrokerConfigList", L.url("brokers", bid, "configs"),
                                    [shapes.broker_config(L, bid, c) for c in cs]))


@responds({200: "BrokerConfigData"})
async def get_broker_config(request):
    L = _links(request)
    bid, name = await _broker_id(request), request.match_info["name"]
    cs = await model.broker_configs(_kafka(request), bid, [name])
    if not cs:
        raise HttpError(404, 404, f"Config {name} could not be found for broker {bid}.")
    return _ok(shapes.broker_config(L, bid, cs[0]))


@responds({200: "BrokerConfigDataList"})
async def list_all_broker_configs(request):
    """``brokers/-/configs``: every broker's configs (one node here)."""
    L = _links(request)
    k = _kafka(request)
    out = []
    for b in (await model.cluster(k))["brokers"]:
        bid = b["broker_id"]
        out += [shapes.broker_config(L, bid, c) for c in await model.broker_configs(k, bid)]
    return _ok(shapes.resource_list("KafkaBrokerConfigList", L.url("brokers", "-", "configs"), out))


@responds({204: None})
async def update_broker_config(request):
    _links(request)
    bid = await _broker_id(request)
    body = _obj(await read_json(request), "a config update")
    await model.alter_broker_configs(_kafka(request), bid, [(request.match_info["name"], "SET",
                                                             _config_value(body.get("value")))])
    return web.Response(status=204)


@responds({204: None})
async def reset_broker_config(request):
    _links(request)
    bid = await _broker_id(request)
    await model.alter_broker_configs(_kafka(request), bid, [(request.match_info["name"], "DELETE", None)])
    return web.Response(status=204)


@responds({204: None})
async def alter_broker_configs(request):
    _links(request)
    bid = await _broker_id(request)
    body = _obj(await read_json(request), "a batch config update")
    await model.alter_broker_configs(_kafka(request), bid, _config_ops(body),
                                     _field(body, "validate_only", bool, default=False))
    return web.Response(status=204)


@responds({200: "ClusterConfigDataList"})
async def list_cluster_configs(request):
    """``broker-configs``: the cluster-wide dynamic broker configs (DescribeConfigs of the
    BROKER resource ``""``: only what is set at that level)."""
    L = _links(request)
    cs = await model.broker_configs(_kafka(request), "")
    return _ok(shapes.resource_list("KafkaClusterConfigList", L.url("broker-configs"),
                                    [shapes.cluster_config(L, c) for c in cs]))


@responds({200: "ClusterConfigData"})
async def get_cluster_config(request):
    L = _links(request)
    name = request.match_info["name"]
    cs = await model.broker_configs(_kafka(request), "", [name])
    if not cs:
        raise HttpError(404, 404, f"Config {name} could not be found.")
    return _ok(shapes.cluster_config(L, cs[0]))


@responds({204: None})
async def update_cluster_config(request):
    _links(request)
    body = _obj(await read_json(request), "a config update")
    await model.alter_broker_configs(_kafka(request), "", [(request.match_info["name"], "SET",
                                                            _config_value(body.get("value")))])
    return web.Response(status=204)


@responds({204: None})
async def reset_cluster_config(request):
    _links(request)
    await model.alter_broker_configs(_kafka(request), "", [(request.match_info["name"], "DELETE", None)])
    return web.Response(status=204)


@responds({204: None})
async def alter_cluster_configs(request):
    _links(request)
    body = _obj(await read_json(request), "a batch config update")
    await model.alter_broker_configs(_kafka(request), "", _config_ops(body),
                                     _field(body, "validate_only", bool, default=False))
    return web.Response(status=204)


@responds({200: "ReplicaDataList"})
async def list_broker_replicas(request):
    """Every partition replica on a broker (here: every partition the caller may describe)."""
    L = _links(request)
    bid = _path_int(request, "broker_id")
    k = _kafka(request)
    out = []
    for t in await model.list_topics(k):
        for p in t["partitions"]:
            if bid in p["replicas"]:
                out.append(shapes.replica(L, t["topic_name"], p["partition_id"], bid, p["leader"], p["isr"]))
    return _ok(shapes.resource_list("KafkaReplicaList", L.url("brokers", bid, "partition-replicas"), out))


async def _partition_row(request) -> dict:
    t = await model.get_topic(_kafka(request), request.match_info["topic_name"])
    pid = _path_int(request, "partition_id")
    for p in t["partitions"]:
        if p["partition_id"] == pid:
            return p
    raise model.KafkaError(model.error_message(3), 3)


@responds({200: "ReplicaDataList"})
async def list_replicas(request):
    L = _links(request)
    t = request.match_info["topic_name"]
    p = await _partition_row(request)
    return _ok(shapes.resource_list("KafkaReplicaList", L.url("topics", t, "partitions", p["partition_id"], "replicas"),
                                    [shapes.replica(L, t, p["partition_id"], b, p["leader"], p["isr"])
                                     for b in p["replicas"]]))


@responds({200: "ReplicaData"})
async def get_replica(request):
    L = _links(request)
    t = request.match_info["topic_name"]
    p = await _partition_row(request)
    bid = _path_int(request, "broker_id")
    if bid not in p["replicas"]:
        raise HttpError(404, 404, f"Replica {bid} could not be found for {t}-{p['partition_id']}.")
    return _ok(shapes.replica(L, t, p["partition_id"], bid, p["leader"], p["isr"]))


@responds({200: "ReassignmentDataList"})
async def list_reassignments(request):
    """Partition reassignments in progress: never any (one node, one replica)."""
    L = _links(request)
    if "topic_name" in request.match_info and request.match_info["topic_name"] != "-":
        await model.get_topic(_kafka(request), request.match_info["topic_name"])
    return _ok(shapes.resource_list("KafkaReassignmentList", L.base + request.path[len("/v3"):], []))


@responds({200: "ReassignmentData"})
async def get_reassignment(request):
    await _partition_row(request)
    raise HttpError(404, 404, "No reassignment is in progress for this partition.")


# ---- topics ---------------------------------------------------------------------------------

@responds({200: "TopicDataList"})
async def list_topics(request):
    L = _links(request)
    ts = await model.list_topics(_kafka(request))
    return _ok(shapes.resource_list("KafkaTopicList", L.url("topics"), [shapes.topic(L, t) for t in ts]))


@responds({200: "TopicData"})
async def get_topic(request):
    L = _links(request)
    return _ok(shapes.topic(L, await model.get_topic(_kafka(request), request.match_info["topic_name"])))


@responds({201: "TopicData", 200: "TopicData"})
async def create_topic(request):
    L = _links(request)
    body = _obj(await read_json(request), "a topic")
    name = _field(body, "topic_name", str, required=True)
    partitions = _field(body, "partitions_count", int, default=-1)
    rf = _field(body, "replication_factor", int, default=-1)
    validate_only = _field(body, "validate_only", bool, default=False)
    configs = {}
    for c in _field(body, "configs", list, default=[]):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            raise HttpError(400, 400, "Each config needs a string name")
        v = c.get("value")
        configs[c["name"]] = None if v is None else str(v)
    t = await model.create_topic(_kafka(request), name, partitions, rf, configs, validate_only)
    return _ok(shapes.topic(L, t), 201 if not validate_only else 200)


@responds({200: "TopicData"})
async def update_partition_count(request):
    """PATCH a topic: ``{"partitions_count": n}`` grows it (CreatePartitions); the topic after."""
    L = _links(request)
    name = request.match_info["topic_name"]
    body = _obj(await read_json(request), "a partition count update")
    count = _field(body, "partitions_count", int, required=True)
    k = _kafka(request)
    await model.create_partitions(k, name, count)
    return _ok(shapes.topic(L, await model.get_topic(k, name)))


@responds({204: None})
async def delete_topic(request):
    _links(request)
    await model.delete_topic(_kafka(request), request.match_info["topic_name"])
    return web.Response(status=204)


@responds({200: "PartitionDataList"})
async def list_partitions(request):
    L = _links(request)
    t = request.match_info["topic_name"]
    ps = await model.partitions(_kafka(request), t)
    return _ok(shapes.resource_list("KafkaPartitionList", L.url("topics", t, "partitions"),
                                    [shapes.partition(L, p) for p in ps]))


@responds({200: "PartitionData"})
async def get_partition(request):
    L = _links(request)
    ps = await model.partitions(_kafka(request), request.match_info["topic_name"], _path_int(request, "partition_id"))
    return _ok(shapes.partition(L, ps[0]))


@responds({200: "PartitionWithOffsetsData"})
async def get_partition_offsets(request):
    """``partitions/{p}/offset``: the earliest and latest offsets (ListOffsets). As Confluent's
    ListPartitionOffsetsAction, ``offset_type`` may only be ``earliest_and_latest`` (its
    default); anything else is 400 "offset_type:X is invalid"."""
    L = _links(request)
    t = request.match_info["topic_name"]
    p = _path_int(request, "partition_id")
    offset_type = request.query.get("offset_type", "earliest_and_latest")
    if offset_type != "earliest_and_latest":
        raise HttpError(400, 400, f"offset_type:{offset_type} is invalid")
    row = (await model.partitions(_kafka(request), t, p))[0]
    return _ok(shapes.partition_offsets(L, t, p, row["earliest_offset"], row["latest_offset"], offset_type))


# ---- topic configs --------------------------------------------------------------------------

@responds({200: "TopicConfigDataList"})
async def list_topic_configs(request):
    L = _links(request)
    t = request.match_info["topic_name"]
    cs = await model.topic_configs(_kafka(request), t)
    return _ok(shapes.resource_list("KafkaTopicConfigList", L.url("topics", t, "configs"),
                                    [shapes.topic_config(L, t, c) for c in cs]))


@responds({200: "TopicConfigData"})
async def get_topic_config(request):
    L = _links(request)
    t, name = request.match_info["topic_name"], request.match_info["name"]
    return _ok(shapes.topic_config(L, t, await model.topic_config(_kafka(request), t, name)))


@responds({204: None})
async def update_topic_config(request):
    _links(request)
    body = _obj(await read_json(request), "a config update")
    await model.alter_topic_configs(_kafka(request), request.match_info["topic_name"],
                                    [(request.match_info["name"], "SET", _config_value(body.get("value")))])
    return web.Response(status=204)


@responds({200: "TopicConfigDataList"})
async def list_all_topic_configs(request):
    """``topics/-/configs``: every config of every topic the caller may describe."""
    L = _links(request)
    rows = await model.all_topic_configs(_kafka(request))
    return _ok(shapes.resource_list("KafkaTopicConfigList", L.url("topics", "-", "configs"),
                                    [shapes.topic_config(L, t, c) for t, c in rows]))


@responds({204: None})
async def reset_topic_config(request):
    _links(request)
    await model.alter_topic_configs(_kafka(request), request.match_info["topic_name"],
                                    [(request.match_info["name"], "DELETE", None)])
    return web.Response(status=204)


def _config_ops(body: dict) -> list[tuple[str, str, str | None]]:
    """The ``data`` of Confluent's AlterConfigBatchRequestData as (name, operation, value)."""
    data = _field(body, "data", list, required=True)
    ops = []
    for c in data:
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            raise HttpError(400, 400, "Each entry of data needs a string name")
        op = c.get("operation") or "SET"
        if not isinstance(op, str):
            raise HttpError(400, 400, "operation must be a string")
        ops.append((c["name"], op.upper(), _config_value(c.get("value"))))
    return ops


def _config_value(value) -> str | None:
    if value is not None and not isinstance(value, (str, int, float, bool)):
        raise HttpError(400, 400, "Field value must be a string")
    if isinstance(value, bool):
        return "true" if value else "false"
    return None if value is None else str(value)


@responds({204: None})
async def alter_topic_configs(request):
    _links(request)
    body = _obj(await read_json(request), "a batch config update")
    ops = _config_ops(body)
    await model.alter_topic_configs(_kafka(request), request.match_info["topic_name"], ops,
                                    _field(body, "validate_only", bool, default=False))
    return web.Response(status=204)


# ---- produce --------------------------------------------------------------------------------

async def _parse_produce(request, topic: str, obj) -> tuple[dict, str | None, str | None]:
    """One produce request -> (record for model.produce_many, key type, value type); raises
    ProduceInputError (or SerdeError for keys/values through the Schema Registry)."""
    if not isinstance(obj, dict):
        raise ProduceInputError(400, 400, "Expected a JSON object for a produce request")
    out = {}
    types = {}
    for field in ("key", "value"):
        spec = obj.get(field)
        if needs_registry(spec):
            if spec.get("data") is None:
                out[field], types[field] = None, spec.get("type")
                continue
            principal, host = request["principal"], request.remote or "127.0.0.1"
            entry, parsed = await serde.resolve(request.app[BROKER], principal, host, topic, field == "key", spec)
            out[field] = serde.encode(entry, parsed, spec["data"])
            types[field] = "JSONSCHEMA" if entry.schema_type == "JSON" else entry.schema_type
        else:
            out[field], types[field] = encode_data(field, spec)
    record = {"key": out["key"], "value": out["value"], "headers": parse_headers(obj.get("headers")),
              "partition": parse_partition(obj.get("partition_id")), "timestamp": parse_timestamp(obj.get("timestamp"))}
    return record, types["key"], types["value"]


def _produce_answer(b, res: dict, record: dict, key_type, value_type) -> dict:
    """Confluent's ProduceResponse: ``key`` and ``value`` are absent, never null, for a record
    without one (its fields are Optional with Jackson's NON_ABSENT)."""
    out = {"error_code": 200, "cluster_id": b.cluster_id, "topic_name": res["topic_name"],
           "partition_id": res["partition_id"], "offset": res["offset"], "timestamp": shapes.iso(res["timestamp"])}
    for field, typ in (("key", key_type), ("value", value_type)):
        if record[field] is not None:
            out[field] = {"type": typ, "size": len(record[field])}
    return out


def _error_line(e: model.ModelError) -> dict:
    try:
        _raise_model(e)
    except HttpError as he:
        return {"error_code": he.error_code, "message": he.message}


@responds({200: "ProduceResponse"}, errors=(413, 415, 422))
async def produce_records(request):
    _links(request)
    b = request.app[BROKER]
    topic = request.match_info["topic_name"]
    try:
        objs = split_stream(await request.read())
        if len(objs) == 1:
            record, kt, vt = await _parse_produce(request, topic, objs[0])
    except (ProduceInputError, serde.SerdeError) as e:
        raise HttpError(e.status, e.error_code, e.message) from None
    if len(objs) == 1:
        res = (await model.produce_many(_kafka(request), topic, [record]))[0]
        if isinstance(res, model.ModelError):
            raise res
        return _ok(_produce_answer(b, res, record, kt, vt))
    # streaming mode: one answer per request, in order; an error answers that record only. The
    # records are appended as one Produce request (a batch per partition), as a producer would.
    lines: list = []
    parsed = []
    for obj in objs:
        try:
            parsed.append((len(lines), *await _parse_produce(request, topic, obj)))
            lines.append(None)
        except (ProduceInputError, serde.SerdeError) as e:
            lines.append({"error_code": e.error_code, "message": e.message})
    results = await model.produce_many(_kafka(request), topic, [p[1] for p in parsed]) if parsed else []
    for (i, record, kt, vt), res in zip(parsed, results):
        lines[i] = _error_line(res) if isinstance(res, model.ModelError) else _produce_answer(b, res, record, kt, vt)
    return web.Response(status=200, content_type=CT, text="\n".join(json.dumps(x) for x in lines))


PRODUCE_BATCH_MAX_ENTRIES = 10  # Confluent's api.v3.produce.batch.maximum.entries default
PRODUCE_BATCH_ERROR = 42208  # Confluent's PRODUCE_BATCH_EXCEPTION_ERROR_CODE


@responds({207: "ProduceBatchResponse"}, errors=(413, 415))
async def produce_records_batch(request):
    """``records:batch``: ``{"entries": [{"id", ...produce request}]}``, at most 10 entries
    with distinct ids (else 400 with Confluent's 42208); 207 with ``successes`` and
    ``failures`` by id. The good entries are appended as one Produce request."""
    _links(request)
    b = request.app[BROKER]
    topic = request.match_info["topic_name"]
    body = await read_json(request)
    if body is None:
        raise HttpError(400, PRODUCE_BATCH_ERROR, "Request body is empty. Data is required.")
    entries = _field(_obj(body, "a produce batch"), "entries", list, required=True)
    ids = []
    for e in entries:
        if not isinstance(e, dict) or not isinstance(e.get("id"), str) or not 1 <= len(e["id"]) <= 80:
            raise HttpError(400, PRODUCE_BATCH_ERROR, "Batch entry identifier is not a valid string.")
        ids.append(e["id"])
    if len(set(ids)) != len(ids):
        raise HttpError(400, PRODUCE_BATCH_ERROR, "Batch entry IDs are not distinct.")
    if not entries:
        raise HttpError(400, PRODUCE_BATCH_ERROR, "Empty batch.")
    if len(entries) > PRODUCE_BATCH_MAX_ENTRIES:
        raise HttpError(400, PRODUCE_BATCH_ERROR, "Too many entries in batch.")
    failures, parsed = [], []
    for e in entries:
        try:
            parsed.append((e["id"], *await _parse_produce(request, topic, {k: v for k, v in e.items() if k != "id"})))
        except (ProduceInputError, serde.SerdeError) as err:
            failures.append({"id": e["id"], "error_code": err.error_code, "message": err.message})
    results = await model.produce_many(_kafka(request), topic, [p[1] for p in parsed]) if parsed else []
    successes = []
    for (eid, record, kt, vt), res in zip(parsed, results):
        if isinstance(res, model.ModelError):
            failures.append({"id": eid, **_error_line(res)})
        else:
            ok = _produce_answer(b, res, record, kt, vt)
            ok.pop("error_code")
            successes.append({"id": eid, **ok})
    return _ok({"successes": successes, "failures": failures}, 207)


# ---- consumer groups ------------------------------------------------------------------------

def _collection(request) -> str:
    return "share-groups" if request.path.split("/")[4:5] == ["share-groups"] else "consumer-groups"


async def _listed_group(request, gid: str) -> dict:
    """The group (of this collection's types), NotFound otherwise."""
    g = await model.describe_group(_kafka(request), gid)
    share = _collection(request) == "share-groups"
    # Streams groups are not consumer groups (Kafka's Admin.listConsumerGroups leaves them out):
    # they answer under Hourglass's streams-groups path
    if (g["type"] == "share") != share or g["type"] == "streams":
        raise model.NotFound(f"Consumer group {gid} could not be found.")
    return g


@responds({200: "ConsumerGroupDataList"})
async def list_groups(request):
    L = _links(request)
    coll = _collection(request)
    k = _kafka(request)
    out = []
    for g in await model.list_groups(k):
        if (g["type"] == "share") != (coll == "share-groups") or g["type"] == "streams":
            continue
        try:
            out.append(shapes.consumer_group(L, await model.describe_group(k, g["group_id"]), coll))
        except model.ModelError:  # gone or undescribable since it was listed
            continue
    kind = "KafkaShareGroupList" if coll == "share-groups" else "KafkaConsumerGroupList"
    return _ok(shapes.resource_list(kind, L.url(coll), out))


@responds({200: "ConsumerGroupData"})
async def get_group(request):
    L = _links(request)
    return _ok(shapes.consumer_group(L, await _listed_group(request, request.match_info["group_id"]),
                                     _collection(request)))


@responds({200: "ConsumerDataList"})
async def list_consumers(request):
    L = _links(request)
    gid = request.match_info["group_id"]
    coll = _collection(request)
    g = await _listed_group(request, gid)
    return _ok(shapes.resource_list("KafkaConsumerList", L.url(coll, gid, "consumers"),
                                    [shapes.consumer(L, gid, m, coll) for m in g["members"]]))


def _member(g: dict, cid: str) -> dict:
    for m in g["members"]:
        if m["consumer_id"] == cid:
            return m
    raise HttpError(404, 404, f"Consumer {cid} could not be found in consumer group {g['group_id']}.")


@responds({200: "ConsumerData"})
async def get_consumer(request):
    L = _links(request)
    gid = request.match_info["group_id"]
    g = await _listed_group(request, gid)
    return _ok(shapes.consumer(L, gid, _member(g, request.match_info["consumer_id"]), _collection(request)))


@responds({200: "ConsumerAssignmentDataList"})
async def list_assignments(request):
    L = _links(request)
    gid, cid = request.match_info["group_id"], request.match_info["consumer_id"]
    coll = _collection(request)
    m = _member(await _listed_group(request, gid), cid)
    return _ok(shapes.resource_list("KafkaConsumerAssignmentList", L.url(coll, gid, "consumers", cid, "assignments"),
                                    [shapes.consumer_assignment(L, gid, cid, a, coll) for a in m["assignments"]]))


@responds({200: "ConsumerAssignmentData"})
async def get_assignment(request):
    L = _links(request)
    gid, cid, t = request.match_info["group_id"], request.match_info["consumer_id"], request.match_info["topic_name"]
    p = _path_int(request, "partition_id")
    m = _member(await _listed_group(request, gid), cid)
    for a in m["assignments"]:
        if a["topic_name"] == t and a["partition_id"] == p:
            return _ok(shapes.consumer_assignment(L, gid, cid, a, _collection(request)))
    raise HttpError(404, 404, f"Assignment {t}-{p} could not be found for consumer {cid}.")


@responds({200: "ConsumerLagDataList"})
async def list_lags(request):
    L = _links(request)
    gid = request.match_info["group_id"]
    coll = _collection(request)
    g = await _listed_group(request, gid)
    lags = await model.group_lags(_kafka(request), gid, g)
    return _ok(shapes.resource_list("KafkaConsumerLagList", L.url(coll, gid, "lags"),
                                    [shapes.consumer_lag(L, gid, r, coll) for r in lags]))


@responds({200: "ConsumerLagData"})
async def get_lag(request):
    L = _links(request)
    gid, t = request.match_info["group_id"], request.match_info["topic_name"]
    p = _path_int(request, "partition_id")
    g = await _listed_group(request, gid)
    for r in await model.group_lags(_kafka(request), gid, g):
        if r["topic_name"] == t and r["partition_id"] == p:
            return _ok(shapes.consumer_lag(L, gid, r, _collection(request)))
    raise HttpError(404, 404, f"Consumer lag for {t}-{p} could not be found in consumer group {gid}.")


@responds({200: "ConsumerGroupLagSummaryData"})
async def lag_summary(request):
    L = _links(request)
    gid = request.match_info["group_id"]
    g = await _listed_group(request, gid)
    return _ok(shapes.lag_summary(L, gid, await model.group_lags(_kafka(request), gid, g), _collection(request)))


# ---- Streams groups (Hourglass: Confluent's REST v3 has none) ----------------------------------

async def _streams_group(k: model.Kafka, gid: str) -> dict:
    g = await model.describe_streams_group(k, gid)
    if g is None:
        raise model.NotFound(f"Streams group {gid} could not be found.", model.ErrorCode.GROUP_ID_NOT_FOUND)
    return g


@responds({200: "HourglassStreamsGroupList"})
async def list_streams_groups(request):
    L = _links(request)
    k = _kafka(request)
    out = []
    for listed in await model.list_groups(k):
        if listed["type"] != "streams":
            continue
        try:
            g = await _streams_group(k, listed["group_id"])
            out.append(shapes.streams_group(L, g, await model.group_lags(k, g["group_id"], g)))
        except model.ModelError:  # gone or undescribable since it was listed
            continue
    return _ok(shapes.resource_list("HourglassStreamsGroupList", L.url(*shapes.STREAMS_GROUPS), out))


@responds({200: "HourglassStreamsGroup"})
async def get_streams_group(request):
    L = _links(request)
    k = _kafka(request)
    g = await _streams_group(k, request.match_info["group_id"])
    return _ok(shapes.streams_group(L, g, await model.group_lags(k, g["group_id"], g)))


# ---- acls -----------------------------------------------------------------------------------

@responds({200: "AclDataList"})
async def list_acls(request):
    L = _links(request)
    q = request.query
    found = await model.acls(_kafka(request), resource_type=q.get("resource_type", "ANY"),
                             resource_name=q.get("resource_name") or None, pattern_type=q.get("pattern_type", "ANY"),
                             principal=q.get("principal") or None, host=q.get("host") or None,
                             operation=q.get("operation", "ANY"), permission=q.get("permission", "ANY"))
    self_url = L.url("acls") + (f"?{request.query_string}" if request.query_string else "")
    return _ok(shapes.resource_list("KafkaAclList", self_url, [shapes.acl(L, a) for a in found]))


def _acl_binding(body) -> dict:
    """One CreateAclRequestData: every field a string, as the spec requires, and no filter
    value where a binding needs a concrete one (Confluent's validateAclCreateParameters, with
    its messages, checked before Kafka is asked)."""
    body = _obj(body, "an ACL")
    a = {f: _field(body, f, str, required=True) for f in
         ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission")}
    if a["resource_type"].upper() in ("ANY", "UNKNOWN"):
        raise HttpError(400, 400, "resource_type cannot be ANY")
    if a["pattern_type"].upper() in ("ANY", "MATCH", "UNKNOWN"):
        raise HttpError(400, 400, f"pattern_type cannot be {a['pattern_type'].upper()}")
    if a["operation"].upper() in ("ANY", "UNKNOWN"):
        raise HttpError(400, 400, "operation cannot be ANY")
    if a["permission"].upper() in ("ANY", "UNKNOWN"):
        raise HttpError(400, 400, "permission cannot be ANY")
    return a


@responds({201: None})
async def create_acl(request):
    L = _links(request)
    a = _acl_binding(await read_json(request))
    await model.create_acls(_kafka(request), [a])
    from urllib.parse import urlencode
    return web.Response(status=201, headers={"Location": f"{L.url('acls')}?{urlencode(a)}"})


@responds({201: None})
async def create_acls_batch(request):
    _links(request)
    body = _obj(await read_json(request), "a batch of ACLs")
    acls = [_acl_binding(a) for a in _field(body, "data", list, required=True)]
    await model.create_acls(_kafka(request), acls)
    return web.Response(status=201)


_ACL_ORDER = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission")


@responds({200: "DeleteAclsData"})
async def delete_acls(request):
    """DELETE /acls?...: resource_type, pattern_type, operation and permission are required
    (Confluent's "... cannot be unspecified or UNKNOWN", 400); the deleted ACLs, sorted."""
    L = _links(request)
    q = request.query
    for f in ("resource_type", "pattern_type", "operation", "permission"):
        if not q.get(f) or q[f].upper() == "UNKNOWN":
            raise HttpError(400, 400, f"{f} cannot be unspecified or UNKNOWN")
    deleted = await model.delete_acls(
        _kafka(request), resource_type=q["resource_type"], resource_name=q.get("resource_name") or None,
        pattern_type=q["pattern_type"], principal=q.get("principal") or None, host=q.get("host") or None,
        operation=q["operation"], permission=q["permission"])
    deleted.sort(key=lambda a: tuple(a[f] for f in _ACL_ORDER))
    return _ok({"data": [shapes.acl(L, a) for a in deleted]})


# ---- Hourglass extensions -------------------------------------------------------------------

def _visible_topic(k: model.Kafka):
    cache: dict[str, bool] = {}

    def visible(t: str) -> bool:
        if t not in cache:
            cache[t] = k.allowed(3, model.V_METADATA, "topic", t)
        return cache[t]
    return visible


@responds({200: "HourglassRecordPage"})
async def read_records(request):
    """GET .../topics/{t}/partitions/{p}/records?from=|offset=|position= (Hourglass)."""
    L = _links(request)
    t = request.match_info["topic_name"]
    p = _path_int(request, "partition_id")
    q = request.query
    starts = [n for n in ("from", "offset", "position") if q.get(n)]
    if len(starts) > 1:
        raise HttpError(400, 400, "Give only one of from, offset and position")
    isolation = q.get("isolation", "read_uncommitted").lower()
    if isolation not in ("read_uncommitted", "read_committed"):
        raise HttpError(400, 400, "isolation must be read_uncommitted or read_committed")
    page = await model.read_records(
        _kafka(request), t, p,
        timestamp=parse_time(q["from"]) if q.get("from") else None,
        offset=_int(request, "offset", lo=0, hi=2 ** 63 - 1),
        position=q.get("position") or (None if starts else "beginning"),
        max_records=_int(request, "max_records", 100, lo=1, hi=model.MAX_PAGE_RECORDS),
        max_bytes=_int(request, "max_bytes", 1024 * 1024, lo=1, hi=model.MAX_PAGE_BYTES),
        contains=q.get("contains") or None, wait_ms=_int(request, "wait_ms", 0, lo=0, hi=30000),
        isolation=model.READ_COMMITTED if isolation == "read_committed" else model.READ_UNCOMMITTED)
    base = L.url("topics", t, "partitions", p, "records")
    keep = "".join(f"&{n}={q[n]}" for n in ("max_records", "max_bytes", "contains", "isolation") if q.get(n))
    nxt = f"{base}?offset={page['next_offset']}{keep}"
    self_url = base + (f"?{request.query_string}" if request.query_string else "")
    data = page.pop("records")
    for r in data:
        r["timestamp_iso"] = shapes.iso(r["timestamp"])
    return _ok({"kind": "HourglassRecordPage", "metadata": {"self": self_url, "next": nxt},
                "cluster_id": L.cid, **page, "data": data})


@responds({200: "HourglassSegmentTimeline"})
async def get_segments(request):
    L = _links(request)
    t = request.match_info["topic_name"]
    p = _path_int(request, "partition_id")
    s = await model.segments(_kafka(request), t, p)
    return _ok({"kind": "HourglassSegmentTimeline",
                "metadata": shapes.meta(L.url("topics", t, "partitions", p, "segments"),
                                        f"{L.crn}/topic={t}/partition={p}/segments"),
                "cluster_id": L.cid, **s})


@responds({200: "HourglassTopicSummaryList"})
async def topic_summaries(request):
    L = _links(request)
    data = await model.topic_summaries(_kafka(request))
    return _ok(shapes.resource_list("HourglassTopicSummaryList", L.url("topic-summaries"),
                                    [dict(shapes.topic(L, t), kind="HourglassTopicSummary",
                                          size_bytes=t["size_bytes"], offsets=t["offsets"],
                                          oldest_timestamp=t["oldest_timestamp"], newest_timestamp=t["newest_timestamp"],
                                          cleanup_policy=t["cleanup_policy"], retention_ms=t["retention_ms"],
                                          retention_bytes=t["retention_bytes"]) for t in data]))


@responds({200: "HourglassConsumerLagHistory"})
async def lag_history(request):
    L = _links(request)
    gid = request.match_info["group_id"]
    k = _kafka(request)
    await _listed_group(request, gid)  # exists and the caller may describe it
    if not k.allowed(9, model.V_OFFSET_FETCH, "group", gid):
        raise HttpError(403, errors.KAFKA_AUTHORIZATION, model.error_message(30))
    seconds = _int(request, "seconds", 3600, lo=1, hi=3600)
    hist = request.app[LAG_HISTORY]
    return _ok({"kind": "HourglassConsumerLagHistory",
                "metadata": shapes.meta(L.url(_collection(request), gid, "lag-history"),
                                        f"{L.crn}/consumer-group={gid}/lag-history"),
                "cluster_id": L.cid, "consumer_group_id": gid, "interval_seconds": hist.interval,
                "data": hist.history(gid, _visible_topic(k), seconds)})


@responds({200: "HourglassConsumerGroupOffsetsReset"})
async def reset_group_offsets(request):
    """POST .../consumer-groups/{g}/offsets:reset {"timestamp"|"position", "topics", "dry_run"}"""
    L = _links(request)
    gid = request.match_info["group_id"]
    body = _obj(await read_json(request), "an offsets reset")
    ts = body.get("timestamp")
    if ts is not None:
        if isinstance(ts, bool) or not isinstance(ts, (int, str)):
            raise HttpError(400, 400, "timestamp must be epoch milliseconds or an ISO 8601 string")
        ts = ts if isinstance(ts, int) else parse_time(ts)
    position = _field(body, "position", str)
    topics = _field(body, "topics", list)
    if topics is not None and not all(isinstance(t, str) for t in topics):
        raise HttpError(400, 400, "topics must be a list of topic names")
    dry_run = _field(body, "dry_run", bool, default=True)
    rows = await model.reset_offsets(_kafka(request), gid, timestamp=ts, position=position, topics=topics,
                                     execute=not dry_run)
    return _ok({"kind": "HourglassConsumerGroupOffsetsReset",
                "metadata": shapes.meta(L.url("consumer-groups", gid, "offsets:reset"), None),
                "cluster_id": L.cid, "consumer_group_id": gid, "dry_run": dry_run, "data": rows})


@responds({200: "HourglassRates"})
async def rates(request):
    L = _links(request)
    seconds = _int(request, "seconds", 600, lo=1, hi=3600)
    hist = request.app[RATE_HISTORY]
    return _ok({"kind": "HourglassRates", "metadata": shapes.meta(L.url("rates"), None), "cluster_id": L.cid,
                "interval_seconds": hist.interval, "data": hist.rates(_visible_topic(_kafka(request)), seconds)})


@responds({200: "HourglassTransactionList"})
async def list_transactions(request):
    L = _links(request)
    txns = await model.transactions(_kafka(request))
    for t in txns:
        t["start_time"] = shapes.iso(t["start_time_ms"])
    return _ok(shapes.resource_list("HourglassTransactionList", L.url("transactions"),
                                    [dict(t, kind="HourglassTransaction") for t in txns]))


@responds({200: "HourglassScramUserList"})
async def list_users(request):
    L = _links(request)
    users = await model.scram_users(_kafka(request))
    return _ok(shapes.resource_list("HourglassScramUserList", L.url("scram-users"),
                                    [dict(u, kind="HourglassScramUser") for u in users]))


def routes() -> list:
    """(method, path, handler) under /v3."""
    c = "/clusters/{cluster_id}"
    t = c + "/topics/{topic_name}"
    tp = t + "/partitions/{partition_id}"
    out = [
        # "-" (every broker, every topic) before the routes whose {broker_id}/{topic_name} it would match
        ("GET", c + "/brokers/-/configs", list_all_broker_configs),
        ("GET", c + "/topics/-/configs", list_all_topic_configs),
        ("GET", "/clusters", list_clusters), ("GET", c, get_cluster),
        ("GET", c + "/brokers", list_brokers), ("GET", c + "/brokers/{broker_id}", get_broker),
        ("GET", c + "/brokers/{broker_id}/configs", list_broker_configs),
        ("GET", c + "/brokers/{broker_id}/configs/{name}", get_broker_config),
        ("GET", c + "/brokers/{broker_id}/partition-replicas", list_broker_replicas),
        ("POST", c + "/brokers/{broker_id}/configs:alter", alter_broker_configs),
        ("PUT", c + "/brokers/{broker_id}/configs/{name}", update_broker_config),
        ("DELETE", c + "/brokers/{broker_id}/configs/{name}", reset_broker_config),
        ("GET", c + "/broker-configs", list_cluster_configs),
        ("POST", c + "/broker-configs:alter", alter_cluster_configs),
        ("GET", c + "/broker-configs/{name}", get_cluster_config),
        ("PUT", c + "/broker-configs/{name}", update_cluster_config),
        ("DELETE", c + "/broker-configs/{name}", reset_cluster_config),
        ("GET", c + "/topics/-/partitions/-/reassignment", list_reassignments),
        ("GET", t + "/partitions/-/reassignment", list_reassignments),
        ("GET", tp + "/reassignment", get_reassignment),
        ("GET", tp + "/replicas", list_replicas), ("GET", tp + "/replicas/{broker_id}", get_replica),
        ("GET", c + "/topics", list_topics), ("POST", c + "/topics", create_topic),
        ("GET", t, get_topic), ("PATCH", t, update_partition_count), ("DELETE", t, delete_topic),
        ("GET", tp + "/offset", get_partition_offsets),
        ("GET", t + "/partitions", list_partitions), ("GET", tp, get_partition),
        ("GET", t + "/configs", list_topic_configs), ("POST", t + "/configs:alter", alter_topic_configs),
        ("GET", t + "/configs/{name}", get_topic_config), ("PUT", t + "/configs/{name}", update_topic_config),
        ("DELETE", t + "/configs/{name}", reset_topic_config),
        ("POST", t + "/records", produce_records), ("POST", t + "/records:batch", produce_records_batch),
        ("GET", c + "/acls", list_acls), ("POST", c + "/acls", create_acl), ("DELETE", c + "/acls", delete_acls),
        ("POST", c + "/acls:batch", create_acls_batch),
        # Hourglass
        ("GET", tp + "/records", read_records), ("GET", tp + "/segments", get_segments),
        ("GET", c + "/topic-summaries", topic_summaries), ("GET", c + "/rates", rates),
        ("GET", c + "/transactions", list_transactions), ("GET", c + "/scram-users", list_users),
        ("POST", c + "/consumer-groups/{group_id}/offsets:reset", reset_group_offsets),
        ("GET", c + "/hourglass/streams-groups", list_streams_groups),
        ("GET", c + "/hourglass/streams-groups/{group_id}", get_streams_group),
    ]
    for coll in ("consumer-groups", "share-groups"):
        g = c + f"/{coll}/{{group_id}}"
        out += [
            ("GET", c + f"/{coll}", list_groups), ("GET", g, get_group),
            ("GET", g + "/consumers", list_consumers), ("GET", g + "/consumers/{consumer_id}", get_consumer),
            ("GET", g + "/consumers/{consumer_id}/assignments", list_assignments),
            ("GET", g + "/consumers/{consumer_id}/assignments/{topic_name}/partitions/{partition_id}", get_assignment),
            ("GET", g + "/lags", list_lags), ("GET", g + "/lags/{topic_name}/partitions/{partition_id}", get_lag),
            ("GET", g + "/lag-summary", lag_summary), ("GET", g + "/lag-history", lag_history),
        ]
    return out


def create_v3_app(broker, users, *, rate_history, lag_history) -> web.Application:
    """The ``/v3`` sub-application: Confluent's error JSON, basic auth against the broker's users."""
    app = web.Application(client_max_size=MAX_BODY,
                          middlewares=[*middlewares(users, content_type=CT, internal_error_code=500,
                                                    realm="hourglass"), model_errors])
    app[BROKER], app[RATE_HISTORY], app[LAG_HISTORY] = broker, rate_history, lag_history
    # each path also with a trailing slash, as Confluent's REST Proxy (Jersey) answers it
    add_routes_slash_tolerant(app, [web.route(method, path, handler) for method, path, handler in routes()])
    return app
