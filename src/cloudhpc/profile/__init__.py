"""MPI call profiles of unmodified programs: a PMPI library (pmpi_prof.c, loaded with
LD_PRELOAD), its per-rank files merged into a versioned profile, and TAU / mpiP-style reports."""

from .model import SCHEMA_VERSION, CallStats, Profile, RankProfile, load_profile

__all__ = ["SCHEMA_VERSION", "CallStats", "Profile", "RankProfile", "load_profile"]
