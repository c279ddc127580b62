"""Every file-system call the storage layer makes goes through one small interface.

Why: segments, indexes and checkpoints need a handful of POSIX operations (positional
reads/writes, fsync, truncate, rename); putting them behind ``FileOps`` lets tests inject
faults (a failing fsync, a torn write, a full disk) without monkey-patching ``os``.

Files are addressed by integer descriptors returned from ``open``; descriptors are plain
``os`` fds in ``OsFileOps``. Modes (``open(path, mode)``):

    "r"    read only; the file must exist
    "rw"   read/write; the file must exist
    "rw+"  read/write; created empty if missing (never truncated)

Crash stance: ``write_atomic`` writes ``<path>.tmp``, fsyncs it, renames it over ``path`` and
fsyncs the directory, so a reader sees either the old or the new content, never a mix.
Nothing here reads the wall clock.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Union

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
    """The interface. Subclasses override what they need; ``OsFileOps`` is the real thing."""

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

    def write_atomic(self, path: PathLike, data: bytes) -> None:
        """Replace ``path`` with ``data`` atomically and durably (tmp, fsync, rename, fsync dir)."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        fd = self.open(tmp, "rw+")
        try:
            self.truncate(fd, 0)
            self.pwrite(fd, data, 0)
            self.fsync(fd)
        finally:
            self.close(fd)
        self.rename(tmp, path)
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


DEFAULT_FILE_OPS = OsFileOps()
