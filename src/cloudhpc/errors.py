"""Errors that reach the user as one line and a non-zero exit, never a traceback."""


class CloudhpcError(Exception):
    """A problem the user can fix: printed as `cloudhpc: error: <message>`, exit code 2."""

    exit_code = 2


class RunFailed(CloudhpcError):
    """The parallel run itself failed (a rank crashed, the launcher gave up)."""

    exit_code = 1
