"""Quota arithmetic and entity rules, without a socket: Kafka's windowed Rate, the throttle
formula, the precedence between entity forms (against a brute-force model of the eight
levels), and ClientQuotaControlManager's validation."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.quotas import entities as E
from broker.quotas.rate import Rate, record_and_throttle, throttle_time_ms


# ---- Rate ---------------------------------------------------------------------------------

def test_fresh_rate_counts_at_least_samples_minus_one_windows():
    r = Rate(11, 1000)
    r.record(1000.0, 0)
    # one event at t=0: elapsed is padded to 10 whole windows, so 1000 bytes / 10 s
    assert r.window_size_ms(0) == 10_000
    assert r.measure(0) == pytest.approx(100.0)


def test_samples_older_than_the_window_are_forgotten():
    r = Rate(3, 1000)
    r.record(500.0, 0)
    assert r.total(2999) == 500.0
    assert r.total(3000) == 0.0  # samples * window after its last event


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 400), st.floats(0, 1e6)), min_size=1, max_size=60),
       st.integers(2, 12), st.integers(50, 2000))
def test_nothing_within_the_window_is_lost(steps, samples, window_ms):
    """While events are less than a window apart and span less than (samples - 1) windows,
    the windowed sum is exactly what was recorded, and the rate divides it by the elapsed
    time padded to samples - 1 windows."""
    r = Rate(samples, window_ms)
    now = 0
    recorded = 0.0
    for gap, value in steps:
        gap = min(gap, window_ms - 1)
        if now + gap >= (samples - 1) * window_ms:
            break
        now += gap
        r.record(value, now)
        recorded += value
    assert r.total(now) == pytest.approx(recorded)
    assert r.window_size_ms(now) >= (samples - 1) * window_ms
    assert r.measure(now) >= 0


@settings(max_examples=100, deadline=None)
@given(st.floats(1.0, 1e9), st.floats(1.0, 1e9), st.integers(1, 100_000))
def test_throttle_time_is_kafkas_formula(observed, bound, window):
    """X = (O - T) / T * W, Math.round'ed: after waiting X, O * W / (W + X) is T."""
    x = throttle_time_ms(observed, bound, window)
    exact = (observed - bound) / bound * window
    assert abs(x - exact) <= 0.5 + 1e-9
    if observed > bound:
        assert observed * window / (window + exact) == pytest.approx(bound, rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(100, 5000), min_size=20, max_size=80), st.integers(1000, 20000),
       st.integers(0, 30))
def test_a_client_that_honours_throttles_stays_near_its_quota(sizes, bound, gap):
    """A client sending as fast as it may (waiting each throttle time out, as KIP-219 asks)
    moves, over a long run, no more than its quota plus one window's worth."""
    samples, window_ms = 11, 1000
    r = Rate(samples, window_ms)
    now = 0
    sent = 0
    i = 0
    while now < 60_000:
        size = sizes[i % len(sizes)]
        i += 1
        t = record_and_throttle(r, float(bound), float(size), now)
        sent += size
        now += max(t, 0) + gap + 1
    assert sent / (now / 1000.0) <= bound * 1.15 + max(sizes) / (now / 1000.0) * samples


# ---- precedence ---------------------------------------------------------------------------

def _model_limit(quotas, key, user, client):
    """Kafka's eight levels, straight from the documentation's list: the first that is set wins."""
    levels = [((E.CLIENT_ID, client), (E.USER, user)), ((E.CLIENT_ID, None), (E.USER, user)),
              ((E.USER, user),), ((E.CLIENT_ID, client), (E.USER, None)), ((E.CLIENT_ID, None), (E.USER, None)),
              ((E.USER, None),), ((E.CLIENT_ID, client),), ((E.CLIENT_ID, None),)]
    for ent in levels:
        v = quotas.get(ent, {}).get(key)
        if v is not None:
            return v
    return None


_users = st.sampled_from(["alice", "bob"])
_clients = st.sampled_from(["c1", "c2"])
_entity = st.one_of(
    st.tuples(st.tuples(st.just(E.USER), st.one_of(st.none(), _users))),
    st.tuples(st.tuples(st.just(E.CLIENT_ID), st.one_of(st.none(), _clients))),
    st.tuples(st.tuples(st.just(E.CLIENT_ID), st.one_of(st.none(), _clients)),
              st.tuples(st.just(E.USER), st.one_of(st.none(), _users))),
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_entity, st.integers(1, 100).map(float), max_size=8), _users, _clients)
def test_precedence_matches_kafkas_eight_levels(setting, user, client):
    quotas = {ent: {E.PRODUCER_BYTE_RATE: v} for ent, v in setting.items()}
    _tags, bound = E.resolve(quotas, E.PRODUCER_BYTE_RATE, user, client)
    assert bound == _model_limit(quotas, E.PRODUCER_BYTE_RATE, user, client)


def test_a_user_quota_is_shared_by_all_its_clients():
    quotas = {((E.USER, "alice"),): {E.PRODUCER_BYTE_RATE: 10.0}}
    t1, b1 = E.resolve(quotas, E.PRODUCER_BYTE_RATE, "alice", "c1")
    t2, b2 = E.resolve(quotas, E.PRODUCER_BYTE_RATE, "alice", "c2")
    assert t1 == t2 == ("alice", "") and b1 == b2 == 10.0
    # a client-id quota is per client id
    quotas = {((E.CLIENT_ID, None),): {E.PRODUCER_BYTE_RATE: 10.0}}
    assert E.resolve(quotas, E.PRODUCER_BYTE_RATE, "alice", "c1")[0] != \
        E.resolve(quotas, E.PRODUCER_BYTE_RATE, "alice", "c2")[0]


# ---- validation (ClientQuotaControlManager's messages) --------------------------------------

@pytest.mark.parametrize("entity,key,value,message", [
    ((), "producer_byte_rate", 1.0, "Invalid empty client quota entity"),
    ((("group", "g"),), "producer_byte_rate", 1.0, "Unhandled client quota entity type: group"),
    (((E.USER, ""),), "producer_byte_rate", 1.0, "Empty user not supported"),
    (((E.USER, "u"),), "bogus", 1.0, "Invalid configuration key bogus"),
    (((E.USER, "u"),), "producer_byte_rate", -5.0, "Quota producer_byte_rate must be greater than 0"),
    (((E.USER, "u"),), "producer_byte_rate", 0.0, "Quota producer_byte_rate must be greater than 0"),
    (((E.USER, "u"),), "producer_byte_rate", math.nan, "Quota producer_byte_rate must be greater than 0"),
    (((E.USER, "u"),), "producer_byte_rate", 1.5, "producer_byte_rate cannot be a fractional value."),
    (((E.USER, "u"),), "producer_byte_rate", 1e19, "Proposed value for producer_byte_rate is too large for a LONG."),
    (((E.USER, "u"),), "connection_creation_rate", 5.0, "Invalid configuration key connection_creation_rate"),
    (((E.IP, "10.0.0.1"),), "producer_byte_rate", 5.0, "Invalid configuration key producer_byte_rate"),
    (((E.IP, "10.0.0.1"),), "connection_creation_rate", 3e9, "Proposed value for connection_creation_rate is too large for an INT."),
    (((E.CLIENT_ID, "c"), (E.IP, "1.2.3.4")), "connection_creation_rate", 1.0,
     "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),
])
def test_refusals(entity, key, value, message):
    results, changes = E.plan_alterations({}, [E.Alteration(entity, [(key, value)])])
    assert str(results[entity]) == message and not changes


def test_accepted_changes_only_carry_what_changes():
    ent = ((E.USER, "ghost"),)  # a user that does not exist: allowed, as in Kafka
    cur = {ent: {E.PRODUCER_BYTE_RATE: 10.0}}
    results, changes = E.plan_alterations(cur, [E.Alteration(ent, [(E.PRODUCER_BYTE_RATE, 10.0),
                                                                   (E.REQUEST_PERCENTAGE, 12.5),
                                                                   (E.CONSUMER_BYTE_RATE, None)])])
    assert results == {ent: None}
    assert changes == {ent: {E.REQUEST_PERCENTAGE: 12.5}}


def test_filters():
    exact, typed = E.parse_filter([(E.USER, E.MATCH_EXACT, "alice"), (E.CLIENT_ID, E.MATCH_SPECIFIED, None)])
    assert E.matches(((E.CLIENT_ID, "c"), (E.USER, "alice")), exact, typed, strict=True)
    assert not E.matches(((E.USER, "alice"),), exact, typed, strict=False)
    with pytest.raises(E.QuotaError, match="cannot appear more than once"):
        E.parse_filter([(E.USER, 1, None), (E.USER, 0, "x")])
    with pytest.raises(E.QuotaError) as exc:
        E.parse_filter([("topic", 0, "x")])
    assert exc.value.unsupported
