"""The JVM side of the tests: versions and cache paths, read from ``tests/jvm/pom.xml``.

The parent pom is the one place that names a JVM version (Apache Kafka's, and those of the
connectors tested against it); ``make jvm`` resolves every module into ``~/.cache/hourglass``
(``$HOURGLASS_CACHE``), outside the checkout. A missing cache fails the test that needs it with
the command to run, never skips it.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from functools import lru_cache
from pathlib import Path
from uuid import uuid4

REPO_ROOT = Path(__file__).resolve().parents[2]
JVM_POM = REPO_ROOT / "tests" / "jvm" / "pom.xml"
_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def cache_dir() -> Path:
    env = os.environ.get("HOURGLASS_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "hourglass"


@lru_cache(maxsize=None)
def pom_properties() -> dict[str, str]:
    """The ``<properties>`` of the parent pom, unresolved ``${...}`` left as they are."""
    root = ET.parse(JVM_POM).getroot()
    props = root.find("m:properties", _NS)
    return {el.tag.split("}", 1)[1]: (el.text or "").strip() for el in props} if props is not None else {}


def version(name: str) -> str:
    """``version("kafka")`` is the ``kafka.version`` property."""
    return pom_properties()[f"{name}.version"]


def java() -> str:
    """The ``java`` to run JVM processes with: ``$JAVA_HOME/bin/java``, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and Path(home, "bin", "java").exists():
        return str(Path(home, "bin", "java"))
    found = shutil.which("java")
    if found is None:
        raise RuntimeError("no `java` on PATH (run `make deps`)")
    return found


# JVM unified-logging off for class-data sharing's own notices (an archive made for other jars
# is passed over silently: the JVM loads the classes as without one)
_CDS_QUIET = "-Xlog:cds*=off"


def class_share(name: str, classpath: str) -> tuple[list[str], Path | None]:
    """JVM options for class-data sharing (a dynamic AppCDS archive, in the cache) for a JVM the
    tests start again and again on ``classpath`` (an Apache Kafka node, a Connect worker): its
    first start dumps the classes it loaded into an archive as it exits, later starts map them
    instead of loading and verifying them again (a Kafka node's start: 4.1 s of CPU -> 2.4 s).
    Returns the options and the archive this start writes (None when it maps one): hand it to
    ``settle_class_share`` once the JVM has exited. Invariant: a start maps only an archive a
    JVM finished writing (written under a name of its own, renamed after a clean exit). A
    classpath with a directory gets no options: the JVM archives classes from jars only, and
    refuses to start when asked to dump with a non-empty directory on the path."""
    if any(Path(entry).is_dir() for entry in classpath.split(os.pathsep)):
        return [], None
    d = cache_dir() / "cds"
    d.mkdir(parents=True, exist_ok=True)
    stem = f"{name}-" + hashlib.sha256("\0".join([str(Path(java()).resolve()), name, classpath]).encode()).hexdigest()[:20]
    final = d / f"{stem}.jsa"
    if final.exists():
        for left in d.glob(f"{stem}.*.tmp"):  # dumps of JVMs whose exit nobody settled
            pid = left.name.split(".")[1].split("-")[0]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                left.unlink(missing_ok=True)
        return [f"-XX:SharedArchiveFile={final}", _CDS_QUIET], None
    dump = d / f"{stem}.{os.getpid()}-{uuid4().hex[:8]}.tmp"
    return [f"-XX:ArchiveClassesAtExit={dump}", _CDS_QUIET], dump


def settle_class_share(dump: Path | None, returncode: int) -> None:
    """After a JVM started with ``class_share``'s options exited with ``returncode``: its archive
    becomes the one later starts map when it exited cleanly (0, or 143: after SIGTERM, its
    shutdown hooks run; the dump runs at exit, and a kill may cut it short), else it is removed."""
    if dump is None:
        return
    final = dump.with_name(dump.name.split(".", 1)[0] + ".jsa")
    if returncode in (0, 143) and dump.exists() and dump.stat().st_size > 0 and not final.exists():
        os.replace(dump, final)
    else:
        dump.unlink(missing_ok=True)


def cached_venv(d: Path, requirement: str) -> Path:
    """The interpreter of a venv of its own at ``d`` (in the cache) holding ``requirement``
    (``name==version``), made first if missing; a half-made venv from an interrupted install
    has no stamp and is made again. For Python packages that pin what the test venv must not
    be bent to (PyFlink), or a second release of one it has (PySpark for Iceberg)."""
    stamp = d / ".hourglass-installed"
    if not stamp.exists():
        shutil.rmtree(d, ignore_errors=True)
        base = getattr(sys, "_base_executable", None) or sys.executable
        subprocess.run([base, "-m", "venv", str(d)], check=True)
        subprocess.run([str(d / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        requirement], check=True)
        stamp.write_text(requirement + "\n")
    return d / "bin" / "python"


def libs(module_dir: str) -> Path:
    """``~/.cache/hourglass/<module_dir>/libs``, checked to be filled (by ``make jvm``)."""
    d = cache_dir() / module_dir / "libs"
    if not d.is_dir() or not any(d.glob("*.jar")):
        raise RuntimeError(f"{d} has no jars: run `make jvm` (Maven resolves tests/jvm into {cache_dir()})")
    return d


def log4j2_properties(log: Path | str, levels: dict[str, str] | None = None,
                      pattern: str = "[%d] %p %m (%c)%n") -> str:
    """A log4j2 configuration that appends every line at INFO and above to ``log`` (one file a
    process, read by the tests and attached to failure reports); ``levels``: logger name -> level."""
    lines = ["status = warn", "appender.file.type = File", "appender.file.name = FILE",
             f"appender.file.fileName = {log}", "appender.file.append = true",
             "appender.file.layout.type = PatternLayout", f"appender.file.layout.pattern = {pattern}",
             "rootLogger.level = INFO", "rootLogger.appenderRef.file.ref = FILE"]
    for i, (name, level) in enumerate((levels or {}).items()):
        lines += [f"logger.l{i}.name = {name}", f"logger.l{i}.level = {level}"]
    return "\n".join(lines) + "\n"


def classpath(*dirs: Path) -> str:
    """A ``-cp`` value of every jar in ``dirs`` (the JVM's ``dir/*`` wildcard)."""
    return os.pathsep.join(f"{d}/*" for d in dirs)
