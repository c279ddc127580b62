"""``dataclass`` with its generated methods compiled on first use.

Python 3.11's ``dataclasses.dataclass`` writes and compiles ``__init__``, ``__repr__`` and
``__eq__`` for each class at import; for the ~40 dataclasses a broker imports that was ~30 ms
of every start (a third of what Hourglass adds to the interpreter's own start-up), mostly for
classes a given process never builds (cleaner facts, admin views). This decorator records the
options and leaves small stubs; the first instance, or the first look at the class's fields
(``dataclasses.fields``, ``is_dataclass``, ``replace``, ``asdict``), processes the class with the
real ``dataclasses.dataclass``, so behaviour is exactly the standard library's afterwards.

Invariant: a decorated class is processed at most once, before any of its instances exists and
before its ``__dataclass_fields__`` is read. ``slots=True`` builds a new class, which cannot be
deferred, so those are processed at once. (It lives in ``protocol`` because that is the package
every layer already imports; nothing in it is protocol-specific.)
"""
from __future__ import annotations

import dataclasses
import threading

_FIELDS = "__dataclass_fields__"
# Processing a class processes its dataclass bases first (dataclasses reads their fields), so
# the lock must be re-entrant; the cleaner thread may build a class the event loop has not.
_lock = threading.RLock()


def dataclass(cls=None, /, **opts):
    """Drop-in for ``dataclasses.dataclass`` (same options) that compiles on first use."""
    def wrap(c):
        if opts.get("slots"):
            return dataclasses.dataclass(c, **opts)
        _defer(c, opts)
        return c
    return wrap if cls is None else wrap(cls)


def _defer(cls, opts: dict) -> None:
    stubs = {}

    def process() -> None:
        with _lock:
            if cls.__dict__.get(_FIELDS) is not pending:
                return  # another caller processed it first
            for name in stubs:
                delattr(cls, name)
            delattr(cls, _FIELDS)
            dataclasses.dataclass(cls, **opts)

    class Pending:
        """Stands in for ``__dataclass_fields__`` until the class is processed."""
        def __get__(self, obj, owner=None):
            process()
            return cls.__dict__[_FIELDS]

    pending = Pending()

    # Stubs only where dataclasses would add the method (it never replaces one the class defines).
    def __init__(self, *args, **kwargs):
        process()
        cls.__init__(self, *args, **kwargs)

    def __repr__(self):
        process()
        return cls.__repr__(self)

    def __eq__(self, other):
        process()
        return cls.__eq__(self, other)

    for name, fn, wanted in (("__init__", __init__, opts.get("init", True)),
                             ("__repr__", __repr__, opts.get("repr", True)),
                             ("__eq__", __eq__, opts.get("eq", True))):
        if wanted and name not in cls.__dict__:
            fn.__qualname__ = f"{cls.__qualname__}.{name}"
            stubs[name] = fn
    for name, fn in stubs.items():
        setattr(cls, name, fn)
    setattr(cls, _FIELDS, pending)
