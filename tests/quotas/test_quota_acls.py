"""Who may see and change client quotas, as Kafka: DESCRIBE_CONFIGS on the cluster for
DescribeClientQuotas, ALTER_CONFIGS on the cluster for AlterClientQuotas; handlers called
directly and their responses encoded at every version."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

from broker.handlers import alter_client_quotas, describe_client_quotas
from broker.quotas.manager import ClientQuotas
from broker.quotas.store import QuotaStore
from broker.security.acl import AclOperation as Op, AclPermissionType as Perm, PatternType as PT, ResourceType as RT
from broker.security.acl import binding
from broker.security.api_acls import RequestAuthz
from broker.security.authorizer import StandardAuthorizer
from protocol.api_keys import APIS
from protocol.errors import ErrorCode as E
from protocol.messages.alter_client_quotas import AlterClientQuotasRequest as AQ
from protocol.messages.describe_client_quotas import DescribeClientQuotasRequest as DQ


def call(module, key, version, req, authorizer, quotas, principal):
    ctx = SimpleNamespace(broker=SimpleNamespace(quotas=quotas),
                          authz=RequestAuthz(authorizer, principal, "127.0.0.1", key, version))
    resp = asyncio.run(module.handle(ctx, req))
    m = APIS[key].response
    return m.decode(m.encode(resp, version), version)[0]


def test_quota_apis_need_cluster_describe_configs_and_alter_configs(tmp_path):
    az = StandardAuthorizer(super_users={"User:admin"})
    quotas = ClientQuotas(QuotaStore(tmp_path))
    alter = AQ(entries=[AQ.EntryData(entity=[AQ.EntityData(entity_type="user", entity_name="bob")],
                                     ops=[AQ.OpData(key="producer_byte_rate", value=10.0, remove=False)])],
               validate_only=False)
    describe = DQ(components=[], strict=False)
    for v in (0, 1):
        r = call(alter_client_quotas, 49, v, alter, az, quotas, "User:alice")
        assert [(e.error_code, e.error_message) for e in r.entries] == [
            (E.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")]
        d = call(describe_client_quotas, 48, v, describe, az, quotas, "User:alice")
        assert (d.error_code, d.entries) == (E.CLUSTER_AUTHORIZATION_FAILED, None)
    assert quotas.store.quotas == {}
    az.create_acls([binding(RT.CLUSTER, "kafka-cluster", PT.LITERAL, "User:alice", "*", Op.DESCRIBE_CONFIGS,
                            Perm.ALLOW)])
    assert call(describe_client_quotas, 48, 1, describe, az, quotas, "User:alice").error_code == 0
    assert call(alter_client_quotas, 49, 1, alter, az, quotas, "User:alice").entries[0].error_code == \
        E.CLUSTER_AUTHORIZATION_FAILED
    az.create_acls([binding(RT.CLUSTER, "kafka-cluster", PT.LITERAL, "User:alice", "*", Op.ALTER_CONFIGS,
                            Perm.ALLOW)])
    assert call(alter_client_quotas, 49, 1, alter, az, quotas, "User:alice").entries[0].error_code == 0
    assert quotas.store.quotas == {(("user", "bob"),): {"producer_byte_rate": 10.0}}
    assert quotas.active and quotas.produce.enabled and not quotas.fetch.enabled
