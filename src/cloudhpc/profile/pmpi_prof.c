/* cloudhpc PMPI profiling library: counts, times and sizes every intercepted MPI call.
 *
 * Loaded with LD_PRELOAD into each rank of an unmodified MPI program (C, or Python with mpi4py).
 * Each wrapper calls the PMPI_ entry point and adds to fixed per-function counters: no locks,
 * no allocation and no I/O on the hot path. At MPI_Finalize (and MPI_Abort) every rank writes
 * one JSON file, `rank-NNNNN.json`, into $CLOUDHPC_PROFILE_DIR through a temporary name and
 * rename(), so a rank killed part-way leaves no half-written file. With
 * CLOUDHPC_PROFILE_TRACE=1 each call is also appended to a per-rank event buffer written as
 * `rank-NNNNN.trace` (packed struct trace_event records) at finalize.
 *
 * Both the int-count and the MPI-4 large-count (_c) variants are wrapped and reported under the
 * same name: mpi4py 4 calls the _c variants (MPI_Send_c, MPI_Allreduce_c, ...). An MPI-3.1
 * library (Open MPI 5.0) has no _c variants: only the int-count wrappers are built for it.
 *
 * Conventions (see docs/profile-schema.md): bytes = count x type size; receives use the
 * status's actual count; point-to-point peers are recorded as MPI_COMM_WORLD ranks. Counters
 * are process-wide and unsynchronised: with several threads calling MPI at once they may
 * undercount.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#define HAVE_LARGE_COUNT (MPI_VERSION >= 4)
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#define PROFILE_FORMAT_VERSION 1
#define NBIN 64 /* bin 0: 0 bytes; bin k >= 1: [2^(k-1), 2^k) bytes */

#define FUNCS(X)                                                                             \
    X(Init) X(Init_thread) X(Finalize) X(Abort) X(Comm_rank) X(Comm_size) X(Comm_split)      \
    X(Comm_dup) X(Comm_free) X(Send) X(Ssend) X(Rsend) X(Bsend) X(Recv) X(Isend) X(Issend)   \
    X(Irsend) X(Ibsend) X(Irecv) X(Wait) X(Waitall) X(Waitany) X(Waitsome) X(Test)           \
    X(Testall) X(Testany) X(Testsome) X(Sendrecv) X(Sendrecv_replace) X(Probe) X(Iprobe)     \
    X(Mprobe) X(Improbe) X(Mrecv) X(Imrecv) X(Barrier) X(Bcast) X(Reduce) X(Allreduce)       \
    X(Gather) X(Gatherv) X(Scatter) X(Scatterv) X(Allgather) X(Allgatherv) X(Alltoall)       \
    X(Alltoallv) X(Reduce_scatter) X(Reduce_scatter_block) X(Scan) X(Exscan) X(Ibarrier)    \
    X(Ibcast) X(Ireduce) X(Iallreduce) X(Igather) X(Iscatter) X(Iallgather) X(Ialltoall)

#define ENUM_ENTRY(n) F_##n,
enum { FUNCS(ENUM_ENTRY) NFUNC };
#define NAME_ENTRY(n) "MPI_" #n,
static const char *const func_names[NFUNC] = {FUNCS(NAME_ENTRY)};

typedef uint64_t tick_t; /* TSC cycles, or nanoseconds of CLOCK_MONOTONIC */

typedef struct {
    uint64_t count;
    tick_t time, tmin, tmax;
    uint64_t bytes_sent, bytes_recv;
    uint64_t hist[NBIN];
} stat_t;

typedef struct { /* in the buffer */
    tick_t t0, t1;
    int32_t func, peer; /* peer: MPI_COMM_WORLD rank for point-to-point, else -1 */
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
static double tick_s = 1e-9; /* seconds per tick, calibrated when the profile is written */
static int use_tsc;
static MPI_Group world_group = MPI_GROUP_NULL;
static uint64_t *sent_msgs, *sent_bytes, *recv_msgs, *recv_bytes;
static char out_dir[4096];

static trace_event *trace_buf;
static uint64_t trace_cap, trace_len, trace_dropped;

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

/* msg < 0: the call carries no message for the size histogram. */
static inline void record(int f, tick_t t0, tick_t t1, uint64_t s, uint64_t r, int64_t msg,
                          int peer) {
    stat_t *x = &stats[f];
    tick_t d = t1 > t0 ? t1 - t0 : 0;
    x->count++;
    x->time += d;
    if (d < x->tmin) x->tmin = d;
    if (d > x->tmax) x->tmax = d;
    x->bytes_sent += s;
    x->bytes_recv += r;
    if (msg >= 0) {
        int b = size_bin((uint64_t)msg);
        x->hist[b < NBIN ? b : NBIN - 1]++;
    }
    if (trace_buf) {
        if (trace_len < trace_cap) {
            trace_event *e = &trace_buf[trace_len++];
            e->t0 = t0;
            e->t1 = t1;
            e->func = f;
            e->peer = peer;
            e->bytes = s + r;
        } else {
            trace_dropped++;
        }
    }
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

static inline uint64_t status_bytes(const MPI_Status *st) {
    MPI_Count n = 0;
    if (st->MPI_SOURCE == MPI_PROC_NULL) return 0;
#if HAVE_LARGE_COUNT
    PMPI_Get_count_c(st, MPI_BYTE, &n);
#else
    PMPI_Get_elements_x(st, MPI_BYTE, &n);
#endif
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

/* ---- rank translation to MPI_COMM_WORLD ------------------------------------------------ */
/* Communicators made by MPI_Comm_split / MPI_Comm_dup get their translation table when they
 * are created (not on the hot path); others fall back to a group translation per message. */
#define NCOMM_CACHE 32
static struct {
    MPI_Comm comm;
    int n;
    int *map;
} comm_cache[NCOMM_CACHE];

static void cache_comm(MPI_Comm c) {
    if (!initialized || c == MPI_COMM_NULL) return;
    int inter = 0;
    PMPI_Comm_test_inter(c, &inter);
    if (inter) return;
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
    int inter = 0, out = MPI_UNDEFINED;
    PMPI_Comm_test_inter(c, &inter);
    if (inter)
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

/* ---- receives whose size is known only at completion ----------------------------------- */
/* Open-addressing table: pending receive request (or matched message) -> its communicator. */
#define NPEND 4096
typedef struct {
    uint64_t key;
    MPI_Comm comm;
    int used;
} pend_t;
static pend_t pend_req[NPEND], pend_msg[NPEND];
static int npend_req, npend_msg;

static inline uint64_t hkey(uint64_t k) { return (k * 0x9E3779B97F4A7C15ull) >> 52; }

static int pend_put(pend_t *t, int *n, uint64_t key, MPI_Comm c) {
    if (*n >= NPEND * 3 / 4) return 0;
    uint64_t i = hkey(key) & (NPEND - 1);
    while (t[i].used && t[i].key != key) i = (i + 1) & (NPEND - 1);
    if (!t[i].used) (*n)++;
    t[i].used = 1;
    t[i].key = key;
    t[i].comm = c;
    return 1;
}

static int pend_take(pend_t *t, int *n, uint64_t key, MPI_Comm *c) {
    uint64_t i = hkey(key) & (NPEND - 1);
    while (t[i].used) {
        if (t[i].key == key) {
            *c = t[i].comm;
            t[i].used = 0;
            (*n)--;
            /* re-insert the rest of the cluster so later lookups still find their keys */
            uint64_t j = (i + 1) & (NPEND - 1);
            while (t[j].used) {
                pend_t e = t[j];
                t[j].used = 0;
                (*n)--;
                pend_put(t, n, e.key, e.comm);
                j = (j + 1) & (NPEND - 1);
            }
            return 1;
        }
        i = (i + 1) & (NPEND - 1);
    }
    return 0;
}

#define RKEY(r) ((uint64_t)(uintptr_t)(r))

/* A request completed with status st: if it was a receive we posted, account its bytes. */
static inline void complete_req(MPI_Request h, const MPI_Status *st) {
    MPI_Comm c;
    if (npend_req == 0 || h == MPI_REQUEST_NULL) return;
    if (!pend_take(pend_req, &npend_req, RKEY(h), &c)) return;
    if (st->MPI_SOURCE == MPI_PROC_NULL) return;
    uint64_t b = status_bytes(st);
    stat_t *x = &stats[F_Irecv];
    x->bytes_recv += b;
    int bin = size_bin(b);
    x->hist[bin < NBIN ? bin : NBIN - 1]++;
    p2p_recv(c, st->MPI_SOURCE, b);
}

/* ---- output ----------------------------------------------------------------------------- */
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
            "\"host\":\"%s\",\"pid\":%d,\"complete\":%s,\"aborted\":%s,"
            "\"clock\":\"%s\",\"tick_s\":%.6e,\"t_init\":%.9f,\"t_init_wall\":%.6f,"
            "\"total_s\":%.9e,\"mpi_s\":%.9e,\n\"calls\":{",
            PROFILE_FORMAT_VERSION, world_rank, world_size, host, (int)getpid(),
            complete ? "true" : "false", aborted ? "true" : "false", use_tsc ? "tsc" : "monotonic",
            tick_s, mono_init, wall_init, (double)(t_end - tick_init) * tick_s, mpi);
    int first = 1;
    for (int i = 0; i < NFUNC; i++) {
        stat_t *x = &stats[i];
        if (!x->count) continue;
        fprintf(f,
                "%s\n\"%s\":{\"count\":%llu,\"time_s\":%.9e,\"min_s\":%.9e,\"max_s\":%.9e,"
                "\"bytes_sent\":%llu,\"bytes_recv\":%llu,\"size_hist\":{",
                first ? "" : ",", func_names[i], (unsigned long long)x->count,
                (double)x->time * tick_s, (double)x->tmin * tick_s, (double)x->tmax * tick_s,
                (unsigned long long)x->bytes_sent, (unsigned long long)x->bytes_recv);
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
    fprintf(f, "},\n\"trace\":{\"enabled\":%s,\"events\":%llu,\"dropped\":%llu,\"names\":[",
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
    initialized = 1;
}

static void reset_stats(void) {
    for (int i = 0; i < NFUNC; i++) {
        memset(&stats[i], 0, sizeof stats[i]);
        stats[i].tmin = UINT64_MAX;
    }
}

/* ---- environment management ------------------------------------------------------------ */
int MPI_Init(int *argc, char ***argv) {
    reset_stats();
    start_clock();
    tick_t t0 = tick_init;
    int rc = PMPI_Init(argc, argv);
    tick_t t1 = now();
    setup();
    record(F_Init, t0, t1, 0, 0, -1, -1);
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    reset_stats();
    start_clock();
    tick_t t0 = tick_init;
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    tick_t t1 = now();
    setup();
    record(F_Init_thread, t0, t1, 0, 0, -1, -1);
    return rc;
}

static int aborting;

int MPI_Finalize(void) {
    /* MPICH's abort path can reach MPI_Finalize through this wrapper: keep the abort profile */
    if (aborting) return PMPI_Finalize();
    /* Write first without Finalize's own time: if a peer's death makes Finalize hang or the
     * launcher kills this rank inside it, the profile of the work done so far is kept. */
    tick_t t0 = now();
    write_profile(0, 0, t0);
    int rc = PMPI_Finalize();
    tick_t t1 = now();
    record(F_Finalize, t0, t1, 0, 0, -1, -1);
    write_trace();
    write_profile(1, 0, t1);
    return rc;
}

int MPI_Abort(MPI_Comm comm, int errorcode) {
    tick_t t = now();
    aborting = 1;
    record(F_Abort, t, t, 0, 0, -1, -1);
    write_trace();
    write_profile(0, 1, t);
    return PMPI_Abort(comm, errorcode);
}

int MPI_Comm_rank(MPI_Comm comm, int *rank) {
    tick_t t0 = now();
    int rc = PMPI_Comm_rank(comm, rank);
    record(F_Comm_rank, t0, now(), 0, 0, -1, -1);
    return rc;
}

int MPI_Comm_size(MPI_Comm comm, int *size) {
    tick_t t0 = now();
    int rc = PMPI_Comm_size(comm, size);
    record(F_Comm_size, t0, now(), 0, 0, -1, -1);
    return rc;
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm) {
    tick_t t0 = now();
    int rc = PMPI_Comm_split(comm, color, key, newcomm);
    tick_t t1 = now();
    if (rc == MPI_SUCCESS) cache_comm(*newcomm);
    record(F_Comm_split, t0, t1, 0, 0, -1, -1);
    return rc;
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) {
    tick_t t0 = now();
    int rc = PMPI_Comm_dup(comm, newcomm);
    tick_t t1 = now();
    if (rc == MPI_SUCCESS) cache_comm(*newcomm);
    record(F_Comm_dup, t0, t1, 0, 0, -1, -1);
    return rc;
}

int MPI_Comm_free(MPI_Comm *comm) {
    MPI_Comm c = *comm;
    tick_t t0 = now();
    int rc = PMPI_Comm_free(comm);
    tick_t t1 = now();
    uncache_comm(c);
    record(F_Comm_free, t0, t1, 0, 0, -1, -1);
    return rc;
}

/* ---- point-to-point ---------------------------------------------------------------------- */
#define W_SEND(N, S, CNT)                                                                    \
    int MPI_##N##S(const void *buf, CNT count, MPI_Datatype dt, int dest, int tag,           \
                   MPI_Comm comm) {                                                          \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_##N##S(buf, count, dt, dest, tag, comm);                               \
        tick_t t1 = now();                                                                   \
        uint64_t b = dest == MPI_PROC_NULL ? 0 : (uint64_t)count * tsize(dt);                \
        int w = p2p_sent(comm, dest, b);                                                     \
        record(F_##N, t0, t1, b, 0, dest == MPI_PROC_NULL ? -1 : (int64_t)b, w);             \
        return rc;                                                                           \
    }
W_SEND(Send, , int)
#if HAVE_LARGE_COUNT
W_SEND(Send, _c, MPI_Count)
#endif
W_SEND(Ssend, , int)
#if HAVE_LARGE_COUNT
W_SEND(Ssend, _c, MPI_Count)
#endif
W_SEND(Rsend, , int)
#if HAVE_LARGE_COUNT
W_SEND(Rsend, _c, MPI_Count)
#endif
W_SEND(Bsend, , int)
#if HAVE_LARGE_COUNT
W_SEND(Bsend, _c, MPI_Count)
#endif

#define W_ISEND(N, S, CNT)                                                                   \
    int MPI_##N##S(const void *buf, CNT count, MPI_Datatype dt, int dest, int tag,           \
                   MPI_Comm comm, MPI_Request *req) {                                        \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_##N##S(buf, count, dt, dest, tag, comm, req);                          \
        tick_t t1 = now();                                                                   \
        uint64_t b = dest == MPI_PROC_NULL ? 0 : (uint64_t)count * tsize(dt);                \
        int w = p2p_sent(comm, dest, b);                                                     \
        record(F_##N, t0, t1, b, 0, dest == MPI_PROC_NULL ? -1 : (int64_t)b, w);             \
        return rc;                                                                           \
    }
W_ISEND(Isend, , int)
#if HAVE_LARGE_COUNT
W_ISEND(Isend, _c, MPI_Count)
#endif
W_ISEND(Issend, , int)
#if HAVE_LARGE_COUNT
W_ISEND(Issend, _c, MPI_Count)
#endif
W_ISEND(Irsend, , int)
#if HAVE_LARGE_COUNT
W_ISEND(Irsend, _c, MPI_Count)
#endif
W_ISEND(Ibsend, , int)
#if HAVE_LARGE_COUNT
W_ISEND(Ibsend, _c, MPI_Count)
#endif

#define W_RECV(S, CNT)                                                                       \
    int MPI_Recv##S(void *buf, CNT count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,  \
                    MPI_Status *status) {                                                    \
        MPI_Status local;                                                                    \
        MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;                      \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_Recv##S(buf, count, dt, src, tag, comm, st);                           \
        tick_t t1 = now();                                                                   \
        uint64_t b = status_bytes(st);                                                       \
        int w = p2p_recv(comm, st->MPI_SOURCE, b);                                           \
        record(F_Recv, t0, t1, 0, b, st->MPI_SOURCE == MPI_PROC_NULL ? -1 : (int64_t)b, w);  \
        return rc;                                                                           \
    }
W_RECV(, int)
#if HAVE_LARGE_COUNT
W_RECV(_c, MPI_Count)
#endif

/* Irecv: counted when posted; its bytes and source are added when the request completes. */
#define W_IRECV(S, CNT)                                                                      \
    int MPI_Irecv##S(void *buf, CNT count, MPI_Datatype dt, int src, int tag, MPI_Comm comm, \
                     MPI_Request *req) {                                                     \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_Irecv##S(buf, count, dt, src, tag, comm, req);                         \
        tick_t t1 = now();                                                                   \
        if (rc == MPI_SUCCESS && !pend_put(pend_req, &npend_req, RKEY(*req), comm)) {        \
            /* table full: fall back to the posted size and source */                        \
            uint64_t b = (uint64_t)count * tsize(dt);                                        \
            stats[F_Irecv].bytes_recv += b;                                                  \
            p2p_recv(comm, src, b);                                                          \
        }                                                                                    \
        record(F_Irecv, t0, t1, 0, 0, -1, world_rank_of(comm, src));                         \
        return rc;                                                                           \
    }
W_IRECV(, int)
#if HAVE_LARGE_COUNT
W_IRECV(_c, MPI_Count)
#endif

#define W_SENDRECV(S, CNT)                                                                   \
    int MPI_Sendrecv##S(const void *sbuf, CNT scount, MPI_Datatype stype, int dest, int stag, \
                        void *rbuf, CNT rcount, MPI_Datatype rtype, int src, int rtag,        \
                        MPI_Comm comm, MPI_Status *status) {                                 \
        MPI_Status local;                                                                    \
        MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;                      \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_Sendrecv##S(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, src, \
                                  rtag, comm, st);                                           \
        tick_t t1 = now();                                                                   \
        uint64_t bs = dest == MPI_PROC_NULL ? 0 : (uint64_t)scount * tsize(stype);           \
        uint64_t br = status_bytes(st);                                                      \
        int w = p2p_sent(comm, dest, bs);                                                    \
        p2p_recv(comm, st->MPI_SOURCE, br);                                                  \
        record(F_Sendrecv, t0, t1, bs, br, dest == MPI_PROC_NULL ? -1 : (int64_t)bs, w);     \
        return rc;                                                                           \
    }
W_SENDRECV(, int)
#if HAVE_LARGE_COUNT
W_SENDRECV(_c, MPI_Count)
#endif

#define W_SENDRECV_REPLACE(S, CNT)                                                           \
    int MPI_Sendrecv_replace##S(void *buf, CNT count, MPI_Datatype dt, int dest, int stag,   \
                                int src, int rtag, MPI_Comm comm, MPI_Status *status) {      \
        MPI_Status local;                                                                    \
        MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;                      \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_Sendrecv_replace##S(buf, count, dt, dest, stag, src, rtag, comm, st);  \
        tick_t t1 = now();                                                                   \
        uint64_t bs = dest == MPI_PROC_NULL ? 0 : (uint64_t)count * tsize(dt);               \
        uint64_t br = status_bytes(st);                                                      \
        int w = p2p_sent(comm, dest, bs);                                                    \
        p2p_recv(comm, st->MPI_SOURCE, br);                                                  \
        record(F_Sendrecv_replace, t0, t1, bs, br,                                           \
               dest == MPI_PROC_NULL ? -1 : (int64_t)bs, w);                                 \
        return rc;                                                                           \
    }
W_SENDRECV_REPLACE(, int)
#if HAVE_LARGE_COUNT
W_SENDRECV_REPLACE(_c, MPI_Count)
#endif

int MPI_Probe(int src, int tag, MPI_Comm comm, MPI_Status *status) {
    tick_t t0 = now();
    int rc = PMPI_Probe(src, tag, comm, status);
    record(F_Probe, t0, now(), 0, 0, -1, -1);
    return rc;
}

int MPI_Iprobe(int src, int tag, MPI_Comm comm, int *flag, MPI_Status *status) {
    tick_t t0 = now();
    int rc = PMPI_Iprobe(src, tag, comm, flag, status);
    record(F_Iprobe, t0, now(), 0, 0, -1, -1);
    return rc;
}

/* Matched probes (mpi4py's lower-case recv uses them): remember the message's communicator so
 * the receive can name its source as an MPI_COMM_WORLD rank. */
int MPI_Mprobe(int src, int tag, MPI_Comm comm, MPI_Message *msg, MPI_Status *status) {
    tick_t t0 = now();
    int rc = PMPI_Mprobe(src, tag, comm, msg, status);
    tick_t t1 = now();
    if (rc == MPI_SUCCESS) pend_put(pend_msg, &npend_msg, RKEY(*msg), comm);
    record(F_Mprobe, t0, t1, 0, 0, -1, -1);
    return rc;
}

int MPI_Improbe(int src, int tag, MPI_Comm comm, int *flag, MPI_Message *msg,
                MPI_Status *status) {
    tick_t t0 = now();
    int rc = PMPI_Improbe(src, tag, comm, flag, msg, status);
    tick_t t1 = now();
    if (rc == MPI_SUCCESS && *flag) pend_put(pend_msg, &npend_msg, RKEY(*msg), comm);
    record(F_Improbe, t0, t1, 0, 0, -1, -1);
    return rc;
}

#define W_MRECV(S, CNT)                                                                      \
    int MPI_Mrecv##S(void *buf, CNT count, MPI_Datatype dt, MPI_Message *msg,                \
                     MPI_Status *status) {                                                   \
        MPI_Status local;                                                                    \
        MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;                      \
        MPI_Message m = *msg;                                                                \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_Mrecv##S(buf, count, dt, msg, st);                                     \
        tick_t t1 = now();                                                                   \
        uint64_t b = status_bytes(st);                                                       \
        MPI_Comm c;                                                                          \
        int w = -1;                                                                          \
        if (pend_take(pend_msg, &npend_msg, RKEY(m), &c)) w = p2p_recv(c, st->MPI_SOURCE, b); \
        record(F_Mrecv, t0, t1, 0, b, (int64_t)b, w);                                        \
        return rc;                                                                           \
    }
W_MRECV(, int)
#if HAVE_LARGE_COUNT
W_MRECV(_c, MPI_Count)
#endif

#define W_IMRECV(S, CNT)                                                                     \
    int MPI_Imrecv##S(void *buf, CNT count, MPI_Datatype dt, MPI_Message *msg,               \
                      MPI_Request *req) {                                                    \
        MPI_Message m = *msg;                                                                \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_Imrecv##S(buf, count, dt, msg, req);                                   \
        tick_t t1 = now();                                                                   \
        MPI_Comm c;                                                                          \
        if (pend_take(pend_msg, &npend_msg, RKEY(m), &c) && rc == MPI_SUCCESS)               \
            pend_put(pend_req, &npend_req, RKEY(*req), c);                                   \
        record(F_Imrecv, t0, t1, 0, 0, -1, -1);                                              \
        return rc;                                                                           \
    }
W_IMRECV(, int)
#if HAVE_LARGE_COUNT
W_IMRECV(_c, MPI_Count)
#endif

/* ---- completion ------------------------------------------------------------------------- */
int MPI_Wait(MPI_Request *req, MPI_Status *status) {
    if (npend_req == 0) { /* fast path: no receive of ours is pending */
        tick_t t0 = now();
        int rc = PMPI_Wait(req, status);
        record(F_Wait, t0, now(), 0, 0, -1, -1);
        return rc;
    }
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    MPI_Request h = *req;
    tick_t t0 = now();
    int rc = PMPI_Wait(req, st);
    tick_t t1 = now();
    complete_req(h, st);
    record(F_Wait, t0, t1, 0, 0, -1, -1);
    return rc;
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status) {
    if (npend_req == 0) {
        tick_t t0 = now();
        int rc = PMPI_Test(req, flag, status);
        record(F_Test, t0, now(), 0, 0, -1, -1);
        return rc;
    }
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    MPI_Request h = *req;
    tick_t t0 = now();
    int rc = PMPI_Test(req, flag, st);
    tick_t t1 = now();
    if (*flag) complete_req(h, st);
    record(F_Test, t0, t1, 0, 0, -1, -1);
    return rc;
}

/* Scratch copies of request handles and statuses for the array calls; heap only beyond 64. */
#define NSTACK 64
#define ARRAY_SCRATCH(n, statuses)                                                           \
    MPI_Request hstk[NSTACK], *hs = hstk;                                                    \
    MPI_Status sstk[NSTACK], *ss = statuses;                                                 \
    int track = npend_req > 0 && (n) > 0;                                                    \
    if (track) {                                                                             \
        if ((n) > NSTACK) {                                                                  \
            hs = malloc(sizeof(MPI_Request) * (size_t)(n));                                  \
            if (statuses == MPI_STATUSES_IGNORE)                                             \
                ss = malloc(sizeof(MPI_Status) * (size_t)(n));                               \
        } else if (statuses == MPI_STATUSES_IGNORE) {                                        \
            ss = sstk;                                                                       \
        }                                                                                    \
        if (!hs || !ss) track = 0, ss = statuses;                                            \
        else memcpy(hs, reqs, sizeof(MPI_Request) * (size_t)(n));                            \
    }
#define ARRAY_SCRATCH_FREE(n, statuses)                                                      \
    if (hs && hs != hstk) free(hs);                                                          \
    if (ss && ss != sstk && ss != statuses) free(ss);

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[]) {
    ARRAY_SCRATCH(n, statuses)
    tick_t t0 = now();
    int rc = PMPI_Waitall(n, reqs, ss);
    tick_t t1 = now();
    if (track && rc == MPI_SUCCESS)
        for (int i = 0; i < n; i++) complete_req(hs[i], &ss[i]);
    ARRAY_SCRATCH_FREE(n, statuses)
    record(F_Waitall, t0, t1, 0, 0, -1, -1);
    return rc;
}

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[]) {
    ARRAY_SCRATCH(n, statuses)
    tick_t t0 = now();
    int rc = PMPI_Testall(n, reqs, flag, ss);
    tick_t t1 = now();
    if (track && rc == MPI_SUCCESS && *flag)
        for (int i = 0; i < n; i++) complete_req(hs[i], &ss[i]);
    ARRAY_SCRATCH_FREE(n, statuses)
    record(F_Testall, t0, t1, 0, 0, -1, -1);
    return rc;
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[],
                 MPI_Status statuses[]) {
    ARRAY_SCRATCH(n, statuses)
    tick_t t0 = now();
    int rc = PMPI_Waitsome(n, reqs, outcount, indices, ss);
    tick_t t1 = now();
    if (track && rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED)
        for (int i = 0; i < *outcount; i++) complete_req(hs[indices[i]], &ss[i]);
    ARRAY_SCRATCH_FREE(n, statuses)
    record(F_Waitsome, t0, t1, 0, 0, -1, -1);
    return rc;
}

int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int indices[],
                 MPI_Status statuses[]) {
    ARRAY_SCRATCH(n, statuses)
    tick_t t0 = now();
    int rc = PMPI_Testsome(n, reqs, outcount, indices, ss);
    tick_t t1 = now();
    if (track && rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED)
        for (int i = 0; i < *outcount; i++) complete_req(hs[indices[i]], &ss[i]);
    ARRAY_SCRATCH_FREE(n, statuses)
    record(F_Testsome, t0, t1, 0, 0, -1, -1);
    return rc;
}

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status) {
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    MPI_Request hstk[NSTACK], *hs = hstk;
    int track = npend_req > 0 && n > 0;
    if (track && n > NSTACK) hs = malloc(sizeof(MPI_Request) * (size_t)n);
    if (!hs) track = 0;
    if (track) memcpy(hs, reqs, sizeof(MPI_Request) * (size_t)n);
    tick_t t0 = now();
    int rc = PMPI_Waitany(n, reqs, index, st);
    tick_t t1 = now();
    if (track && rc == MPI_SUCCESS && *index != MPI_UNDEFINED) complete_req(hs[*index], st);
    if (hs && hs != hstk) free(hs);
    record(F_Waitany, t0, t1, 0, 0, -1, -1);
    return rc;
}

int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status) {
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    MPI_Request hstk[NSTACK], *hs = hstk;
    int track = npend_req > 0 && n > 0;
    if (track && n > NSTACK) hs = malloc(sizeof(MPI_Request) * (size_t)n);
    if (!hs) track = 0;
    if (track) memcpy(hs, reqs, sizeof(MPI_Request) * (size_t)n);
    tick_t t0 = now();
    int rc = PMPI_Testany(n, reqs, index, flag, st);
    tick_t t1 = now();
    if (track && rc == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED)
        complete_req(hs[*index], st);
    if (hs && hs != hstk) free(hs);
    record(F_Testany, t0, t1, 0, 0, -1, -1);
    return rc;
}

/* ---- collectives --------------------------------------------------------------------------
 * Per rank: bytes_sent = the data this rank contributes from its send buffer, bytes_recv = the
 * data delivered into its receive buffer (root-only arguments count at the root only). With
 * MPI_IN_PLACE the contribution is counted with the receive-side type. The size histogram gets
 * one entry per call: the bytes sent, or the bytes received on a rank that only receives. */
#define PAYLOAD(s, r) ((int64_t)((s) ? (s) : (r)))

int MPI_Barrier(MPI_Comm comm) {
    tick_t t0 = now();
    int rc = PMPI_Barrier(comm);
    record(F_Barrier, t0, now(), 0, 0, -1, -1);
    return rc;
}

#define W_BCAST(S, CNT)                                                                      \
    int MPI_Bcast##S(void *buf, CNT count, MPI_Datatype dt, int root, MPI_Comm comm) {       \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_Bcast##S(buf, count, dt, root, comm);                                  \
        tick_t t1 = now();                                                                   \
        uint64_t b = (uint64_t)count * tsize(dt);                                            \
        int me = comm_rank(comm) == root;                                                    \
        record(F_Bcast, t0, t1, me ? b : 0, me ? 0 : b, (int64_t)b, -1);                     \
        return rc;                                                                           \
    }
W_BCAST(, int)
#if HAVE_LARGE_COUNT
W_BCAST(_c, MPI_Count)
#endif

#define W_REDUCE(S, CNT)                                                                     \
    int MPI_Reduce##S(const void *sbuf, void *rbuf, CNT count, MPI_Datatype dt, MPI_Op op,   \
                      int root, MPI_Comm comm) {                                             \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_Reduce##S(sbuf, rbuf, count, dt, op, root, comm);                      \
        tick_t t1 = now();                                                                   \
        uint64_t b = (uint64_t)count * tsize(dt);                                            \
        record(F_Reduce, t0, t1, b, comm_rank(comm) == root ? b : 0, (int64_t)b, -1);        \
        return rc;                                                                           \
    }
W_REDUCE(, int)
#if HAVE_LARGE_COUNT
W_REDUCE(_c, MPI_Count)
#endif

#define W_ALLRED(N, S, CNT)                                                                  \
    int MPI_##N##S(const void *sbuf, void *rbuf, CNT count, MPI_Datatype dt, MPI_Op op,      \
                   MPI_Comm comm) {                                                          \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_##N##S(sbuf, rbuf, count, dt, op, comm);                               \
        tick_t t1 = now();                                                                   \
        uint64_t b = (uint64_t)count * tsize(dt);                                            \
        record(F_##N, t0, t1, b, b, (int64_t)b, -1);                                         \
        return rc;                                                                           \
    }
W_ALLRED(Allreduce, , int)
#if HAVE_LARGE_COUNT
W_ALLRED(Allreduce, _c, MPI_Count)
#endif
W_ALLRED(Scan, , int)
#if HAVE_LARGE_COUNT
W_ALLRED(Scan, _c, MPI_Count)
#endif
W_ALLRED(Exscan, , int)
#if HAVE_LARGE_COUNT
W_ALLRED(Exscan, _c, MPI_Count)
#endif

#define W_GATHER(S, CNT)                                                                     \
    int MPI_Gather##S(const void *sbuf, CNT scount, MPI_Datatype stype, void *rbuf,          \
                      CNT rcount, MPI_Datatype rtype, int root, MPI_Comm comm) {             \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_Gather##S(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);       \
        tick_t t1 = now();                                                                   \
        int me = comm_rank(comm) == root;                                                    \
        uint64_t rb = me ? (uint64_t)rcount * tsize(rtype) : 0;                              \
        uint64_t s = sbuf == MPI_IN_PLACE ? rb : (uint64_t)scount * tsize(stype);            \
        uint64_t r = me ? rb * (uint64_t)comm_size(comm) : 0;                                \
        record(F_Gather, t0, t1, s, r, PAYLOAD(s, r), -1);                                   \
        return rc;                                                                           \
    }
W_GATHER(, int)
#if HAVE_LARGE_COUNT
W_GATHER(_c, MPI_Count)
#endif

#define W_SCATTER(S, CNT)                                                                    \
    int MPI_Scatter##S(const void *sbuf, CNT scount, MPI_Datatype stype, void *rbuf,         \
                       CNT rcount, MPI_Datatype rtype, int root, MPI_Comm comm) {            \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_Scatter##S(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);      \
        tick_t t1 = now();                                                                   \
        int me = comm_rank(comm) == root;                                                    \
        uint64_t sb = me ? (uint64_t)scount * tsize(stype) : 0;                              \
        uint64_t s = sb * (uint64_t)(me ? comm_size(comm) : 0);                              \
        uint64_t r = rbuf == MPI_IN_PLACE ? sb : (uint64_t)rcount * tsize(rtype);            \
        record(F_Scatter, t0, t1, s, r, PAYLOAD(s, r), -1);                                  \
        return rc;                                                                           \
    }
W_SCATTER(, int)
#if HAVE_LARGE_COUNT
W_SCATTER(_c, MPI_Count)
#endif

#define W_ALLGATHER(N, S, CNT, MULT_SEND)                                                    \
    int MPI_##N##S(const void *sbuf, CNT scount, MPI_Datatype stype, void *rbuf, CNT rcount, \
                   MPI_Datatype rtype, MPI_Comm comm) {                                      \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_##N##S(sbuf, scount, stype, rbuf, rcount, rtype, comm);                \
        tick_t t1 = now();                                                                   \
        uint64_t p = (uint64_t)comm_size(comm), rb = (uint64_t)rcount * tsize(rtype);        \
        uint64_t sb = sbuf == MPI_IN_PLACE ? rb : (uint64_t)scount * tsize(stype);           \
        uint64_t s = MULT_SEND ? sb * p : sb, r = rb * p;                                    \
        record(F_##N, t0, t1, s, r, PAYLOAD(sb, rb), -1);                                    \
        return rc;                                                                           \
    }
W_ALLGATHER(Allgather, , int, 0)
#if HAVE_LARGE_COUNT
W_ALLGATHER(Allgather, _c, MPI_Count, 0)
#endif
W_ALLGATHER(Alltoall, , int, 1)
#if HAVE_LARGE_COUNT
W_ALLGATHER(Alltoall, _c, MPI_Count, 1)
#endif

#define SUM_COUNTS(counts, n, out)                                                           \
    do {                                                                                     \
        out = 0;                                                                             \
        for (int i_ = 0; i_ < (n); i_++) out += (uint64_t)(counts)[i_];                      \
    } while (0)

#define W_GATHERV(S, CNT, DISP)                                                              \
    int MPI_Gatherv##S(const void *sbuf, CNT scount, MPI_Datatype stype, void *rbuf,         \
                       const CNT rcounts[], const DISP displs[], MPI_Datatype rtype, int root, \
                       MPI_Comm comm) {                                                      \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_Gatherv##S(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root,    \
                                 comm);                                                      \
        tick_t t1 = now();                                                                   \
        int rank = comm_rank(comm), me = rank == root;                                       \
        uint64_t s, r = 0;                                                                   \
        if (me) {                                                                            \
            SUM_COUNTS(rcounts, comm_size(comm), r);                                         \
            r *= tsize(rtype);                                                               \
        }                                                                                    \
        s = sbuf == MPI_IN_PLACE ? (uint64_t)rcounts[rank] * tsize(rtype)                   \
                                 : (uint64_t)scount * tsize(stype);                          \
        record(F_Gatherv, t0, t1, s, r, PAYLOAD(s, r), -1);                                  \
        return rc;                                                                           \
    }
W_GATHERV(, int, int)
#if HAVE_LARGE_COUNT
W_GATHERV(_c, MPI_Count, MPI_Aint)
#endif

#define W_SCATTERV(S, CNT, DISP)                                                             \
    int MPI_Scatterv##S(const void *sbuf, const CNT scounts[], const DISP displs[],          \
                        MPI_Datatype stype, void *rbuf, CNT rcount, MPI_Datatype rtype,      \
                        int root, MPI_Comm comm) {                                           \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_Scatterv##S(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root,   \
                                  comm);                                                     \
        tick_t t1 = now();                                                                   \
        int rank = comm_rank(comm), me = rank == root;                                       \
        uint64_t s = 0, r;                                                                   \
        if (me) {                                                                            \
            SUM_COUNTS(scounts, comm_size(comm), s);                                         \
            s *= tsize(stype);                                                               \
        }                                                                                    \
        r = rbuf == MPI_IN_PLACE ? (uint64_t)scounts[rank] * tsize(stype)                   \
                                 : (uint64_t)rcount * tsize(rtype);                          \
        record(F_Scatterv, t0, t1, s, r, PAYLOAD(s, r), -1);                                 \
        return rc;                                                                           \
    }
W_SCATTERV(, int, int)
#if HAVE_LARGE_COUNT
W_SCATTERV(_c, MPI_Count, MPI_Aint)
#endif

#define W_ALLGATHERV(S, CNT, DISP)                                                           \
    int MPI_Allgatherv##S(const void *sbuf, CNT scount, MPI_Datatype stype, void *rbuf,      \
                          const CNT rcounts[], const DISP displs[], MPI_Datatype rtype,      \
                          MPI_Comm comm) {                                                   \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_Allgatherv##S(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm); \
        tick_t t1 = now();                                                                   \
        uint64_t r, s;                                                                       \
        SUM_COUNTS(rcounts, comm_size(comm), r);                                             \
        r *= tsize(rtype);                                                                   \
        s = sbuf == MPI_IN_PLACE ? (uint64_t)rcounts[comm_rank(comm)] * tsize(rtype)         \
                                 : (uint64_t)scount * tsize(stype);                          \
        record(F_Allgatherv, t0, t1, s, r, PAYLOAD(s, r), -1);                               \
        return rc;                                                                           \
    }
W_ALLGATHERV(, int, int)
#if HAVE_LARGE_COUNT
W_ALLGATHERV(_c, MPI_Count, MPI_Aint)
#endif

#define W_ALLTOALLV(S, CNT, DISP)                                                            \
    int MPI_Alltoallv##S(const void *sbuf, const CNT scounts[], const DISP sdispls[],        \
                         MPI_Datatype stype, void *rbuf, const CNT rcounts[],                \
                         const DISP rdispls[], MPI_Datatype rtype, MPI_Comm comm) {          \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_Alltoallv##S(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls,    \
                                   rtype, comm);                                             \
        tick_t t1 = now();                                                                   \
        int p = comm_size(comm);                                                             \
        uint64_t s, r;                                                                       \
        SUM_COUNTS(rcounts, p, r);                                                           \
        r *= tsize(rtype);                                                                   \
        if (sbuf == MPI_IN_PLACE) {                                                          \
            s = r;                                                                           \
        } else {                                                                             \
            SUM_COUNTS(scounts, p, s);                                                       \
            s *= tsize(stype);                                                               \
        }                                                                                    \
        record(F_Alltoallv, t0, t1, s, r, PAYLOAD(s, r), -1);                                \
        return rc;                                                                           \
    }
W_ALLTOALLV(, int, int)
#if HAVE_LARGE_COUNT
W_ALLTOALLV(_c, MPI_Count, MPI_Aint)
#endif

#define W_REDSCAT(S, CNT)                                                                    \
    int MPI_Reduce_scatter##S(const void *sbuf, void *rbuf, const CNT rcounts[],             \
                              MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {                   \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_Reduce_scatter##S(sbuf, rbuf, rcounts, dt, op, comm);                  \
        tick_t t1 = now();                                                                   \
        uint64_t ts = tsize(dt), s;                                                          \
        SUM_COUNTS(rcounts, comm_size(comm), s);                                             \
        s *= ts;                                                                             \
        uint64_t r = (uint64_t)rcounts[comm_rank(comm)] * ts;                                \
        record(F_Reduce_scatter, t0, t1, s, r, PAYLOAD(s, r), -1);                           \
        return rc;                                                                           \
    }
W_REDSCAT(, int)
#if HAVE_LARGE_COUNT
W_REDSCAT(_c, MPI_Count)
#endif

#define W_REDSCAT_BLOCK(S, CNT)                                                              \
    int MPI_Reduce_scatter_block##S(const void *sbuf, void *rbuf, CNT rcount,                \
                                    MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {             \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_Reduce_scatter_block##S(sbuf, rbuf, rcount, dt, op, comm);             \
        tick_t t1 = now();                                                                   \
        uint64_t r = (uint64_t)rcount * tsize(dt);                                           \
        uint64_t s = r * (uint64_t)comm_size(comm);                                          \
        record(F_Reduce_scatter_block, t0, t1, s, r, PAYLOAD(s, r), -1);                     \
        return rc;                                                                           \
    }
W_REDSCAT_BLOCK(, int)
#if HAVE_LARGE_COUNT
W_REDSCAT_BLOCK(_c, MPI_Count)
#endif

/* ---- nonblocking collectives: counted and sized when posted (bytes as the blocking call); the
 * time of the call itself only, the wait is in MPI_Wait / MPI_Test. */
int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req) {
    tick_t t0 = now();
    int rc = PMPI_Ibarrier(comm, req);
    record(F_Ibarrier, t0, now(), 0, 0, -1, -1);
    return rc;
}

#define W_IBCAST(S, CNT)                                                                     \
    int MPI_Ibcast##S(void *buf, CNT count, MPI_Datatype dt, int root, MPI_Comm comm,        \
                      MPI_Request *req) {                                                    \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_Ibcast##S(buf, count, dt, root, comm, req);                            \
        tick_t t1 = now();                                                                   \
        uint64_t b = (uint64_t)count * tsize(dt);                                            \
        int me = comm_rank(comm) == root;                                                    \
        record(F_Ibcast, t0, t1, me ? b : 0, me ? 0 : b, (int64_t)b, -1);                    \
        return rc;                                                                           \
    }
W_IBCAST(, int)
#if HAVE_LARGE_COUNT
W_IBCAST(_c, MPI_Count)
#endif

#define W_IREDUCE(S, CNT)                                                                    \
    int MPI_Ireduce##S(const void *sbuf, void *rbuf, CNT count, MPI_Datatype dt, MPI_Op op,  \
                       int root, MPI_Comm comm, MPI_Request *req) {                          \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_Ireduce##S(sbuf, rbuf, count, dt, op, root, comm, req);                \
        tick_t t1 = now();                                                                   \
        uint64_t b = (uint64_t)count * tsize(dt);                                            \
        record(F_Ireduce, t0, t1, b, comm_rank(comm) == root ? b : 0, (int64_t)b, -1);       \
        return rc;                                                                           \
    }
W_IREDUCE(, int)
#if HAVE_LARGE_COUNT
W_IREDUCE(_c, MPI_Count)
#endif

#define W_IALLRED(S, CNT)                                                                    \
    int MPI_Iallreduce##S(const void *sbuf, void *rbuf, CNT count, MPI_Datatype dt,          \
                          MPI_Op op, MPI_Comm comm, MPI_Request *req) {                      \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_Iallreduce##S(sbuf, rbuf, count, dt, op, comm, req);                   \
        tick_t t1 = now();                                                                   \
        uint64_t b = (uint64_t)count * tsize(dt);                                            \
        record(F_Iallreduce, t0, t1, b, b, (int64_t)b, -1);                                  \
        return rc;                                                                           \
    }
W_IALLRED(, int)
#if HAVE_LARGE_COUNT
W_IALLRED(_c, MPI_Count)
#endif

#define W_IGATHER(S, CNT)                                                                    \
    int MPI_Igather##S(const void *sbuf, CNT scount, MPI_Datatype stype, void *rbuf,         \
                       CNT rcount, MPI_Datatype rtype, int root, MPI_Comm comm,              \
                       MPI_Request *req) {                                                   \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_Igather##S(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req); \
        tick_t t1 = now();                                                                   \
        int me = comm_rank(comm) == root;                                                    \
        uint64_t rb = me ? (uint64_t)rcount * tsize(rtype) : 0;                              \
        uint64_t s = sbuf == MPI_IN_PLACE ? rb : (uint64_t)scount * tsize(stype);            \
        uint64_t r = me ? rb * (uint64_t)comm_size(comm) : 0;                                \
        record(F_Igather, t0, t1, s, r, PAYLOAD(s, r), -1);                                  \
        return rc;                                                                           \
    }
W_IGATHER(, int)
#if HAVE_LARGE_COUNT
W_IGATHER(_c, MPI_Count)
#endif

#define W_ISCATTER(S, CNT)                                                                   \
    int MPI_Iscatter##S(const void *sbuf, CNT scount, MPI_Datatype stype, void *rbuf,        \
                        CNT rcount, MPI_Datatype rtype, int root, MPI_Comm comm,             \
                        MPI_Request *req) {                                                  \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_Iscatter##S(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req); \
        tick_t t1 = now();                                                                   \
        int me = comm_rank(comm) == root;                                                    \
        uint64_t sb = me ? (uint64_t)scount * tsize(stype) : 0;                              \
        uint64_t s = sb * (uint64_t)(me ? comm_size(comm) : 0);                              \
        uint64_t r = rbuf == MPI_IN_PLACE ? sb : (uint64_t)rcount * tsize(rtype);            \
        record(F_Iscatter, t0, t1, s, r, PAYLOAD(s, r), -1);                                 \
        return rc;                                                                           \
    }
W_ISCATTER(, int)
#if HAVE_LARGE_COUNT
W_ISCATTER(_c, MPI_Count)
#endif

#define W_IALLGATHER(N, S, CNT, MULT_SEND)                                                   \
    int MPI_##N##S(const void *sbuf, CNT scount, MPI_Datatype stype, void *rbuf, CNT rcount, \
                   MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req) {                    \
        tick_t t0 = now();                                                                   \
        int rc = PMPI_##N##S(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);           \
        tick_t t1 = now();                                                                   \
        uint64_t p = (uint64_t)comm_size(comm), rb = (uint64_t)rcount * tsize(rtype);        \
        uint64_t sb = sbuf == MPI_IN_PLACE ? rb : (uint64_t)scount * tsize(stype);           \
        uint64_t s = MULT_SEND ? sb * p : sb, r = rb * p;                                    \
        record(F_##N, t0, t1, s, r, PAYLOAD(sb, rb), -1);                                    \
        return rc;                                                                           \
    }
W_IALLGATHER(Iallgather, , int, 0)
#if HAVE_LARGE_COUNT
W_IALLGATHER(Iallgather, _c, MPI_Count, 0)
#endif
W_IALLGATHER(Ialltoall, , int, 1)
#if HAVE_LARGE_COUNT
W_IALLGATHER(Ialltoall, _c, MPI_Count, 1)
#endif
