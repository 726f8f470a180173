# Host emulation of `ring_rows16_post` (cuda/qgemv4.cuh, MLXCEL_QMV_POST) for one 16-row block:
# the ring's per-row chunk rotation and the lanes' reads of it, the lane -> tile-word mapping
# (lane c's word s is the tile's word 4 s + c), PTX's m16n8k16 fragment layout (lane r = lane / 4,
# c = lane % 4 holds A[r][2c..], A[r + 8][2c..], A[r][2c + 8..], A[r + 8][2c + 8..], B[2c..][r],
# B[2c + 8..][r]), the x chunks reordered in place, the per-group sums (D, E) and the epilogue
# y += s (C_even + C_odd / 16 - E) + b D, in float64, against sum_k (s n + b) x over the warp's
# tiles. It checks the kernel's index algebra, not the CUDA code (that is the GPU test
# `post_scaled_groups_match_a_float64_reference_or_are_not_used`). Session 26: exact (0.0)
# for K / G = 1024 / 64, 1152 / 32 (odd tiles per warp), 2048 / 128, 384 / 64 (warps without
# tiles), warps 0, 1, 7; swapping the even / odd B pairs or perturbing E fails it.
# Run: python3 benchmarks/kernel-notes/post_scale_emulation.py [seed] (needs numpy).
import numpy as np, sys
rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
def run(K, G, NW=8, warp=0):
    rows = 16
    n = rng.integers(0, 16, size=(rows, K))
    s = rng.standard_normal((rows, K // G)).astype(np.float16).astype(np.float64)
    b = rng.standard_normal((rows, K // G)).astype(np.float16).astype(np.float64)
    x = rng.standard_normal(K).astype(np.float16).astype(np.float64)
    words = K // 8
    w = np.zeros((rows, words), dtype=np.uint64)
    for i in range(8):
        w |= (n[:, i::8].astype(np.uint64) << np.uint64(4 * i))
    w = w.astype(np.uint32)
    # xs4 in pair order: chunk bb -> [(x[8bb+i], x[8bb+i+4]) for i in 0..3]
    xs4 = [[(x[8*bb+i], x[8*bb+i+4]) for i in range(4)] for bb in range(words)]
    tiles = K // 128
    tw = (tiles - warp + NW - 1) // NW
    NG, SPG, CPG = 128 // G, 4 // (128 // G), G // 8
    # D pass: xsum[group] = (D, E); chunks rewritten (p0, p2, p1, p3)
    xsum = {}
    for i in range(tw):
        t = warp + NW * i
        for q in range(16):
            ch = xs4[t*16+q]
            g = t*NG + q // CPG
            ev = ch[0][0] + ch[0][1] + ch[2][0] + ch[2][1]
            od = ch[1][0] + ch[1][1] + ch[3][0] + ch[3][1]
            cur = xsum.get(g, [0.0, 0.0])
            xsum[g] = [cur[0] + ev, cur[1] + od]
            xs4[t*16+q] = [ch[0], ch[2], ch[1], ch[3]]
    DE = {g: (v[0] + v[1], 1024 * v[0] + 64 * v[1]) for g, v in xsum.items()}
    acc = np.zeros(rows)
    for i in range(tw):
        t = warp + NW * i
        # ring slot (u32 words): lane (r, c) copies row r words t*16+4c..+3 to uint4 index put
        slot = np.zeros(256, dtype=np.uint32)
        for lane in range(32):
            r, c = lane >> 2, lane & 3
            put = r*4 + ((c + (r >> 1)) & 3)
            slot[put*4:(put+1)*4] = w[r, t*16+4*c:t*16+4*c+4]
            slot[128+put*4:128+(put+1)*4] = w[r+8, t*16+4*c:t*16+4*c+4]
        # lanes' registers
        W0 = {}; W1 = {}
        for lane in range(32):
            r, c = lane >> 2, lane & 3
            at = [(r*4 + ((s_ + (r >> 1)) & 3))*4 + c for s_ in range(4)]
            W0[lane] = [int(slot[a]) for a in at]
            W1[lane] = [int(slot[128+a]) for a in at]
            for s_ in range(4):
                assert W0[lane][s_] == w[r, t*16 + 4*s_ + c]
        def pair(v, mask):
            lo16, hi16 = v & 0xFFFF, v >> 16
            f = lambda h: 1024 + (h & mask)  # 0x6400|n = 1024+n ; 0x6400|(16n) = 1024 + 16n
            return (f(lo16), f(hi16))
        for gi in range(NG):
            lo = np.zeros((16, 8)); hi = np.zeros((16, 8))
            for q in range(SPG):
                s_ = gi*SPG + q
                for (C, mask, bsel) in ((lo, 0x000F, (0, 1)), (hi, 0x00F0, (2, 3))):
                    A = np.zeros((16, 16)); B = np.zeros((16, 8))
                    for lane in range(32):
                        r, c = lane >> 2, lane & 3
                        xx = xs4[t*16 + 4*s_ + c]
                        a0 = pair(W0[lane][s_], mask); a1 = pair(W1[lane][s_], mask)
                        a2 = pair(W0[lane][s_] >> 8, mask); a3 = pair(W1[lane][s_] >> 8, mask)
                        A[r, 2*c:2*c+2] = a0; A[r+8, 2*c:2*c+2] = a1
                        A[r, 2*c+8:2*c+10] = a2; A[r+8, 2*c+8:2*c+10] = a3
                        b0, b1 = xx[bsel[0]], xx[bsel[1]]
                        B[2*c:2*c+2, r] = b0; B[2*c+8:2*c+10, r] = b1
                    C += A @ B
            g = t*NG + gi
            D, E = DE[g]
            for row in range(16):
                v = lo[row, 0] + hi[row, 0] / 16 - E
                acc[row] += s[row, g] * v + b[row, g] * D
    # reference over this warp's tiles only
    ref = np.zeros(rows)
    for i in range(tw):
        t = warp + NW*i
        for k in range(t*128, t*128+128):
            ref += (s[:, k // G] * n[:, k] + b[:, k // G]) * x[k]
    if tw == 0:
        assert not acc.any()
        return 0.0
    err = np.max(np.abs(acc - ref)) / np.max(np.abs(ref))
    return err
for K, G in ((128*8, 64), (128*9, 32), (128*16, 128), (128*3, 64)):
    for warp in (0, 1, 7):
        e = run(K, G, warp=warp)
        print(K, G, warp, f"{e:.2e}")
        assert e < 1e-9
print("ok")
