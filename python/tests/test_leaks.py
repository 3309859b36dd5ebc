"""Reference counts and capsule ownership do not leak: 10^5 calls through every path
(results returned, out=, cummax pairs, legacy and versioned capsules, scanfuse.Tensor
exports, errors) and memory stays flat, by tracemalloc (Python allocations, capsules,
DLPack structs) and by the resident set size (result buffers, C allocations)."""
import gc
import sys
import tracemalloc

import numpy as np

import scanfuse
from dlpack_producer import Wrapper

CALLS = 100_000


def rss_bytes():
    try:
        with open("/proc/self/statm") as f:
            import os
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # not Linux: the peak is the best we have
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def test_no_leaks_over_1e5_calls():
    x = np.random.default_rng(0).normal(size=1024)  # 8 KiB: a leaked result shows
    xi = np.arange(1024, dtype=np.int32)
    out = np.empty(1024)
    vals, idx = np.empty(1024), np.empty(1024, np.int64)
    legacy = Wrapper(x, legacy=True)
    versioned = Wrapper(x)

    def bad():
        try:
            scanfuse.cumsum(x, 5)
        except scanfuse.Error:
            pass

    def tensor_roundtrip():
        t = scanfuse.cumsum(versioned, 0)  # a scanfuse.Tensor
        np.from_dlpack(t)
        t.__dlpack__()  # a capsule nobody consumes

    calls = [
        lambda: scanfuse.cumsum(x, 0),
        lambda: scanfuse.cumsum(xi, 0, exclusive=True),
        lambda: scanfuse.cumsum(x, 0, out=out),
        lambda: scanfuse.cummax(x, 0, out=(vals, idx)),
        lambda: scanfuse.cummin(x, 0),
        lambda: scanfuse.logcumsumexp(x, 0, reverse=True),
        lambda: scanfuse.cumprod(legacy, 0),
        tensor_roundtrip,
        bad,
    ]
    refs = [sys.getrefcount(o) for o in (x, xi, out, vals, idx)]
    for _ in range(3):  # warm up: caches, free lists, pool arenas
        for i in range(2000):
            calls[i % len(calls)]()
    gc.collect()
    tracemalloc.start()
    try:
        rss0 = rss_bytes()
        traced0, _ = tracemalloc.get_traced_memory()
        for i in range(CALLS):
            calls[i % len(calls)]()
        gc.collect()
        traced1, _ = tracemalloc.get_traced_memory()
        rss1 = rss_bytes()
    finally:
        tracemalloc.stop()
    assert [sys.getrefcount(o) for o in (x, xi, out, vals, idx)] == refs
    # 10^5 calls: a leak of even one small object per call would be megabytes
    assert traced1 - traced0 < 256 * 1024, "Python allocations grew by %d bytes" % (traced1 - traced0)
    assert rss1 - rss0 < 16 * 1024 * 1024, "RSS grew by %d bytes" % (rss1 - rss0)
