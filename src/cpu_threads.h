/*
 * cpu_threads.h — a small pool of worker threads for the CPU backend.
 *
 * One process-wide pool, created lazily: sf_pool_run(n, fn, ctx) calls fn(ctx, tid, n)
 * for tid = 0 .. n-1 on n threads (the caller is tid 0) and returns when every call has
 * returned.  Workers are kept between jobs (a short spin, then a condition variable),
 * so a job costs a wake-up, not a thread creation.
 *
 * Invariants:
 *  - one job runs at a time.  A call made while another job runs (a nested call from
 *    inside a job, or a second program running on another user thread) does not wait
 *    for the pool: it runs fn(ctx, 0, 1) on the calling thread;
 *  - so `n` is a request: callers must give results that do not depend on the number
 *    of threads that actually ran (every scan does: its partitions are fixed by the
 *    data size, never by the thread count);
 *  - more threads than cores are allowed (options.threads = 7 on 2 cores); waits in
 *    jobs must therefore yield (sf_pool_relax), never spin forever.
 */
#ifndef SF_CPU_THREADS_H
#define SF_CPU_THREADS_H

/* The most threads one job runs on (larger requests are clamped). */
#define SF_POOL_MAX 64

typedef void (*sf_pool_fn)(void *ctx, int tid, int nthreads);

/* The number of online cores (at least 1). */
int sf_pool_cores(void);

/* The thread count for options.threads: 0 means every core; clamped to SF_POOL_MAX. */
int sf_pool_threads(int requested);

/* Runs fn on up to n threads as described above; returns the number that ran. */
int sf_pool_run(int n, sf_pool_fn fn, void *ctx);

/* One step of a wait loop: a CPU pause for the first calls, then sched_yield, so that
 * an oversubscribed job still makes progress.  *spins counts the calls. */
void sf_pool_relax(unsigned *spins);

#endif /* SF_CPU_THREADS_H */
