"""Generate the PMPI wrappers from one table (mpi_calls.txt), as mpiP generates its wrappers from
prototype lists (make-wrappers.py, mpi.protos.txt.in).

Each table line names a RULE and gives the call's standard C prototype; this module writes

- `pmpi_calls.h`: `#define FUNCS(X) X(Init) X(Send) ...`, the list pmpi_prof.c numbers its
  counters by, and
- `pmpi_wrappers.inc`: one wrapper per call, plus its MPI-4 large-count variant `MPI_Name_c`
  where the table marks one (`COUNT`, `DISP`, `ACOUNT` parameters), under the guards the library
  needs (`HAVE_LARGE_COUNT`, `HAVE_MPI4_CALLS`: see pmpi_prof.c).

A Python generator run at build time (profile/build.py), not an X-macro header: the wrappers
differ in their parameter lists (300 calls in 60 shapes), const qualifiers and large-count types,
which C's preprocessor cannot take apart; here each call is one line of its real prototype, and
the accounting is written once per shape (RULES) in terms of the standard's parameter names.

Every wrapper has one form: pass straight to PMPI_ when called from inside another wrapper (the
MPI library calling itself), else time the PMPI_ call, let the rule account what it moved (`pre`
before the call, `post` after it, `after` once the call site is known), and record it
(`finish` in pmpi_prof.c).

    python -m cloudhpc.profile.wrappers OUTDIR   # writes the two files into OUTDIR
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

TABLE_NAME = "mpi_calls.txt"
CALLS_HEADER = "pmpi_calls.h"
WRAPPERS_FILE = "pmpi_wrappers.inc"
# Written by hand in pmpi_prof.c (they set the library up and write the profile)
HAND_WRITTEN = ("Init", "Init_thread", "Finalize", "Abort")

# Large-count placeholders: (int variant, _c variant)
PLACEHOLDERS = {"COUNT": ("int", "MPI_Count"), "DISP": ("int", "MPI_Aint"),
                "ACOUNT": ("MPI_Aint", "MPI_Count")}  # fmt: skip
GUARDS = {"mpi4": "HAVE_MPI4_CALLS"}


@dataclass(frozen=True)
class Rule:
    """C statements around one call. Snippets name the call's parameters by their standard
    names; `@F` is the call's counter (F_Send), `@0`, `@1` the rule's arguments; `A` is the
    call's acc_t, `rc` its return code, `site` its call-site index (in `after`)."""

    pre: str = ""
    post: str = ""
    after: str = ""
    args: dict[str, str] = field(default_factory=dict)  # parameter -> what PMPI_ gets instead


STATUS = "MPI_Status sl_;\nMPI_Status *st_ = status == MPI_STATUS_IGNORE ? &sl_ : status;"
TRACKED_STATUS = (
    "int track_ = npend_req > 0;\nMPI_Status sl_;\n"
    "MPI_Status *st_ = track_ && status == MPI_STATUS_IGNORE ? &sl_ : status;"
)
ST = {"status": "st_"}
SS = {"array_of_statuses": "ss_"}


def _coll(body: str) -> Rule:
    pad = "\n".join("    " + ln if ln.strip() else "" for ln in body.strip().splitlines())
    return Rule(post="{\n" + pad + "\n}")


RULES: dict[str, Rule] = {
    "none": Rule(),
    # -- point-to-point
    "send": Rule(post="acc_send(&A, (uint64_t)count, datatype, dest, comm);"),
    "recv": Rule(pre=STATUS, args=ST, post="if (rc == MPI_SUCCESS) acc_recv(&A, comm, st_, 1);"),
    "irecv": Rule(
        post="A.peer = world_rank_of(comm, source);",
        after="if (rc == MPI_SUCCESS)\n"
        "    pend_recv(*request, comm, @F, site, (uint64_t)count, datatype, source);",
    ),
    "sendrecv": Rule(
        pre=STATUS,
        args=ST,
        post="acc_send(&A, (uint64_t)sendcount, sendtype, dest, comm);\n"
        "if (rc == MPI_SUCCESS) acc_recv(&A, comm, st_, 0);",
    ),
    "sendrecv_replace": Rule(
        pre=STATUS,
        args=ST,
        post="acc_send(&A, (uint64_t)count, datatype, dest, comm);\n"
        "if (rc == MPI_SUCCESS) acc_recv(&A, comm, st_, 0);",
    ),
    "isendrecv": Rule(
        post="acc_send(&A, (uint64_t)sendcount, sendtype, dest, comm);",
        after="if (rc == MPI_SUCCESS)\n"
        "    pend_recv(*request, comm, @F, site, (uint64_t)recvcount, recvtype, source);",
    ),
    "isendrecv_replace": Rule(
        post="acc_send(&A, (uint64_t)count, datatype, dest, comm);",
        after="if (rc == MPI_SUCCESS)\n"
        "    pend_recv(*request, comm, @F, site, (uint64_t)count, datatype, source);",
    ),
    # matched probes: remember the message's communicator so the receive can name its source
    "mprobe": Rule(
        post="if (rc == MPI_SUCCESS) pend_put(pend_msg, &npend_msg, RKEY(*message), comm);"
    ),
    "improbe": Rule(
        post="if (rc == MPI_SUCCESS && *flag)\n"
        "    pend_put(pend_msg, &npend_msg, RKEY(*message), comm);"
    ),
    "mrecv": Rule(
        pre="MPI_Message m_ = *message;\n" + STATUS,
        args=ST,
        post="""if (rc == MPI_SUCCESS) {
    pend_t e_;
    uint64_t b_ = status_bytes(st_);
    A.r = b_;
    if (st_->MPI_SOURCE != MPI_PROC_NULL) A.msg = (int64_t)b_;
    if (pend_take(pend_msg, &npend_msg, RKEY(m_), &e_))
        A.peer = p2p_recv(e_.comm, st_->MPI_SOURCE, b_);
}""",
    ),
    "imrecv": Rule(
        pre="MPI_Message m_ = *message;",
        after="""{
    pend_t e_;
    if (pend_take(pend_msg, &npend_msg, RKEY(m_), &e_) && rc == MPI_SUCCESS)
        pend_recv(*request, e_.comm, @F, site, 0, MPI_DATATYPE_NULL, -1);
}""",
    ),
    # persistent requests: their bytes count at each MPI_Start
    "send_init": Rule(
        post="persist_add(rc, *request, PK_SEND,\n"
        "            dest == MPI_PROC_NULL ? 0 : (uint64_t)count * tsize(datatype), 0, dest, comm);"
    ),
    "recv_init": Rule(post="persist_add(rc, *request, PK_RECV, 0, 0, source, comm);"),
    "psend_init": Rule(
        post="persist_add(rc, *request, PK_SEND, dest == MPI_PROC_NULL ? 0 :\n"
        "            (uint64_t)partitions * (uint64_t)count * tsize(datatype), 0, dest, comm);"
    ),
    "precv_init": Rule(post="persist_add(rc, *request, PK_RECV, 0, 0, dest, comm);"),
    "start": Rule(
        pre="MPI_Request h_ = *request;",
        post="persist_start(&A, &stats[@F], h_);",
        after="if (rc == MPI_SUCCESS) persist_started(h_, @F, site);",
    ),
    "startall": Rule(
        post="for (int i_ = 0; i_ < count; i_++)\n"
        "    persist_start(&A, &stats[@F], array_of_requests[i_]);",
        after="if (rc == MPI_SUCCESS)\n"
        "    for (int i_ = 0; i_ < count; i_++) persist_started(array_of_requests[i_], @F, site);",
    ),
    "request_free": Rule(
        pre="MPI_Request h_ = *request;", post="if (rc == MPI_SUCCESS) request_freed(h_);"
    ),
    # completion: receives followed since they were posted get their bytes now
    "wait": Rule(
        pre="MPI_Request h_ = *request;\n" + TRACKED_STATUS,
        args=ST,
        post="if (track_ && rc == MPI_SUCCESS) complete_req(h_, st_);",
    ),
    "test": Rule(
        pre="MPI_Request h_ = *request;\n" + TRACKED_STATUS,
        args=ST,
        post="if (track_ && rc == MPI_SUCCESS && *flag) complete_req(h_, st_);",
    ),
    "waitall": Rule(
        pre="ARRAY_SCRATCH(count, array_of_requests, array_of_statuses)",
        args=SS,
        post="if (track_ && rc == MPI_SUCCESS)\n"
        "    for (int i_ = 0; i_ < count; i_++) complete_req(hs_[i_], &ss_[i_]);\n"
        "ARRAY_SCRATCH_FREE(array_of_statuses)",
    ),
    "testall": Rule(
        pre="ARRAY_SCRATCH(count, array_of_requests, array_of_statuses)",
        args=SS,
        post="if (track_ && rc == MPI_SUCCESS && *flag)\n"
        "    for (int i_ = 0; i_ < count; i_++) complete_req(hs_[i_], &ss_[i_]);\n"
        "ARRAY_SCRATCH_FREE(array_of_statuses)",
    ),
    "waitany": Rule(
        pre="ONE_SCRATCH(count, array_of_requests)\n" + STATUS,
        args=ST,
        post="if (track_ && rc == MPI_SUCCESS && *indx != MPI_UNDEFINED)\n"
        "    complete_req(hs_[*indx], st_);\nif (hs_ != hstk_) free(hs_);",
    ),
    "testany": Rule(
        pre="ONE_SCRATCH(count, array_of_requests)\n" + STATUS,
        args=ST,
        post="if (track_ && rc == MPI_SUCCESS && *flag && *indx != MPI_UNDEFINED)\n"
        "    complete_req(hs_[*indx], st_);\nif (hs_ != hstk_) free(hs_);",
    ),
    "waitsome": Rule(
        pre="ARRAY_SCRATCH(incount, array_of_requests, array_of_statuses)",
        args=SS,
        post="if (track_ && rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED)\n"
        "    for (int i_ = 0; i_ < *outcount; i_++)\n"
        "        complete_req(hs_[array_of_indices[i_]], &ss_[i_]);\n"
        "ARRAY_SCRATCH_FREE(array_of_statuses)",
    ),
    # -- collectives. Per rank: bytes_sent = the data this rank contributes from its send
    # buffer, bytes_recv = the data delivered into its receive buffer (root-only arguments count
    # at the root only); with MPI_IN_PLACE the contribution is counted with the receive side's
    # type and count. One size-histogram entry per call: bytes sent, or received on a rank that
    # only receives.
    "barrier": Rule(),
    "bcast": _coll("""
uint64_t b_ = (uint64_t)count * tsize(datatype);
if (is_root(comm, root)) acc_coll(&A, b_, 0, b_);
else if (contributes(root)) acc_coll(&A, 0, b_, b_);"""),
    "reduce": _coll("""
uint64_t b_ = (uint64_t)count * tsize(datatype);
acc_coll(&A, contributes(root) ? b_ : 0, is_root(comm, root) ? b_ : 0, b_);"""),
    "allreduce": _coll("""
uint64_t b_ = (uint64_t)count * tsize(datatype);
acc_coll(&A, b_, b_, b_);"""),
    "gather": _coll("""
int me_ = is_root(comm, root);
uint64_t rb_ = me_ ? (uint64_t)recvcount * tsize(recvtype) : 0;
uint64_t s_ = !contributes(root) ? 0
              : sendbuf == MPI_IN_PLACE ? rb_ : (uint64_t)sendcount * tsize(sendtype);
uint64_t r_ = me_ ? rb_ * (uint64_t)coll_size(comm) : 0;
acc_coll(&A, s_, r_, PAYLOAD(s_, r_));"""),
    "gatherv": _coll("""
uint64_t s_ = 0, r_ = 0;
if (is_root(comm, root)) {
    SUM_COUNTS(recvcounts, coll_size(comm), r_);
    r_ *= tsize(recvtype);
}
if (contributes(root))
    s_ = sendbuf == MPI_IN_PLACE ? (uint64_t)recvcounts[comm_rank(comm)] * tsize(recvtype)
                                 : (uint64_t)sendcount * tsize(sendtype);
acc_coll(&A, s_, r_, PAYLOAD(s_, r_));"""),
    "scatter": _coll("""
int me_ = is_root(comm, root);
uint64_t sb_ = me_ ? (uint64_t)sendcount * tsize(sendtype) : 0;
uint64_t s_ = me_ ? sb_ * (uint64_t)coll_size(comm) : 0;
uint64_t r_ = !contributes(root) ? 0
              : recvbuf == MPI_IN_PLACE ? sb_ : (uint64_t)recvcount * tsize(recvtype);
acc_coll(&A, s_, r_, PAYLOAD(s_, r_));"""),
    "scatterv": _coll("""
uint64_t s_ = 0, r_ = 0;
if (is_root(comm, root)) {
    SUM_COUNTS(sendcounts, coll_size(comm), s_);
    s_ *= tsize(sendtype);
}
if (contributes(root))
    r_ = recvbuf == MPI_IN_PLACE ? (uint64_t)sendcounts[comm_rank(comm)] * tsize(sendtype)
                                 : (uint64_t)recvcount * tsize(recvtype);
acc_coll(&A, s_, r_, PAYLOAD(s_, r_));"""),
    "allgather": _coll("""
uint64_t p_ = (uint64_t)coll_size(comm), rb_ = (uint64_t)recvcount * tsize(recvtype);
uint64_t sb_ = sendbuf == MPI_IN_PLACE ? rb_ : (uint64_t)sendcount * tsize(sendtype);
acc_coll(&A, sb_, rb_ * p_, PAYLOAD(sb_, rb_));"""),
    "alltoall": _coll("""
uint64_t p_ = (uint64_t)coll_size(comm), rb_ = (uint64_t)recvcount * tsize(recvtype);
uint64_t sb_ = sendbuf == MPI_IN_PLACE ? rb_ : (uint64_t)sendcount * tsize(sendtype);
acc_coll(&A, sb_ * p_, rb_ * p_, PAYLOAD(sb_, rb_));
acc_out(&A, sb_ * (is_inter(comm) ? p_ : p_ - 1));"""),
    "allgatherv": _coll("""
uint64_t s_, r_;
SUM_COUNTS(recvcounts, coll_size(comm), r_);
r_ *= tsize(recvtype);
s_ = sendbuf == MPI_IN_PLACE ? (uint64_t)recvcounts[comm_rank(comm)] * tsize(recvtype)
                             : (uint64_t)sendcount * tsize(sendtype);
acc_coll(&A, s_, r_, PAYLOAD(s_, r_));"""),
    "alltoallv": _coll("""
int p_ = coll_size(comm), me_ = is_inter(comm) ? -1 : comm_rank(comm);
uint64_t s_, r_, own_ = 0;
SUM_COUNTS(recvcounts, p_, r_);
r_ *= tsize(recvtype);
if (sendbuf == MPI_IN_PLACE) {
    s_ = r_;
    if (me_ >= 0) own_ = (uint64_t)recvcounts[me_] * tsize(recvtype);
} else {
    SUM_COUNTS(sendcounts, p_, s_);
    s_ *= tsize(sendtype);
    if (me_ >= 0) own_ = (uint64_t)sendcounts[me_] * tsize(sendtype);
}
acc_coll(&A, s_, r_, PAYLOAD(s_, r_));
acc_out(&A, s_ - own_);"""),
    "alltoallw": _coll("""
int p_ = coll_size(comm), me_ = is_inter(comm) ? -1 : comm_rank(comm);
uint64_t s_, r_, own_ = 0;
SUM_TYPED(recvcounts, recvtypes, p_, r_);
if (sendbuf == MPI_IN_PLACE) {
    s_ = r_;
    if (me_ >= 0) own_ = (uint64_t)recvcounts[me_] * tsize(recvtypes[me_]);
} else {
    SUM_TYPED(sendcounts, sendtypes, p_, s_);
    if (me_ >= 0) own_ = (uint64_t)sendcounts[me_] * tsize(sendtypes[me_]);
}
acc_coll(&A, s_, r_, PAYLOAD(s_, r_));
acc_out(&A, s_ - own_);"""),
    "reduce_scatter": _coll("""
uint64_t ts_ = tsize(datatype), s_;
SUM_COUNTS(recvcounts, comm_size(comm), s_);
s_ *= ts_;
uint64_t r_ = (uint64_t)recvcounts[comm_rank(comm)] * ts_;
acc_coll(&A, s_, r_, PAYLOAD(s_, r_));"""),
    "reduce_scatter_block": _coll("""
uint64_t r_ = (uint64_t)recvcount * tsize(datatype);
uint64_t s_ = r_ * (uint64_t)comm_size(comm);
acc_coll(&A, s_, r_, PAYLOAD(s_, r_));"""),
    # neighbourhood collectives: one block per real neighbour
    "neighbor_allgather": _coll("""
nbrs_t nb_;
neighbours(comm, &nb_);
uint64_t sb_ = (uint64_t)sendcount * tsize(sendtype), rb_ = (uint64_t)recvcount * tsize(recvtype);
acc_coll(&A, sb_ * (uint64_t)nbr_count(nb_.out_real, nb_.out),
         rb_ * (uint64_t)nbr_count(nb_.in_real, nb_.in), PAYLOAD(sb_, rb_));"""),
    "neighbor_allgatherv": _coll("""
nbrs_t nb_;
neighbours(comm, &nb_);
uint64_t s_ = (uint64_t)sendcount * tsize(sendtype) * (uint64_t)nbr_count(nb_.out_real, nb_.out);
uint64_t r_;
NBR_SUM(recvcounts, nb_.in_real, nb_.in, r_);
r_ *= tsize(recvtype);
acc_coll(&A, s_, r_, PAYLOAD(s_, r_));"""),
    "neighbor_alltoallv": _coll("""
nbrs_t nb_;
neighbours(comm, &nb_);
uint64_t s_, r_;
NBR_SUM(sendcounts, nb_.out_real, nb_.out, s_);
s_ *= tsize(sendtype);
NBR_SUM(recvcounts, nb_.in_real, nb_.in, r_);
r_ *= tsize(recvtype);
acc_coll(&A, s_, r_, PAYLOAD(s_, r_));"""),
    "neighbor_alltoallw": _coll("""
nbrs_t nb_;
neighbours(comm, &nb_);
uint64_t s_, r_;
NBR_SUM_TYPED(sendcounts, sendtypes, nb_.out_real, nb_.out, s_);
NBR_SUM_TYPED(recvcounts, recvtypes, nb_.in_real, nb_.in, r_);
acc_coll(&A, s_, r_, PAYLOAD(s_, r_));"""),
    # -- MPI-IO: what a blocking call's status says it moved; nonblocking and split
    # collective calls count the size they post
    "file_read": Rule(
        pre=STATUS,
        args=ST,
        post="if (rc == MPI_SUCCESS) {\n"
        "    A.rd = io_bytes(st_, (uint64_t)count, datatype);\n"
        "    A.msg = (int64_t)A.rd;\n}",
    ),
    "file_write": Rule(
        pre=STATUS,
        args=ST,
        post="if (rc == MPI_SUCCESS) {\n"
        "    A.w = io_bytes(st_, (uint64_t)count, datatype);\n"
        "    A.msg = (int64_t)A.w;\n}",
    ),
    "file_iread": Rule(
        post="if (rc == MPI_SUCCESS) {\n"
        "    A.rd = (uint64_t)count * tsize(datatype);\n"
        "    A.msg = (int64_t)A.rd;\n}"
    ),
    "file_iwrite": Rule(
        post="if (rc == MPI_SUCCESS) {\n"
        "    A.w = (uint64_t)count * tsize(datatype);\n"
        "    A.msg = (int64_t)A.w;\n}"
    ),
    # -- one-sided: bytes as the origin sends them (put, accumulate) and receives them (get,
    # the results of get_accumulate, fetch_and_op, compare_and_swap)
    "put": _coll("""
uint64_t b_ = (uint64_t)origin_count * tsize(origin_datatype);
acc_coll(&A, b_, 0, b_);"""),
    "get": _coll("""
uint64_t b_ = (uint64_t)origin_count * tsize(origin_datatype);
acc_coll(&A, 0, b_, b_);"""),
    "get_accumulate": _coll("""
uint64_t s_ = op == MPI_NO_OP ? 0 : (uint64_t)origin_count * tsize(origin_datatype);
uint64_t r_ = (uint64_t)result_count * tsize(result_datatype);
acc_coll(&A, s_, r_, PAYLOAD(s_, r_));"""),
    "fetch_and_op": _coll("""
uint64_t b_ = tsize(datatype);
acc_coll(&A, op == MPI_NO_OP ? 0 : b_, b_, b_);"""),
    "compare_and_swap": _coll("""
uint64_t b_ = tsize(datatype);
acc_coll(&A, 2 * b_, b_, b_); /* the origin and compare values go out, the old value back */"""),
    # -- communicators: a new one gets its MPI_COMM_WORLD rank map now, off the hot path
    "newcomm": Rule(post="if (rc == MPI_SUCCESS) cache_comm(*@0);"),
    "comm_free": Rule(pre="MPI_Comm c_ = *comm;", post="if (rc == MPI_SUCCESS) uncache_comm(c_);"),
}
RULES["neighbor_alltoall"] = RULES["neighbor_allgather"]  # one block to each neighbour too
RULES["file_read_begin"] = RULES["file_iread"]
RULES["file_write_begin"] = RULES["file_iwrite"]
# Collective rules whose `..._init` calls make persistent requests: their bytes count at Start
COLLECTIVE = {name for name, r in RULES.items() if "acc_coll(&A" in r.post} | {"barrier"}
COLLECTIVE -= {"put", "get", "get_accumulate", "fetch_and_op", "compare_and_swap"}


@dataclass(frozen=True)
class Param:
    ctype: str  # with placeholders, e.g. "const COUNT", "MPI_Status *"
    name: str
    suffix: str = ""  # "[]", "[][3]"

    def decl(self, large: bool) -> str:
        t = self.ctype
        for ph, (small, big) in PLACEHOLDERS.items():
            t = re.sub(rf"\b{ph}\b", big if large else small, t)
        sep = "" if t.endswith("*") else " "
        return f"{t}{sep}{self.name}{self.suffix}"


@dataclass(frozen=True)
class Call:
    rule: str
    rule_args: tuple[str, ...]
    name: str  # "MPI_Send"
    params: tuple[Param, ...]
    guard: str | None
    line: int

    @property
    def short(self) -> str:
        return self.name[4:]

    @property
    def has_large(self) -> bool:
        return any(re.search(rf"\b{ph}\b", p.ctype) for p in self.params for ph in PLACEHOLDERS)


class TableError(ValueError):
    pass


LINE = re.compile(
    r"^(?P<rule>\w+)(?:\((?P<args>[\w, ]*)\))?\s+(?P<name>MPI_\w+)\((?P<params>.*)\)"
    r"\s*(?:\[(?P<guard>\w+)\])?\s*$"
)
PARAM = re.compile(r"^(?P<type>.*?)(?P<name>\w+)\s*(?P<suffix>(?:\[[^\]]*\])*)$")


def parse_table(text: str) -> list[Call]:
    calls, seen = [], set()
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = LINE.match(line)
        if not m:
            raise TableError(f"{TABLE_NAME}:{n}: not `RULE MPI_Name(params) [guard]`: {line}")
        rule, name = m["rule"], m["name"]
        if rule not in RULES:
            raise TableError(f"{TABLE_NAME}:{n}: unknown rule {rule!r}")
        if name in seen or name[4:] in HAND_WRITTEN:
            raise TableError(f"{TABLE_NAME}:{n}: {name} is already wrapped")
        guard = m["guard"]
        if guard is not None and guard not in GUARDS:
            raise TableError(f"{TABLE_NAME}:{n}: unknown guard [{guard}]")
        params = []
        for p in (x.strip() for x in m["params"].split(",")):
            pm = PARAM.match(p)
            if not pm or not pm["type"].strip():
                raise TableError(f"{TABLE_NAME}:{n}: cannot read parameter {p!r} of {name}")
            params.append(Param(pm["type"].strip(), pm["name"], pm["suffix"].replace(" ", "")))
        args = tuple(a.strip() for a in m["args"].split(",")) if m["args"] else ()
        names = {p.name for p in params}
        rule_obj = RULES[rule]
        for a in (*args, *rule_obj.args):
            if a not in names:
                raise TableError(f"{TABLE_NAME}:{n}: {name} has no parameter {a!r} ({rule})")
        calls.append(Call(rule, args, name, tuple(params), guard, n))
        seen.add(name)
    return calls


def _indent(code: str, level: int = 1) -> str:
    pad = "    " * level
    return "\n".join(pad + ln if ln.strip() else "" for ln in code.strip().splitlines())


def _fill(code: str, call: Call) -> str:
    code = code.replace("@F", f"F_{call.short}")
    for i, a in enumerate(call.rule_args):
        code = code.replace(f"@{i}", a)
    return code


def wrapper(call: Call, large: bool) -> str:
    """The C definition of one wrapper (the `_c` variant with `large`)."""
    rule = RULES[call.rule]
    fname = call.name + ("_c" if large else "")
    decl = ", ".join(p.decl(large) for p in call.params) or "void"
    plain = ", ".join(p.name for p in call.params)
    args = ", ".join(rule.args.get(p.name, p.name) for p in call.params)
    post = _fill(rule.post, call)
    if call.short.endswith("_init") and call.rule in COLLECTIVE:
        # a persistent collective: what it will move is counted at each MPI_Start
        post = post.replace("&A", "&P_")
        post = f"acc_t P_ = ACC_NONE;\n{post}\n" if post else "acc_t P_ = ACC_NONE;\n"
        post += "persist_add(rc, *request, PK_COLL, P_.s, P_.r, -1, comm);"
        post = "{\n" + _indent(post) + "\n}"
    body = [f"if (in_mpi) return P{fname}({plain});", "void *ra_ = __builtin_return_address(0);"]
    body.append("acc_t A = ACC_NONE;")
    if rule.pre:
        body.append(_fill(rule.pre, call))
    body += ["in_mpi = 1;", "tick_t t0_ = now();", f"int rc = P{fname}({args});",
             "tick_t t1_ = now();", "in_mpi = 0;"]  # fmt: skip
    if post:
        body.append(post)
    if rule.after:
        body += [f"int site = finish(F_{call.short}, &A, t0_, t1_, ra_);", _fill(rule.after, call)]
    else:
        body.append(f"finish(F_{call.short}, &A, t0_, t1_, ra_);")
    body.append("return rc;")
    inner = "\n".join(_indent(b) for b in body)
    return f"int {fname}({decl}) {{\n{inner}\n}}\n"


def generate(calls: list[Call]) -> tuple[str, str]:
    """(pmpi_calls.h, pmpi_wrappers.inc) for the table's calls."""
    names = [*HAND_WRITTEN, *(c.short for c in calls)]
    rows, row = [], ""
    for n in names:
        item = f"X({n}) "
        if len(row) + len(item) > 88:
            rows.append(row)
            row = ""
        row += item
    rows.append(row)
    header = (
        "/* generated by cloudhpc.profile.wrappers from mpi_calls.txt: do not edit */\n"
        "#define FUNCS(X) \\\n" + " \\\n".join("    " + r.rstrip() for r in rows) + "\n"
    )
    out = ["/* generated by cloudhpc.profile.wrappers from mpi_calls.txt: do not edit */\n"]
    for c in calls:
        parts = [f"/* {TABLE_NAME}:{c.line} ({c.rule}) */\n", wrapper(c, False)]
        if c.has_large:
            parts += ["#if HAVE_LARGE_COUNT\n", wrapper(c, True), "#endif\n"]
        if c.guard:
            parts = [f"#if {GUARDS[c.guard]}\n", *parts, "#endif\n"]
        out.append("".join(parts))
    return header, "\n".join(out)


def table_text() -> str:
    return resources.files("cloudhpc.profile").joinpath(TABLE_NAME).read_text()


def write(directory: str | Path) -> list[Path]:
    """Write pmpi_calls.h and pmpi_wrappers.inc into `directory`; their paths."""
    header, wrappers = generate(parse_table(table_text()))
    d = Path(directory)
    (d / CALLS_HEADER).write_text(header)
    (d / WRAPPERS_FILE).write_text(wrappers)
    return [d / CALLS_HEADER, d / WRAPPERS_FILE]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: python -m cloudhpc.profile.wrappers OUTDIR", file=sys.stderr)
        return 2
    for p in write(argv[0]):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
