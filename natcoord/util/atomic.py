"""Atomic, locked file writes: a result on disk is whole, old or new, never half of each.

The files natcoord writes (solutions, model files, figures, sweep CSVs)
go through here, because writing a file in place loses data twice over:
two writers of one path interleave their bytes (two ``simulate --out
same.npz`` at once left a zip with a bad CRC), and a write cut short by
Ctrl-C, SIGKILL or a full disk leaves neither the old file nor the new one.

So a write goes to a temporary file beside the target (same directory, so
same file system: the rename cannot become a copy), which is flushed and
fsynced, then ``os.replace``d onto the target in one step, and the
directory is fsynced so the rename itself survives a crash. A reader sees
the old file or the new one, never a mixture. An exception (KeyboardInterrupt
included) removes the temporary file and leaves the old file as it was; a
SIGKILL can only leave a hidden temporary ``.<name>.<random>.tmp<suffix>``
behind, never a damaged target.

Writers of one path take turns under an advisory lock (``fcntl.flock``) on
a sidecar file ``<path>.lock``: a second writer *waits* up to ``timeout``
seconds (:data:`LOCK_TIMEOUT`) for the first, then writes its own file whole;
if the lock is still held then, it raises :class:`FileLocked` naming the
path. Waiting rather than refusing at once lets short writes (a CSV row, a
figure) from parallel workers simply queue. The lock lives in a sidecar and
not on the target, because the target's inode changes with every rename;
the holder removes the sidecar when it is done, and a waiter that then finds
it locked a removed sidecar locks the new one instead. ``flock`` is released
by the kernel when its holder dies, so a killed writer never leaves a stale
lock. It is advisory: it orders natcoord's writers, not other programs.
Where there is no ``fcntl`` (Windows) writes stay atomic but are not locked.

API: :func:`atomic_write` (a file object), :func:`atomic_path` (a temporary
path for writers that want a file name, e.g. Matplotlib's ``savefig``),
:func:`locked` (the lock alone, e.g. to append CSV rows or to read, merge
and rewrite a file: then pass ``lock=False`` to the writes inside).
"""
from __future__ import annotations

import errno
import os
import secrets
import stat
import time
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path

try:
    import fcntl
except ImportError:          # Windows: writes stay atomic, unlocked (see the module docstring)
    fcntl = None

#: seconds a writer waits for another writer of the same path before :class:`FileLocked`
#: (the default of every ``timeout=None``): long enough for a large ``.npz`` to be written
LOCK_TIMEOUT = 30.0
_POLL = 0.02                 # seconds between attempts to take a held lock


class FileLocked(TimeoutError):
    """Another writer held the lock of ``path`` for longer than the wait allowed.

    The message names the file (``OSError.filename`` is left unset: it would
    turn the message into ``[Errno None] None: path``).
    """

    def __init__(self, path, timeout):
        super().__init__(f"{path}: another writer (process or thread) is writing this file "
                         f"and still held its lock {lock_path(path).name} after {timeout:g} s; "
                         f"wait for it to finish or write to another file")
        self.path = str(path)


def lock_path(path) -> Path:
    """The sidecar ``<path>.lock`` whose ``flock`` orders the writers of ``path``."""
    path = Path(path)
    return path.with_name(path.name + ".lock")


@contextmanager
def locked(path, timeout=None):
    """Hold the advisory write lock of ``path`` for the ``with`` block.

    Waits up to ``timeout`` seconds (``None``: :data:`LOCK_TIMEOUT`, read at
    the call, so a program or test may change it) for another holder, then
    raises :class:`FileLocked`. For writes that are not a whole-file replacement,
    e.g. appending rows to a CSV file (open it with ``"a"`` inside the block),
    or for read-merge-rewrite cycles (use ``atomic_write(path, lock=False)``
    inside: the lock is not re-entrant, a second ``locked(path)`` in the same
    block would wait for itself). ``path``'s directory must exist.
    """
    if fcntl is None:
        yield
        return
    sidecar = lock_path(path)
    descriptor = _acquire(sidecar, path, LOCK_TIMEOUT if timeout is None else timeout)
    try:
        yield
    finally:
        with suppress(FileNotFoundError):    # removed before the release: a waiter that
            os.unlink(sidecar)               # then gets its flock sees it is stale
        os.close(descriptor)                 # releases the flock


def _acquire(sidecar, path, timeout):
    """A descriptor of ``sidecar`` holding its exclusive ``flock``.

    A holder unlinks the sidecar before releasing it, so a waiter that gets
    the lock checks that the sidecar it locked is still the one at the path;
    if not, it locks the current one (else two writers could hold
    "the" lock at once, one on the removed file and one on its successor).
    """
    deadline = time.monotonic() + timeout
    while True:
        descriptor = os.open(sidecar, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            while True:
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise FileLocked(path, timeout) from None
                    time.sleep(_POLL)
            if _is_current(descriptor, sidecar):
                return descriptor
        except BaseException:
            os.close(descriptor)
            raise
        os.close(descriptor)


def _is_current(descriptor, sidecar):
    held = os.fstat(descriptor)
    try:
        current = os.stat(sidecar)
    except FileNotFoundError:
        return False
    return (held.st_dev, held.st_ino) == (current.st_dev, current.st_ino)


@contextmanager
def atomic_path(path, *, lock=True, timeout=None):
    """A temporary path to write; on a clean exit it replaces ``path`` atomically.

    The temporary file exists (empty) in ``path``'s directory and its name
    ends in ``path``'s suffix, for writers that pick the format from the
    name. On leaving the block it is fsynced, given ``path``'s permission
    bits if ``path`` exists, renamed onto ``path`` and the directory fsynced;
    if the block raises (KeyboardInterrupt included) it is removed and
    ``path`` is left as it was. ``lock=False`` when the caller already holds
    :func:`locked` ``(path)``. Refuses a ``path`` that is a directory
    (``IsADirectoryError``) or whose directory does not exist
    (``FileNotFoundError``), naming it.
    """
    path = _target(path)
    with locked(path, timeout) if lock else nullcontext():
        temporary = _reserve_temporary(path)
        try:
            yield temporary
            _sync_file(temporary)
            with suppress(FileNotFoundError):
                os.chmod(temporary, stat.S_IMODE(os.stat(path).st_mode))
            os.replace(temporary, path)
        except BaseException:
            with suppress(FileNotFoundError):
                os.unlink(temporary)
            raise
        _sync_directory(path.parent)


@contextmanager
def atomic_write(path, mode="w", *, lock=True, timeout=None, **open_options):
    """A file object whose contents replace ``path`` atomically on a clean exit.

    ``mode`` ``"w"`` (text) or ``"wb"`` (binary); ``open_options`` go to
    :func:`open` (``encoding=``, ``newline=""`` for the csv module). Same
    guarantees and ``lock``/``timeout`` as :func:`atomic_path`: the file is
    replaced whole or not at all.
    """
    if mode not in ("w", "wt", "wb"):
        raise ValueError(f"atomic_write: mode must be 'w' or 'wb', got {mode!r} (appending is "
                         f"not atomic: open the file with 'a' inside locked(path) instead)")
    with atomic_path(path, lock=lock, timeout=timeout) as temporary:
        with open(temporary, mode, **open_options) as file:
            yield file


def _target(path):
    path = Path(os.fspath(path))
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory: give a file name to write",
                                str(path))
    if not path.parent.is_dir():
        raise FileNotFoundError(errno.ENOENT, f"cannot write: no directory {path.parent}",
                                str(path))
    return path


def _reserve_temporary(path):
    """Create ``.<name>.<random>.tmp<suffix>`` beside ``path`` (mode 0666 less the umask,
    like any new file; ``tempfile`` would make it 0600)."""
    while True:
        temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp{path.suffix}")
        try:
            os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return temporary
        except FileExistsError:
            continue


def _sync_file(path):
    descriptor = os.open(path, os.O_RDWR)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _sync_directory(directory):
    """fsync ``directory`` so the rename is on disk too (POSIX keeps names in the
    directory's own data). Windows cannot open a directory; some file systems
    refuse to fsync one (EINVAL): the rename is atomic all the same."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    except OSError as err:
        if err.errno != errno.EINVAL:
            raise
    finally:
        os.close(descriptor)
