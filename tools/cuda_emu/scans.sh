#!/bin/bash
# tools/cuda_emu/scans.sh — the block scan kernels' generated CUDA C run on the CPU
# (run.sh with EMU_SCAN=1: the first row or column scan kernel of each program as a grid of one
# block, which then takes every tile in turn, so each look-back finds its tiles done)
# against the reference evaluator, bit for bit, under the default kernels (row and
# column tiles staged in shared memory, one ticket word a tile) and the tuning
# variants: register tiles (row_stage=0, col_stage=0), two tiles a block (row_pipe=1),
# small groups, whose tiles fold the previous group's tile aggregates (lb_ga=1, the
# default) or wait for its aggregate (lb_ga=0), the vector loads' one path an input
# for every row kernel (row_io1=1) or none (row_io1=0; the default: kernels of two or
# more inputs),
# the tile counter and tiles-done count of before (lb_ticket=0; with release and fence,
# lb_done=0), staged one-tile rows
# (row_stage1=1), one-tile rows of 128 threads (row_threads=128), the stream column kernel
# (col_stream=1: one block a column block, a ring of stages; col_hold=0: its pass two
# reading the stage again), raked row tiles (row_rake=1 and 2, and the default rule), the
# rows' tiles taken row after row (row_ilv=0; by default the rows' tickets interleave),
# two tiles a block over interleaved rows (row_pipe=1), the look-back's first sleep
# (lb_wait_first), the tile aggregate published before pass one's warp scans or after
# them (lb_early=1 / 0; by default before, except for strips of 4 steps a lane at 6
# blocks an SM, row_minb=6), static first-wave tiles (lb_w1).  Float64 sums on random
# inputs (summed in double, so a few ulps from the reference) are compared within 2^-40
# of each output's sum|x| instead (EMU_MAG=1: gen.c runs the reference again on |x|;
# harness.cpp).
# No GPU needed: a CTest (cuda_emu_scans) when g++ is there.  BUILD (default: build)
# holds libscanfuse.a.
# Exit status: the failures.
HERE=$(cd "$(dirname "$0")" && pwd)
EMU_KIND=EMU_SCAN
. "$HERE/lib.sh"
# programs: several tiles a row (8192 steps a float32 tile), partial last tiles,
# inclusive and exclusive, both directions, several rows, index outputs, float16, a
# fused prologue of two inputs, and inputs of three widths (1-byte strips too small to
# stage, read from global memory)
printf 'input x: float32[50001]\ny = cumsum(x, dim=0, exclusive=true, reverse=true)\nz = cumsum(x, dim=0)\noutput y, z\n' > "$D/f32.sf"
printf 'input b: int64[3, 20001]\ny = cumsum(b, dim=1)\noutput y\n' > "$D/i64rows.sf"
printf 'input x: float16[70001]\ny = cumsum(x, dim=0, reverse=true)\noutput y\n' > "$D/f16.sf"
printf 'input x: float32[3, 30001]\ny, i = cummax(x, dim=1, reverse=true)\noutput y, i\n' > "$D/cummax.sf"
printf 'input a: bfloat16[3, 30001]\ninput b: float32[3, 30001]\nz = cumsum(mul(cast(a, float32), b), dim=1)\noutput z\n' > "$D/fused.sf"
printf 'input c: uint8[2, 40001]\ninput d: int64[2, 40001]\ninput e: int32[2, 40001]\ns = add(add(cast(c, int64), d), cast(e, int64))\ny = cumsum(s, dim=1, exclusive=true, reverse=true)\noutput y\n' > "$D/widths.sf"
# float64 sums (in double since session 24) on rows and columns
printf 'input x: float64[3, 20001]\ny = cumsum(x, dim=1)\nz = cumsum(x, dim=1, exclusive=true, reverse=true)\noutput y, z\n' > "$D/f64rows.sf"
printf 'input x: float64[2048, 40]\ny = cumsum(x, dim=0)\noutput y\n' > "$D/f64col.sf"
# the stream column kernel's carry past a run of 256 chunks (263 chunks of 8 rows under
# col_l=1; its next level, past 65536 chunks, runs in test_cuda on the GPU)
printf 'input x: float32[2100, 64]\ny = cumsum(x, dim=0)\nz = cumsum(x, dim=0, exclusive=true, reverse=true)\noutput y, z\n' > "$D/colc.sf"
for prog in f32 i64rows f16 cummax fused widths; do
    for tune in pdl=1 row_stage=0 row_pipe=1,row_threads=256,row_items=8 lb_ticket=0,lb_done=0 \
                row_g=2,row_g2=3 lb_ga=0,row_g=3,row_g2=2,row_stage=0 row_io1=1 row_io1=0; do
        emu $prog $tune
    done
done
# column scans (sf_col_tile_scan): 32 chunks in groups of 16 x 4, 47 chunks of int64,
# prefix chains of small groups
printf 'input x: float32[2048, 128]\ny = cumsum(x, dim=0)\nz = cumsum(x, dim=0, exclusive=true, reverse=true)\noutput y, z\n' > "$D/col.sf"
printf 'input x: int64[3000, 33]\ny, i = cummin(x, dim=0)\noutput y, i\n' > "$D/coli.sf"
# staged column tiles: a bfloat16 input beside float32 weights broadcast along the scan,
# 1- and 8-byte inputs side by side, 3-d tensors whose inner column dim holds whole
# column blocks (64) or not (40: some tiles staged, some from global memory)
printf 'input x: bfloat16[1000, 192]\ninput w: float32[192]\ny = cumsum(mul(cast(x, float32), w), dim=0, reverse=true)\noutput y\n' > "$D/colbw.sf"
printf 'input c: uint8[700, 64]\ninput d: int64[700, 64]\ny = cumsum(add(cast(c, int64), d), dim=0, exclusive=true)\noutput y\n' > "$D/colw.sf"
printf 'input x: float32[4, 300, 64]\ny = cumsum(x, dim=1)\nz = cumsum(x, dim=1, exclusive=true, reverse=true)\noutput y, z\n' > "$D/col3.sf"
printf 'input x: float32[4, 300, 40]\ny, i = cummax(x, dim=1, reverse=true)\noutput y, i\n' > "$D/col3b.sf"
# one-tile rows of bfloat16 scaled by float32 weights read by every row (strips of 8;
# the rows staged by default, the weights not; row_stage1=0 unstaged): the same at 4096
# steps, float32 rows ending mid-tile (row_stage1=1), look-back rows beside weights
printf 'input x: bfloat16[16, 8192]\ninput w: float32[8192]\ny = cast(cumsum(mul(cast(x, float32), w), dim=-1), bfloat16)\noutput y\n' > "$D/bfw.sf"
printf 'input x: bfloat16[16, 4096]\ninput w: float32[4096]\ny = cumsum(mul(cast(x, float32), w), dim=-1, reverse=true)\noutput y\n' > "$D/bfw4.sf"
printf 'input x: bfloat16[3, 20001]\ninput w: float32[20001]\ny = cumsum(mul(cast(x, float32), w), dim=-1, exclusive=true)\noutput y\n' > "$D/bfwl.sf"
printf 'input x: float32[7, 3001]\ny = cumsum(x, dim=1, exclusive=true)\noutput y\n' > "$D/one.sf"
for spec in "col pdl=1" "col col_stage=0" "col col_g=2,col_g2=3,col_l=2" "col col_l=32" \
            "coli pdl=1" "coli lb_ticket=0,lb_done=0" "coli col_stage=0" "colbw pdl=1" "colbw col_l=64" "colw pdl=1" \
            "col3 pdl=1" "col3b pdl=1" "col3 col_l=4" "col3b col_stage=0" "bfw pdl=1" \
            "bfw4 pdl=1" "bfw4 row_stage1=0" "one row_stage1=1" "one pdl=1" "one row_threads=128" \
            "bfw row_stage1=0,row_threads=128" "bfwl pdl=1" \
            "col col_stream=1" "col col_stream=1,col_ring=2,col_l=2" "coli col_stream=1" "col3 col_stream=1,col_ring=3" \
            "colw col_stream=1" "col col_stream=1,col_hold=0,col_ring=3" "colw col_stream=1,col_ring=2,col_hold=0"; do
    emu $spec
done
# float products of exact powers of two whose running product leaves double's range and
# comes back, so any order of the multiplies gives the same bits (sf_px_*: a power of two
# carried beside the double): rows with look-back, columns of a float32 cast
printf 'input x: int32[3, 20001]\nq = pow(2.0, mul(cast(x, float64), 3.0))\ny = cumprod(q, dim=1)\nz = cumprod(q, dim=1, exclusive=true, reverse=true)\noutput y, z\n' > "$D/prodrow.sf"
printf 'input x: int32[3000, 33]\nq = pow(2.0, mul(cast(x, float64), 3.0))\ny = cumprod(cast(q, float32), dim=0, reverse=true)\noutput y\n' > "$D/prodcol.sf"
# (float32 and bfloat16 rows: raked look-back tiles of 32 steps a thread by default since
# session 35, and raked rows of one whole tile; row_rake=0 their strips)
printf 'input x: int32[3, 40001]\nq = pow(2.0, mul(cast(x, float64), 3.0))\ny = cumprod(cast(q, float32), dim=1, reverse=true)\noutput y\n' > "$D/prodr32.sf"
printf 'input x: int32[3, 40001]\nq = pow(2.0, mul(cast(x, float64), 3.0))\nz = cumprod(cast(q, bfloat16), dim=1, exclusive=true)\noutput z\n' > "$D/prodrb16.sf"
printf 'input x: int32[5, 4096]\nq = pow(2.0, mul(cast(x, float64), 3.0))\nz = cumprod(cast(q, float32), dim=1, exclusive=true, reverse=true)\noutput z\n' > "$D/prodr4k.sf"
for spec in "prodrow pdl=1" "prodrow row_stage=0" "prodcol pdl=1" "prodcol col_stage=0" "prodr32 pdl=1" \
            "prodr32 row_rake=0" "prodr32 row_g=2,row_g2=3" "prodrb16 pdl=1" "prodrb16 row_rake=0" \
            "prodr4k pdl=1" "prodr4k row_rake=0"; do
    emu $spec
done
# float products of narrow floats normalised once every 3 steps of a raked run (OpProdF,
# session 36) against the same kernels normalising every step (prod_lazy=0), byte for
# byte: factors of random significands whose running product wanders far out of
# double's range and back (2^-17.6..2^18.4 a step, no drift), a zero and an infinity
# about once in 28000 steps each; float32 / bfloat16 / float16, look-back rows and rows
# of one tile, inclusive, exclusive, reversed.  (Not against the reference: its in-order products
# may round differently from the kernels' tree.)
emu_lazy() { # label dtype shape flags seed [scale]
    printf 'input x: float32[%s]\ninput k: int32[%s]\nf = mul(add(mul(abs(cast(x, float64)), 0.25), 1.0), pow(2.0, sub(mul(sub(cast(remainder(k, 35), float64), 17.0), %s), 0.5573)))\ng = div(mul(f, cast(logical_not(logical_and(eq(k, 7), lt(x, -3.0))), float64)), cast(logical_not(logical_and(eq(k, 11), lt(x, -3.0))), float64))\ny = cumprod(cast(g, %s), dim=1%s)\noutput y\n' \
        "$3" "$3" "${6:-1.0}" "$2" "$4" > "$D/$1.sf"
    emu_ab "$1" prod_lazy=1 prod_lazy=0 3500 0 "$5"
}
emu_lazy lz32 float32 "3, 40001" "" 51
emu_lazy lz32x float32 "3, 40001" ", exclusive=true, reverse=true" 52
emu_lazy lzb16 bfloat16 "3, 40001" ", reverse=true" 53
emu_lazy lzf16 float16 "3, 40001" ", exclusive=true" 54
emu_lazy lz4k float32 "5, 4096" ", reverse=true" 55
# (factors from 2^-119.6 to 2^119.4: out of the window in a few steps)
emu_lazy lz32w float32 "3, 40001" "" 56 7.0
# ... and sf_pxf_val, which reads those states, against sf_px_val of the normalised
# state on 4 million random states (prodval.cpp; the source of a lazy run above)
wait
n=$((n + 1))
src=$(grep -l sf_pxf_val "$D"/sf_cuda_emu.*/src.cu | head -1)
# (the prelude and the narrow product block: up to the block's #endif)
if [ -z "$src" ] || ! "$HERE/xform.sh" "$src" |
       python3 -c 'import sys; s = sys.stdin.read(); print(s[:s.index("#endif", s.index("sf_pxf_val")) + 6])' > "$D/prodval.inc" ||
   ! g++ -std=c++17 -O1 -fwrapv -w -I"$HERE" -I"$D" "$HERE/prodval.cpp" -o "$D/prodval" || ! "$D/prodval"; then
    echo "FAIL prodval" > "$D/fail.$n"
fi
# cummax/cummin of values of at most 4 bytes: 8-byte states (a float or an int32 and an
# int32 index, session 35): look-back rows of int32 with many ties (irange 3), 1-byte
# columns and bool rows, float16 columns with dense special values (ties 1), the stream
# column kernel; float64 rows keep the 16-byte state
printf 'input x: int32[3, 20001]\ny, i = cummin(x, dim=1, exclusive=true)\nz, j = cummax(x, dim=1, reverse=true)\noutput y, i, z, j\n' > "$D/cmi32.sf"
printf 'input x: uint8[700, 64]\ny, i = cummax(x, dim=0, reverse=true)\noutput y, i\n' > "$D/cmu8.sf"
printf 'input x: bool[2, 30001]\ny, i = cummin(x, dim=1)\noutput y, i\n' > "$D/cmb.sf"
printf 'input x: float16[1500, 96]\ny, i = cummin(x, dim=0, exclusive=true)\noutput y, i\n' > "$D/cmf16.sf"
printf 'input x: float64[3, 20001]\ny, i = cummax(x, dim=1)\noutput y, i\n' > "$D/cmf64.sf"
emu cmi32 pdl=1 3 0 41
EMU_NTH=2 emu cmi32 row_stage=0 3 0 42
emu cmu8 pdl=1 0 0 43
emu cmu8 col_stream=1 0 0 44
emu cmb pdl=1 2 0 45
emu cmf16 pdl=1 0 1 46
emu cmf16 col_stream=1 0 1 47
emu cmf64 pdl=1 0 1 48
emu col3b col_stream=1
# raked row tiles (row_rake=1: each thread stores its own outputs, 2: over its inputs in
# the stage, copied out a warp at a time): forward scans (aligned tiles go through the
# stage, a row's partial last tile through global memory), a reversed row of whole
# aligned tiles, several rows with prefix chains, 16-bit inputs, int32 summed into int64
# (outputs wider than the stage's: stored by each thread), index outputs, staged one-tile
# rows, rows beside weights (special values and the strided path below)
printf 'input x: float32[50001]\ny = cumsum(x, dim=0)\noutput y\n' > "$D/rk32.sf"
printf 'input x: float32[3, 32768]\ny = cumsum(x, dim=1, exclusive=true, reverse=true)\noutput y\n' > "$D/rkrev.sf"
printf 'input x: bfloat16[3, 20000]\ny = cumsum(x, dim=1, exclusive=true)\noutput y\n' > "$D/rkb.sf"
printf 'input x: int32[40000]\ny = cumsum(x, dim=0)\noutput y\n' > "$D/rki.sf"
printf 'input x: float32[3, 20000]\ny, i = cummax(x, dim=1)\noutput y, i\n' > "$D/rkmax.sf"
printf 'input x: float32[7, 3000]\ny = cumsum(x, dim=1)\noutput y\n' > "$D/rkone.sf"
# (by default: rows of whole tiles, one or a few a row, 4 and 2 chunks a thread)
printf 'input x: float32[6, 4096]\ny = cumsum(x, dim=1)\nz = cumprod(x, dim=1, reverse=true)\noutput y, z\n' > "$D/auto1.sf"
printf 'input x: bfloat16[5, 4096]\ny = cumsum(x, dim=1, exclusive=true)\noutput y\n' > "$D/auto2.sf"
printf 'input x: float32[3, 65536]\ny = cumsum(x, dim=1)\noutput y\n' > "$D/auto3.sf"
# (with one or two steps a thread: over a thousand tiles a row, two super-groups)
printf 'input x: float32[300001]\ny = cumsum(x, dim=0)\noutput y\n' > "$D/rkbig.sf"
printf 'input x: int64[2, 150000]\ny = cumsum(x, dim=1, exclusive=true)\noutput y\n' > "$D/rkbigi.sf"
for spec in "rk32 row_rake=2" "rk32 row_rake=1" "rkrev row_rake=2" "rkb row_rake=2,row_g=2,row_g2=3" \
            "rkb row_rake=1" "rki row_rake=2" "rkmax row_rake=2" "rkone row_rake=2,row_stage1=1" \
            "bfw row_rake=2" "bfwl row_rake=2" "i64rows row_rake=2,row_items=4" \
            "rkbig row_rake=2,row_items=1" "rkbigi row_rake=2,row_items=2" "auto1 pdl=1" "auto2 pdl=1" \
            "auto3 pdl=1" "rkb row_rake=2,row_items=64,row_vec=1" "auto3 row_ilv=0" "rkrev row_ilv=0,row_g=2,row_g2=2" \
            "i64rows row_ilv=0" "f16 row_g=4,lb_wait_first=1000,lb_wait_first_min=0" "i64rows row_pipe=1,row_threads=256,row_items=8" \
            "f32 lb_early=0" "f32 row_minb=6" "i64rows lb_early=0" "cummax lb_early=1,row_stage=0" "widths lb_early=0" \
            "fused lb_early=1,row_g=2,row_g2=3" "f16 lb_early=1,row_stage=0"; do
    emu $spec
done
# static first-wave tiles (by default every tile of these small launches): a few static
# tiles, then tickets (lb_w1=N), on 1-D, interleaved and raked rows, groups, a thousand
# tiles, the late aggregate, a non-commutative scan; none (lb_w1=0).  The harness also
# checks that the launch leaves its ticket word's count at zero for the next.
for spec in "f32 lb_w1=3" "f32 lb_w1=0" "i64rows lb_w1=5,row_g=2,row_g2=3" "rkbig row_rake=2,row_items=1,lb_w1=7" \
            "rkb row_rake=2,lb_w1=2" "f16 lb_w1=4,lb_early=0" "cummax lb_w1=3" "auto3 lb_w1=2" \
            "widths lb_w1=2,row_stage=0" "rkrev lb_w1=1,row_g=2,row_g2=2"; do
    emu $spec
done
# raked look-back rows of 16-bit floats: whole tiles, both directions; float16 with rare
# infinities and NaNs and some subnormals (ties 3; float16 sums in double are exact, so
# bit for bit), dense special values (ties 1); bfloat16 on both; the first wave paced by
# tile (lb_stagger); strips of 2 and 4 steps a lane (float64 and float32 outputs set V)
printf 'input x: float16[4, 65536]\ny = cumsum(x, dim=1)\nz = cumsum(x, dim=1, exclusive=true, reverse=true)\noutput y, z\n' > "$D/rrf16.sf"
printf 'input x: bfloat16[3, 49152]\ny = cumsum(x, dim=1, reverse=true)\nz = cumsum(x, dim=1, exclusive=true)\noutput y, z\n' > "$D/rrbf16.sf"
emu rrf16 "" 0 3 21
emu rrf16 "" 0 1 22
EMU_NTH=2 emu rrf16 "" 0 3 23
emu rrbf16 "" 0 0 24
emu rrbf16 "" 0 1 25
emu rrf16 lb_stagger=0 0 3 26
emu rrf16 lb_stagger=12 0 3 27
printf 'input x: float16[3, 40000]\ny = cumsum(x, dim=1, dtype=float64)\nz = cumsum(x, dim=1, exclusive=true, reverse=true, dtype=float32)\noutput y, z\n' > "$D/rrw.sf"
emu rrw row_rake=1 0 3 28
EMU_NTH=2 emu rrw row_rake=1 0 3 29
emu f32 lb_stagger=10
# special values (NaN, infinities, signed zeros; any NaN matches any NaN) and the strided
# path (noflags=1), 16-bit floats too
printf 'input x: bfloat16[1500, 96]\ny = cumsum(x, dim=0)\nz = cumsum(x, dim=0, reverse=true, exclusive=true)\noutput y, z\n' > "$D/b16.sf"
# a grid of about one block of 64 columns an SM: the stream kernel's 64-column blocks by
# default for 16-bit inputs, the last block partial
printf 'input x: float16[300, 8200]\ny = cumsum(x, dim=0)\nz = cumsum(x, dim=0, exclusive=true, reverse=true)\noutput y, z\n' > "$D/w64.sf"
for spec in "cummax pdl=1" "cummax lb_ticket=0" "col3b pdl=1" "f16 pdl=1" "b16 pdl=1" "b16 col_l=64" \
            "bfw4 pdl=1" "bfwl pdl=1" "b16 col_stream=1" "b16 col_stream=1,col_hold=0" "w64 pdl=1" \
            "rkb row_rake=2" "rk32 row_rake=2" "auto2 pdl=1"; do
    for args in "0 1 7 0" "0 0 8 1"; do emu $spec $args; done
done
# float64 sums (and the float32 stream carry): integer-valued inputs (ties=2; random
# sums in double round differently from the exact reference) and the special values,
# contiguous and strided
for spec in "f64rows pdl=1" "f64rows row_g=2,row_g2=3,row_items=1" "f64rows row_rake=2" "f64rows f64_dd=1" \
            "f64col pdl=1" "f64col col_stage=0" "f64col f64_dd=1" "colc col_stream=1,col_l=1" \
            "f64col col_stream=1,col_l=1"; do
    for args in "0 2 9 0" "0 2 10 1" "0 1 11 0"; do emu $spec $args; done
done
# ... and random float64 inputs, each output within 2^-40 of its sum|x| (EMU_MAG=1: the
# reference run again on |x|): rows over look-back tiles, columns by the tile kernel and
# by the stream kernel past a run of 256 chunks (its carry's second level), the
# reversed exclusive scan too (EMU_NTH=2, the program's second scan kernel)
printf 'input x: float64[2100, 64]\ny = cumsum(x, dim=0)\nz = cumsum(x, dim=0, exclusive=true, reverse=true)\noutput y, z\n' > "$D/f64colc.sf"
for spec in "f64rows pdl=1" "f64col pdl=1" "f64colc col_stream=1,col_l=1"; do
    for args in "0 0 12 0" "0 0 13 1"; do EMU_MAG=1 emu $spec $args; done
done
EMU_MAG=1 EMU_NTH=2 emu f64colc col_stream=1,col_l=1 0 0 14 0
emu_report "cuda_emu scans"
