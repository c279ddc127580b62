"""A fault-injecting ``FileOps`` for tests: power loss, full disk, failing disk, read-only dir.

``FaultyFileOps`` wraps a real ``FileOps`` (``OsFileOps`` by default) and works on real files,
so everything the storage layer writes can be read back by the ordinary loader afterwards.
It adds three things:

**Power loss.** Every mutation made through it is remembered until it becomes durable:

* data (``pwrite``, ``truncate``) per inode, until ``fsync`` of a descriptor on that inode;
* names (file creation by ``open(.., "rw+")``, ``rename``, ``remove``, ``mkdir``) per
  directory, until ``fsync_dir`` of the directory holding the name (POSIX: a new or renamed
  directory entry is durable only once its directory is fsynced).

``power_loss()`` then puts the disk back the way a machine that lost power could find it:
every unsynced data write is undone (old bytes restored, file length restored) and every
unsynced name operation is undone, newest first (created files and directories vanish,
renames go back, removed files come back), and every descriptor opened through this object is
closed (the process is gone). With ``rng`` the loss is partial, as on a real disk: for each
file a random prefix of its unsynced writes survives, the last surviving one possibly torn
(only a prefix of its bytes landed), and a random prefix of the name operations survives.
``rmtree``/``set_mtime_ms`` are treated as immediately durable (the broker only removes whole
directories long after they stopped mattering).

**Injected errors.** ``inject(errno, ops=..., path_contains=..., after=.., times=..)`` makes
matching operations raise ``OSError(errno)`` (``ENOSPC``, ``EIO``, ``EROFS``, ...);
``partial=True`` on a ``pwrite`` rule first writes half of the data, as a real short write
before ENOSPC does. ``disk_full(free_bytes)`` models a file system with that much space left:
a write that grows files beyond it writes what fits and raises ENOSPC; creating a file on a
full disk raises ENOSPC; overwriting in place, shrinking and removing still work.
``read_only = True`` makes every mutation raise EROFS and refuses write opens (a log dir
remounted read-only). ``clear_faults()`` lifts all of it ("space returns").

**Crash points.** ``on_op`` (a callable ``(op, path, phase)`` with phase ``"before"``/``"after"``,
or ``"mid"`` for a write halfway through its bytes) lets a test tool stop the process at an
exact moment (e.g. SIGKILL itself mid-append); see ``scripts/crash_test.py``.

Op names used in rules and hooks: ``open_read``, ``open_write``, ``create``, ``pread``, ``pwrite``,
``fsync``, ``truncate``, ``rename``, ``remove``, ``mkdir``, ``rmtree``, ``fsync_dir``,
``set_mtime``, ``syncfs`` (makes everything durable at once). Not thread-safe (nor is the storage layer).
"""
from __future__ import annotations

import errno as _errno
import os
import random
import shutil
import tempfile
from dataclasses import field
from pathlib import Path
from typing import Callable

from protocol.deferred import dataclass
from storage.files import FileOps, OsFileOps, PathLike

MUTATING_OPS = frozenset({"open_write", "create", "pwrite", "truncate", "rename", "remove", "mkdir",
                          "rmtree", "set_mtime"})


@dataclass
class FaultRule:
    """Raise ``OSError(errno)`` on matching operations: skip the first ``after`` matches,
    then fail ``times`` of them (None = every one until cleared)."""

    errno: int
    ops: frozenset
    path_contains: str | None = None
    after: int = 0
    times: int | None = None
    partial: bool = False
    seen: int = 0
    fired: int = 0

    def matches(self, op: str, path: str) -> bool:
        if op not in self.ops:
            return False
        if self.path_contains is not None and self.path_contains not in path:
            return False
        self.seen += 1
        if self.seen <= self.after:
            return False
        if self.times is not None and self.fired >= self.times:
            return False
        self.fired += 1
        return True


@dataclass
class _InodeUndo:
    """Unsynced data changes of one inode, oldest first; ``fd`` is our own descriptor on it."""

    fd: int
    path: str
    orig_size: int
    # ("w", offset, old_bytes, length, size_before) or ("t", size_before, new_size, cut_bytes)
    ops: list = field(default_factory=list)


@dataclass
class PowerLossReport:
    files_rolled_back: int = 0
    bytes_dropped: int = 0
    names_rolled_back: int = 0


class FaultyFileOps(FileOps):
    def __init__(self, inner: FileOps | None = None, *, track_unsynced: bool = True):
        self.inner = inner or OsFileOps()
        self.track_unsynced = track_unsynced
        self.rules: list[FaultRule] = []
        self.read_only = False
        self.free_bytes: int | None = None     # None: unlimited
        self.on_op: Callable[[str, str, str], None] | None = None
        self._fd_path: dict[int, str] = {}
        self._undo: dict[tuple[int, int], _InodeUndo] = {}
        self._names: list[tuple] = []           # pending name operations, oldest first
        self._stash: Path | None = None        # made on first use (hard links of removed files)
        self._stash_n = 0
        self.counts: dict[str, int] = {}

    # ---- fault control -----------------------------------------------------------------------
    def inject(self, err: int, *, ops=("pwrite",), path_contains: str | None = None, after: int = 0,
               times: int | None = None, partial: bool = False) -> FaultRule:
        rule = FaultRule(err, frozenset(ops), path_contains, after, times, partial)
        self.rules.append(rule)
        return rule

    def disk_full(self, free_bytes: int = 0) -> None:
        self.free_bytes = free_bytes

    def clear_faults(self) -> None:
        self.rules.clear()
        self.read_only = False
        self.free_bytes = None

    def _check(self, op: str, path: str) -> FaultRule | None:
        self.counts[op] = self.counts.get(op, 0) + 1
        if self.on_op is not None:
            self.on_op(op, path, "before")
        if self.read_only and op in MUTATING_OPS:
            raise OSError(_errno.EROFS, os.strerror(_errno.EROFS), path)
        if op == "create" and self.free_bytes is not None and self.free_bytes <= 0:
            raise OSError(_errno.ENOSPC, os.strerror(_errno.ENOSPC), path)
        for rule in self.rules:
            if rule.matches(op, path):
                if rule.partial and op == "pwrite":
                    return rule
                raise OSError(rule.errno, os.strerror(rule.errno), path)
        return None

    def _after(self, op: str, path: str) -> None:
        if self.on_op is not None:
            self.on_op(op, path, "after")

    # ---- unsynced tracking -------------------------------------------------------------------
    def _inode(self, fd: int) -> _InodeUndo | None:
        if not self.track_unsynced:
            return None
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        u = self._undo.get(key)
        if u is None:
            u = _InodeUndo(os.dup(fd), self._fd_path.get(fd, "?"), st.st_size)
            self._undo[key] = u
        return u

    def _name_op(self, *op) -> None:
        if self.track_unsynced:
            self._names.append(op)

    def _stash_link(self, path: str) -> str | None:
        """A hard link keeping ``path``'s inode alive so a rolled-back remove can restore it."""
        if not self.track_unsynced or not os.path.isfile(path):
            return None
        self._stash_n += 1
        if self._stash is None:
            # beside the file, so a hard link is possible (same file system)
            self._stash = Path(tempfile.mkdtemp(prefix=".faultyfileops-stash-", dir=os.path.dirname(path)))
        dst = str(self._stash / f"{self._stash_n}")
        try:
            os.link(path, dst)
        except OSError:
            shutil.copy2(path, dst)
        return dst

    def unsynced_bytes(self) -> int:
        """Bytes written but not yet fsynced (what a power loss would drop)."""
        return sum(op[3] for u in self._undo.values() for op in u.ops if op[0] == "w")

    @property
    def pending_names(self) -> list[tuple]:
        return list(self._names)

    def power_loss(self, rng: random.Random | None = None) -> PowerLossReport:
        """Drop what was not made durable (see the module docstring); close every descriptor."""
        rep = PowerLossReport()
        for u in self._undo.values():
            ops = u.ops
            keep = rng.randint(0, len(ops)) if rng is not None else 0
            torn = (rng is not None and keep > 0 and ops[keep - 1][0] == "w" and ops[keep - 1][3] > 1
                    and rng.random() < 0.5)
            for i in range(len(ops) - 1, keep - 1, -1):
                self._undo_data(u.fd, ops[i], 0)
                if ops[i][0] == "w":
                    rep.bytes_dropped += ops[i][3]
            if torn:
                op = ops[keep - 1]
                start = rng.randint(1, op[3] - 1)
                self._undo_data(u.fd, op, start)
                rep.bytes_dropped += op[3] - start
            rep.files_rolled_back += keep < len(ops) or torn
            os.close(u.fd)
        self._undo.clear()
        keep_names = rng.randint(0, len(self._names)) if rng is not None else 0
        for op in reversed(self._names[keep_names:]):
            rep.names_rolled_back += 1
            self._undo_name(op)
        self._names.clear()
        if self._file_cache is not None:
            self._file_cache.forget_all()   # closed just below, with every other descriptor
        for fd in list(self._fd_path):
            try:
                os.close(fd)
            except OSError:
                pass
        self._fd_path.clear()
        return rep

    @staticmethod
    def _undo_data(fd: int, op: tuple, start: int) -> None:
        """Undo a data op; for a write, only its bytes from ``start`` on (a torn write)."""
        if op[0] == "w":
            _, offset, old, n, prev_size = op
            if start < len(old):
                os.pwrite(fd, old[start:], offset + start)
            os.ftruncate(fd, max(prev_size, offset + start) if start else prev_size)
        else:
            _, old_size, new_size, cut = op
            os.ftruncate(fd, old_size)
            if cut:
                os.pwrite(fd, cut, new_size)

    @staticmethod
    def _undo_name(op: tuple) -> None:
        kind = op[0]
        if kind == "create":
            try:
                os.remove(op[1])
            except FileNotFoundError:
                pass
        elif kind == "mkdir":
            shutil.rmtree(op[1], ignore_errors=True)
        elif kind == "rename":
            _, src, dst, stash = op
            if os.path.lexists(dst):
                os.replace(dst, src)
            if stash is not None:
                os.replace(stash, dst)
        elif kind == "remove":
            _, path, stash = op
            if stash is not None and not os.path.lexists(path):
                os.replace(stash, path)

    def _durable_dir(self, path: str) -> None:
        """``fsync_dir(path)``: name operations whose entry lives in ``path`` become durable
        (a rename counts as living in its destination's directory)."""
        d = os.path.normpath(path)
        entry = {"create": 1, "mkdir": 1, "remove": 1, "rename": 2}
        self._names = [op for op in self._names if os.path.dirname(op[entry[op[0]]]) != d]

    # ---- FileOps ------------------------------------------------------------------------------
    def open(self, path: PathLike, mode: str = "r") -> int:
        p = str(path)
        if mode == "r":
            op = "open_read"
            self._check(op, p)
            fd = self.inner.open(path, mode)
        else:
            existed = os.path.exists(p)
            op = "open_write" if existed or mode == "rw" else "create"
            self._check(op, p)
            fd = self.inner.open(path, mode)
            if not existed:
                self._name_op("create", os.path.abspath(p))
                if self.track_unsynced:
                    # a new file's data is not durable either: its size is 0 until fsynced
                    self._fd_path[fd] = p
                    self._inode(fd)
        self._fd_path[fd] = p
        self._after(op, p)
        return fd

    def close(self, fd: int) -> None:
        self._fd_path.pop(fd, None)
        self.inner.close(fd)

    def pread(self, fd: int, size: int, offset: int) -> bytes:
        p = self._fd_path.get(fd, "?")
        self._check("pread", p)
        return self.inner.pread(fd, size, offset)

    def pwrite(self, fd: int, data, offset: int) -> int:
        p = self._fd_path.get(fd, "?")
        rule = self._check("pwrite", p)
        view = memoryview(data)
        n = len(view)
        cur = os.fstat(fd).st_size
        limit, fail = n, None
        if rule is not None:
            limit, fail = n // 2, rule.errno
        if self.free_bytes is not None and offset + limit > cur + self.free_bytes:
            limit, fail = max(0, min(limit, cur + self.free_bytes - offset)), _errno.ENOSPC
        if limit > 0:
            if self.on_op is not None and fail is None and limit > 1:
                half = limit // 2
                self._record_write(fd, offset, half)
                self.inner.pwrite(fd, view[:half], offset)
                self.on_op("pwrite", p, "mid")
                self._record_write(fd, offset + half, limit - half)
                self.inner.pwrite(fd, view[half:limit], offset + half)
            else:
                self._record_write(fd, offset, limit)
                self.inner.pwrite(fd, view[:limit], offset)
        if self.free_bytes is not None:
            self.free_bytes = max(0, self.free_bytes - max(0, offset + limit - cur))
        if fail is not None:
            raise OSError(fail, os.strerror(fail), p)
        self._after("pwrite", p)
        return n

    def _record_write(self, fd: int, offset: int, n: int) -> None:
        u = self._inode(fd)
        if u is not None:
            u.ops.append(("w", offset, os.pread(fd, n, offset), n, os.fstat(fd).st_size))

    def fsync(self, fd: int) -> None:
        p = self._fd_path.get(fd, "?")
        self._check("fsync", p)
        self.inner.fsync(fd)
        if self.track_unsynced:
            st = os.fstat(fd)
            u = self._undo.pop((st.st_dev, st.st_ino), None)
            if u is not None:
                os.close(u.fd)
        self._after("fsync", p)

    def truncate(self, fd: int, size: int) -> None:
        p = self._fd_path.get(fd, "?")
        self._check("truncate", p)
        u = self._inode(fd)
        if u is not None:
            cur = os.fstat(fd).st_size
            cut = os.pread(fd, cur - size, size) if size < cur else b""
            u.ops.append(("t", cur, size, cut))
        self.inner.truncate(fd, size)
        self._after("truncate", p)

    def fsize(self, fd: int) -> int:
        return self.inner.fsize(fd)

    def size(self, path: PathLike) -> int:
        return self.inner.size(path)

    def exists(self, path: PathLike) -> bool:
        return self.inner.exists(path)

    def is_file(self, path: PathLike) -> bool:
        return self.inner.is_file(path)

    def is_dir(self, path: PathLike) -> bool:
        return self.inner.is_dir(path)

    def rename(self, src: PathLike, dst: PathLike) -> None:
        s, d = os.path.abspath(str(src)), os.path.abspath(str(dst))
        self._check("rename", s)
        stash = self._stash_link(d) if os.path.exists(d) else None
        self.inner.rename(src, dst)
        self._name_op("rename", s, d, stash)
        for fd, p in list(self._fd_path.items()):
            if os.path.abspath(p) == s:
                self._fd_path[fd] = d
        self._after("rename", s)

    def remove(self, path: PathLike, missing_ok: bool = True) -> bool:
        p = os.path.abspath(str(path))
        self._check("remove", p)
        stash = self._stash_link(p)
        existed = self.inner.remove(path, missing_ok)
        if existed:
            self._name_op("remove", p, stash)
        self._after("remove", p)
        return existed

    def listdir(self, path: PathLike) -> list[str]:
        return self.inner.listdir(path)

    def list_files(self, path: PathLike) -> list[str]:
        return self.inner.list_files(path)

    def list_dirs(self, path: PathLike) -> list[str]:
        return self.inner.list_dirs(path)

    def mkdir(self, path: PathLike, exist_ok: bool = True) -> None:
        p = os.path.abspath(str(path))
        if os.path.isdir(p):
            self.inner.mkdir(path, exist_ok)
            return
        self._check("mkdir", p)
        # record every level that did not exist, outermost first
        missing = []
        q = p
        while q and not os.path.exists(q):
            missing.append(q)
            q = os.path.dirname(q)
        self.inner.mkdir(path, exist_ok)
        for m in reversed(missing):
            self._name_op("mkdir", m)
        self._after("mkdir", p)

    def rmtree(self, path: PathLike) -> None:
        p = str(path)
        self._check("rmtree", p)
        self.inner.rmtree(path)

    def mtime_ms(self, path: PathLike) -> int:
        return self.inner.mtime_ms(path)

    def set_mtime_ms(self, path: PathLike, ms: int) -> None:
        self._check("set_mtime", str(path))
        self.inner.set_mtime_ms(path, ms)

    def syncfs(self, path: PathLike) -> bool:
        """Everything written so far becomes durable (one file system is all there is here)."""
        p = os.path.abspath(str(path))
        self._check("syncfs", p)
        self.inner.syncfs(path)
        for u in self._undo.values():
            os.close(u.fd)
        self._undo.clear()
        self._names.clear()
        self._after("syncfs", p)
        return True

    def fsync_dir(self, path: PathLike) -> None:
        p = os.path.abspath(str(path))
        self._check("fsync_dir", p)
        self.inner.fsync_dir(path)
        self._durable_dir(p)
        self._after("fsync_dir", p)

    def cleanup(self) -> None:
        """Remove the stash of hard links kept for rolling back removes."""
        if self._stash is not None:
            shutil.rmtree(self._stash, ignore_errors=True)


__all__ = ["FaultyFileOps", "FaultRule", "PowerLossReport", "MUTATING_OPS"]
