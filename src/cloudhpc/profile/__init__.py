"""MPI call profiles of unmodified programs: a PMPI library (pmpi_prof.c, loaded with
LD_PRELOAD), its per-rank files merged into a versioned profile, and TAU / mpiP-style reports.

The package is also the Python API's `cloudhpc.profile(app, params, np=...)` (api/runs.py,
docs/python.md): calling it profiles a run, and `cloudhpc.profile.to_thicket([...])` reads
profiles, whichever of them is reached first.
"""

from ..facade import callable_package
from .model import SCHEMA_VERSION, CallStats, Profile, RankProfile, load_profile

callable_package(__name__, "cloudhpc.api.runs:profile")


def to_thicket(profiles, names=None):
    """A Thicket of several profiles (profile.hatchet.to_thicket; imports hatchet and thicket)."""
    from .hatchet import to_thicket as _to_thicket

    return _to_thicket(profiles, names)


def to_graphframe(profile, per_rank=True):
    """A Hatchet GraphFrame of a profile (profile.hatchet.to_graphframe)."""
    from .hatchet import to_graphframe as _to_graphframe

    return _to_graphframe(profile, per_rank)


__all__ = [
    "SCHEMA_VERSION", "CallStats", "Profile", "RankProfile", "load_profile", "to_graphframe",
    "to_thicket",
]  # fmt: skip
