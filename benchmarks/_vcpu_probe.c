/* How far apart the machine's two vCPUs are right now: the shortest round trip of one cache line
 * between a thread pinned on CPU A and one on CPU B (ns), over ROUNDS round trips or LIMIT_S
 * seconds, whichever ends first. On this KVM guest the hypervisor places the two vCPUs on host
 * cores that share a cache (~80 ns) or not (~370-400 ns) and moves them while a run goes on;
 * shared-memory MPI at 1 MiB and NPB at P = 2 run at very different speeds in the two
 * placements, so benchmarks/_placement.py records this beside each run they compare.
 * Usage: _vcpu_probe [A B [ROUNDS [LIMIT_S]]]; prints the nanoseconds, or "-1" when a thread
 * cannot be pinned. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static _Atomic long line __attribute__((aligned(64)));
static int cpu_b;
static volatile int pinned_b = -1;

/* spin, but let the other thread have this vCPU when it is not running (a loaded machine) */
static void wait_while(long v) {
    for (long n = 1; atomic_load_explicit(&line, memory_order_acquire) == v; n++)
        if (n % 20000 == 0)
            sched_yield();
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    return pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static void *echo(void *arg) {
    (void)arg;
    pinned_b = pin(cpu_b) == 0;
    for (long k = 1;; k += 2) { /* answer odd values with the next even one; stop on -1 */
        wait_while(k - 1);
        if (atomic_load(&line) < 0)
            return NULL;
        atomic_store_explicit(&line, k + 1, memory_order_release);
    }
}

int main(int argc, char **argv) {
    int cpu_a = argc > 2 ? atoi(argv[1]) : 0;
    cpu_b = argc > 2 ? atoi(argv[2]) : 1;
    long rounds = argc > 3 ? atol(argv[3]) : 1000;
    double limit = (argc > 4 ? atof(argv[4]) : 0.3) * 1e9;
    pthread_t t;
    if (pin(cpu_a) != 0 || pthread_create(&t, NULL, echo, NULL) != 0) {
        puts("-1");
        return 0;
    }
    while (pinned_b < 0)
        ;
    double best = 1e18, start = now();
    for (long k = 1; pinned_b && k < 2 * rounds && now() - start < limit; k += 2) {
        double t0 = now();
        atomic_store_explicit(&line, k, memory_order_release);
        wait_while(k);
        double dt = now() - t0;
        if (dt < best)
            best = dt;
    }
    atomic_store(&line, -1); /* every round trip was answered: the echo thread waits for k + 2 */
    pthread_join(t, NULL);
    printf("%.0f\n", pinned_b && best < 1e18 ? best : -1.0);
    return 0;
}
