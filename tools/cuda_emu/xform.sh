#!/bin/bash
# tools/cuda_emu/xform.sh SRC.cu — prints the generated CUDA source made compilable by g++
# with shim.h: the inline PTX (conversions, ordered loads and stores) replaced by software
# forms (the conversions: soft_cvt.inc, inserted before the prelude's first hardware one).
# sed, not Python: an interpreter's start cost more than the rest of a run (session 41).
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
anchor='^__device__ __forceinline__ double sf_f16_d(u16 h) {'
{
    sed "/$anchor/,\$d" "$1"
    cat "$HERE/soft_cvt.inc"
    sed -n "/$anchor/,\$p" "$1"
} | sed -E \
 -e 's/asm\("cvt\.f64\.f16 %0, %1;" : "=d"\(d\) : "h"\(h\)\);/d = sf_f16_d_sw(h);/g' \
 -e 's/asm\("cvt\.rn\.f16\.f64 %0, %1;" : "=h"\(h\) : "d"\(v\)\);/h = sf_d_f16_sw(v);/g' \
 -e 's/asm\("cvt\.rn\.bf16\.f64 %0, %1;" : "=h"\(h\) : "d"\(v\)\);/h = sf_d_bf16_sw(v);/g' \
 `# the row combine's float32 conversions (a float32 value is exact as a double)` \
 -e 's/asm\("cvt\.rn\.bf16\.f32 %0, %1;" : "=h"\(h\) : "f"\(f\)\);/h = sf_d_bf16_sw((double)f);/g' \
 -e 's/asm\("cvt\.rn\.f16\.f32 %0, %1;" : "=h"\(h\) : "f"\(f\)\);/h = sf_d_f16_sw((double)f);/g' \
 -e 's/asm\("cvt\.f32\.f16 %0, %1;" : "=f"\(f\) : "h"\(h\)\);/f = (float)sf_f16_d_sw(h);/g' \
 -e 's/asm\("cvt\.f32\.f16 %%?0, %%?1;" : "=f"\(r\) : "h"\(x\)\);/r = (float)sf_f16_d_sw(x);/g' \
 -e 's/asm volatile\("ld\.[a-z]+\.gpu\.global\.u(32|64) %0, \[%1\];" : "=[rl]"\(v\) : "l"\(p\) : "memory"\);/v = *(volatile decltype(v)*)p;/g' \
 -e 's/asm volatile\("st\.[a-z]+\.gpu\.global\.u(32|64) \[%0\], %1;" ::"l"\(p\), "[rl]"\(v\) : "memory"\);/*(volatile decltype(v)*)p = v;/g' \
 `# the look-back's tiles-done count (one block here: a plain add)` \
 -e 's/asm volatile\("atom\.add\.[a-z]+\.gpu\.global\.u32 %0, \[%1\], 1;" : "=r"\(d\) : "l"\(([^)]*)\) : "memory"\);/d = atomicAdd((unsigned*)(\1), 1u);/g' \
 `# dynamic shared memory (the column stream kernel's stages): a static array here` \
 -e 's/extern __shared__ __align__\(16\) char (\w+)\[\];/static __align__(16) char \1[1 << 20];/g' \
 `# programmatic dependent launch: one block at a time here, nothing to wait for` \
 -e 's/asm volatile\("griddepcontrol\.(wait|launch_dependents);" ::: "memory"\);//g' \
 `# the global timer (the first wave's pacing, sf_row_next): one block here, a clock that` \
 `# advances a microsecond a read, so every wait ends` \
 -e 's/asm volatile\("mov\.u64 %0, %%globaltimer;" : "=l"\(t\)\);/static u64 sf_emu_clock = 0; t = sf_emu_clock += 1000;/g'
