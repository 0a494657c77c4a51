/* cloudhpc PMPI profiling library: counts, times and sizes every intercepted MPI call, per call
 * and per call site.
 *
 * Loaded with LD_PRELOAD into each rank of an unmodified MPI program (C, C++, Fortran, or Python
 * with mpi4py). This file is the hand-written runtime; the wrappers themselves are generated
 * from one table (mpi_calls.txt) by wrappers.py into pmpi_calls.h (the list of names) and
 * pmpi_wrappers.inc (one wrapper per call and large-count variant), included below.
 *
 * Each wrapper calls the PMPI_ entry point and adds to fixed per-function counters: no locks,
 * no allocation and no I/O on the hot path. With call sites on (CLOUDHPC_PROFILE_CALLSITE_DEPTH,
 * default 1) it also adds to a per-site table keyed by the caller's return address: the address
 * is only recorded here; cloudhpc resolves it to file:line after the run (addr2line). Deeper
 * sites, and calls made through a Fortran binding library, walk the stack with backtrace().
 * In a Python process, a helper built against that Python (pysite.c, named by
 * CLOUDHPC_PROFILE_PYSITE) gives the Python frames that made the call instead.
 *
 * At MPI_Finalize (and MPI_Abort) every rank writes one JSON file, `rank-NNNNN.json`, into
 * $CLOUDHPC_PROFILE_DIR through a temporary name and rename(), so a rank killed part-way leaves
 * no half-written file. With CLOUDHPC_PROFILE_TRACE=1 each call is also appended to a per-rank
 * event buffer written as `rank-NNNNN.trace` (packed struct trace_event records) at finalize.
 *
 * Conventions (see docs/profile-schema.md): bytes = count x type size; receives use the
 * status's actual count; point-to-point peers are recorded as MPI_COMM_WORLD ranks. Calls the
 * MPI library makes to itself through MPI_ names (ROMIO's collectives inside MPI-IO, ...) are
 * not the program's: a thread inside a wrapper passes them straight to PMPI_. Counters are
 * process-wide and unsynchronised: with several threads calling MPI at once they may undercount.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <mpi.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <limits.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#define HAVE_LARGE_COUNT (MPI_VERSION >= 4)
/* MPI-4.0 calls: Open MPI 5 says MPI 3.1 but has them (persistent collectives, Isendrecv, ...) */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define HAVE_MPI4_CALLS 1
#else
#define HAVE_MPI4_CALLS 0
#endif

#define PROFILE_FORMAT_VERSION 2
#define NBIN 64 /* bin 0: 0 bytes; bin k >= 1: [2^(k-1), 2^k) bytes */

#include "pmpi_calls.h" /* generated: #define FUNCS(X) X(Init) X(Init_thread) ... */

#define ENUM_ENTRY(n) F_##n,
enum { FUNCS(ENUM_ENTRY) NFUNC };
#define NAME_ENTRY(n) "MPI_" #n,
static const char *const func_names[NFUNC] = {FUNCS(NAME_ENTRY)};

typedef uint64_t tick_t; /* TSC cycles, or nanoseconds of CLOCK_MONOTONIC */

typedef struct {
    uint64_t count;
    tick_t time, tmin, tmax;
    uint64_t bytes_sent, bytes_recv, bytes_written, bytes_read;
    uint64_t bytes_out, out_calls; /* all-to-alls: bytes to the other ranks; calls that said */
    uint64_t hist[NBIN];
} stat_t;

/* What one call moved, filled by its wrapper's rule. msg < 0: no entry in the size histogram;
 * peer: MPI_COMM_WORLD rank for point-to-point, else -1; o (when has_o): the bytes of s that
 * leave the rank, its block to itself excluded (all-to-alls: mpiP's size, s, counts that block
 * too, which a program may keep out of the call). */
typedef struct {
    uint64_t s, r, w, rd;
    int64_t msg;
    int peer;
    uint64_t o;
    int has_o;
} acc_t;
#define ACC_NONE {0, 0, 0, 0, -1, -1, 0, 0}

typedef struct { /* in the buffer */
    tick_t t0, t1;
    int32_t func, peer;
    uint64_t bytes;
} trace_event;

typedef struct { /* in the .trace file: seconds of CLOCK_MONOTONIC */
    double t0, t1;
    int32_t func, peer;
    uint64_t bytes;
} trace_record;

static stat_t stats[NFUNC];
static int initialized, world_rank = -1, world_size;
/* At MPI_Init: the tick counter, CLOCK_MONOTONIC and CLOCK_REALTIME (seconds) */
static tick_t tick_init;
static double mono_init, wall_init;
/* and the process's CPU time (every thread): total_s - cpu_s is time the rank was off its cores
 * (another process had them, or it slept), which `cloudhpc predict` needs to know */
static double cpu_init;
static double tick_s = 1e-9; /* seconds per tick, calibrated when the profile is written */
static int use_tsc;
static MPI_Group world_group = MPI_GROUP_NULL;
static uint64_t *sent_msgs, *sent_bytes, *recv_msgs, *recv_bytes;
static char out_dir[4096];

static trace_event *trace_buf;
static uint64_t trace_cap, trace_len, trace_dropped;

/* Set while this thread is inside a wrapper: MPI_ calls the library makes meanwhile are its own. */
static __thread int in_mpi __attribute__((tls_model("initial-exec")));

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The hot-path clock. The invariant TSC costs a few ns where clock_gettime costs 20-90 ns
 * (more in VMs); it is converted to seconds with a rate measured against CLOCK_MONOTONIC over
 * the run. CLOUDHPC_PROFILE_CLOCK=monotonic forces clock_gettime. */
static inline tick_t now(void) {
#if defined(__x86_64__)
    if (use_tsc) return __rdtsc();
#endif
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (tick_t)ts.tv_sec * 1000000000ull + (tick_t)ts.tv_nsec;
}

static int invariant_tsc(void) {
#if defined(__x86_64__)
    const char *want = getenv("CLOUDHPC_PROFILE_CLOCK");
    if (want && strcmp(want, "tsc") != 0) return 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    char line[8192];
    int ok = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) == 0) {
            ok = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
            break;
        }
    }
    fclose(f);
    return ok;
#else
    return 0;
#endif
}

static void start_clock(void) {
    use_tsc = invariant_tsc();
    tick_s = 1e-9;
    tick_init = now();
    mono_init = clock_s(CLOCK_MONOTONIC);
    wall_init = clock_s(CLOCK_REALTIME);
    cpu_init = clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

/* Seconds per TSC tick over [MPI_Init, now]; waits until 20 ms have passed for a usable rate. */
static void calibrate(void) {
    if (!use_tsc) return;
    double m;
    tick_t t;
    do {
        t = now();
        m = clock_s(CLOCK_MONOTONIC);
    } while (m - mono_init < 0.02);
    if (t > tick_init) tick_s = (m - mono_init) / (double)(t - tick_init);
}

static inline int size_bin(uint64_t b) { return b == 0 ? 0 : 64 - __builtin_clzll(b); }

static inline void hist_add(stat_t *x, uint64_t b) {
    int k = size_bin(b);
    x->hist[k < NBIN ? k : NBIN - 1]++;
}

static inline uint64_t tsize(MPI_Datatype t) {
    MPI_Count s = 0;
    if (t == MPI_DATATYPE_NULL) return 0;
#if HAVE_LARGE_COUNT
    PMPI_Type_size_c(t, &s);
#else
    PMPI_Type_size_x(t, &s);
#endif
    return s > 0 ? (uint64_t)s : 0;
}

/* The bytes a completed operation's status says it moved (MPI_UNDEFINED: -1). */
static inline int64_t status_count(const MPI_Status *st) {
    MPI_Count n = 0;
#if HAVE_LARGE_COUNT
    PMPI_Get_count_c(st, MPI_BYTE, &n);
#else
    PMPI_Get_elements_x(st, MPI_BYTE, &n);
#endif
    return n == MPI_UNDEFINED ? -1 : (int64_t)n;
}

static inline uint64_t status_bytes(const MPI_Status *st) {
    if (st->MPI_SOURCE == MPI_PROC_NULL) return 0;
    int64_t n = status_count(st);
    return n > 0 ? (uint64_t)n : 0;
}

static inline int comm_size(MPI_Comm c) {
    int n = 0;
    PMPI_Comm_size(c, &n);
    return n;
}

static inline int comm_rank(MPI_Comm c) {
    int n = 0;
    PMPI_Comm_rank(c, &n);
    return n;
}

static inline int is_inter(MPI_Comm c) {
    int inter = 0;
    PMPI_Comm_test_inter(c, &inter);
    return inter;
}

/* The number of entries of a collective's per-rank arrays: the remote group's size on an
 * intercommunicator. */
static inline int coll_size(MPI_Comm c) {
    int n = 0;
    if (is_inter(c))
        PMPI_Comm_remote_size(c, &n);
    else
        PMPI_Comm_size(c, &n);
    return n;
}

/* A rooted collective's root: `root` on an intracommunicator, MPI_ROOT on an intercommunicator. */
static inline int is_root(MPI_Comm c, int root) {
    if (root == MPI_ROOT) return 1;
    if (root < 0) return 0; /* MPI_PROC_NULL */
    return !is_inter(c) && comm_rank(c) == root;
}

/* Contributes data to a rooted collective (not the idle ranks of an intercommunicator's root
 * group, nor the root itself there). */
static inline int contributes(int root) { return root != MPI_ROOT && root != MPI_PROC_NULL; }

/* ---- rank translation to MPI_COMM_WORLD ------------------------------------------------ */
/* Communicators made by MPI_Comm_split / MPI_Comm_dup / ... get their translation table when
 * they are created (not on the hot path); others fall back to a group translation per message. */
#define NCOMM_CACHE 32
static struct {
    MPI_Comm comm;
    int n;
    int *map;
} comm_cache[NCOMM_CACHE];

static void cache_comm(MPI_Comm c) {
    if (!initialized || c == MPI_COMM_NULL) return;
    if (is_inter(c)) return;
    for (int i = 0; i < NCOMM_CACHE; i++) {
        if (comm_cache[i].map) continue;
        int n = comm_size(c);
        int *ranks = malloc(sizeof(int) * (size_t)n), *map = malloc(sizeof(int) * (size_t)n);
        if (!ranks || !map) {
            free(ranks);
            free(map);
            return;
        }
        MPI_Group g;
        PMPI_Comm_group(c, &g);
        for (int r = 0; r < n; r++) ranks[r] = r;
        PMPI_Group_translate_ranks(g, n, ranks, world_group, map);
        PMPI_Group_free(&g);
        free(ranks);
        comm_cache[i].comm = c;
        comm_cache[i].n = n;
        comm_cache[i].map = map;
        return;
    }
}

static void uncache_comm(MPI_Comm c) {
    for (int i = 0; i < NCOMM_CACHE; i++) {
        if (comm_cache[i].map && comm_cache[i].comm == c) {
            free(comm_cache[i].map);
            comm_cache[i].map = NULL;
        }
    }
}

static int world_rank_of(MPI_Comm c, int r) {
    if (r < 0 || !initialized) return -1; /* MPI_PROC_NULL, MPI_ANY_SOURCE */
    if (c == MPI_COMM_WORLD) return r;
    for (int i = 0; i < NCOMM_CACHE; i++)
        if (comm_cache[i].map && comm_cache[i].comm == c)
            return r < comm_cache[i].n ? comm_cache[i].map[r] : -1;
    MPI_Group g;
    int out = MPI_UNDEFINED;
    if (is_inter(c))
        PMPI_Comm_remote_group(c, &g);
    else
        PMPI_Comm_group(c, &g);
    PMPI_Group_translate_ranks(g, 1, &r, world_group, &out);
    PMPI_Group_free(&g);
    return out == MPI_UNDEFINED ? -1 : out;
}

static inline int p2p_sent(MPI_Comm c, int dest, uint64_t b) {
    int w = world_rank_of(c, dest);
    if (w >= 0 && w < world_size && sent_msgs) {
        sent_msgs[w]++;
        sent_bytes[w] += b;
    }
    return w;
}

static inline int p2p_recv(MPI_Comm c, int src, uint64_t b) {
    int w = world_rank_of(c, src);
    if (w >= 0 && w < world_size && recv_msgs) {
        recv_msgs[w]++;
        recv_bytes[w] += b;
    }
    return w;
}

/* A point-to-point send of `count` elements of `dt` to `dest` (nothing for MPI_PROC_NULL). */
static inline void acc_send(acc_t *a, uint64_t count, MPI_Datatype dt, int dest, MPI_Comm c) {
    if (dest == MPI_PROC_NULL) return;
    uint64_t b = count * tsize(dt);
    a->s += b;
    a->msg = (int64_t)b;
    a->peer = p2p_sent(c, dest, b);
}

/* A completed receive: its actual size and source from the status. */
static inline void acc_recv(acc_t *a, MPI_Comm c, const MPI_Status *st, int primary) {
    uint64_t b = status_bytes(st);
    a->r += b;
    int w = p2p_recv(c, st->MPI_SOURCE, b);
    if (primary && st->MPI_SOURCE != MPI_PROC_NULL) {
        a->msg = (int64_t)b;
        a->peer = w;
    }
}

/* MPI-IO: the bytes a status says were read or written; the requested size if it says nothing */
static inline uint64_t io_bytes(const MPI_Status *st, uint64_t count, MPI_Datatype dt) {
    int64_t n = status_count(st);
    return n >= 0 ? (uint64_t)n : count * tsize(dt);
}

#define SUM_COUNTS(counts, n, out)                                                           \
    do {                                                                                     \
        out = 0;                                                                             \
        for (int i_ = 0; i_ < (n); i_++) out += (uint64_t)(counts)[i_];                      \
    } while (0)

#define SUM_TYPED(counts, types, n, out)                                                     \
    do {                                                                                     \
        out = 0;                                                                             \
        for (int i_ = 0; i_ < (n); i_++) out += (uint64_t)(counts)[i_] * tsize((types)[i_]); \
    } while (0)

/* A collective's size-histogram entry: the bytes it sends, or receives on a rank that only
 * receives. */
static inline void acc_coll(acc_t *a, uint64_t s, uint64_t r, uint64_t payload) {
    a->s += s;
    a->r += r;
    a->msg = (int64_t)payload;
}
#define PAYLOAD(s, r) ((s) ? (s) : (r))

/* An all-to-all's bytes that leave the rank (its block to itself excluded). */
static inline void acc_out(acc_t *a, uint64_t o) {
    a->o += o;
    a->has_o = 1;
}

/* Neighbourhood collectives: which of the topology's neighbours are real (a Cartesian
 * topology's edges are MPI_PROC_NULL and move nothing). in/out: the number of entries of the
 * receive and send arrays (at most NNBR are told apart; beyond, every entry counts). */
#define NNBR 64
typedef struct {
    int in, out;
    unsigned char in_real[NNBR], out_real[NNBR];
} nbrs_t;

static void neighbours(MPI_Comm c, nbrs_t *nb) {
    int topo = MPI_UNDEFINED;
    nb->in = nb->out = 0;
    memset(nb->in_real, 1, NNBR);
    memset(nb->out_real, 1, NNBR);
    PMPI_Topo_test(c, &topo);
    if (topo == MPI_CART) {
        int nd = 0;
        PMPI_Cartdim_get(c, &nd);
        nb->in = nb->out = 2 * nd;
        for (int d = 0; d < nd && 2 * d + 1 < NNBR; d++) {
            int src, dst;
            PMPI_Cart_shift(c, d, 1, &src, &dst);
            /* order per dimension: the -1 neighbour, then the +1 neighbour */
            nb->in_real[2 * d] = nb->out_real[2 * d] = src != MPI_PROC_NULL;
            nb->in_real[2 * d + 1] = nb->out_real[2 * d + 1] = dst != MPI_PROC_NULL;
        }
    } else if (topo == MPI_GRAPH) {
        int n = 0;
        PMPI_Graph_neighbors_count(c, comm_rank(c), &n);
        nb->in = nb->out = n;
    } else if (topo == MPI_DIST_GRAPH) {
        int w;
        PMPI_Dist_graph_neighbors_count(c, &nb->in, &nb->out, &w);
    }
}

static inline int nbr_real(const unsigned char *real, int i) { return i >= NNBR || real[i]; }

#define NBR_SUM(counts, real, n, out)                                                        \
    do {                                                                                     \
        out = 0;                                                                             \
        for (int i_ = 0; i_ < (n); i_++)                                                     \
            if (nbr_real(real, i_)) out += (uint64_t)(counts)[i_];                           \
    } while (0)

#define NBR_SUM_TYPED(counts, types, real, n, out)                                           \
    do {                                                                                     \
        out = 0;                                                                             \
        for (int i_ = 0; i_ < (n); i_++)                                                     \
            if (nbr_real(real, i_)) out += (uint64_t)(counts)[i_] * tsize((types)[i_]);      \
    } while (0)

static inline int nbr_count(const unsigned char *real, int n) {
    int k = 0;
    for (int i = 0; i < n; i++) k += nbr_real(real, i);
    return k;
}

/* ---- requests followed to their completion or their start ------------------------------- */
/* Open-addressing tables keyed by request (or matched message) handle: pending receives, whose
 * size is known only when they complete, and persistent requests, whose bytes count at each
 * MPI_Start. */
#define NPEND 4096
typedef struct {
    uint64_t key;
    MPI_Comm comm;
    int used, func, site, kind, peer;
    uint64_t s, r; /* persistent: the bytes one start sends and receives */
} pend_t;
static pend_t pend_req[NPEND], pend_msg[NPEND], persist[NPEND];
static int npend_req, npend_msg, npersist;

enum { PK_RECV, PK_SEND, PK_COLL };

static inline uint64_t hkey(uint64_t k) { return (k * 0x9E3779B97F4A7C15ull) >> 52; }

static pend_t *pend_put(pend_t *t, int *n, uint64_t key, MPI_Comm c) {
    if (*n >= NPEND * 3 / 4) return NULL;
    uint64_t i = hkey(key) & (NPEND - 1);
    while (t[i].used && t[i].key != key) i = (i + 1) & (NPEND - 1);
    if (!t[i].used) (*n)++;
    memset(&t[i], 0, sizeof t[i]);
    t[i].used = 1;
    t[i].key = key;
    t[i].comm = c;
    t[i].site = -1;
    t[i].peer = -1;
    return &t[i];
}

static pend_t *pend_find(pend_t *t, uint64_t key) {
    uint64_t i = hkey(key) & (NPEND - 1);
    while (t[i].used) {
        if (t[i].key == key) return &t[i];
        i = (i + 1) & (NPEND - 1);
    }
    return NULL;
}

/* Removes the entry for `key` into *out; 0 if there is none. */
static int pend_take(pend_t *t, int *n, uint64_t key, pend_t *out) {
    pend_t *e = pend_find(t, key);
    if (!e) return 0;
    if (out) *out = *e;
    e->used = 0;
    (*n)--;
    /* re-insert the rest of the cluster so later lookups still find their keys */
    uint64_t j = ((uint64_t)(e - t) + 1) & (NPEND - 1);
    while (t[j].used) {
        pend_t moved = t[j];
        t[j].used = 0;
        (*n)--;
        pend_t *dst = pend_put(t, n, moved.key, moved.comm);
        if (dst) *dst = moved;
        j = (j + 1) & (NPEND - 1);
    }
    return 1;
}

#define RKEY(r) ((uint64_t)(uintptr_t)(r))

typedef struct {
    uint64_t count, bytes_sent, bytes_recv, bytes_written, bytes_read;
    uint64_t bytes_out, out_calls;
    tick_t time, tmin, tmax;
    int32_t func;
    uint8_t nframes, python;
    void *frames[16];
    char *where; /* Python frames: "file\tline\tfunction\n" per frame, resolved when first seen */
} site_t;
static site_t *sites;

/* A receive posted by function f at call site `site`: its bytes are added when it completes.
 * If the table is full, the posted size and source are counted at once. */
static void pend_recv(MPI_Request h, MPI_Comm c, int f, int site, uint64_t count,
                      MPI_Datatype dt, int src) {
    pend_t *e = pend_put(pend_req, &npend_req, RKEY(h), c);
    if (e) {
        e->func = f;
        e->site = site;
        e->kind = PK_RECV;
        return;
    }
    uint64_t b = count * tsize(dt);
    stats[f].bytes_recv += b;
    if (site >= 0) sites[site].bytes_recv += b;
    p2p_recv(c, src, b);
}

/* A request completed with status st: if it was a receive we follow, account its bytes. */
static inline void complete_req(MPI_Request h, const MPI_Status *st) {
    pend_t e;
    if (npend_req == 0 || h == MPI_REQUEST_NULL) return;
    if (!pend_take(pend_req, &npend_req, RKEY(h), &e)) return;
    if (st->MPI_SOURCE == MPI_PROC_NULL) return;
    uint64_t b = status_bytes(st);
    stat_t *x = &stats[e.func];
    x->bytes_recv += b;
    hist_add(x, b);
    if (e.site >= 0) sites[e.site].bytes_recv += b;
    p2p_recv(e.comm, st->MPI_SOURCE, b);
}

/* A persistent request was made: what each of its starts moves. */
static void persist_add(int rc, MPI_Request h, int kind, uint64_t s, uint64_t r, int peer,
                        MPI_Comm c) {
    if (rc != MPI_SUCCESS) return;
    pend_t *e = pend_put(persist, &npersist, RKEY(h), c);
    if (!e) return;
    e->kind = kind;
    e->s = s;
    e->r = r;
    e->peer = peer;
}

/* MPI_Start / MPI_Startall: one started request's bytes (to function f's histogram). */
static void persist_start(acc_t *a, stat_t *x, MPI_Request h) {
    pend_t *e = npersist ? pend_find(persist, RKEY(h)) : NULL;
    if (!e) return;
    if (e->kind == PK_SEND) {
        a->s += e->s;
        if (e->peer != MPI_PROC_NULL) {
            hist_add(x, e->s);
            a->peer = p2p_sent(e->comm, e->peer, e->s);
        }
    } else if (e->kind == PK_COLL) {
        a->s += e->s;
        a->r += e->r;
        if (e->s || e->r) hist_add(x, PAYLOAD(e->s, e->r)); /* a barrier has no message */
    } else {
        a->peer = world_rank_of(e->comm, e->peer);
    }
}

/* After the start is recorded at `site`: a started receive is followed to its completion. */
static void persist_started(MPI_Request h, int f, int site) {
    pend_t *e = npersist ? pend_find(persist, RKEY(h)) : NULL;
    if (!e || e->kind != PK_RECV) return;
    pend_t *p = pend_put(pend_req, &npend_req, RKEY(h), e->comm);
    if (p) {
        p->func = f;
        p->site = site;
        p->kind = PK_RECV;
    }
}

static void request_freed(MPI_Request h) {
    if (npersist) pend_take(persist, &npersist, RKEY(h), NULL);
    if (npend_req) pend_take(pend_req, &npend_req, RKEY(h), NULL);
}

/* ---- call sites --------------------------------------------------------------------------- */
#define NSITE 4096
#define MAXFRAMES 16
static int site_depth;     /* frames per site, 0: call sites off */
static int site_fast;      /* depth 1, no Python, no Fortran binding: the return address alone */
static int nsites;
static uint64_t sites_dropped;
static uintptr_t self_lo, self_hi, fort_lo, fort_hi; /* this library's and Fortran's text */
typedef int (*py_frames_fn)(void **out, int depth);
typedef int (*py_describe_fn)(void *code, void *offset, char *out, size_t n);
static py_frames_fn py_frames;
static py_describe_fn py_describe;

static inline int in_range(void *p, uintptr_t lo, uintptr_t hi) {
    return (uintptr_t)p >= lo && (uintptr_t)p < hi;
}

/* Executable segments of the objects loaded at MPI_Init: a word read off the stack is taken for a
 * return address only if it points into one. */
#define NEXEC 256
static uintptr_t exec_lo[NEXEC], exec_hi[NEXEC];
static int nexec;

static int collect_exec(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    for (int i = 0; i < info->dlpi_phnum && nexec < NEXEC; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        exec_lo[nexec] = info->dlpi_addr + ph->p_vaddr;
        exec_hi[nexec++] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    }
    return 0;
}

static inline int code_address(void *p) {
    if (in_range(p, fort_lo, fort_hi) || in_range(p, self_lo, self_hi)) return 0;
    for (int i = 0; i < nexec; i++)
        if (in_range(p, exec_lo[i], exec_hi[i])) return 1;
    return 0;
}

/* The frames of a stack walk: the first `site_depth` beyond this library and the Fortran
 * binding library (mpi_send_ -> MPI_Send: the site is the Fortran caller). */
static int walk(void **fr) {
    void *bt[MAXFRAMES + 16];
    int m = backtrace(bt, MAXFRAMES + 16), i = 0, k = 0;
    while (i < m && in_range(bt[i], self_lo, self_hi)) i++;
    while (i < m && in_range(bt[i], fort_lo, fort_hi)) i++;
    for (; i < m && k < site_depth; i++) fr[k++] = bt[i];
    return k;
}

/* A call made through the Fortran binding library: its Fortran caller's return address. The
 * stack walk costs about a microsecond, so it is done once per binding call site: it also
 * learns where, above this wrapper's frame (cfa), that return address sits, a fixed distance
 * for a given binding function; later calls from the same place read it there (checked to be a
 * code address, else walked and learnt again). */
#define NFORT 512
static struct {
    void *ra;
    long off;
} fort_seen[NFORT];

static void *fortran_caller(void *ra, void *cfa) {
    uint64_t i = ((uint64_t)(uintptr_t)ra * 0x9E3779B97F4A7C15ull) >> 55;
    for (int probes = 0; probes < NFORT; probes++, i = (i + 1) & (NFORT - 1)) {
        if (fort_seen[i].ra == ra) {
            void *w = *(void **)((char *)cfa + fort_seen[i].off);
            if (code_address(w)) return w;
            break;
        }
        if (!fort_seen[i].ra) break;
    }
    void *fr[1];
    if (walk(fr) < 1) return ra;
    for (long off = 0; off < 16384; off += (long)sizeof(void *)) {
        if (*(void **)((char *)cfa + off) != fr[0]) continue;
        if (!fort_seen[i].ra || fort_seen[i].ra == ra) {
            fort_seen[i].ra = ra;
            fort_seen[i].off = off;
        }
        break;
    }
    return fr[0];
}

/* The frames of a call that the fast path cannot take: Python's, a Fortran caller's, or a
 * stack walk. Returns the number of slots used (2 per Python frame: code object, instruction
 * offset). */
static int capture(void **fr, void *ra, void *cfa, int *python) {
    *python = 0;
    if (py_frames) {
        int n = py_frames(fr, site_depth);
        if (n > 0) {
            *python = 1;
            return 2 * n;
        }
    }
    if (site_depth == 1) {
        fr[0] = in_range(ra, fort_lo, fort_hi) ? fortran_caller(ra, cfa) : ra;
        return 1;
    }
    return walk(fr);
}

static char *describe_python(void **fr, int n) {
    /* a frame: "file\tline\tfunction\n", a path of up to PATH_MAX and a name of up to 512 */
    size_t cap = (size_t)(n / 2) * (PATH_MAX + 600) + 1, len = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    out[0] = 0;
    for (int i = 0; i + 1 < n; i += 2) {
        if (py_describe(fr[i], fr[i + 1], out + len, cap - len) < 0) break;
        len += strlen(out + len);
    }
    return out;
}

/* The site of a call to function f (its index in `sites`, -1 if sites are off or full). */
static inline __attribute__((always_inline)) int site_of(int f, void *ra) {
    void *fr[MAXFRAMES];
    int n, python = 0;
    if (site_fast && !in_range(ra, fort_lo, fort_hi)) {
        fr[0] = ra;
        n = 1;
    } else {
        n = capture(fr, ra, __builtin_dwarf_cfa(), &python);
    }
    uint64_t h = (uint64_t)f * 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < n; i++) h = (h ^ (uint64_t)(uintptr_t)fr[i]) * 0x100000001B3ull;
    uint64_t i = (h >> 40) & (NSITE - 1);
    for (;;) {
        site_t *s = &sites[i];
        if (!s->nframes && !s->count) {
            if (nsites >= NSITE * 3 / 4 || n == 0) {
                sites_dropped++;
                return -1;
            }
            s->func = f;
            s->nframes = (uint8_t)n;
            s->python = (uint8_t)python;
            memcpy(s->frames, fr, sizeof(void *) * (size_t)n);
            s->tmin = UINT64_MAX;
            if (python) s->where = describe_python(fr, n);
            nsites++;
            return (int)i;
        }
        if (s->func == f && s->nframes == n && !memcmp(s->frames, fr, sizeof(void *) * (size_t)n))
            return (int)i;
        i = (i + 1) & (NSITE - 1);
    }
}

/* ---- accounting of one call ------------------------------------------------------------- */
static inline __attribute__((always_inline)) int finish(int f, const acc_t *a, tick_t t0,
                                                        tick_t t1, void *ra) {
    stat_t *x = &stats[f];
    tick_t d = t1 > t0 ? t1 - t0 : 0;
    x->count++;
    x->time += d;
    if (d < x->tmin) x->tmin = d;
    if (d > x->tmax) x->tmax = d;
    x->bytes_sent += a->s;
    x->bytes_recv += a->r;
    x->bytes_written += a->w;
    x->bytes_read += a->rd;
    if (a->has_o) {
        x->bytes_out += a->o;
        x->out_calls++;
    }
    if (a->msg >= 0) hist_add(x, (uint64_t)a->msg);
    if (trace_buf) {
        if (trace_len < trace_cap) {
            trace_event *e = &trace_buf[trace_len++];
            e->t0 = t0;
            e->t1 = t1;
            e->func = f;
            e->peer = a->peer;
            e->bytes = a->s + a->r + a->w + a->rd;
        } else {
            trace_dropped++;
        }
    }
    if (!site_depth) return -1;
    int k = site_of(f, ra);
    if (k >= 0) {
        site_t *s = &sites[k];
        s->count++;
        s->time += d;
        if (d < s->tmin) s->tmin = d;
        if (d > s->tmax) s->tmax = d;
        s->bytes_sent += a->s;
        s->bytes_recv += a->r;
        s->bytes_written += a->w;
        s->bytes_read += a->rd;
        if (a->has_o) {
            s->bytes_out += a->o;
            s->out_calls++;
        }
    }
    return k;
}

/* ---- output ----------------------------------------------------------------------------- */
static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* The loaded objects, to name each call site's module and its address there. */
#define NMOD 512
typedef struct {
    uintptr_t lo, hi, bias;
    char path[PATH_MAX];
    int used; /* index in the file's "modules" list, or -1 */
} module_t;
static module_t *mods;
static int nmods;

static int collect_module(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    if (nmods >= NMOD) return 1;
    module_t *m = &mods[nmods];
    m->lo = UINTPTR_MAX;
    m->hi = 0;
    m->bias = info->dlpi_addr;
    m->used = -1;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (lo < m->lo) m->lo = lo;
        if (hi > m->hi) m->hi = hi;
    }
    if (m->lo >= m->hi) return 0;
    const char *name = info->dlpi_name;
    if (!name || !name[0]) {
        ssize_t n = readlink("/proc/self/exe", m->path, sizeof m->path - 1);
        m->path[n > 0 ? n : 0] = 0;
    } else {
        snprintf(m->path, sizeof m->path, "%s", name);
    }
    nmods++;
    return 0;
}

static int module_of(void *p) {
    for (int i = 0; i < nmods; i++)
        if (in_range(p, mods[i].lo, mods[i].hi)) return i;
    return -1;
}

/* The text segment holding address p (for this library and the Fortran binding library). */
static int text_of_cb(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    uintptr_t *q = data, p = q[0];
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (p >= lo && p < hi) {
            q[1] = lo;
            q[2] = hi;
            return 1;
        }
    }
    return 0;
}

static void text_of(void *p, uintptr_t *lo, uintptr_t *hi) {
    uintptr_t q[3] = {(uintptr_t)p, 0, 0};
    if (p) dl_iterate_phdr(text_of_cb, q);
    *lo = q[1];
    *hi = q[2];
}

static void write_sites(FILE *f) {
    fprintf(f, ",\n\"callsite_depth\":%d,\"callsites_dropped\":%llu", site_depth,
            (unsigned long long)sites_dropped);
    if (!sites) {
        fputs(",\"modules\":[],\"callsites\":[]", f);
        return;
    }
    mods = calloc(NMOD, sizeof(module_t));
    nmods = 0;
    if (mods) dl_iterate_phdr(collect_module, NULL);
    int nused = 0;
    fputs(",\n\"callsites\":[", f);
    int first = 1;
    for (int i = 0; i < NSITE; i++) {
        site_t *s = &sites[i];
        if (!s->count) continue;
        fprintf(f, "%s\n{\"call\":\"%s\",\"frames\":[", first ? "" : ",", func_names[s->func]);
        first = 0;
        if (s->python) {
            /* "file\tline\tfunction\n" per frame */
            const char *p = s->where ? s->where : "";
            int ff = 1;
            while (*p) {
                const char *t1 = strchr(p, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
                const char *nl = t2 ? strchr(t2 + 1, '\n') : NULL;
                if (!nl) break;
                char file[PATH_MAX], func[512];
                snprintf(file, sizeof file, "%.*s", (int)(t1 - p), p);
                snprintf(func, sizeof func, "%.*s", (int)(nl - t2 - 1), t2 + 1);
                fprintf(f, "%s{\"file\":", ff ? "" : ",");
                json_str(f, file);
                fprintf(f, ",\"line\":%d,\"function\":", atoi(t1 + 1));
                json_str(f, func);
                fputc('}', f);
                ff = 0;
                p = nl + 1;
            }
        } else {
            for (int k = 0; k < s->nframes; k++) {
                int m = mods ? module_of(s->frames[k]) : -1;
                if (m < 0) {
                    fprintf(f, "%s{\"address\":\"%p\"}", k ? "," : "", s->frames[k]);
                    continue;
                }
                if (mods[m].used < 0) mods[m].used = nused++;
                fprintf(f, "%s{\"module\":%d,\"offset\":\"0x%llx\"}", k ? "," : "", mods[m].used,
                        (unsigned long long)((uintptr_t)s->frames[k] - mods[m].bias));
            }
        }
        fprintf(f,
                "],\"count\":%llu,\"time_s\":%.9e,\"min_s\":%.9e,\"max_s\":%.9e,"
                "\"bytes_sent\":%llu,\"bytes_recv\":%llu,\"bytes_written\":%llu,"
                "\"bytes_read\":%llu",
                (unsigned long long)s->count, (double)s->time * tick_s,
                (double)s->tmin * tick_s, (double)s->tmax * tick_s,
                (unsigned long long)s->bytes_sent, (unsigned long long)s->bytes_recv,
                (unsigned long long)s->bytes_written, (unsigned long long)s->bytes_read);
        if (s->out_calls && s->out_calls == s->count)
            fprintf(f, ",\"bytes_out\":%llu", (unsigned long long)s->bytes_out);
        fputc('}', f);
    }
    fputs("],\n\"modules\":[", f);
    for (int u = 0; u < nused; u++) {
        for (int m = 0; m < nmods; m++) {
            if (mods[m].used != u) continue;
            struct stat sb;
            long long size = -1, mtime = -1;
            if (stat(mods[m].path, &sb) == 0) {
                size = (long long)sb.st_size;
                mtime = (long long)sb.st_mtime;
            }
            fprintf(f, "%s{\"path\":", u ? "," : "");
            json_str(f, mods[m].path);
            fprintf(f, ",\"size\":%lld,\"mtime\":%lld}", size, mtime);
        }
    }
    fputs("]", f);
    free(mods);
    mods = NULL;
}

static void write_profile(int complete, int aborted, tick_t t_end) {
    if (!out_dir[0] || world_rank < 0) return;
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s/rank-%05d.json", out_dir, world_rank);
    snprintf(tmp, sizeof tmp, "%s/.rank-%05d.json.%d.tmp", out_dir, world_rank, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "cloudhpc-profile: rank %d cannot write %s: %s\n", world_rank, tmp,
                strerror(errno));
        return;
    }
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    calibrate();
    double mpi = 0;
    for (int i = 0; i < NFUNC; i++) mpi += (double)stats[i].time * tick_s;
    fprintf(f,
            "{\"format\":\"cloudhpc-pmpi-rank\",\"format_version\":%d,\"rank\":%d,\"size\":%d,"
            "\"host\":",
            PROFILE_FORMAT_VERSION, world_rank, world_size);
    json_str(f, host);
    fprintf(f,
            ",\"pid\":%d,\"complete\":%s,\"aborted\":%s,"
            "\"clock\":\"%s\",\"tick_s\":%.6e,\"t_init\":%.9f,\"t_init_wall\":%.6f,"
            "\"total_s\":%.9e,\"mpi_s\":%.9e,\"cpu_s\":%.9e,\n\"calls\":{",
            (int)getpid(), complete ? "true" : "false", aborted ? "true" : "false",
            use_tsc ? "tsc" : "monotonic", tick_s, mono_init, wall_init,
            (double)(t_end - tick_init) * tick_s, mpi,
            clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu_init);
    int first = 1;
    for (int i = 0; i < NFUNC; i++) {
        stat_t *x = &stats[i];
        if (!x->count) continue;
        fprintf(f,
                "%s\n\"%s\":{\"count\":%llu,\"time_s\":%.9e,\"min_s\":%.9e,\"max_s\":%.9e,"
                "\"bytes_sent\":%llu,\"bytes_recv\":%llu,\"bytes_written\":%llu,"
                "\"bytes_read\":%llu,",
                first ? "" : ",", func_names[i], (unsigned long long)x->count,
                (double)x->time * tick_s, (double)x->tmin * tick_s, (double)x->tmax * tick_s,
                (unsigned long long)x->bytes_sent, (unsigned long long)x->bytes_recv,
                (unsigned long long)x->bytes_written, (unsigned long long)x->bytes_read);
        /* every call said which of its bytes left the rank: written (older readers skip it) */
        if (x->out_calls && x->out_calls == x->count)
            fprintf(f, "\"bytes_out\":%llu,", (unsigned long long)x->bytes_out);
        fputs("\"size_hist\":{", f);
        first = 0;
        int hf = 1;
        for (int b = 0; b < NBIN; b++) {
            if (!x->hist[b]) continue;
            fprintf(f, "%s\"%llu\":%llu", hf ? "" : ",", b ? 1ull << (b - 1) : 0ull,
                    (unsigned long long)x->hist[b]);
            hf = 0;
        }
        fputs("}}", f);
    }
    fputs("},\n\"p2p\":{", f);
    const char *keys[4] = {"sent_msgs", "sent_bytes", "recv_msgs", "recv_bytes"};
    uint64_t *arrs[4] = {sent_msgs, sent_bytes, recv_msgs, recv_bytes};
    for (int k = 0; k < 4; k++) {
        fprintf(f, "%s\"%s\":[", k ? "," : "", keys[k]);
        for (int r = 0; arrs[k] && r < world_size; r++)
            fprintf(f, "%s%llu", r ? "," : "", (unsigned long long)arrs[k][r]);
        fputs("]", f);
    }
    fputs("}", f);
    write_sites(f);
    fprintf(f, ",\n\"trace\":{\"enabled\":%s,\"events\":%llu,\"dropped\":%llu,\"names\":[",
            trace_buf ? "true" : "false", (unsigned long long)trace_len,
            (unsigned long long)trace_dropped);
    for (int i = 0; i < NFUNC; i++) fprintf(f, "%s\"%s\"", i ? "," : "", func_names[i]);
    fputs("]}}\n", f);
    int bad = ferror(f) ? errno : 0;
    if (fclose(f) && !bad) bad = errno ? errno : EIO;
    if (!bad && rename(tmp, path)) bad = errno;
    if (bad) {
        fprintf(stderr, "cloudhpc-profile: rank %d cannot write %s: %s\n", world_rank, path,
                strerror(bad));
        unlink(tmp);
    }
}

static void write_trace(void) {
    if (!trace_buf || !out_dir[0]) return;
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s/rank-%05d.trace", out_dir, world_rank);
    snprintf(tmp, sizeof tmp, "%s/.rank-%05d.trace.%d.tmp", out_dir, world_rank, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return;
    calibrate();
    trace_record chunk[1024];
    int bad = 0;
    for (uint64_t i = 0; i < trace_len && !bad; i += 1024) {
        size_t n = trace_len - i < 1024 ? (size_t)(trace_len - i) : 1024;
        for (size_t j = 0; j < n; j++) {
            const trace_event *e = &trace_buf[i + j];
            chunk[j].t0 = mono_init + (double)(e->t0 - tick_init) * tick_s;
            chunk[j].t1 = mono_init + (double)(e->t1 - tick_init) * tick_s;
            chunk[j].func = e->func;
            chunk[j].peer = e->peer;
            chunk[j].bytes = e->bytes;
        }
        bad = fwrite(chunk, sizeof(trace_record), n, f) != n;
    }
    if (fclose(f) || bad || rename(tmp, path)) unlink(tmp);
}

/* Call sites: the depth, this library's and the Fortran binding's text, and in a Python
 * process the helper that reads Python's frames. */
static void setup_sites(void) {
    const char *d = getenv("CLOUDHPC_PROFILE_CALLSITE_DEPTH");
    site_depth = d ? atoi(d) : 1;
    if (site_depth < 0) site_depth = 0;
    if (site_depth > MAXFRAMES / 2) site_depth = MAXFRAMES / 2;
    if (!site_depth) return;
    sites = calloc(NSITE, sizeof(site_t));
    if (!sites) {
        site_depth = 0;
        return;
    }
    text_of((void *)&setup_sites, &self_lo, &self_hi);
    text_of(dlsym(RTLD_DEFAULT, "mpi_init_"), &fort_lo, &fort_hi);
    dl_iterate_phdr(collect_exec, NULL);
    const char *helper = getenv("CLOUDHPC_PROFILE_PYSITE");
    if (helper && helper[0] && dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState")) {
        void *h = dlopen(helper, RTLD_NOW | RTLD_LOCAL);
        if (h) {
            py_frames = (py_frames_fn)dlsym(h, "cloudhpc_pysite_frames");
            py_describe = (py_describe_fn)dlsym(h, "cloudhpc_pysite_describe");
            if (!py_describe) py_frames = NULL;
        }
    }
    if (site_depth > 1 || fort_hi) {
        void *warm[4];
        backtrace(warm, 4); /* loads the unwinder now, not inside a timed call */
    }
    site_fast = site_depth == 1 && !py_frames;
}

static void setup(void) {
    const char *d = getenv("CLOUDHPC_PROFILE_DIR");
    if (d) snprintf(out_dir, sizeof out_dir, "%s", d);
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
    PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
    sent_msgs = calloc((size_t)world_size, sizeof(uint64_t));
    sent_bytes = calloc((size_t)world_size, sizeof(uint64_t));
    recv_msgs = calloc((size_t)world_size, sizeof(uint64_t));
    recv_bytes = calloc((size_t)world_size, sizeof(uint64_t));
    const char *tr = getenv("CLOUDHPC_PROFILE_TRACE");
    if (tr && tr[0] && strcmp(tr, "0") != 0) {
        const char *cap = getenv("CLOUDHPC_PROFILE_TRACE_EVENTS");
        trace_cap = cap ? strtoull(cap, NULL, 10) : (1ull << 20);
        trace_buf = trace_cap ? malloc(trace_cap * sizeof(trace_event)) : NULL;
    }
    setup_sites();
    initialized = 1;
}

static void reset_stats(void) {
    for (int i = 0; i < NFUNC; i++) {
        memset(&stats[i], 0, sizeof stats[i]);
        stats[i].tmin = UINT64_MAX;
    }
}

/* ---- environment management (by hand: they set the library up and write the profile) ---- */
static int aborting, finalized;

/* A rank that returns from main (or calls exit) without MPI_Finalize: its profile is written
 * at exit, marked incomplete and not aborted, so the run is told it never finalized. */
static void exit_without_finalize(void) {
    if (!finalized && !aborting) write_profile(0, 0, now());
}

static void watch_exit(void) {
    static int registered;
    if (!registered) registered = atexit(exit_without_finalize) == 0;
}

int MPI_Init(int *argc, char ***argv) {
    void *ra = __builtin_return_address(0);
    reset_stats();
    start_clock();
    tick_t t0 = tick_init;
    in_mpi = 1;
    int rc = PMPI_Init(argc, argv);
    in_mpi = 0;
    tick_t t1 = now();
    setup();
    watch_exit();
    acc_t A = ACC_NONE;
    finish(F_Init, &A, t0, t1, ra);
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    void *ra = __builtin_return_address(0);
    reset_stats();
    start_clock();
    tick_t t0 = tick_init;
    in_mpi = 1;
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    in_mpi = 0;
    tick_t t1 = now();
    setup();
    watch_exit();
    acc_t A = ACC_NONE;
    finish(F_Init_thread, &A, t0, t1, ra);
    return rc;
}

int MPI_Finalize(void) {
    /* MPICH's abort path can reach MPI_Finalize through this wrapper: keep the abort profile */
    if (aborting || in_mpi) return PMPI_Finalize();
    void *ra = __builtin_return_address(0);
    /* Write first without Finalize's own time: if a peer's death makes Finalize hang or the
     * launcher kills this rank inside it, the profile of the work done so far is kept. */
    tick_t t0 = now();
    write_profile(0, 0, t0);
    in_mpi = 1;
    int rc = PMPI_Finalize();
    in_mpi = 0;
    tick_t t1 = now();
    acc_t A = ACC_NONE;
    finish(F_Finalize, &A, t0, t1, ra);
    write_trace();
    write_profile(1, 0, t1);
    finalized = 1;
    return rc;
}

int MPI_Abort(MPI_Comm comm, int errorcode) {
    void *ra = __builtin_return_address(0);
    tick_t t = now();
    aborting = 1;
    acc_t A = ACC_NONE;
    finish(F_Abort, &A, t, t, ra);
    write_trace();
    write_profile(0, 1, t);
    return PMPI_Abort(comm, errorcode);
}

/* ---- completion: scratch copies of request handles and statuses for the array calls, so
 * receives can be matched with their requests after the call; heap only beyond 64. */
#define NSTACK 64
#define ARRAY_SCRATCH(n, reqs, statuses)                                                     \
    MPI_Request hstk_[NSTACK], *hs_ = hstk_;                                                 \
    MPI_Status sstk_[NSTACK], *ss_ = statuses;                                               \
    int track_ = npend_req > 0 && (n) > 0;                                                   \
    if (track_) {                                                                            \
        if ((n) > NSTACK) {                                                                  \
            hs_ = malloc(sizeof(MPI_Request) * (size_t)(n));                                 \
            if (statuses == MPI_STATUSES_IGNORE)                                             \
                ss_ = malloc(sizeof(MPI_Status) * (size_t)(n));                              \
        } else if (statuses == MPI_STATUSES_IGNORE) {                                        \
            ss_ = sstk_;                                                                     \
        }                                                                                    \
        if (!hs_ || !ss_)                                                                    \
            track_ = 0, ss_ = statuses;                                                      \
        else                                                                                 \
            memcpy(hs_, reqs, sizeof(MPI_Request) * (size_t)(n));                            \
    }
#define ARRAY_SCRATCH_FREE(statuses)                                                         \
    if (hs_ && hs_ != hstk_) free(hs_);                                                      \
    if (ss_ && ss_ != sstk_ && ss_ != statuses) free(ss_);

#define ONE_SCRATCH(n, reqs)                                                                 \
    MPI_Request hstk_[NSTACK], *hs_ = hstk_;                                                 \
    int track_ = npend_req > 0 && (n) > 0;                                                   \
    if (track_ && (n) > NSTACK) hs_ = malloc(sizeof(MPI_Request) * (size_t)(n));             \
    if (!hs_) track_ = 0;                                                                    \
    if (track_) memcpy(hs_, reqs, sizeof(MPI_Request) * (size_t)(n));

#include "pmpi_wrappers.inc" /* generated: one wrapper per line of mpi_calls.txt */
