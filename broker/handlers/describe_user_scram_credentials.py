"""DescribeUserScramCredentials (50) v0: mechanisms and iterations per user, never salts or keys.

Needs DESCRIBE on the cluster (top-level CLUSTER_AUTHORIZATION_FAILED). Users null or empty:
every user with a credential (sorted); a user without any: RESOURCE_NOT_FOUND; a user named
twice: DUPLICATE_RESOURCE (Kafka's ``ScramImage.describe`` messages).
"""
from broker.registry import handles
from protocol.errors import ErrorCode as E
from protocol.messages.describe_user_scram_credentials import DescribeUserScramCredentialsResponse as R


@handles(50)
async def handle(ctx, req):
    if not ctx.authz.allowed("cluster"):
        return R(error_code=E.CLUSTER_AUTHORIZATION_FAILED, error_message="Cluster authorization failed.")
    store = ctx.broker.security.scram
    if not req.users:
        asked = {u: False for u in sorted(store.users)}
    else:
        asked = {}
        for u in req.users:
            asked[u.name] = u.name in asked  # True: named twice
    results = []
    for user, twice in asked.items():
        if twice:
            results.append(R.DescribeUserScramCredentialsResult(
                user=user, error_code=E.DUPLICATE_RESOURCE,
                error_message=f"Cannot describe SCRAM credentials for the same user twice in a single request: {user}"))
            continue
        creds = store.users.get(user)
        if not creds:
            results.append(R.DescribeUserScramCredentialsResult(
                user=user, error_code=E.RESOURCE_NOT_FOUND,
                error_message=f"Attempt to describe a user credential that does not exist: {user}"))
            continue
        results.append(R.DescribeUserScramCredentialsResult(user=user, error_code=0, credential_infos=[
            R.CredentialInfo(mechanism=m, iterations=c.iterations) for m, c in sorted(creds.items())]))
    return R(error_code=0, results=results)
