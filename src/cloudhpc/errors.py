"""Errors that reach the user as one line and a non-zero exit, never a traceback."""

from __future__ import annotations

import errno
import os

# A write that failed for want of room or of a writable place: the environment's fault (exit 1),
# not the input's.
NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})
# A path the system refuses to use: too long, a loop of symlinks, a file where a directory must
# be. The user's to fix (exit 2).
PATH_ERRORS = frozenset({errno.ENAMETOOLONG, errno.ELOOP, errno.ENOTDIR})


class CloudhpcError(Exception):
    """A problem the user can fix: printed as `cloudhpc: error: <message>`, exit code 2."""

    exit_code = 2


class RunFailed(CloudhpcError):
    """The parallel run itself failed (a rank crashed, the launcher gave up)."""

    exit_code = 1


class EnvironmentFailure(CloudhpcError):
    """The input was fine but the system could not do the work: a full disk, a read-only place, a
    service that does not answer. One line, exit code 1 (a run is recorded as failed)."""

    exit_code = 1


def no_room(e: BaseException) -> bool:
    """Whether `e` is a write refused for want of space (ENOSPC, EDQUOT) or on a read-only file
    system (EROFS)."""
    return isinstance(e, OSError) and e.errno in NO_ROOM


def cannot_write(path: str | os.PathLike, e: OSError) -> EnvironmentFailure:
    """The one line for a write of `path` that failed with `e`."""
    return EnvironmentFailure(
        f"cannot write {os.fspath(path)}: {e.strerror or os.strerror(e.errno)}"
    )


def require(module: str, what: str, package: str | None = None):
    """Import `module` for `what`, or one line naming the package to install (an optional
    dependency, or an environment installed before it became one)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise CloudhpcError(
            f"{what} needs {package or module}: pip install {package or module!r} "
            "(or reinstall cloudhpc)"
        ) from None
