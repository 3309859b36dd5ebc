/*
 * cpu_threads.c — the CPU backend's worker pool (see cpu_threads.h for the contract).
 *
 * State: one mutex `m` guards the job descriptor and the generation counter `gen`; a
 * job is published by writing the descriptor and bumping `gen` under `m`, so a worker
 * that copies both under `m` never sees a torn job.  Workers first spin on `gen` (an
 * atomic read, so back-to-back jobs skip the futex wake-up), then sleep on `wake`.
 * `pending` counts the workers of the current job that have not finished; the last one
 * signals `done` under `m`, and the caller waits for it under `m`, so no wake-up is lost.
 * `run_lock` makes jobs exclusive; it is only ever try-locked, so a nested or
 * concurrent job degrades to running inline instead of deadlocking.
 *
 * Workers are created on demand (up to SF_POOL_MAX - 1) and live until the process
 * exits; a failed pthread_create just leaves the job with fewer threads.
 */
#include "cpu_threads.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

typedef struct pool_job {
    sf_pool_fn fn;
    void *ctx;
    int n;
} pool_job;

static pthread_mutex_t pool_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t pool_done = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t pool_run_lock = PTHREAD_MUTEX_INITIALIZER;
static pool_job pool_cur;           /* guarded by pool_m */
static atomic_uint pool_gen;        /* written under pool_m, read anywhere */
static atomic_int pool_pending;     /* workers of the current job still running */
static int pool_nworkers;           /* guarded by pool_run_lock */
/* The generation a worker starts from: set before its pthread_create (which orders it
 * before the worker reads it), so a worker created for a job never mistakes that job,
 * published right after, for an old one. */
static unsigned pool_start_gen[SF_POOL_MAX];

/* Spins before a worker sleeps: long enough to catch the next job of a loop of short
 * scans, short enough not to steal a core from other work for long. */
#define POOL_SPIN 4000

static void cpu_pause(void) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __builtin_ia32_pause();
#endif
}

void sf_pool_relax(unsigned *spins) {
    if (*spins < 256) {
        (*spins)++;
        cpu_pause();
    } else {
        sched_yield();
    }
}

int sf_pool_cores(void) {
    static atomic_int cached;
    int c = atomic_load_explicit(&cached, memory_order_relaxed);
    if (c > 0) return c;
    long n = -1;
#ifdef _SC_NPROCESSORS_ONLN
    n = sysconf(_SC_NPROCESSORS_ONLN);
#endif
    c = n > 0 ? (n > SF_POOL_MAX ? SF_POOL_MAX : (int)n) : 1;
    atomic_store_explicit(&cached, c, memory_order_relaxed);
    return c;
}

int sf_pool_threads(int requested) {
    if (requested <= 0) return sf_pool_cores();
    return requested > SF_POOL_MAX ? SF_POOL_MAX : requested;
}

static void *pool_worker(void *arg) {
    int tid = (int)(intptr_t)arg;
    unsigned seen = pool_start_gen[tid];
    for (;;) {
        for (int s = 0; s < POOL_SPIN; s++) {
            if (atomic_load_explicit(&pool_gen, memory_order_acquire) != seen) break;
            cpu_pause();
        }
        pthread_mutex_lock(&pool_m);
        while (atomic_load_explicit(&pool_gen, memory_order_relaxed) == seen)
            pthread_cond_wait(&pool_wake, &pool_m);
        seen = atomic_load_explicit(&pool_gen, memory_order_relaxed);
        pool_job job = pool_cur;
        pthread_mutex_unlock(&pool_m);
        if (tid >= job.n) continue; /* not needed for this job */
        job.fn(job.ctx, tid, job.n);
        if (atomic_fetch_sub_explicit(&pool_pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&pool_m);
            pthread_cond_signal(&pool_done);
            pthread_mutex_unlock(&pool_m);
        }
    }
    return NULL;
}

/* Creates workers until there are `want` of them (tids 1 .. want); returns how many
 * exist.  Called with pool_run_lock held. */
static int pool_grow(int want) {
    while (pool_nworkers < want) {
        pthread_t t;
        pthread_attr_t attr;
        if (pthread_attr_init(&attr) != 0) break;
        pool_start_gen[pool_nworkers + 1] = atomic_load_explicit(&pool_gen, memory_order_relaxed);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&t, &attr, pool_worker, (void *)(intptr_t)(pool_nworkers + 1));
        pthread_attr_destroy(&attr);
        if (rc != 0) break;
        pool_nworkers++;
    }
    return pool_nworkers;
}

int sf_pool_run(int n, sf_pool_fn fn, void *ctx) {
    if (n > SF_POOL_MAX) n = SF_POOL_MAX;
    if (n <= 1 || pthread_mutex_trylock(&pool_run_lock) != 0) {
        fn(ctx, 0, 1);
        return 1;
    }
    int have = pool_grow(n - 1);
    if (have < n - 1) n = have + 1;
    if (n <= 1) {
        pthread_mutex_unlock(&pool_run_lock);
        fn(ctx, 0, 1);
        return 1;
    }
    pthread_mutex_lock(&pool_m);
    pool_cur.fn = fn;
    pool_cur.ctx = ctx;
    pool_cur.n = n;
    atomic_store_explicit(&pool_pending, n - 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&pool_gen, 1u, memory_order_release);
    pthread_cond_broadcast(&pool_wake);
    pthread_mutex_unlock(&pool_m);

    fn(ctx, 0, n);

    for (int s = 0; s < POOL_SPIN; s++) {
        if (atomic_load_explicit(&pool_pending, memory_order_acquire) == 0) break;
        cpu_pause();
    }
    if (atomic_load_explicit(&pool_pending, memory_order_acquire) != 0) {
        pthread_mutex_lock(&pool_m);
        while (atomic_load_explicit(&pool_pending, memory_order_acquire) != 0)
            pthread_cond_wait(&pool_done, &pool_m);
        pthread_mutex_unlock(&pool_m);
    }
    pthread_mutex_unlock(&pool_run_lock);
    return n;
}
