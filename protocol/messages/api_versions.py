"""ApiVersions (key 18), versions 0-5, flexible from 3.

The client asks which APIs and versions the broker serves. The response *always* uses
response header v0. A request whose version we do not know still gets an answer: error 35
(UNSUPPORTED_VERSION) in a v0 body listing our ApiVersions range, so clients retry lower.
v5 (KIP-1242) adds the ``cluster_id`` and ``node_id`` the client means to reach (null/-1 when
it does not know them); a mismatch is REBOOTSTRAP_REQUIRED (129).
We write no tagged fields (librdkafka < 2.2 misparses a non-empty tag buffer here).
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(18, "ApiVersions", valid="0-5", flexible="3+", request=[
    F("client_software_name", "string", "3+"),
    F("client_software_version", "string", "3+"),
    F("cluster_id", "string", "5+", nullable="5+", default=None, ignorable=True),
    F("node_id", "int32", "5+", default=-1, ignorable=True),
], response=[
    F("error_code", "int16"),
    F("api_keys", "[]ApiVersion", fields=[
        F("api_key", "int16", map_key=True),
        F("min_version", "int16"),
        F("max_version", "int16"),
    ]),
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("supported_features", "[]SupportedFeatureKey", "3+", tag=0, tagged_versions="3+", ignorable=True, fields=[
        F("name", "string", "3+", map_key=True),
        F("min_version", "int16", "3+"),
        F("max_version", "int16", "3+"),
    ]),
    F("finalized_features_epoch", "int64", "3+", tag=1, tagged_versions="3+", default=-1, ignorable=True),
    F("finalized_features", "[]FinalizedFeatureKey", "3+", tag=2, tagged_versions="3+", ignorable=True, fields=[
        F("name", "string", "3+", map_key=True),
        F("max_version_level", "int16", "3+"),
        F("min_version_level", "int16", "3+"),
    ]),
    F("zk_migration_ready", "bool", "3+", tag=3, tagged_versions="3+", ignorable=True),
])

ApiVersionsRequest, ApiVersionsResponse = compile_api(API)
