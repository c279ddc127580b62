"""AlterConfigs (33) v0-2: replace a topic's whole set of config overrides (the legacy API:
keys not listed go back to their defaults), as Kafka's ControllerApis.handleLegacyAlterConfigs.

- the same resource twice: INVALID_REQUEST "Duplicate resource.";
- an unknown resource type: UNSUPPORTED_VERSION "Unknown resource type N." (Kafka's answer);
- topic: unknown -> UNKNOWN_TOPIC_OR_PARTITION "The topic 'T' does not exist."; a null value,
  an unknown key or a bad value -> INVALID_CONFIG naming the key; nothing is changed then;
- broker resources (this node's id, or ``""`` for the cluster default): the resource's whole
  set of dynamic broker configs is replaced (``alter_broker_configs``; keys Kafka does not
  mark dynamic are refused with its message); broker-logger resources are refused;
- ``validate_only``: every check, nothing changed.

A change is validated, persisted (the topic's metadata file) and applied to the open logs at
once (``TopicManager.set_configs`` -> ``LogManager.update_topic_config``): the next produce
sees a new ``message.timestamp.type``, the next append a shorter ``segment.ms``, the next
retention check a shorter ``retention.ms``.
"""
from __future__ import annotations

import asyncio

from collections import Counter

import logging

from broker.handlers.describe_configs import (
    BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP, RESOURCE_TYPE_NAMES, TOPIC, ResourceError,
    check_broker_resource,
)
from broker.handlers import once_per_key
from broker.registry import handles
from broker.security.api_acls import active
from broker.topics import TopicError
from protocol.errors import ErrorCode
from protocol.messages.alter_configs import AlterConfigsResponse as R

log = logging.getLogger(__name__)


def alter_broker_configs(b, rtype: int, rname: str, new_layer, validate_only: bool) -> None:
    """A BROKER resource (this node's id, or ``""``: the cluster default): ``new_layer(current)``
    gives the layer's new key set; it is validated as Kafka's ConfigAdminManager does
    (INVALID_REQUEST, ``broker.dynamic_config``), then kept durably and applied at once.
    BROKER_LOGGER resources are refused (log levels are set at start)."""
    from broker import dynamic_config as dc
    per_broker = check_broker_resource(b.node_id, rname, allow_default=rtype == BROKER, word="Node")
    if rtype == BROKER_LOGGER:
        raise ResourceError(ErrorCode.INVALID_REQUEST,
                            "Changing broker logger levels at runtime is not supported by Hourglass; "
                            "use --log-level when starting the broker.")
    dyn = b.dynamic_configs
    current = dict(dyn.layer(per_broker))
    new = new_layer(dict(current))
    changed = {k for k in set(current) | set(new) if current.get(k) != new.get(k)}
    try:
        # the keys this request changes (one stored before a rule existed blocks no other change)
        dc.validate({k: new[k] for k in new if k in changed}, per_broker)
        merged = dc.effective(b.cfg.raw, dyn.default if per_broker else new, new if per_broker else dyn.broker)
        dc.validate_effective(dc.effective(b.cfg.raw, dyn.default, dyn.broker), merged, b.cfg.listeners)
        dc.check_listener_keystores(b, merged, {k: new[k] for k in changed if k in new})
    except dc.DynamicConfigError as exc:
        raise ResourceError(ErrorCode.INVALID_REQUEST, str(exc)) from None
    if validate_only or not changed:
        return
    dyn.replace(per_broker, new)
    dc.apply(b, changed)
    log.info("dynamic %s configs changed: %s", f"broker {rname}" if per_broker else "cluster-default",
             ", ".join(f"{k}={'(sensitive)' if dc.is_sensitive(k) else new.get(k, '(deleted)')}"
                       for k in sorted(changed)))


def apply_topic_configs(b, name: str, new_overrides: dict, validate_only: bool) -> None:
    """Validate, persist and apply ``new_overrides`` as the topic's complete override set."""
    if b.topics.get(name) is None:
        raise ResourceError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
    try:
        b.topics.set_configs(name, new_overrides, validate_only=validate_only)
    except TopicError as exc:
        raise ResourceError(exc.code, exc.message) from None
    if not validate_only:
        log.info("configs of topic %s are now %s", name, new_overrides or "{} (all defaults)")


def alter_client_metrics(b, res, incremental: bool, validate_only: bool) -> None:
    """A CLIENT_METRICS resource: the subscription's new key set (the request's keys replace
    it, or SET/DELETE change it), validated as Kafka's ClientMetricsConfigs, kept durably."""
    from broker.client_metrics import ClientMetricsError
    from broker.handlers.incremental_alter_configs import apply_ops
    name = res.resource_name
    if incremental:   # Kafka 4.4 takes no key of a subscription for a LIST (no APPEND/SUBTRACT)
        new = apply_ops(b.client_metrics.get(name), [(c.name, c.config_operation, c.value) for c in res.configs],
                        list_keys=False)
    else:
        new = {c.name: c.value for c in res.configs if c.value is not None}
    try:
        b.client_metrics.set(name, new, validate_only=validate_only)
    except ClientMetricsError as exc:
        raise ResourceError(exc.code, exc.message) from None
    if not validate_only:
        log.info("client metrics subscription %s is now %s", name, new or "(deleted)")


async def answer_resources(b, resources, alter_topic, alter_broker, alter_group=None, az=None,
                           incremental: bool = False, validate_only: bool = False) -> list[tuple]:
    """The per-resource loop AlterConfigs and IncrementalAlterConfigs share, as Kafka answers:
    a resource named twice gets one INVALID_REQUEST (IncrementalAlterConfigs: one per entry,
    "Each resource must appear at most once.", as Kafka 4); with ACLs on, ALTER_CONFIGS on the topic
    (TOPIC_AUTHORIZATION_FAILED), the group (GROUP_AUTHORIZATION_FAILED) or the cluster for
    broker resources (CLUSTER_AUTHORIZATION_FAILED); a topic goes to ``alter_topic(res)``;
    broker and broker-logger resources go to ``alter_broker(res)``; other types are refused. Returns (error, message, type, name).

    Each change is written durably (a topic's record, the dynamic broker configs) on the event
    loop, ~2 ms: between resources the loop serves other connections, so a request naming
    thousands of resources never holds it for longer than one of them."""
    out = []
    if incremental:
        # Kafka 4's IncrementalAlterConfigs answers every entry of a duplicated resource
        counts = Counter((r.resource_type, r.resource_name) for r in resources)
        entries = [(r, counts[(r.resource_type, r.resource_name)] > 1) for r in resources]
    else:
        entries = once_per_key(resources, lambda r: (r.resource_type, r.resource_name))
    for i, (res, duplicated) in enumerate(entries):
        if i:
            await asyncio.sleep(0)
        code, message = 0, None
        try:
            if duplicated:
                raise ResourceError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."
                                    if incremental else "Duplicate resource.")
            if az is not None and res.resource_type == TOPIC and not az.allowed("topic", res.resource_name):
                raise ResourceError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
            if (az is not None and res.resource_type in (BROKER, BROKER_LOGGER, CLIENT_METRICS)
                    and not az.allowed("broker")):
                raise ResourceError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
            if az is not None and res.resource_type == GROUP and not az.allowed("group", res.resource_name):
                raise ResourceError(ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
            if res.resource_type == TOPIC:
                alter_topic(res)
            elif res.resource_type == GROUP and alter_group is not None:
                alter_group(res)
            elif res.resource_type == CLIENT_METRICS:
                alter_client_metrics(b, res, incremental, validate_only)
            elif res.resource_type in (BROKER, BROKER_LOGGER):
                alter_broker(res)
            elif res.resource_type in RESOURCE_TYPE_NAMES and res.resource_type != 0:
                raise ResourceError(ErrorCode.INVALID_REQUEST,
                                    f"Unexpected resource type {RESOURCE_TYPE_NAMES[res.resource_type]}.")
            else:
                raise ResourceError(ErrorCode.UNSUPPORTED_VERSION, f"Unknown resource type {res.resource_type}.")
        except ResourceError as exc:
            code, message = exc.code, exc.message
        out.append((code, message, res.resource_type, res.resource_name))
    return out


@handles(33)
async def handle(ctx, req):
    b = ctx.broker

    def alter_topic(res):
        nulls = [c.name for c in res.configs if c.value is None]
        if nulls:
            raise ResourceError(ErrorCode.INVALID_CONFIG,
                                "Null value not supported for topic configs: " + ",".join(nulls))
        apply_topic_configs(b, res.resource_name, {c.name: c.value for c in res.configs}, req.validate_only)

    def alter_broker(res):
        nulls = [c.name for c in res.configs if c.value is None]
        if nulls:
            raise ResourceError(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ",".join(nulls))
        # the legacy API replaces the resource's whole dynamic set
        alter_broker_configs(b, res.resource_type, res.resource_name, lambda _cur: {c.name: c.value for c in res.configs},
                             req.validate_only)

    results = await answer_resources(b, req.resources, alter_topic, alter_broker, az=active(ctx),
                                     validate_only=req.validate_only)
    return R(throttle_time_ms=0, responses=[
        R.AlterConfigsResourceResponse(error_code=code, error_message=msg, resource_type=rtype, resource_name=name)
        for code, msg, rtype, name in results])
