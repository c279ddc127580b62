"""AlterUserScramCredentials (51) v0: upsert or delete SCRAM credentials, one result per user.

Needs ALTER on the cluster (every user answers CLUSTER_AUTHORIZATION_FAILED). The rules and
messages are Kafka's ``ScramControlManager``: a user altered twice in one request
(DUPLICATE_RESOURCE), an empty name (UNACCEPTABLE_CREDENTIAL), an unknown mechanism
(UNSUPPORTED_SASL_MECHANISM), deleting a credential that does not exist (RESOURCE_NOT_FOUND),
iterations outside 4096..16384 (UNACCEPTABLE_CREDENTIAL). Like Kafka, any salt length is taken
(a 4-byte salt is common in client examples; ``scram.scramp_module`` lets the login path take
it too). The accepted changes are applied
together, with one durable write; the salted password becomes StoredKey/ServerKey and is not
kept. Results: deletions, then upserts, then errors, each in request order.
"""
from broker.registry import handles
from broker.security.scram import MAX_ITERATIONS, MIN_ITERATIONS, ScramMechanism, credential_from_salted_password
from protocol.errors import ErrorCode as E
from protocol.messages.alter_user_scram_credentials import AlterUserScramCredentialsResponse as R

DUPLICATE = (E.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")


def _validate_name_and_mechanism(name: str, mech: ScramMechanism):
    if not name:
        return E.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mech == ScramMechanism.UNKNOWN:
        return E.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


@handles(51)
async def handle(ctx, req):
    users = list(dict.fromkeys([d.name for d in req.deletions] + [u.name for u in req.upsertions]))
    if not ctx.authz.allowed("cluster"):
        return R(results=[R.AlterUserScramCredentialsResult(
            user=u, error_code=E.CLUSTER_AUTHORIZATION_FAILED, error_message="Cluster authorization failed.")
            for u in users])
    store = ctx.broker.security.scram
    deletions: dict[str, ScramMechanism] = {}
    upserts: dict[str, object] = {}
    errors: dict[str, tuple] = {}
    for d in req.deletions:
        if d.name in errors:
            continue
        if deletions.pop(d.name, None) is not None:
            errors[d.name] = DUPLICATE
            continue
        mech = ScramMechanism.of(d.mechanism)
        err = _validate_name_and_mechanism(d.name, mech)
        if err is None and store.get(d.name, mech) is None:
            err = (E.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
        if err is None:
            deletions[d.name] = mech
        else:
            errors[d.name] = err
    for u in req.upsertions:
        if u.name in errors:
            continue
        if deletions.pop(u.name, None) is not None or upserts.pop(u.name, None) is not None:
            errors[u.name] = DUPLICATE
            continue
        mech = ScramMechanism.of(u.mechanism)
        err = _validate_name_and_mechanism(u.name, mech)
        if err is None and u.iterations < MIN_ITERATIONS:
            err = (E.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif err is None and u.iterations > MAX_ITERATIONS:
            err = (E.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        if err is None:
            upserts[u.name] = (mech, credential_from_salted_password(mech, bytes(u.salt), bytes(u.salted_password),
                                                                     u.iterations))
        else:
            errors[u.name] = err
    if deletions or upserts:
        store.apply(upserts, deletions)
    ok = R.AlterUserScramCredentialsResult
    return R(results=[ok(user=n, error_code=0) for n in deletions]
             + [ok(user=n, error_code=0) for n in upserts]
             + [ok(user=n, error_code=code, error_message=msg) for n, (code, msg) in errors.items()])
