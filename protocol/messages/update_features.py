"""UpdateFeatures (key 57), versions 0-2, flexible from 0.

An operator (``kafka-features upgrade/downgrade``, ``Admin.updateFeatures``) sets finalized
feature levels. v0 carries ``allow_downgrade``; v1 replaces it with ``upgrade_type`` (1 upgrade,
2 safe downgrade, 3 unsafe downgrade) and adds ``validate_only``. The answer is one top-level
error for the whole request; v0-1 also list each feature with that error, v2 (KIP-1073's
successor, Kafka 4.0) drops the per-feature results.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(57, "UpdateFeatures", valid="0-2", flexible="0+", request=[
    F("timeout_ms", "int32", "0+", default=60000),
    F("feature_updates", "[]FeatureUpdateKey", "0+", fields=[
        F("feature", "string", "0+", map_key=True),
        F("max_version_level", "int16", "0+"),
        F("allow_downgrade", "bool", "0"),
        F("upgrade_type", "int8", "1+", default=1),
    ]),
    F("validate_only", "bool", "1+"),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
    F("results", "[]UpdatableFeatureResult", "0-1", ignorable=True, fields=[
        F("feature", "string", "0+", map_key=True),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
    ]),
])

UpdateFeaturesRequest, UpdateFeaturesResponse = compile_api(API)
