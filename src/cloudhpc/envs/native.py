"""native: the MPI library's fastest path (shared memory between ranks on one host)."""

from .base import Environment


class Native(Environment):
    name = "native"
    description = "bare metal: MPICH's default transports (shared memory between ranks on a host)"

    def variables(self) -> dict[str, str]:
        # Explicit, so a user's shell setting cannot silently turn native into something else.
        return {"MPIR_CVAR_NOLOCAL": "0"}
