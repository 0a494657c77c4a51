"""MPI implementations: one module each, behind one registry (base.py says what each provides).

The only place that knows an implementation's names. Registered by "module:Class", made on
first use, so a run imports only the implementation it uses.
"""

from .base import (
    DEFAULT,
    IMPLEMENTATIONS,
    MpiImplementation,
    Reach,
    Transport,
    Where,
    get_implementation,
    implementation_names,
    register_implementation,
)

IMPLEMENTATIONS.update(
    {
        "mpich": "cloudhpc.mpi.mpich:Mpich",
        "openmpi": "cloudhpc.mpi.openmpi:OpenMpi",
        "intelmpi": "cloudhpc.mpi.intelmpi:IntelMpi",
    }
)

__all__ = [
    "DEFAULT",
    "IMPLEMENTATIONS",
    "MpiImplementation",
    "Reach",
    "Transport",
    "Where",
    "get_implementation",
    "implementation_names",
    "register_implementation",
]
