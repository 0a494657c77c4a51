"""Files written for the user: whole or not at all, with the permissions the umask gives.

Every file cloudhpc writes for a user (records, app outputs, `files`' .stdout/.stderr, profiles,
CSV exports) goes through this module. A file is filled under no name and only then linked to
its final one, so a reader never sees half a file and a writer killed half-way (even by SIGKILL)
leaves nothing behind:

- On Linux the data goes to an unnamed file (`O_TMPFILE`), which the kernel discards if the
  writer dies; it gets its name with linkat(2). Replacing an existing file takes a link to a
  hidden name and a rename(2), the only moment a name exists that is not the final one.
- Elsewhere (or on file systems without O_TMPFILE) the data goes to a hidden `.NAME.XXXX.tmp` in
  the same directory, removed on any exception.

Both are created with mode 0666 filtered by the umask, as open(2) would (mkstemp's 0600 would
make outputs unreadable to the user's group).

A full disk (ENOSPC), a quota (EDQUOT) or a read-only file system (EROFS) met anywhere while a file
is written becomes errors.EnvironmentFailure naming the file: one line and exit 1 for the user,
and nothing under the final name (a file it would have replaced keeps its old contents).

Only a regular file is ever replaced (docs/failures.md, rule 3): a name that stands for a device
(/dev/full, /dev/null), a FIFO, a socket or a directory, itself or through a symbolic link, is
refused (CloudhpcError) at the moment of the rename, whatever checked it before
(paths.check_output_file refuses it before anything runs).
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import shutil
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from .errors import CloudhpcError, cannot_write, no_room

_NO_TMPFILE = {errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT}


def current_umask() -> int:
    """This process's umask, read without changing it (Linux /proc; else set and restore)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def file_mode() -> int:
    """The mode a new regular file gets from open(2): 0666 minus the umask."""
    return 0o666 & ~current_umask()


def dir_mode() -> int:
    """The mode a new directory gets from mkdir(2): 0777 minus the umask."""
    return 0o777 & ~current_umask()


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def node_kind(path: str | os.PathLike) -> str | None:
    """What `path` names (through symbolic links) when it exists and is not a regular file
    ("a character device", "a FIFO", ...); None for a regular file or nothing."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # nothing there (or a dangling link): a new file may go
        return None
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def check_replaceable(path: str | os.PathLike, what: str = "") -> None:
    """Refuse (one line) to write over `path` unless it is a regular file or nothing."""
    kind = node_kind(path)
    if kind is not None:
        label = f"{what} {path}" if what else str(path)
        raise CloudhpcError(
            f"{label} is {kind}, not a regular file: cloudhpc writes over regular files only"
        )


def replace_file(src: str | os.PathLike, target: str | os.PathLike) -> None:
    """os.replace(src, target) for a file made whole under a hidden name, never over a
    non-file (check_replaceable)."""
    check_replaceable(target)
    os.replace(src, target)


def _hidden_name(target: Path) -> Path:
    # shortened to keep within NAME_MAX (255 bytes) when the final name is near it
    stem = os.fsdecode(os.fsencode(target.name)[:240])
    return target.with_name(f".{stem}.{secrets.token_hex(4)}.tmp")


def _open_unnamed(directory: Path) -> int | None:
    """An O_TMPFILE descriptor in `directory`, or None where the system has none."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag:
        return None
    try:
        return os.open(directory, flag | os.O_RDWR | os.O_CLOEXEC, 0o666)
    except OSError as e:
        if e.errno in _NO_TMPFILE and directory.is_dir():
            return None
        raise


def _linkat_empty_path() -> Callable[..., int] | None:
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).linkat
    except (OSError, AttributeError):
        return None


_LINKAT = _linkat_empty_path() if sys.platform.startswith("linux") else None
_AT_FDCWD, _AT_EMPTY_PATH = -100, 0x1000


def _give_name(fd: int, name: Path) -> None:
    """Link the unnamed file `fd` to `name` (FileExistsError if taken), by the first way that
    works here: linkat(AT_EMPTY_PATH) (root, or unprivileged since Linux 6.10), a link through
    /proc/self/fd (refused with EXDEV in some sandboxes), or a copy under a hidden name."""
    if _LINKAT is not None:
        import ctypes

        if _LINKAT(fd, b"", _AT_FDCWD, os.fsencode(name), _AT_EMPTY_PATH) == 0:
            return
        err = ctypes.get_errno()
        if err == errno.EEXIST:
            raise FileExistsError(err, os.strerror(err), str(name))
    try:
        os.link(f"/proc/self/fd/{fd}", name, follow_symlinks=True)
        return
    except FileExistsError:
        raise
    except OSError:
        pass
    hidden = _hidden_name(name)
    out = os.open(hidden, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(out, "wb") as dst, os.fdopen(os.dup(fd), "rb") as src:
            src.seek(0)
            shutil.copyfileobj(src, dst, 1 << 20)
        os.link(hidden, name)
    finally:
        hidden.unlink(missing_ok=True)


def _publish_unnamed(fd: int, target: Path, replace: bool) -> None:
    if not replace:
        _give_name(fd, target)
        return
    check_replaceable(target)
    hidden = _hidden_name(target)
    _give_name(fd, hidden)
    try:
        replace_file(hidden, target)
    except BaseException:
        hidden.unlink(missing_ok=True)
        raise


def _publish_named(tmp: Path, target: Path, replace: bool) -> None:
    if replace:
        replace_file(tmp, target)
    else:
        os.link(tmp, target)  # never replaces: FileExistsError
        tmp.unlink()


def room_error(directory: str | os.PathLike) -> OSError | None:
    """The error one more block of a new file in `directory` meets now (ENOSPC, EDQUOT, EROFS),
    or None: there is room, or no way to tell. For writes whose own error says too little (a
    short write, a program's output cut short, a rank's file that never appeared)."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag:
        return None
    try:
        fd = os.open(directory, flag | os.O_WRONLY | os.O_CLOEXEC, 0o600)
    except OSError as e:
        return e if no_room(e) else None
    try:
        os.posix_fallocate(fd, 0, os.fstatvfs(fd).f_bsize or 4096)
    except OSError as e:
        return e if no_room(e) else None
    finally:
        os.close(fd)
    return None


@contextmanager
def _no_room_named(path: str | os.PathLike) -> Iterator[None]:
    """A write refused for want of room or of a writable place, as one line naming `path`
    (numpy reports a short write as an OSError without errno: the disk is asked)."""
    try:
        yield
    except OSError as e:
        if not no_room(e) and e.errno is None:
            e = room_error(Path(path).parent) or e
        if no_room(e):
            raise cannot_write(path, e) from None
        raise


@contextmanager
def atomic_file(
    path: str | os.PathLike,
    mode: str = "wb",
    *,
    replace: bool = True,
    fsync: bool = False,
    encoding: str | None = None,
    newline: str | None = None,
) -> Iterator[IO[Any]]:
    """Open `path` for writing; it appears, whole, when the block ends without an exception.

    `mode` is "wb" or "w" (text, UTF-8 unless `encoding`). `replace=False` refuses to replace an
    existing file (FileExistsError, nothing written). `fsync` flushes the data to disk before the
    file gets its name. The file object's descriptor may be handed to a child process.
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_file writes new files: mode 'w' or 'wb', not {mode!r}")
    with _no_room_named(path), _atomic_file(path, mode, replace, fsync, encoding, newline) as fh:
        yield fh


@contextmanager
def _atomic_file(
    path: str | os.PathLike,
    mode: str,
    replace: bool,
    fsync: bool,
    encoding: str | None,
    newline: str | None,
) -> Iterator[IO[Any]]:
    target = Path(path)
    fd = _open_unnamed(target.parent)
    tmp: Path | None = None
    if fd is None:
        tmp = _hidden_name(target)
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    text = mode == "w"
    try:
        with os.fdopen(
            fd,
            mode,
            encoding=(encoding or "utf-8") if text else None,
            newline=newline if text else None,
        ) as fh:
            with _no_room_named(path):  # while the file still holds what it was given
                yield fh
                fh.flush()
                if fsync:
                    os.fsync(fh.fileno())
            if tmp is None:
                _publish_unnamed(fh.fileno(), target, replace)
        if tmp is not None:
            _publish_named(tmp, target, replace)
    except BaseException:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise


@contextmanager
def atomic_path(path: str | os.PathLike, *, replace: bool = True) -> Iterator[Path]:
    """A hidden temporary name beside `path` for libraries that write by name (matplotlib,
    uproot, pyarrow); it becomes `path`, with the umask's mode, when the block ends cleanly."""
    target = Path(path)
    suffix = "".join(target.suffixes[-1:])  # keep the extension: some writers choose by it
    stem = os.fsdecode(os.fsencode(target.stem)[: 230 - len(os.fsencode(suffix))])
    tmp = target.with_name(f".{stem}.{secrets.token_hex(4)}.tmp{suffix}")
    try:
        with _no_room_named(path):
            yield tmp
            if tmp.exists():
                os.chmod(tmp, file_mode() | (stat.S_IMODE(tmp.stat().st_mode) & 0o111))
            _publish_named(tmp, target, replace)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(
    path: str | os.PathLike, write: Callable[[IO[bytes]], Any], *, replace: bool = True
) -> str:
    """Create `path` whole or not at all: `write(file)` fills it (binary). Returns the path."""
    with atomic_file(path, "wb", replace=replace) as fh:
        write(fh)
    return str(path)


def write_bytes(path: str | os.PathLike, data: bytes, *, replace: bool = True) -> str:
    return write_atomic(path, lambda fh: fh.write(data), replace=replace)


def write_text(path: str | os.PathLike, text: str, *, replace: bool = True) -> str:
    return write_bytes(path, text.encode(), replace=replace)


def write_json(
    path: str | os.PathLike,
    data: Any,
    *,
    indent: int | None = 1,
    replace: bool = True,
    fsync: bool = False,
    default: Callable[[Any], Any] | None = None,
) -> str:
    """`data` as strict JSON (jsontext: no NaN or Infinity; and a final newline), whole or not
    at all. `default`: how to write an object JSON has no form for (jsontext's otherwise)."""
    from .jsontext import dumps

    if default is not None:
        data = json.loads(json.dumps(data, default=default))
    with atomic_file(path, "w", replace=replace, fsync=fsync) as fh:
        fh.write(dumps(data, indent=indent) + "\n")
    return str(path)
