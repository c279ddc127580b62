"""UpdateFeatures (57) v0-2: finalized feature levels upgraded and downgraded
(``kafka-features upgrade/downgrade``), as Kafka 4.4's controller decides them
(``broker.features.decide_update``, durable in ``broker.features.FeatureStore``).

Needs ALTER on the cluster. v0's ``allow_downgrade`` is not read (Kafka's controller takes the
upgrade type, which v0 does not carry: every v0 update is an upgrade). One refused feature
refuses the request: INVALID_UPDATE_VERSION with "The update failed for all features since the
following feature had an error: <reason>" and no per-feature results; a success lists each
feature with error 0 and message "NONE" in v0-1 (Kafka's ``Errors.NONE.message()``), nothing
in v2. ``validate_only`` (v1+) decides without applying. What changes behaviour:
``transaction.version`` (broker.transactions), ``group.version``, ``share.version`` and
``streams.version`` (their heartbeats answer UNSUPPORTED_VERSION at level 0).
"""
from broker.features import Update
from broker.registry import handles
from protocol.errors import ErrorCode
from protocol.messages.update_features import UpdateFeaturesResponse as R

FAILED_PREFIX = "The update failed for all features since the following feature had an error: "


@handles(57)
async def handle(ctx, req):
    v = ctx.api_version
    if not ctx.authz.allowed("cluster"):
        return R(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                 error_message="Cluster authorization failed.", results=[])
    updates = [Update(u.feature, u.max_version_level, u.upgrade_type if v >= 1 else 1) for u in req.feature_updates]
    d = ctx.broker.features.update(updates, v >= 1 and req.validate_only, ctx.broker.node_id)
    if d.error_code:
        return R(throttle_time_ms=0, error_code=d.error_code, error_message=FAILED_PREFIX + d.message, results=[])
    results = [] if v >= 2 else [R.UpdatableFeatureResult(feature=u.feature, error_code=0, error_message="NONE")
                                 for u in req.feature_updates]
    return R(throttle_time_ms=0, error_code=0, error_message=None, results=results)
