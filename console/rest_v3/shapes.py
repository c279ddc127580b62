"""Confluent REST v3 resource shapes, pure: model dicts in, Confluent's JSON out.

Every resource has ``kind``, ``metadata`` (``self``: its absolute URL; ``resource_name``:
its CRN, ``crn:///kafka=<cluster>/topic=<t>/...``) and its fields; links to related
collections are ``{"related": url}``. Lists are ``{"kind": "<Kind>List", "metadata":
{"self", "next": null}, "data": [...]}``. ``base`` is the request's origin plus ``/v3``.
Hourglass's extra fields (partition offsets) are added beside Confluent's, never instead.
"""
from __future__ import annotations

import datetime as _dt
from urllib.parse import quote


class Links:
    """URLs and CRNs of one cluster's resources."""

    def __init__(self, base: str, cluster_id: str, node_id: int = 1):
        self.base = base.rstrip("/")
        self.cid = cluster_id
        self.node_id = node_id  # this broker: every group's coordinator
        self.cluster = f"{self.base}/clusters/{cluster_id}"
        self.crn = f"crn:///kafka={cluster_id}"

    def url(self, *parts) -> str:
        # path segments are percent-encoded: KIP-848 member ids are base64 and may hold "/"
        return "/".join([self.cluster, *(quote(str(p), safe="-._~:") for p in parts)])

    def related(self, *parts) -> dict:
        return {"related": self.url(*parts)}


def resource_list(kind: str, self_url: str, data: list, next_url: str | None = None) -> dict:
    return {"kind": kind, "metadata": {"self": self_url, "next": next_url}, "data": data}


def meta(self_url: str, resource_name: str | None) -> dict:
    return {"self": self_url, "resource_name": resource_name}


def iso(ms: int | None) -> str | None:
    """Epoch milliseconds as ISO 8601 UTC with milliseconds (``2021-02-05T19:14:42.000Z``)."""
    if ms is None or ms < 0:
        return None
    return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def cluster(L: Links, c: dict) -> dict:
    return {"kind": "KafkaCluster", "metadata": meta(L.cluster, L.crn), "cluster_id": L.cid,
            "controller": L.related("brokers", c["controller_id"]), "acls": L.related("acls"),
            "brokers": L.related("brokers"), "broker_configs": L.related("broker-configs"),
            "consumer_groups": L.related("consumer-groups"), "topics": L.related("topics"),
            "partition_reassignments": L.related("topics", "-", "partitions", "-", "reassignment")}


def broker(L: Links, b: dict) -> dict:
    bid = b["broker_id"]
    return {"kind": "KafkaBroker", "metadata": meta(L.url("brokers", bid), f"{L.crn}/broker={bid}"),
            "cluster_id": L.cid, "broker_id": bid, "host": b["host"], "port": b["port"], "rack": b["rack"],
            "configs": L.related("brokers", bid, "configs"),
            "partition_replicas": L.related("brokers", bid, "partition-replicas")}


def topic(L: Links, t: dict) -> dict:
    name = t["topic_name"]
    return {"kind": "KafkaTopic", "metadata": meta(L.url("topics", name), f"{L.crn}/topic={name}"),
            "cluster_id": L.cid, "topic_name": name, "is_internal": t["is_internal"],
            "replication_factor": t["replication_factor"], "partitions_count": t["partitions_count"],
            "partitions": L.related("topics", name, "partitions"), "configs": L.related("topics", name, "configs"),
            "partition_reassignments": L.related("topics", name, "partitions", "-", "reassignment"),
            "authorized_operations": t["authorized_operations"]}


def partition(L: Links, p: dict) -> dict:
    name, pid = p["topic_name"], p["partition_id"]
    base = ("topics", name, "partitions", pid)
    return {"kind": "KafkaPartition", "metadata": meta(L.url(*base), f"{L.crn}/topic={name}/partition={pid}"),
            "cluster_id": L.cid, "topic_name": name, "partition_id": pid,
            "leader": L.related(*base, "replicas", p["leader"]), "replicas": L.related(*base, "replicas"),
            "reassignment": L.related(*base, "reassignment"),
            # Hourglass: the offsets ListOffsets answers (earliest, latest, LSO) and the size on disk
            "earliest_offset": p["earliest_offset"], "latest_offset": p["latest_offset"],
            "last_stable_offset": p["last_stable_offset"], "size_bytes": p["size_bytes"]}


def topic_config(L: Links, topic_name: str, c: dict) -> dict:
    name = c["name"]
    return {"kind": "KafkaTopicConfig",
            "metadata": meta(L.url("topics", topic_name, "configs", name), f"{L.crn}/topic={topic_name}/config={name}"),
            "cluster_id": L.cid, "topic_name": topic_name, "name": name,
            "value": None if c["is_sensitive"] else c["value"], "is_default": c["is_default"],
            "is_read_only": c["is_read_only"], "is_sensitive": c["is_sensitive"], "source": c["source"],
            "synonyms": [{"name": s["name"], "value": None if c["is_sensitive"] else s["value"], "source": s["source"]}
                         for s in c["synonyms"]]}


def _group_type(t: str) -> str:
    return {"classic": "CLASSIC", "consumer": "CONSUMER", "share": "SHARE"}.get(t, "UNKNOWN")


def _group_state(s: str) -> str:
    """Kafka's group state names as Confluent prints them (``ConsumerGroupState``): STABLE, EMPTY..."""
    return {"PreparingRebalance": "PREPARING_REBALANCE", "CompletingRebalance": "COMPLETING_REBALANCE",
            "Stable": "STABLE", "Dead": "DEAD", "Empty": "EMPTY", "Assigning": "ASSIGNING",
            "Reconciling": "RECONCILING"}.get(s, (s or "UNKNOWN").upper())


def consumer_group(L: Links, g: dict, collection: str = "consumer-groups") -> dict:
    gid = g["group_id"]
    kind = "KafkaShareGroup" if collection == "share-groups" else "KafkaConsumerGroup"
    return {"kind": kind, "metadata": meta(L.url(collection, gid), f"{L.crn}/consumer-group={gid}"),
            "cluster_id": L.cid, "consumer_group_id": gid, "is_simple": g["is_simple"],
            "partition_assignor": g["assignor"] or "", "state": _group_state(g["state"]),
            "type": _group_type(g["type"]), "is_mixed_consumer_group": False,
            "coordinator": L.related("brokers", L.node_id), "consumers": L.related(collection, gid, "consumers"),
            "lag_summary": L.related(collection, gid, "lag-summary")}


def consumer(L: Links, gid: str, m: dict, collection: str = "consumer-groups") -> dict:
    cid = m["consumer_id"]
    return {"kind": "KafkaConsumer",
            "metadata": meta(L.url(collection, gid, "consumers", cid), f"{L.crn}/consumer-group={gid}/consumer={cid}"),
            "cluster_id": L.cid, "consumer_group_id": gid, "consumer_id": cid, "instance_id": m["instance_id"],
            "client_id": m["client_id"], "assignments": L.related(collection, gid, "consumers", cid, "assignments")}


def consumer_assignment(L: Links, gid: str, cid: str, a: dict, collection: str = "consumer-groups") -> dict:
    t, p = a["topic_name"], a["partition_id"]
    return {"kind": "KafkaConsumerAssignment",
            "metadata": meta(L.url(collection, gid, "consumers", cid, "assignments", t, "partitions", p),
                             f"{L.crn}/consumer-group={gid}/consumer={cid}/assignment={t}/partition={p}"),
            "cluster_id": L.cid, "consumer_group_id": gid, "consumer_id": cid, "topic_name": t, "partition_id": p,
            "partition": L.related("topics", t, "partitions", p),
            "lag": L.related(collection, gid, "lags", t, "partitions", p)}


def consumer_lag(L: Links, gid: str, r: dict, collection: str = "consumer-groups") -> dict:
    t, p = r["topic_name"], r["partition_id"]
    return {"kind": "KafkaConsumerLag",
            "metadata": meta(L.url(collection, gid, "lags", t, "partitions", p),
                             f"{L.crn}/consumer-group={gid}/lag={t}/partition={p}"),
            "cluster_id": L.cid, "consumer_group_id": gid, "topic_name": t, "partition_id": p,
            "current_offset": r["current_offset"], "log_end_offset": r["log_end_offset"], "lag": r["lag"],
            "consumer_id": r["consumer_id"], "instance_id": r["instance_id"], "client_id": r["client_id"]}


def lag_summary(L: Links, gid: str, lags: list[dict], collection: str = "consumer-groups") -> dict:
    top = max(lags, key=lambda r: r["lag"], default=None)
    out = {"kind": "KafkaConsumerGroupLagSummary",
           "metadata": meta(L.url(collection, gid, "lag-summary"), f"{L.crn}/consumer-group={gid}/lag-summary"),
           "cluster_id": L.cid, "consumer_group_id": gid,
           "max_lag_consumer_id": top["consumer_id"] if top else "", "max_lag_instance_id": top["instance_id"] if top else None,
           "max_lag_client_id": top["client_id"] if top else "", "max_lag_topic_name": top["topic_name"] if top else "",
           "max_lag_partition_id": top["partition_id"] if top else 0, "max_lag": top["lag"] if top else 0,
           "total_lag": sum(r["lag"] for r in lags)}
    # always both relationships, as Confluent's ConsumerGroupLagSummariesResource: its URL
    # factory drops empty segments, so with no member the consumer's link is the collection
    parts = [collection, gid, "consumers", out["max_lag_consumer_id"]]
    out["max_lag_consumer"] = L.related(*(x for x in parts if x != ""))
    parts = ["topics", out["max_lag_topic_name"], "partitions", out["max_lag_partition_id"]]
    out["max_lag_partition"] = L.related(*(x for x in parts if x != ""))
    return out


def acl(L: Links, a: dict) -> dict:
    from urllib.parse import urlencode
    q = urlencode({"resource_type": a["resource_type"], "resource_name": a["resource_name"],
                   "pattern_type": a["pattern_type"], "principal": a["principal"], "host": a["host"],
                   "operation": a["operation"], "permission": a["permission"]})
    return {"kind": "KafkaAcl", "metadata": {"self": f"{L.url('acls')}?{q}"}, "cluster_id": L.cid, **a}


def broker_config(L: Links, broker_id: int, c: dict) -> dict:
    name = c["name"]
    return {"kind": "KafkaBrokerConfig",
            "metadata": meta(L.url("brokers", broker_id, "configs", name), f"{L.crn}/broker={broker_id}/config={name}"),
            "cluster_id": L.cid, "broker_id": broker_id, "name": name, "value": c["value"],
            "is_default": c["is_default"], "is_read_only": c["is_read_only"], "is_sensitive": c["is_sensitive"],
            "source": c["source"], "synonyms": c["synonyms"]}


def cluster_config(L: Links, c: dict) -> dict:
    """A cluster-wide dynamic broker config (``broker-configs/{name}``): KafkaClusterConfig."""
    name = c["name"]
    return {"kind": "KafkaClusterConfig",
            "metadata": meta(L.url("broker-configs", name), f"{L.crn}/broker-config={name}"),
            "cluster_id": L.cid, "config_type": "BROKER", "name": name, "value": c["value"],
            "is_default": c["is_default"], "is_read_only": c["is_read_only"], "is_sensitive": c["is_sensitive"],
            "source": c["source"], "synonyms": c["synonyms"]}


def partition_offsets(L: Links, topic_name: str, partition_id: int, earliest: int, latest: int,
                      offset_type: str) -> dict:
    return {"kind": "KafkaPartitionWithOffsets",
            "metadata": meta(L.url("topics", topic_name, "partitions", partition_id, "offset"),
                             f"{L.crn}/topic={topic_name}/partition={partition_id}/offset_type={offset_type}"),
            "cluster_id": L.cid, "topic_name": topic_name, "partition_id": partition_id,
            "earliest_offset": earliest, "latest_offset": latest}


def replica(L: Links, topic_name: str, partition_id: int, broker_id: int, leader: int, isr: list[int]) -> dict:
    base = ("topics", topic_name, "partitions", partition_id, "replicas", broker_id)
    return {"kind": "KafkaReplica",
            "metadata": meta(L.url(*base), f"{L.crn}/topic={topic_name}/partition={partition_id}/replica={broker_id}"),
            "cluster_id": L.cid, "topic_name": topic_name, "partition_id": partition_id, "broker_id": broker_id,
            "is_leader": broker_id == leader, "is_in_sync": broker_id in isr, "broker": L.related("brokers", broker_id)}


STREAMS_GROUPS = ("hourglass", "streams-groups")  # Hourglass's path: Confluent's REST v3 has no Streams resource


def streams_group(L: Links, g: dict, lags: list[dict]) -> dict:
    """``model.describe_streams_group`` with its lags (``model.group_lags``) as HourglassStreamsGroup."""
    gid = g["group_id"]
    return {"kind": "HourglassStreamsGroup", "metadata": meta(L.url(*STREAMS_GROUPS, gid),
                                                              f"{L.crn}/streams-group={gid}"),
            "cluster_id": L.cid, "group_id": gid, "state": g["state"], "group_epoch": g["group_epoch"],
            "assignment_epoch": g["assignment_epoch"], "topology_epoch": g["topology"]["epoch"],
            "subtopologies": g["topology"]["subtopologies"],
            "members": [{"member_id": m["consumer_id"], "member_epoch": m["member_epoch"],
                         "instance_id": m["instance_id"], "client_id": m["client_id"],
                         "client_host": m["client_host"], "process_id": m["process_id"],
                         "user_endpoint": m["user_endpoint"], "active_tasks": m["active_tasks"],
                         "standby_tasks": m["standby_tasks"], "warmup_tasks": m["warmup_tasks"]}
                        for m in g["members"]],
            "lags": [{"topic_name": r["topic_name"], "partition_id": r["partition_id"],
                      "current_offset": r["current_offset"], "log_end_offset": r["log_end_offset"],
                      "lag": r["lag"], "member_id": r["consumer_id"], "process_id": r["process_id"]} for r in lags],
            "total_lag": sum(r["lag"] for r in lags)}
