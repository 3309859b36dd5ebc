// tools/cuda_emu/prodval.cpp — sf_pxf_val (the value of a narrow float product's state,
// which OpProdF::step may have left unnormalised) against sf_px_val of the state
// normalised by sf_px_norm, bit for bit, on random states: v anywhere OpProdF's runs can
// leave it ([2^-947, 2^884], either sign; some zeros, infinities, NaNs with a stale
// power), the power near both of sf_pxf_val's thresholds and far out.  prodval.inc is a
// generated source of a float32 cumprod made compilable by xform.sh (scans.sh).
#include "shim.h"
#include "prodval.inc"
#include <random>

int main() {
    std::mt19937_64 r(7);
    long bad = 0, zero = 0, inf = 0, other = 0;
    const long n = 4000000;
    for (long it = 0; it < n; it++) {
        const int ev = (int)(r() % (884 + 947 + 1)) - 947;
        double v = std::ldexp(1.0 + (double)(r() >> 12) / 4503599627370496.0, ev - 1);
        if (r() & 1) v = -v;
        if (r() % 50 == 0) {
            static const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, NAN};
            v = sp[r() % 5];
        }
        int64_t i;
        switch (r() % 4) {
        case 0: i = -1961 + (int64_t)(r() % 200) - 100; break;
        case 1: i = 1972 + (int64_t)(r() % 200) - 100; break;
        case 2: i = (int64_t)(r() % 5000) - 2500; break;
        default: i = (int64_t)(r() % 2000000) - 1000000; break;
        }
        const double a = sf_pxf_val(sf_vd_make(v, i)), b = sf_px_val(sf_px_norm(v, i));
        uint64_t ua, ub;
        std::memcpy(&ua, &a, 8);
        std::memcpy(&ub, &b, 8);
        if (ua != ub && !(a != a && b != b) && bad++ < 5) std::printf("v %a, i %lld: %a, expected %a\n", v, (long long)i, a, b);
        zero += a == 0;
        inf += std::isinf(a);
        other += a != 0 && !std::isinf(a);
    }
    std::printf("prodval: %ld states, %ld differ (results: %ld zeros, %ld infinities, %ld others)\n", n, bad, zero, inf, other);
    return bad != 0;
}
