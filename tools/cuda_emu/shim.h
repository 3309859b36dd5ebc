// tools/cuda_emu/shim.h — CUDA built-ins for the emulator (see harness.cpp).
// A CPU emulator of one CUDA block: every thread a fiber on one OS thread, run
// round-robin until it blocks at __syncthreads or a warp exchange; a barrier releases
// when every live thread (every lane of the warp) has reached it; anything else
// (a thread exiting while others wait, a warp op while lanes sit at a block barrier,
// no progress) aborts: the emulator is also a check of barrier uniformity.
#include <ucontext.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <cmath>
using std::fmod; using std::floor; using std::copysign; using std::exp; using std::log1p; using std::fma; using std::log; using std::expm1; using std::sqrt; using std::pow; using std::tanh; using std::ceil; using std::fabs;
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __global__
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
struct emu_dim3 { unsigned x, y, z; };
struct uint4 { unsigned x, y, z, w; };
struct uint2 { unsigned x, y; };
struct ulonglong2 { unsigned long long x, y; };
enum { FS_RUN, FS_BAR, FS_WARP, FS_DONE };
// The fibers' switch.  On x86-64 a few instructions: push the callee-saved registers of
// the System V ABI, swap stack pointers, pop the other side's, return into it.  glibc's
// swapcontext also saves and restores the signal mask, a system call each switch, which
// was ~90 % of a look-back run's time here (perf); nothing here touches signals, MXCSR
// or the x87 control word, so those stay out.  Other machines keep ucontext (compiling
// with -DEMU_UCONTEXT forces it).
#if defined(__x86_64__) && !defined(EMU_UCONTEXT)
extern "C" void emu_switch(void **save_sp, void *next_sp);
asm(".text\n.globl emu_switch\n.type emu_switch, @function\nemu_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n  ret\n"
    ".size emu_switch, .-emu_switch\n");
struct EmuCtx { void *sp; };
static inline void emu_swap(EmuCtx *from, EmuCtx *to) { emu_switch(&from->sp, to->sp); }
// A new fiber's stack, as emu_switch leaves one: six zero registers, then the entry as
// the return address, then a zero slot, so the entry starts with rsp = 8 mod 16 as after a call
static inline void emu_start(EmuCtx *c, char *stack, size_t size, void (*entry)(void)) {
    uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
    void **sp = (void **)top - 2;
    sp[0] = (void *)entry; sp[1] = nullptr;
    sp -= 6;
    for (int i = 0; i < 6; i++) sp[i] = nullptr;
    c->sp = sp;
}
#else
struct EmuCtx { ucontext_t uc; };
static inline void emu_swap(EmuCtx *from, EmuCtx *to) { swapcontext(&from->uc, &to->uc); }
static inline void emu_start(EmuCtx *c, char *stack, size_t size, void (*entry)(void)) {
    getcontext(&c->uc);
    c->uc.uc_stack.ss_sp = stack; c->uc.uc_stack.ss_size = size; c->uc.uc_link = nullptr;
    makecontext(&c->uc, entry, 0);
}
#endif
struct Fiber { EmuCtx ctx; emu_dim3 tid; int state; char *stack; };
#ifndef EMU_NT
#define EMU_NT 1024 /* the block size (run.sh passes the kernel's) */
#endif
static const int NT = EMU_NT;
static Fiber g_f[NT];
static Fiber *g_cur;
static EmuCtx g_sched;
static emu_dim3 blockIdx = {0, 0, 0}, blockDim = {NT, 1, 1}, gridDim = {1, 1, 1};
#define threadIdx (g_cur->tid)
static inline void emu_wait(int st) { g_cur->state = st; emu_swap(&g_cur->ctx, &g_sched); }
static inline void __syncthreads() { emu_wait(FS_BAR); }
static inline void __syncwarp(unsigned = 0xffffffffu) { emu_wait(FS_WARP); }
static inline void __threadfence() {}
static inline void __nanosleep(unsigned) {}
static uint64_t g_x[NT / 32][32];
template <class T> static inline T emu_xchg(T v, int src, bool keep) {
    int w = g_cur->tid.x >> 5, l = g_cur->tid.x & 31;
    uint64_t b = 0; memcpy(&b, &v, sizeof v); g_x[w][l] = b;
    emu_wait(FS_WARP);
    T r = v;
    if (!keep) memcpy(&r, &g_x[w][src], sizeof r);
    emu_wait(FS_WARP);
    return r;
}
template <class T> static inline T __shfl_xor_sync(unsigned, T v, int d) { int l = g_cur->tid.x & 31; return emu_xchg(v, l ^ d, false); }
template <class T> static inline T __shfl_up_sync(unsigned, T v, int d) { int l = g_cur->tid.x & 31; return emu_xchg(v, l - d, l - d < 0); }
template <class T> static inline T __shfl_up_sync(unsigned, T v, int d, int w) { int l = g_cur->tid.x & 31; return emu_xchg(v, l - d, l % w - d < 0); }
template <class T> static inline T __shfl_down_sync(unsigned, T v, int d) { int l = g_cur->tid.x & 31; return emu_xchg(v, l + d, l + d > 31); }
template <class T> static inline T __shfl_sync(unsigned, T v, int s) { return emu_xchg(v, s & 31, false); }
static inline unsigned __match_any_sync(unsigned, int v) {
    int w = g_cur->tid.x >> 5;
    g_x[w][g_cur->tid.x & 31] = (uint64_t)(int64_t)v;
    emu_wait(FS_WARP);
    unsigned m = 0;
    for (int l = 0; l < 32; l++) if (g_x[w][l] == (uint64_t)(int64_t)v) m |= 1u << l;
    emu_wait(FS_WARP);
    return m;
}
static inline unsigned __reduce_max_sync(unsigned, unsigned v) {
    int w = g_cur->tid.x >> 5;
    g_x[w][g_cur->tid.x & 31] = v;
    emu_wait(FS_WARP);
    unsigned m = 0;
    for (int l = 0; l < 32; l++) m = (unsigned)g_x[w][l] > m ? (unsigned)g_x[w][l] : m;
    emu_wait(FS_WARP);
    return m;
}
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline int atomicAdd(int *p, int v) { int o = *p; *p = o + v; return o; }
static inline unsigned atomicAdd(unsigned *p, unsigned v) { unsigned o = *p; *p = o + v; return o; }
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) { unsigned long long o = *p; *p = o + v; return o; }
static inline unsigned long long atomicMax(unsigned long long *p, unsigned long long v) { unsigned long long o = *p; if (v > o) *p = v; return o; }
static inline unsigned atomicExch(unsigned *p, unsigned v) { unsigned o = *p; *p = v; return o; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static inline double __longlong_as_double(long long u) { double f; memcpy(&f, &u, 8); return f; }
static inline long long __double_as_longlong(double f) { long long u; memcpy(&u, &f, 8); return u; }
static void emu_entry(void);
static void (*g_body)(void);
static void emu_entry(void) { g_body(); g_cur->state = FS_DONE; emu_swap(&g_cur->ctx, &g_sched); }
static bool emu_run(void (*body)(void)) {
    g_body = body;
    for (int t = 0; t < NT; t++) {
        Fiber *f = &g_f[t];
        if (!f->stack) f->stack = (char *)malloc(256 * 1024);
        emu_start(&f->ctx, f->stack, 256 * 1024, emu_entry);
        f->tid = {(unsigned)t, 0, 0}; f->state = FS_RUN;
    }
    for (;;) {
        for (int t = 0; t < NT; t++)
            if (g_f[t].state == FS_RUN) { g_cur = &g_f[t]; emu_swap(&g_sched, &g_f[t].ctx); }
        bool any = false;
        for (int w = 0; w < NT / 32; w++) {
            int nw = 0, nb = 0, nd = 0;
            for (int l = 0; l < 32; l++) { int s = g_f[w * 32 + l].state; nw += s == FS_WARP; nb += s == FS_BAR; nd += s == FS_DONE; }
            if (nw && nw != 32) { fprintf(stderr, "emu: warp %d: %d lanes at a warp op, %d at a barrier, %d done\n", w, nw, nb, nd); return false; }
            if (nw == 32) { any = true; for (int l = 0; l < 32; l++) g_f[w * 32 + l].state = FS_RUN; }
        }
        if (any) continue;
        int nb = 0, nd = 0;
        for (int t = 0; t < NT; t++) { nb += g_f[t].state == FS_BAR; nd += g_f[t].state == FS_DONE; }
        if (nd == NT) return true;
        if (nb + nd == NT && nd == 0) { for (int t = 0; t < NT; t++) g_f[t].state = FS_RUN; continue; }
        fprintf(stderr, "emu: %d threads at a barrier, %d done\n", nb, nd);
        return false;
    }
}
