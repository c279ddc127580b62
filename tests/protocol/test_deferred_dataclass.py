"""``protocol.deferred.dataclass`` behaves as ``dataclasses.dataclass`` once used, and compiles
nothing before that."""
from __future__ import annotations

import dataclasses
import threading

import pytest

from protocol.deferred import dataclass


def _pending(cls) -> bool:
    return "__dataclass_params__" not in cls.__dict__


def test_nothing_is_generated_until_first_use():
    @dataclass
    class Point:
        x: int
        y: int = 0

    assert _pending(Point)
    p = Point(1)
    assert not _pending(Point)
    assert (p.x, p.y) == (1, 0)
    assert repr(p) == "test_nothing_is_generated_until_first_use.<locals>.Point(x=1, y=0)"
    assert p == Point(1, 0) and p != Point(2)
    assert Point.__hash__ is None  # eq without frozen: unhashable, as the standard library does


def test_fields_before_any_instance():
    @dataclass
    class Config:
        a: int = 1
        b: list = dataclasses.field(default_factory=list)

    assert dataclasses.is_dataclass(Config)
    assert [f.name for f in dataclasses.fields(Config)] == ["a", "b"]
    c1, c2 = Config(), Config()
    assert c1.b is not c2.b
    assert dataclasses.asdict(dataclasses.replace(c1, a=5)) == {"a": 5, "b": []}


def test_frozen_and_inheritance_match_the_standard_library():
    @dataclass(frozen=True)
    class Base:
        x: int

    @dataclass(frozen=True)
    class Child(Base):
        y: int = 2

    class Plain(Child):
        pass

    # a subclass processed first processes its dataclass base
    assert dataclasses.astuple(Plain(1)) == (1, 2)
    assert Plain(1) != Child(1, 2)  # dataclass equality wants the same class
    assert not _pending(Base)
    c = Child(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.x = 3
    assert hash(c) == hash(Child(1, 2))
    assert {Child(1), Child(1)} == {c}


def test_methods_the_class_defines_are_kept():
    @dataclass
    class Named:
        name: str

        def __repr__(self) -> str:
            return f"<{self.name}>"

        def __post_init__(self) -> None:
            self.name = self.name.upper()

    n = Named("a")
    assert repr(n) == "<A>"


def test_stub_calls_its_own_class_from_a_subclass_init():
    @dataclass
    class Base:
        x: int

    class Sub(Base):
        def __init__(self) -> None:
            super().__init__(7)

    assert Sub().x == 7


def test_slots_are_processed_at_once():
    @dataclass(slots=True)
    class Slotted:
        x: int

    assert not _pending(Slotted)
    assert Slotted.__slots__ == ("x",)


def test_first_use_from_many_threads_processes_once():
    @dataclass
    class Shared:
        x: int

    calls = []
    real = dataclasses.dataclass

    def counting(cls=None, /, **kw):
        calls.append(cls)
        return real(cls, **kw)

    dataclasses.dataclass, saved = counting, dataclasses.dataclass
    try:
        barrier = threading.Barrier(8)
        out = []

        def build():
            barrier.wait()
            out.append(Shared(1))

        threads = [threading.Thread(target=build) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        dataclasses.dataclass = saved
    assert calls == [Shared]
    assert all(o == Shared(1) for o in out)
