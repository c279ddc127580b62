"""DescribeCluster (key 60), versions 0-2, flexible from 0.

Admin clients (KIP-700) ask for brokers, controller and cluster id.
- v1 ``endpoint_type`` (KIP-919): 1 = brokers (the only kind we serve), 2 = controllers
  (a broker answers MISMATCHED_ENDPOINT_TYPE); v0 implies 1.
- v2 ``include_fenced_brokers`` (KIP-1073) and each broker's ``is_fenced``: this node is
  never fenced.
- ``cluster_authorized_operations`` is -2147483648 unless asked for.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(60, "DescribeCluster", valid="0-2", flexible="0+", request=[
    F("include_cluster_authorized_operations", "bool", "0+"),
    F("endpoint_type", "int8", "1+", default=1),
    F("include_fenced_brokers", "bool", "2+"),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
    F("endpoint_type", "int8", "1+", default=1),
    F("cluster_id", "string", "0+"),
    F("controller_id", "int32", "0+", default=-1),
    F("brokers", "[]DescribeClusterBroker", "0+", fields=[
        F("broker_id", "int32", "0+", map_key=True),
        F("host", "string", "0+"),
        F("port", "int32", "0+"),
        F("rack", "string", "0+", nullable="0+", default=None),
        F("is_fenced", "bool", "2+"),
    ]),
    F("cluster_authorized_operations", "int32", "0+", default=-2147483648),
])

DescribeClusterRequest, DescribeClusterResponse = compile_api(API)
