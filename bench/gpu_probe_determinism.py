# gpu_probe_determinism.py — diagnoses a determinism failure of gpu_bench.py: runs a
# float32 cumsum several times, either binding a fresh output before each run or
# binding once and running again (as gpu_bench.py's check does), and prints per run the
# elements off the float64 result and the elements that differ from the first run.
#   python3 bench/gpu_probe_determinism.py   (after bench/gpu_run.sh build)
import json, sys, torch
sys.path.insert(0, "bench")
from gpu_bench import Scanfuse
sf = Scanfuse("build-gpu/libscanfuse.so", json.loads(open("build-gpu/offsets.json").read()))
for n in (1 << 24, 1 << 28):
    for mode in ("rebind", "same"):
        stream = torch.cuda.Stream()
        prog = sf.compile(f"input x: float32[{n}]\ny = cumsum(x, dim=0)\noutput y\n", stream)
        g = torch.Generator(device="cuda")
        g.manual_seed(1234)
        x = torch.randn(n, device="cuda", generator=g)
        ref = torch.cumsum(x.double(), 0)
        y = torch.empty_like(x)
        prog.bind([x], [y])
        first = None
        for r in range(4):
            if mode == "rebind" and r > 0:
                y = torch.empty_like(x)
                prog.bind([x], [y])
            with torch.cuda.stream(stream):
                y.fill_(float("nan"))
                prog()
            stream.synchronize()
            d = (y.double() - ref).abs()
            bad = (d > 1e-6 * (1 + ref.abs())) | y.isnan()
            nb = int(bad.sum())
            fb = int(bad.nonzero()[0]) if nb else -1
            if first is None:
                first = y.clone()
            diff = int((y.view(torch.int32) != first.view(torch.int32)).sum())
            print(n, mode, "run", r, "off", nb, "first off", fb, "differs from run 0", diff, flush=True)
        del x, y, ref, first
        torch.cuda.empty_cache()
