"""Listeners as Kafka configures them: ``listeners``, ``advertised.listeners``,
``listener.security.protocol.map``, ``controller.listener.names`` and the per-listener
``listener.name.<name>.<key>`` overrides, resolved into plain data (no sockets here).

Kafka's rules (``KafkaConfig`` / ``SocketServerConfigs``, 3.9 and 4.x), kept here:

- A listener is ``NAME://host:port``; names are case-insensitive and normalised to upper
  case; an empty host means every interface; an IPv6 host is written in brackets.
- Its security protocol comes from ``listener.security.protocol.map`` (default
  ``PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL``). When the map
  is not set explicitly and no SSL/SASL listener name is in use, each controller listener name
  maps to PLAINTEXT (what lets ``CONTROLLER://:9093`` work without a map entry).
- Listener names must be distinct, and so must non-zero ports.
- The broker listeners are ``listeners`` minus the controller listeners; what clients are told
  is ``advertised.listeners`` when set, else ``listeners``, in both cases without controller
  listeners. Advertised names must be a subset of the listener names; ``0.0.0.0`` cannot be
  advertised.

Hourglass is one node that is its own controller: controller listeners are understood and
never bound (Kafka clients never connect to them; a connection there is refused by the OS).
Broker listeners are bound, each with its security protocol (``Listener.security_protocol``)
and its ``listener.name.<name>.*`` settings (``Listener.overrides``), which ``broker.security``
turns into a TLS context and SASL mechanisms.

A bound listener missing from ``advertised.listeners`` is advertised at its own address (Kafka
would leave clients on it without a broker in Metadata); the server logs a warning for it.
"""
from __future__ import annotations

import re
from dataclasses import field

from protocol.deferred import dataclass

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"

# Kafka's endpoint syntax: NAME://host:port, host may be empty or a bracketed IPv6 address.
_URI = re.compile(r"^([^:/\s]+)://(\[[^\]]*\]|[^:/\[\]\s]*):(-?\d+)$")
_PREFIX = "listener.name."


class ListenerError(ValueError):
    """A listener setting Kafka would refuse, or one Hourglass does not serve; the message
    names the key and the value."""


@dataclass
class Listener:
    name: str                       # normalised (upper-case) listener name
    host: str                       # "" = every interface
    port: int                       # 0 = a free port (tests)
    security_protocol: str = "PLAINTEXT"
    # listener.name.<name>.<key> settings, keyed by <key> (TLS and SASL settings)
    overrides: dict[str, str] = field(default_factory=dict)

    @property
    def uri(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


@dataclass
class ListenerSetup:
    """The resolved listener configuration of this node."""

    broker: list[Listener]                 # bound, in ``listeners`` order
    controller: list[Listener]             # named by controller.listener.names; never bound
    advertised: dict[str, Listener]        # broker listener name -> what clients are told
    unadvertised: list[str]                # bound broker listeners advertised.listeners omits

    def advertised_for(self, name: str | None) -> Listener:
        """What to tell a client that came in on listener ``name`` (None: the first broker
        listener): its advertised endpoint, or the listener itself when it is not advertised.
        An empty host or port 0 in the answer means "as bound" (the server fills it in)."""
        if name is None:
            name = self.broker[0].name
        if name in self.advertised:
            return self.advertised[name]
        return next((l for l in self.broker if l.name == name), self.broker[0])


def _invalid(key: str, value: str, reason: str) -> ListenerError:
    return ListenerError(f"Invalid value {value} for configuration {key}: {reason}")


def parse_csv_map(key: str, value: str) -> dict[str, str]:
    """Kafka's ``CoreUtils.parseCsvMap`` (``listener.security.protocol.map``,
    ``max.connections.per.ip.overrides``): comma-separated ``key:value`` entries, each split at
    its last colon; trailing empty entries dropped (Java's ``split``). An entry without a colon
    raises ValueError with Kafka's message (``KafkaConfig.getMap`` around Java's
    ``substring`` exception). Pure."""
    out: dict[str, str] = {}
    if value == "":
        return out
    entries = re.split(r"\s*,\s*", value)
    while entries and entries[-1] == "":
        entries.pop()
    for entry in entries:
        i = entry.rfind(":")
        if i < 0:
            raise ValueError(f"Error parsing configuration property '{key}': begin 0, end -1, length {len(entry)}")
        out[entry[:i].strip()] = entry[i + 1:].strip()
    return out


def java_int(text: str) -> int:
    """Java's ``Integer.parseInt``: an optional sign and decimal digits within 32 bits; else
    ValueError with Java's message."""
    if not re.fullmatch(r"[+-]?\d+", text) or not -(2**31) <= int(text) < 2**31:
        raise ValueError(f'For input string: "{text}"')
    return int(text)


def kafka_listener_failures(listeners: str | None, protocol_map: str | None, controller_names: list[str]):
    """What ``new KafkaConfig(...)`` says about ``listeners`` and
    ``listener.security.protocol.map`` values, in Kafka's words (the dynamic config path
    answers with them): yields each reason. Pure."""
    protocols: dict[str, str] = {}
    if protocol_map is not None:
        try:
            raw = parse_csv_map("listener.security.protocol.map", protocol_map)
        except ValueError as exc:
            yield str(exc)
            return
        for name, proto in raw.items():
            if proto.upper() not in SECURITY_PROTOCOLS:
                yield f"Invalid security protocol `{proto}` defined in listener.security.protocol.map"
                return
            protocols[name.upper()] = proto.upper()
    if listeners is None:
        return
    entries = [e.strip() for e in listeners.split(",") if e.strip()]
    if not entries:
        yield "Configuration 'listeners' must not be empty. Valid values include: any non-empty value"
        return
    if protocol_map is None:
        protocols = effective_protocol_map(None, [n.upper() for n in controller_names], entries)
    shown = "[" + ", ".join(entries) + "]"
    for uri in entries:
        m = _URI.match(uri)
        if not m:
            yield f"Error creating broker listeners from '{shown}': Unable to parse {uri} to a broker endpoint"
            return
        if m.group(1).upper() not in protocols:
            yield (f"Error creating broker listeners from '{shown}': No security protocol defined for "
                   f"listener {m.group(1).upper()}")
            return


def parse_protocol_map(value: str, key: str = "listener.security.protocol.map") -> dict[str, str]:
    out: dict[str, str] = {}
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        name, sep, proto = entry.partition(":")
        name, proto = name.strip().upper(), proto.strip().upper()
        if not sep or not name:
            raise _invalid(key, value, f"Map entry '{entry}' is improperly formatted")
        if proto not in SECURITY_PROTOCOLS:
            raise _invalid(key, value, f"unknown security protocol {proto or '(empty)'} for listener "
                                       f"{name} (expected one of {', '.join(SECURITY_PROTOCOLS)})")
        out[name] = proto
    return out


def parse_listener_list(value: list[str], key: str, protocols: dict[str, str]) -> list[Listener]:
    """Parse ``NAME://host:port`` entries; every name must have a security protocol."""
    out = []
    for uri in value:
        m = _URI.match(uri.strip())
        if not m:
            raise _invalid(key, ",".join(value), f"Unable to parse {uri} to a broker endpoint "
                                                 "(expected NAME://host:port)")
        name, host, port = m.group(1).upper(), m.group(2).strip("[]"), int(m.group(3))
        if not 0 <= port <= 65535:
            raise _invalid(key, ",".join(value), f"port {port} of {uri} is out of range")
        if name not in protocols:
            raise _invalid(key, ",".join(value), f"No security protocol defined for listener {name} "
                                                 "(add it to listener.security.protocol.map)")
        out.append(Listener(name, host, port, protocols[name]))
    return out


def effective_protocol_map(map_value: str | None, controller_names: list[str],
                           listener_values: list[str]) -> dict[str, str]:
    """Kafka's ``effectiveListenerSecurityProtocolMap``: the explicit map, or the default one
    plus PLAINTEXT for each controller listener name when no SSL/SASL name is in use."""
    if map_value is not None:
        return parse_protocol_map(map_value)
    protocols = parse_protocol_map(DEFAULT_PROTOCOL_MAP)
    names = [u.split("://", 1)[0].strip().upper() for u in listener_values] + controller_names
    if not any(n in ("SSL", "SASL_PLAINTEXT", "SASL_SSL") for n in names):
        for n in controller_names:
            protocols.setdefault(n, "PLAINTEXT")
    return protocols


def per_listener_key(key: str) -> tuple[str, str] | None:
    """``listener.name.<name>.<key>`` -> (NAME, key); None for any other key."""
    if not key.startswith(_PREFIX):
        return None
    name, dot, rest = key[len(_PREFIX):].partition(".")
    if not dot or not name or not rest:
        return None
    return name.upper(), rest


def resolve(listeners: list[str], advertised: list[str] | None, protocol_map: str | None,
            controller_names: list[str], per_listener: dict[str, dict[str, str]] | None = None) -> ListenerSetup:
    """Resolve the listener keys into a :class:`ListenerSetup`; raises :class:`ListenerError`
    with Kafka's wording for what Kafka refuses."""
    controller_names = [n.upper() for n in controller_names]
    protocols = effective_protocol_map(protocol_map, controller_names, listeners)
    parsed = parse_listener_list(listeners, "listeners", protocols)
    names = [l.name for l in parsed]
    if len(set(names)) != len(names):
        raise _invalid("listeners", ",".join(listeners), "Each listener must have a different name")
    ports = [l.port for l in parsed if l.port != 0]
    if len(set(ports)) != len(ports):
        raise _invalid("listeners", ",".join(listeners), "Each listener must have a different port")
    for l in parsed:
        l.overrides = dict((per_listener or {}).get(l.name, {}))
    controller = [l for l in parsed if l.name in controller_names]
    broker = [l for l in parsed if l.name not in controller_names]
    if not broker:
        raise ListenerError(
            "listeners: There must be at least one broker advertised listener. Perhaps all listeners "
            "appear in controller.listener.names? (Hourglass serves clients on broker listeners; "
            "it is its own controller and binds no controller listener)")
    if advertised is None:
        adv = {l.name: l for l in broker}
    else:
        adv_list = [l for l in parse_listener_list(advertised, "advertised.listeners", protocols)
                    if l.name not in controller_names]
        bad = [l.name for l in adv_list if l.name not in names]
        if bad:
            raise _invalid("advertised.listeners", ",".join(advertised),
                           "advertised.listeners listener names must be equal to or a subset of the ones "
                           f"defined in listeners. Found {','.join(l.name for l in adv_list)}. The valid "
                           f"options based on the current configuration are {','.join(names)}")
        if any(l.host == "0.0.0.0" for l in adv_list):
            raise _invalid("advertised.listeners", ",".join(advertised),
                           "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. "
                           "Use a routable IP address.")
        adv = {l.name: l for l in adv_list}
    unadvertised = [l.name for l in broker if l.name not in adv]
    return ListenerSetup(broker=broker, controller=controller, advertised=adv, unadvertised=unadvertised)
