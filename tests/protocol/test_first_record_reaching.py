"""``first_record_reaching`` (the written-out record walk behind every timestamp lookup) must
give exactly what the generic ``iter_record_timestamps`` walk gives: same answer on any batch
(unordered timestamps, long varints, keys/headers, compressed, LogAppendTime, min offsets),
and the same CorruptRecordError on malformed records."""
import random

import pytest

from protocol.errors import CorruptRecordError
from protocol.records import compression as codecs
from protocol.records.batch import HEADER_SIZE, rewrite_crc, set_log_append_time
from protocol.records.record import build_batch, first_record_reaching, iter_record_timestamps


def generic(buf, target, min_offset):
    for off, ts in iter_record_timestamps(buf):
        if ts >= target and off >= min_offset:
            return off, ts
    return None


def random_batch(rnd):
    n = rnd.choice([1, 2, 7, 60, 400, 3000])
    base = 1_700_000_000_000
    recs = []
    for i in range(n):
        ts = base + rnd.choice([i * 10, i * 1000, rnd.randrange(-10**5, 10**5), rnd.randrange(-10**12, 10**12), 0])
        key = None if rnd.random() < 0.5 else rnd.randbytes(rnd.choice([1, 30]))
        value = b"v" * rnd.choice([0, 10, 100, 300, 9000 if rnd.random() < 0.01 else 1])
        recs.append((key, value, ts, [("h", b"x")] if rnd.random() < 0.1 else None))
    return build_batch(recs, base_offset=rnd.choice([0, 5000]), compression=rnd.choice([0, 0, codecs.LZ4, codecs.GZIP]))


def test_same_answers_as_the_generic_walk():
    rnd = random.Random(11)
    for _ in range(60):
        b = bytearray(random_batch(rnd))
        if rnd.random() < 0.1:
            set_log_append_time(b, 0, 1_700_000_000_500)
        pairs = list(iter_record_timestamps(b))
        offsets = [o for o, _ in pairs]
        stamps = [t for _, t in pairs]
        for _ in range(25):
            target = rnd.choice(stamps) + rnd.choice([-1, 0, 1]) if rnd.random() < 0.7 \
                else rnd.randrange(min(stamps) - 5, max(stamps) + 5)
            min_offset = rnd.choice([0, offsets[0], offsets[len(offsets) // 2], offsets[-1], offsets[-1] + 1])
            expected = generic(b, target, min_offset)
            # bytes (as read from a segment: walked in place), bytearray and a batch that is
            # not at position 0 of its buffer
            assert first_record_reaching(bytes(b), 0, target, min_offset) == expected
            assert first_record_reaching(b, 0, target, min_offset) == expected
            assert first_record_reaching(b"\x00" * 7 + bytes(b), 7, target, min_offset) == expected


def test_malformed_records_raise_like_the_generic_walk():
    rnd = random.Random(3)
    checked = 0
    for _ in range(300):
        b = bytearray(build_batch([(None, b"v" * 20, 1_700_000_000_000 + 10 * i) for i in range(30)]))
        for _ in range(rnd.randint(1, 3)):   # corrupt record bytes (the CRC is fixed up again)
            b[rnd.randrange(HEADER_SIZE, len(b))] = rnd.randrange(256)
        rewrite_crc(b, 0)
        target = 1_700_000_000_000 + 10 * rnd.randrange(35)
        try:
            expected = generic(b, target, 0)
        except CorruptRecordError:
            for buf in (b, bytes(b), bytes(b)[:-3]):
                with pytest.raises(CorruptRecordError):
                    first_record_reaching(buf, 0, target, 0)
            checked += 1
        else:
            assert first_record_reaching(b, 0, target, 0) == expected
            assert first_record_reaching(bytes(b), 0, target, 0) == expected
    assert checked > 5
