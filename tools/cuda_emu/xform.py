# tools/cuda_emu/xform.py — the generated CUDA source made compilable by g++ with shim.h:
# the inline PTX (conversions, ordered loads and stores) replaced by the software forms
# (the conversions: soft_cvt.inc, inserted before the prelude's hardware ones).
import sys, re
s = open(sys.argv[1]).read()
soft = open(__file__.replace("xform.py", "soft_cvt.inc")).read()
anchor = "__device__ __forceinline__ double sf_f16_d(u16 h) {"
s = s.replace(anchor, soft + anchor, 1)
s = s.replace('asm("cvt.f64.f16 %0, %1;" : "=d"(d) : "h"(h));', 'd = sf_f16_d_sw(h);')
s = s.replace('asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h) : "d"(v));', 'h = sf_d_f16_sw(v);')
s = s.replace('asm("cvt.rn.bf16.f64 %0, %1;" : "=h"(h) : "d"(v));', 'h = sf_d_bf16_sw(v);')
# the row combine's float32 conversions (a float32 value is exact as a double)
s = s.replace('asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));', 'h = sf_d_bf16_sw((double)f);')
s = s.replace('asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));', 'h = sf_d_f16_sw((double)f);')
s = s.replace('asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));', 'f = (float)sf_f16_d_sw(h);')
s = s.replace('asm("cvt.f32.f16 %%0, %%1;" : "=f"(r) : "h"(x));', 'r = (float)sf_f16_d_sw(x);')
s = s.replace('asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(x));', 'r = (float)sf_f16_d_sw(x);')
s = re.sub(r'asm volatile\("ld\.[a-z]+\.gpu\.global\.u(32|64) %0, \[%1\];" : "=[rl]"\(v\) : "l"\(p\) : "memory"\);', 'v = *(volatile decltype(v)*)p;', s)
s = re.sub(r'asm volatile\("st\.[a-z]+\.gpu\.global\.u(32|64) \[%0\], %1;" ::"l"\(p\), "[rl]"\(v\) : "memory"\);', '*(volatile decltype(v)*)p = v;', s)
# the look-back's tiles-done count (one block here: a plain add)
s = re.sub(r'asm volatile\("atom\.add\.[a-z]+\.gpu\.global\.u32 %0, \[%1\], 1;" : "=r"\(d\) : "l"\(([^)]*)\) : "memory"\);',
           r'd = atomicAdd((unsigned*)(\1), 1u);', s)
# dynamic shared memory (the column stream kernel's stages): a static array here
s = re.sub(r'extern __shared__ __align__\(16\) char (\w+)\[\];', r'static __align__(16) char \1[1 << 20];', s)
# programmatic dependent launch: one block at a time here, nothing to wait for
s = s.replace('asm volatile("griddepcontrol.wait;" ::: "memory");', '')
s = s.replace('asm volatile("griddepcontrol.launch_dependents;" ::: "memory");', '')
# the global timer (the first wave's pacing, sf_row_next): one block here, a clock that
# advances a microsecond a read, so every wait ends
s = s.replace('asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));', 'static u64 sf_emu_clock = 0; t = sf_emu_clock += 1000;')
print(s)
