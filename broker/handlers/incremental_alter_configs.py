"""IncrementalAlterConfigs (44) v0-1: change some of a topic's config overrides, as Kafka's
ConfigurationControlManager.incrementalAlterConfigResource.

Operations: SET (0) sets the override; DELETE (1) removes it (back to the broker default);
APPEND (2) / SUBTRACT (3), only for list-typed keys (``cleanup.policy``,
``*.replication.throttled.replicas``), add/remove comma-separated items to/from the current
override, or the key's built-in default when there is no override (Kafka's ``getParts``).
An APPEND or SUBTRACT on any other key: INVALID_CONFIG "Can't APPEND to key K because its
type is not LIST."; an unknown operation: INVALID_REQUEST; a null value for anything but
DELETE or the same key twice: INVALID_REQUEST. The resulting override set is validated as a
whole (INVALID_CONFIG naming the key), persisted and applied live, or left untouched with
``validate_only``. Resource-level rules are those of AlterConfigs; BROKER resources change the
dynamic broker configs of this node or of the cluster default (``broker.dynamic_config``).
"""
from __future__ import annotations

from broker.handlers.alter_configs import alter_broker_configs, answer_resources, apply_topic_configs
from broker.handlers.describe_configs import ResourceError
from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode
from protocol.messages.incremental_alter_configs import IncrementalAlterConfigsResponse as R
from storage.log_config import TOPIC_CONFIGS, value_to_string

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


def _broker_list_key(key: str):
    from storage.log_config import BROKER_LOG_DEFAULTS
    return BROKER_LOG_DEFAULTS.get(key)


def _parts(value: str | None, key: str) -> list[str]:
    if value is None:
        d = TOPIC_CONFIGS.get(key) or _broker_list_key(key)
        value = value_to_string(d.type, d.default) or ""
    return [p.strip() for p in value.split(",") if p.strip()]


def apply_ops(current: dict[str, str], ops, broker: bool = False, list_keys: bool = True) -> dict[str, str]:
    """New override set from ``current`` and [(key, op, value)]; pure. Raises ResourceError.
    ``broker``: keys are broker keys (list-typed ones by the broker key's type);
    ``list_keys=False``: no key takes APPEND/SUBTRACT (client metrics subscriptions, as Kafka 4.4)."""
    keys = [k for k, _op, _v in ops]
    if len(set(keys)) != len(keys):
        raise ResourceError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [k for k, op, v in ops if op != DELETE and v is None]
    if nulls:
        raise ResourceError(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ",".join(nulls))
    new = dict(current)
    for key, op, value in ops:
        if op not in OP_NAMES:
            raise ResourceError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op}")
        if op == SET:
            new[key] = value
        elif op == DELETE:
            new.pop(key, None)
        else:
            d = TOPIC_CONFIGS.get(key) if not broker else _broker_list_key(key)
            if not list_keys or d is None or d.type != "list":
                raise ResourceError(ErrorCode.INVALID_CONFIG,
                                    f"Can't {OP_NAMES[op]} to key {key} because its type is not LIST.")
            items = _parts(new.get(key), key)
            for item in value.split(","):
                item = item.strip()
                if op == APPEND and item and item not in items:
                    items.append(item)
                elif op == SUBTRACT and item in items:
                    items.remove(item)
            new[key] = ",".join(items)
    return new


@handles(44)
async def handle(ctx, req):
    b = ctx.broker

    def alter_topic(res):
        t = b.topics.get(res.resource_name)
        if t is None:
            raise ResourceError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                f"The topic '{res.resource_name}' does not exist.")
        new = apply_ops(t.configs, [(c.name, c.config_operation, c.value) for c in res.configs])
        apply_topic_configs(b, res.resource_name, new, req.validate_only)

    def alter_group(res):
        """Kafka 4.x: group configs change only through IncrementalAlterConfigs (SET/DELETE)."""
        from broker.groups.group_configs import GroupConfigError
        if not res.resource_name:  # Kafka 4.4's ConfigurationControlManager
            raise ResourceError(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
        current = b.group_configs.overrides.get(res.resource_name, {})
        bad = [c.name for c in res.configs if c.config_operation in (APPEND, SUBTRACT)]
        if bad:
            raise ResourceError(ErrorCode.INVALID_CONFIG, f"Can't {OP_NAMES[APPEND]} to key {bad[0]} because its "
                                                          f"type is not LIST.")
        new = apply_ops(current, [(c.name, c.config_operation, c.value) for c in res.configs])
        try:
            b.group_configs.set(res.resource_name, new, validate_only=req.validate_only)
        except GroupConfigError as exc:
            raise ResourceError(ErrorCode.INVALID_CONFIG, str(exc)) from None

    def alter_broker(res):
        ops = [(c.name, c.config_operation, c.value) for c in res.configs]
        alter_broker_configs(b, res.resource_type, res.resource_name, lambda cur: apply_ops(cur, ops, broker=True),
                             req.validate_only)

    results = await answer_resources(b, req.resources, alter_topic, alter_broker, alter_group, active(ctx),
                                     incremental=True, validate_only=req.validate_only)
    return R(throttle_time_ms=0, responses=[
        R.AlterConfigsResourceResponse(error_code=code, error_message=msg, resource_type=rtype, resource_name=name)
        for code, msg, rtype, name in results])
