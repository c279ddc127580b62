"""What the composition root (``hourglass.app``) plugs into a ``Broker``, so the Kafka core
names no service beside it: the HTTP services, the Schema Registry's produce validation and its
metrics arrive through here, and a ``Broker`` built without extensions is a plain Kafka broker.

- ``services``: factories of things run beside the Kafka listeners. ``Broker.start()`` calls
  ``bind()`` on each (sockets bound before the ready file is written: a bad address refuses the
  start, as a bad Kafka listener does), then ``start()``; ``ready_lines()`` go into the ready
  file; ``Broker.stop()`` awaits ``close()``.
- ``record_validator``: asked about a produce to a topic whose config turns record validation on
  (``LogConfig.schema_id_validation``: Confluent's ``confluent.{key,value}.schema.validation``).
  It answers None (accepted) or ``(error_code, message, [(batch_index, message), ...])``, and
  the whole batch is refused. With none installed such a topic refuses every produce.
- ``metric_collectors``: callables ``collector(broker)`` yielding more Prometheus metric
  families for ``/metrics``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol


class BrokerService(Protocol):
    def bind(self) -> None: ...

    def start(self) -> None: ...

    def ready_lines(self) -> list[str]: ...

    async def close(self) -> None: ...


RecordRejection = tuple[int, str, list[tuple[int, str]]]
RecordValidator = Callable[[Any, str, Any, bytes, int], "RecordRejection | None"]


@dataclass(frozen=True)
class Extensions:
    services: tuple[Callable[[Any], BrokerService], ...] = ()
    record_validator: RecordValidator | None = None
    metric_collectors: tuple[Callable[[Any], Iterable], ...] = field(default_factory=tuple)


NONE = Extensions()
