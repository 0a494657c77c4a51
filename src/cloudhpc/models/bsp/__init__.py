"""bsp: vertex-centric graph processing in supersteps (Pregel / Giraph), the fourth model.

The graph is partitioned over the ranks (dense ids 0..V-1: owner id % P; sparse ids such as
k-mer codes: a hash of the id). A rank holds its vertices and their out-edges as NumPy arrays
(`Partition`: global ids, CSR of out-edges with global target ids, named vertex and edge arrays,
an optional ragged per-vertex payload). A vertex program (`VertexProgram`) is called once per
superstep per partition and runs numba kernels over all of its active vertices: no Python call
per vertex. It reads the messages of the last superstep (`step.inbox`), updates `step.values`,
sends (`step.send(gids, rows)`, `step.send_along_edges(values, mask, edge_op, weight)`), votes to
halt, contributes to aggregators and requests mutations (`remove_vertices`, `remove_edges`,
`merge_into`). Messages are combined before sending (sum/min/max or a user njit function); a
superstep's communication is one Alltoall of a header (rows per rank, counts, aggregator partials)
and Alltoallvs of packed buffers with the counts it announced. Messages along edges with a
built-in combiner take the sparse-product path (edgeplan.py): a local sparse matrix-vector
product over the rank's edges, pulling or pushing by the frontier's density, and one Alltoallv of
combined values; the edges' placement is chosen from the measured degrees (placement.py). At
the barrier mutations are applied, and `program.master(m)` runs on every rank with the same
global facts: it can switch `m.phase`, set `m.globals`, wake every vertex or halt. The run ends
when every vertex has voted to halt and no message is in flight, when the master halts, or at
the superstep limit.

    part = build_graph(engine, src, dst, n_vertices=V)          # collective
    result = run_bsp(engine, part, MyProgram(), timer=ctx, progress=ctx.progress)
    values = gather_values(engine, part, "rank")                 # rank 0: array over 0..V-1

Runs on the SPMD engines (mpi, serial) with the same answers; a driver engine (ray) is refused.
See docs/DEVELOPING.md, "Writing a vertex program".
"""

from .graph import build_graph, gather_values
from .partition import Partition, Ragged
from .program import Inbox, Master, MergeBatch, Superstep, VertexProgram, concat_payload
from .runner import BSPResult, run_bsp

__all__ = [
    "BSPResult",
    "Inbox",
    "Master",
    "MergeBatch",
    "Partition",
    "Ragged",
    "Superstep",
    "VertexProgram",
    "build_graph",
    "concat_payload",
    "gather_values",
    "run_bsp",
]
