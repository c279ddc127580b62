"""Every file-system call the storage layer makes goes through one small interface.

Why: segments, indexes and checkpoints need a handful of POSIX operations (positional
reads/writes, fsync, truncate, rename); putting them behind ``FileOps`` lets tests inject
faults (a failing fsync, a torn write, a full disk) without monkey-patching ``os``.

Files are addressed by integer descriptors returned from ``open``; descriptors are plain
``os`` fds in ``OsFileOps``. Modes (``open(path, mode)``):

    "r"    read only; the file must exist
    "rw"   read/write; the file must exist
    "rw+"  read/write; created empty if missing (never truncated)

Long-lived files (segments, indexes) are held through ``CachedFile`` handles whose
descriptors live in a bounded ``FileCache`` (least recently used closed first, never one in
use), so a broker can hold more partitions than its descriptor limit allows open files.

Crash stance: ``write_atomic`` writes ``<path>.tmp``, fsyncs it, renames it over ``path`` and
fsyncs the directory, so a reader sees either the old or the new content, never a mix.
Nothing here reads the wall clock.
"""
from __future__ import annotations

import errno
import logging
import os
import threading
import time
from pathlib import Path
from typing import Union

from storage.lru import PinnedLru

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]

_MODES = {
    "r": os.O_RDONLY,
    "rw": os.O_RDWR,
    "rw+": os.O_RDWR | os.O_CREAT,
}
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class PathAttr:
    """A file-path attribute kept as a string in ``_<name>`` (what the ``os`` calls take);
    reading the attribute gives a ``Path``, built on first read and cached. A broker opens
    thousands of segment and index files at start-up, and building ``Path`` objects for each
    was most of that cost, while few of them are ever read as ``Path``."""

    def __set_name__(self, owner, name: str) -> None:
        self.raw, self.cache = "_" + name, "_" + name + "_obj"

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        p = getattr(obj, self.cache)
        if p is None:
            p = Path(getattr(obj, self.raw))
            setattr(obj, self.cache, p)
        return p

    def __set__(self, obj, value) -> None:
        setattr(obj, self.raw, os.fspath(value))
        setattr(obj, self.cache, value if isinstance(value, Path) else None)


class FileOps:
    """The interface. Subclasses override what they need; ``OsFileOps`` is the real thing.

    Long-lived files (segments, indexes) are held through ``cached(path, mode)``: a
    ``CachedFile`` whose descriptor lives in this object's ``file_cache`` and may be closed
    between uses (see ``FileCache``); short-lived ones use ``open``/``close`` directly.
    """

    _file_cache: "FileCache | None" = None

    @property
    def file_cache(self) -> "FileCache":
        """The cache of open descriptors of the files held through this object."""
        c = self._file_cache
        if c is None:
            c = self._file_cache = FileCache()
        return c

    def cached(self, path: PathLike, mode: str = "rw", fd: int | None = None) -> "CachedFile":
        """A handle on ``path`` whose descriptor the file cache opens on use and may close
        while idle. ``fd``: a descriptor just opened on it (it enters the cache)."""
        return self.file_cache.handle(self, path, mode, fd)

    def open_cached(self, path: PathLike, mode: str = "rw+") -> "CachedFile":
        """``cached(path, mode)`` opened now (creating the file with ``"rw+"``)."""
        return self.file_cache.open(self, path, mode)

    def open(self, path: PathLike, mode: str = "r") -> int:
        raise NotImplementedError

    def close(self, fd: int) -> None:
        raise NotImplementedError

    def pread(self, fd: int, size: int, offset: int) -> bytes:
        """Up to ``size`` bytes at ``offset`` (fewer only at end of file)."""
        raise NotImplementedError

    def pwrite(self, fd: int, data, offset: int) -> int:
        """Write all of ``data`` at ``offset``; returns the byte count."""
        raise NotImplementedError

    def fsync(self, fd: int) -> None:
        raise NotImplementedError

    def truncate(self, fd: int, size: int) -> None:
        """Set the file length (shrinks, or grows sparsely with zeros)."""
        raise NotImplementedError

    def fsize(self, fd: int) -> int:
        raise NotImplementedError

    def size(self, path: PathLike) -> int:
        raise NotImplementedError

    def exists(self, path: PathLike) -> bool:
        raise NotImplementedError

    def is_file(self, path: PathLike) -> bool:
        raise NotImplementedError

    def is_dir(self, path: PathLike) -> bool:
        raise NotImplementedError

    def rename(self, src: PathLike, dst: PathLike) -> None:
        raise NotImplementedError

    def remove(self, path: PathLike, missing_ok: bool = True) -> bool:
        """Remove a file; True if it existed."""
        raise NotImplementedError

    def listdir(self, path: PathLike) -> list[str]:
        raise NotImplementedError

    def list_files(self, path: PathLike) -> list[str]:
        """Names of the regular files in a directory."""
        return [n for n in self.listdir(path) if self.is_file(os.path.join(path, n))]

    def list_dirs(self, path: PathLike) -> list[str]:
        """Names of the subdirectories of a directory."""
        return [n for n in self.listdir(path) if self.is_dir(os.path.join(path, n))]

    def mkdir(self, path: PathLike, exist_ok: bool = True) -> None:
        raise NotImplementedError

    def rmtree(self, path: PathLike) -> None:
        raise NotImplementedError

    def mtime_ms(self, path: PathLike) -> int:
        raise NotImplementedError

    def set_mtime_ms(self, path: PathLike, ms: int) -> None:
        raise NotImplementedError

    def fsync_dir(self, path: PathLike) -> None:
        raise NotImplementedError

    # -- helpers built on the primitives (fault injection sees the primitives) --

    def read_file(self, path: PathLike) -> bytes:
        fd = self.open(path, "r")
        try:
            size = self.fsize(fd)
            return self.pread(fd, size, 0)
        finally:
            self.close(fd)

    def syncfs(self, path: PathLike) -> bool:
        """Make everything written on the file system holding ``path`` durable at once
        (Linux ``syncfs``); False where that is not available (fsync file by file then)."""
        return False

    def write_atomic(self, path: PathLike, data: bytes, durable: bool = True) -> None:
        """Replace ``path`` with ``data`` atomically and durably (tmp, fsync, rename, fsync dir).
        ``durable=False``: atomic only, for a caller that makes it durable later (``syncfs``)."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        fd = self.open(tmp, "rw+")
        try:
            self.truncate(fd, 0)
            self.pwrite(fd, data, 0)
            if durable:
                self.fsync(fd)
        finally:
            self.close(fd)
        self.rename(tmp, path)
        if durable:
            self.fsync_dir(path.parent)


class OsFileOps(FileOps):
    """``FileOps`` over ``os.*``."""

    def open(self, path: PathLike, mode: str = "r") -> int:
        try:
            flags = _MODES[mode]
        except KeyError:
            raise ValueError(f"unknown file mode {mode!r}") from None
        return os.open(path, flags | _CLOEXEC, 0o644)

    def close(self, fd: int) -> None:
        os.close(fd)

    def pread(self, fd: int, size: int, offset: int) -> bytes:
        data = os.pread(fd, size, offset)
        if len(data) == size or not data:
            return data
        # A short read before EOF is legal POSIX; keep reading until EOF or size.
        parts = [data]
        got = len(data)
        while got < size:
            more = os.pread(fd, size - got, offset + got)
            if not more:
                break
            parts.append(more)
            got += len(more)
        return b"".join(parts)

    def pwrite(self, fd: int, data, offset: int) -> int:
        view = memoryview(data)
        total = len(view)
        done = 0
        while done < total:
            done += os.pwrite(fd, view[done:], offset + done)
        return total

    def fsync(self, fd: int) -> None:
        os.fsync(fd)

    def truncate(self, fd: int, size: int) -> None:
        os.ftruncate(fd, size)

    def fsize(self, fd: int) -> int:
        return os.fstat(fd).st_size

    def size(self, path: PathLike) -> int:
        return os.stat(path).st_size

    def exists(self, path: PathLike) -> bool:
        return os.path.exists(path)

    def is_file(self, path: PathLike) -> bool:
        return os.path.isfile(path)

    def is_dir(self, path: PathLike) -> bool:
        return os.path.isdir(path)

    def rename(self, src: PathLike, dst: PathLike) -> None:
        os.replace(src, dst)

    def remove(self, path: PathLike, missing_ok: bool = True) -> bool:
        try:
            os.remove(path)
            return True
        except FileNotFoundError:
            if missing_ok:
                return False
            raise

    def listdir(self, path: PathLike) -> list[str]:
        return os.listdir(path)

    def list_files(self, path: PathLike) -> list[str]:
        # d_type from the directory listing: no stat per entry (thousands at start-up)
        with os.scandir(path) as it:
            return [e.name for e in it if e.is_file()]

    def list_dirs(self, path: PathLike) -> list[str]:
        with os.scandir(path) as it:
            return [e.name for e in it if e.is_dir()]

    def mkdir(self, path: PathLike, exist_ok: bool = True) -> None:
        os.makedirs(path, exist_ok=exist_ok)

    def rmtree(self, path: PathLike) -> None:
        import shutil  # here, not at start-up: it imports bz2, lzma and fnmatch (~2 ms)
        shutil.rmtree(path, ignore_errors=False)

    def mtime_ms(self, path: PathLike) -> int:
        return os.stat(path).st_mtime_ns // 1_000_000

    def set_mtime_ms(self, path: PathLike, ms: int) -> None:
        ns = ms * 1_000_000
        os.utime(path, ns=(ns, ns))

    def syncfs(self, path: PathLike) -> bool:
        fn = _libc_syncfs()
        if fn is None:
            return False
        fd = os.open(path, os.O_RDONLY | _CLOEXEC)
        try:
            if fn(fd) != 0:
                import ctypes
                err = ctypes.get_errno()
                raise OSError(err, os.strerror(err), os.fspath(path))
        finally:
            os.close(fd)
        return True

    def fsync_dir(self, path: PathLike) -> None:
        try:
            fd = os.open(path, os.O_RDONLY | _CLOEXEC)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass  # some file systems refuse fsync on directories; the rename is still atomic
        finally:
            os.close(fd)


# ---------------------------------------------------------------------------------------------
# the cache of open descriptors

_FD_EXHAUSTED = (errno.EMFILE, errno.ENFILE)
RESERVED_FDS_MIN = 64
"""Descriptors always left outside the file cache (client sockets, checkpoints, listings)."""


def nofile_limit() -> int:
    """The process's soft ``RLIMIT_NOFILE`` (1M when unlimited or unknown)."""
    try:
        import resource
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return 1 << 20
    return soft if 0 < soft < (1 << 20) else 1 << 20


def capacity_for_limit(limit: int) -> int:
    """How many segment and index files may stay open under a descriptor limit: three
    quarters of it, the rest (at least ``RESERVED_FDS_MIN``) left for client sockets and
    short-lived files; never below 8."""
    return max(8, limit - max(RESERVED_FDS_MIN, limit // 4))


def count_open_fds() -> int:
    """Descriptors this process has open now (-1 where /proc is missing); O(open fds)."""
    try:
        return len(os.listdir("/proc/self/fd")) - 1   # minus the listing's own
    except OSError as exc:
        return nofile_limit() if exc.errno in _FD_EXHAUSTED else -1   # not even one to list with


class FdExhaustionLog:
    """Logs running out of descriptors at most once per ``interval_s``, with the limit, the
    count open and how many failures were held back (a broker at its limit fails many
    opens and accepts a second; one line each would bury everything else)."""

    def __init__(self, interval_s: float = 10.0):
        self.interval_s = interval_s
        self.total = 0
        self._last: float | None = None
        self._held = 0
        self._lock = threading.Lock()

    def note(self, where: str, cache: "FileCache | None" = None) -> bool:
        """Count one failure at ``where``; True if it was logged."""
        now = time.monotonic()
        with self._lock:
            self.total += 1
            if self._last is not None and now - self._last < self.interval_s:
                self._held += 1
                return False
            held, self._held, self._last = self._held, 0, now
        cache = cache or DEFAULT_FILE_OPS.file_cache
        log.warning("out of file descriptors (%s): limit %d, %d open, %d of them segment/index files "
                    "(file cache capacity %d); %d similar failure(s) held back in the last %.0f s",
                    where, nofile_limit(), count_open_fds(), len(cache), cache.capacity, held,
                    self.interval_s)
        return True


FD_EXHAUSTION = FdExhaustionLog()


class FileCache:
    """A bounded set of open descriptors of long-lived files (Kafka holds one per segment
    and maps its indexes; here the total is bounded so a broker with more partitions than
    ``ulimit -n`` keeps working, reopening files as they are used).

    Invariants: a ``CachedFile`` with a descriptor is in the LRU exactly once; a pinned one
    (an acquire without its release: a read or write in flight, possibly in the cleaner's
    thread) is never closed; after an open, at most ``capacity`` descriptors are held
    unless more are pinned. Thread-safe (one lock; the event loop and the cleaner share it).

    Reopening a file whose descriptor was evicted uses mode ``"rw"`` for one created with
    ``"rw+"``: a file removed from under the broker fails the next use instead of coming
    back empty. The kernel keeps written data in the page cache whatever descriptor wrote
    it, and ``fsync`` on a new descriptor flushes the inode's dirty pages, so closing an
    idle descriptor loses nothing and defers no flush.
    """

    def __init__(self, capacity: int | None = None):
        self._lock = threading.Lock()
        self._lru = PinnedLru(_pins_of)
        self._capacity = capacity
        self._mru: "CachedFile | None" = None   # the handle last added or touched (skip re-touching it)
        self.opens = 0          # descriptors opened (first opens and reopens)
        self.evictions = 0      # descriptors closed to stay within capacity

    @property
    def capacity(self) -> int:
        if self._capacity is None:
            self._capacity = capacity_for_limit(nofile_limit())
        return self._capacity

    def set_capacity(self, capacity: int | None) -> None:
        """A new bound (None: derived from the current limit); closes what is now too many."""
        with self._lock:
            self._capacity = max(1, capacity) if capacity is not None else None
            self._evict_locked(self.capacity)

    def __len__(self) -> int:
        return len(self._lru)

    @property
    def pinned(self) -> int:
        with self._lock:
            return self._lru.pinned()

    def handle(self, ops: "FileOps", path: PathLike, mode: str, fd: int | None = None) -> "CachedFile":
        h = CachedFile(self, ops, path, mode)
        if fd is not None:
            with self._lock:
                h.fd = fd
                h.mode = _REOPEN_MODE.get(mode, mode)
                self.opens += 1
                self._lru.add(h)
                self._mru = h
                self._evict_locked(self.capacity)
        return h

    def shrink(self, fraction: float = 0.125, minimum: int = 8) -> int:
        """Give descriptors back to the process (it ran out): close a share of the idle
        ones and lower the capacity to what is left. Returns how many were closed."""
        with self._lock:
            return self._shrink_locked(fraction, minimum)

    def _shrink_locked(self, fraction: float, minimum: int) -> int:
        n = len(self._lru)
        target = max(0, n - max(minimum, int(n * fraction)))
        closed = self._evict_locked(target)
        self._capacity = max(8, min(self.capacity, len(self._lru)))
        return closed

    def close_all(self) -> None:
        """Close every idle descriptor (they reopen on use)."""
        with self._lock:
            self._evict_locked(0)

    def forget_all(self) -> None:
        """Drop every descriptor without closing it: someone else already closed them all
        (a simulated power loss closes everything its FileOps opened)."""
        with self._lock:
            for h in list(self._lru):
                h.fd = None
                self._lru.discard(h)

    # -- used by CachedFile ----------------------------------------------------------------
    def _evict_locked(self, capacity: int) -> int:
        victims = self._lru.evict(capacity)
        for h in victims:
            fd, h.fd = h.fd, None
            try:
                h.ops.close(fd)
            except OSError:
                pass
        self.evictions += len(victims)
        return len(victims)

    def _acquire(self, h: "CachedFile") -> int:
        with self._lock:
            fd = h.fd
            if fd is not None:
                h.pins += 1
                if self._mru is not h:
                    self._lru.touch(h)
                    self._mru = h
                return fd
            return self._reopen_locked(h)

    def _reopen_locked(self, h: "CachedFile") -> int:
        """Open an evicted (or not yet opened) handle and pin it."""
        if h.closing:
            raise OSError(errno.EBADF, f"{h.path} is closed")
        fd = self._open_locked(h)
        h.pins += 1
        self._lru.add(h)
        self._mru = h
        return fd

    def open(self, ops: "FileOps", path: PathLike, mode: str) -> "CachedFile":
        """A handle on ``path`` opened now (e.g. to create the file), its descriptor idle in
        the cache; running out of descriptors is met as on a reopen."""
        h = CachedFile(self, ops, path, mode)
        with self._lock:
            self._open_locked(h)
            self._lru.add(h)
            self._mru = h
        return h

    def _open_locked(self, h: "CachedFile") -> int:
        """Open ``h`` (not in the LRU yet); on EMFILE give idle descriptors back, log, retry once."""
        # make room first, so the new descriptor fits the capacity
        self._evict_locked(self.capacity - 1)
        try:
            fd = h.ops.open(h._path, h.mode)
        except OSError as exc:
            if exc.errno not in _FD_EXHAUSTED:
                raise
            self._shrink_locked(0.25, 8)
            FD_EXHAUSTION.note(f"opening {h._path}", self)
            try:
                fd = h.ops.open(h._path, h.mode)   # fails again if nothing was freed
            except OSError as again:
                if again.errno not in _FD_EXHAUSTED:
                    raise
                raise OSError(again.errno, f"Too many open files (descriptor limit {nofile_limit()}, "
                              f"{len(self._lru)} segment/index files open)", h._path) from None
        h.fd = fd
        h.mode = _REOPEN_MODE.get(h.mode, h.mode)
        self.opens += 1
        return fd

    def _release(self, h: "CachedFile") -> None:
        # Only the thread that pinned a handle unpins it (a handle is used by one thread at a
        # time: the event loop, or the cleaner's thread for the segment it is writing), and
        # an eviction reads the count under the lock, so the decrement needs no lock: seen
        # before it, the pin protects a read that is still running; after it, nothing.
        if h.pins <= 0:
            raise ValueError(f"{h!r} is not pinned")
        h.pins -= 1
        if h.closing:
            self._drop_if_idle(h)

    def _drop_if_idle(self, h: "CachedFile") -> None:
        """A closing handle's last use ended: close its descriptor now."""
        with self._lock:
            if h.fd is not None and not h.pins:
                self._drop_locked(h)

    def _drop_locked(self, h: "CachedFile") -> None:
        self._lru.discard(h)
        fd, h.fd = h.fd, None
        if fd is not None:
            h.ops.close(fd)

    def _close(self, h: "CachedFile") -> None:
        with self._lock:
            h.closing = True
            if h.fd is not None and not h.pins:
                self._drop_locked(h)


_REOPEN_MODE = {"rw+": "rw"}


def _pins_of(h: "CachedFile") -> int:
    return h.pins


class CachedFile:
    """A long-lived file whose descriptor the ``FileCache`` holds while it is used and may
    close while it is idle. Every operation pins the descriptor for its duration; callers
    never keep a raw descriptor across their own calls. ``close`` is final (pending uses
    finish first); ``path`` follows renames made by the owner."""

    __slots__ = ("cache", "ops", "_path", "mode", "fd", "closing", "pins", "__weakref__")

    def __init__(self, cache: FileCache, ops: "FileOps", path: PathLike, mode: str):
        self.cache = cache
        self.ops = ops
        self._path = os.fspath(path)
        self.mode = mode
        self.fd: int | None = None
        self.closing = False
        self.pins = 0           # uses in flight (see FileCache._release)

    @property
    def path(self) -> str:
        return self._path

    @path.setter
    def path(self, value: PathLike) -> None:
        self._path = os.fspath(value)

    @property
    def is_open(self) -> bool:
        """True while a descriptor is held (not evicted, not closed)."""
        return self.fd is not None

    def acquire(self) -> int:
        """The descriptor, pinned until ``release`` (opened first if it was evicted)."""
        return self.cache._acquire(self)

    def release(self) -> None:
        self.cache._release(self)

    # pread and pwrite are the hot path (every fetch and produce): acquire and release
    # inlined, same steps as FileCache._acquire/_release.
    def pread(self, size: int, offset: int) -> bytes:
        cache = self.cache
        with cache._lock:
            fd = self.fd
            if fd is None:
                fd = cache._reopen_locked(self)
            else:
                self.pins += 1
                if cache._mru is not self:       # already the most recent: nothing to move
                    cache._lru.touch(self)
                    cache._mru = self
        try:
            return self.ops.pread(fd, size, offset)
        finally:
            self.pins -= 1
            if self.closing:
                cache._drop_if_idle(self)

    def pwrite(self, data, offset: int) -> int:
        cache = self.cache
        with cache._lock:
            fd = self.fd
            if fd is None:
                fd = cache._reopen_locked(self)
            else:
                self.pins += 1
                if cache._mru is not self:       # already the most recent: nothing to move
                    cache._lru.touch(self)
                    cache._mru = self
        try:
            return self.ops.pwrite(fd, data, offset)
        finally:
            self.pins -= 1
            if self.closing:
                cache._drop_if_idle(self)

    def fsync(self) -> None:
        fd = self.cache._acquire(self)
        try:
            self.ops.fsync(fd)
        finally:
            self.cache._release(self)

    def truncate(self, size: int) -> None:
        fd = self.cache._acquire(self)
        try:
            self.ops.truncate(fd, size)
        finally:
            self.cache._release(self)

    def fsize(self) -> int:
        fd = self.cache._acquire(self)
        try:
            return self.ops.fsize(fd)
        finally:
            self.cache._release(self)

    def evict(self) -> None:
        """Close the descriptor now if nothing uses it (it reopens on the next use)."""
        with self.cache._lock:
            if self.fd is not None and not self.pins:
                self.cache._drop_locked(self)

    def close(self) -> None:
        """Final: close the descriptor (at the last release if in use)."""
        self.cache._close(self)

    def __repr__(self) -> str:
        return f"CachedFile({self._path!r}, fd={self.fd}{', closed' if self.closing else ''})"


_SYNCFS: list = []


def _libc_syncfs():
    """libc's ``syncfs(int fd)`` (Linux), or None."""
    if not _SYNCFS:
        fn = None
        try:
            import ctypes
            import sys
            if sys.platform.startswith("linux"):
                fn = ctypes.CDLL(None, use_errno=True).syncfs
                fn.argtypes = [ctypes.c_int]
                fn.restype = ctypes.c_int
        except (ImportError, OSError, AttributeError):
            fn = None
        _SYNCFS.append(fn)
    return _SYNCFS[0]


DEFAULT_FILE_OPS = OsFileOps()
