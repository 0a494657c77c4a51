"""native: the MPI library's fastest path (shared memory between ranks on one host)."""

from .base import Environment


class Native(Environment):
    name = "native"
    description = "bare metal: the MPI library's default transports (shared memory on a host)"
    # Explicit in the variables (MPICH: MPIR_CVAR_NOLOCAL=0), so a user's shell setting cannot
    # silently turn native into something else.
    shared_memory = True
