// A measuring probe of the 4-bit GEMV's grid and ring (gemv_probe.rs): the ring schedule's
// copies of a weight's 16-row x 128-value tiles (ring_rows16's per-lane cp.async, S stages per
// warp, NW warps splitting K) with the kernel's other parts switched on one at a time by the
// PRO bits, so that a benchmark can see which part holds the GEMVs at ~55% of DRAM peak:
//   PRO & 1: x staged into shared memory (stage_x_vec) before the first tile, and a word of it
//            read per tile;
//   PRO & 2: the 16 rows' (scale, bias) tables staged per 16-row block (stage_sb), one pair
//            read per tile;
//   PRO & 4: the epilogue's cross-warp reduction per block (through shared memory, two
//            barriers);
//   PRO & 8: the real per-tile arithmetic (tile_mma; needs x and a source of scales: PRO & 2
//            or PRO & 16);
//   PRO & 16: the tile's scales and biases copied into its ring slot with its words (G = 64:
//            4 bytes per row of each, one 4-byte cp.async per lane; the slot 1 KiB + 128 B),
//            instead of the per-block tables: no table staging before the first tile;
//   PRO & 32: with PRO & 3 == 3, the shipped prologue (ring_prologue with EARLY: x's and the
//            first block's table loads issued before the ring's first copies);
//   PRO & 64: dynamic shared memory padded to 56 KiB (gemv_probe.rs), so that every variant
//            runs 4 CTAs per SM (the shipped kernels' occupancy) whatever its registers.
// Without PRO & 8 a tile's words are XOR-folded into one register: the bytes are read and
// nothing else. BPC 16-row blocks per CTA (contiguous; 1 = the shipped grid), the ring running
// on across blocks. MATS matrices (2: gate then up, as the SwiGLU kernel reads them). Inputs
// w0 / s0 / b0 and w1 / s1 / b1 (MATS = 1 reads only the first), x. Output: one u32 per thread
// (its fold), so that no read is dead code. Not a GEMV: its outputs mean nothing.
constexpr int NT = NW * 32;
constexpr int SS = S > 1 ? S : 2;
static_assert(!(PRO & 8) || ((PRO & 1) && (PRO & 18)), "the arithmetic needs x and the scales");
static_assert(!(PRO & 16) || G == 64, "scales in the ring: 4 bytes (two groups) per row and tile");
constexpr bool RS = (PRO & 16) != 0;
constexpr int SLOT = RS ? 72 : 64;  // uint4 per ring slot
static_assert(SMEM >= 0, "SMEM is the dynamic shared memory in bytes");
using mlxcel_qmv::u32;
extern __shared__ __align__(16) unsigned char smem[];
__shared__ u32 red[NW * 16];
const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
const int r = lane >> 2, c = lane & 3;
const int K = w0_shape[1] * 8, words = K / 8, kg = K / G, sbs = mlxcel_qmv::sb_stride(kg);
const int tiles = K / 128;
const int tw = (tiles - warp + NW - 1) / NW;
const int per_block = MATS * tw;
const int nblocks = w0_shape[0] / 16;
const int first = blockIdx.x * BPC;
const int nb = nblocks - first < BPC ? (nblocks > first ? nblocks - first : 0) : BPC;
const int jobs = nb * per_block;
__half2* xs = reinterpret_cast<__half2*>(smem);
__half2* sb = xs + ((PRO & 1) ? K / 2 : 0);
uint4* ring = reinterpret_cast<uint4*>(sb + ((PRO & 2) ? MATS * 16 * sbs : 0)) + warp * SS * SLOT;
const mlxcel_qmv::QMat mats[2] = {{w0, s0, b0}, {w1, s1, b1}};
auto issue = [&](int j) {
  if (j < jobs) {
    const int i = j / per_block, jj = j - i * per_block;
    const int m = MATS == 1 ? 0 : jj / tw;
    const int t = warp + NW * (jj - m * tw);
    const long long row = static_cast<long long>(first + i) * 16 + r;
    const u32* src = (m == 0 ? w0 : w1) + row * words + c * 4 + t * 16;
    uint4* dst = ring + (j % SS) * SLOT;
    mlxcel_qmv::ring_copy16(dst + lane, src);
    mlxcel_qmv::ring_copy16(dst + 32 + lane, src + 8LL * words);
    if constexpr (RS) {
      // Lane l < 16: row l's two scales of the tile; l >= 16: row l - 16's two biases.
      const __half* tb = (lane < 16 ? (m == 0 ? s0 : s1) : (m == 0 ? b0 : b1)) + (static_cast<long long>(first + i) * 16 + (lane & 15)) * kg + 2 * t;
      const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(reinterpret_cast<u32*>(dst + 64) + lane));
      asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(d), "l"(tb) : "memory");
    }
  }
  mlxcel_qmv::ring_commit();
};
auto stage_tables = [&](int block) {
#pragma unroll
  for (int m = 0; m < MATS; ++m)
    mlxcel_qmv::stage_sb(mats[m].s, mats[m].b, static_cast<long long>(block) * 16, kg, sb + m * 16 * sbs, tid, NT);
};
static_assert(!(PRO & 32) || (PRO & 3) == 3, "the shipped prologue stages x and the tables");
if constexpr ((PRO & 32) != 0) {
  const mlxcel_qmv::StageX<false, NT> stage{x, nullptr, 0.0f, nullptr};
  mlxcel_qmv::QMat pm[MATS];
  pm[0] = {w0, s0, b0};
  if constexpr (MATS == 2) pm[MATS - 1] = {w1, s1, b1};
  mlxcel_qmv::ring_prologue<NW, SS, MATS, true>(pm, stage, xs, sb, K, static_cast<long long>(first) * 16, kg, sbs, tid,
                                                [&](int j) { issue(j); });
} else {
#pragma unroll
  for (int j = 0; j < SS - 1; ++j) issue(j);
  if constexpr ((PRO & 1) != 0) mlxcel_qmv::stage_x_vec(x, xs, K, tid, NT);
  if constexpr ((PRO & 2) != 0) {
    if (nb > 0) stage_tables(first);
  }
  if constexpr ((PRO & 3) != 0) __syncthreads();
}
u32 fold = 0;
int j = 0;
for (int i = 0; i < nb; ++i) {
  if constexpr ((PRO & 2) != 0) {
    if (i > 0) {
      __syncthreads();  // every warp is done with the previous block's tables
      stage_tables(first + i);
      __syncthreads();
    }
  }
  float acc[MATS][4];
#pragma unroll
  for (int m = 0; m < MATS; ++m) acc[m][0] = acc[m][1] = acc[m][2] = acc[m][3] = 0.0f;
#pragma unroll
  for (int m = 0; m < MATS; ++m) {
    for (int ii = 0; ii < tw; ++ii, ++j) {
      if constexpr (RS) __syncwarp();  // every lane is done with the slot the refill reuses
      issue(j + SS - 1);
      mlxcel_qmv::ring_wait<SS - 1>();
      if constexpr (RS) __syncwarp();  // the slot's scales, copied by other lanes, have landed
      const uint4* slot = ring + (j % SS) * SLOT;
      const uint4 q0 = slot[lane], q1 = slot[32 + lane];
      const int t = warp + NW * ii;
      const int g = (t * 128 + c * 32) / G;
      if constexpr ((PRO & 8) != 0) {
        __half2 p0, p1;
        if constexpr (RS) {
          const __half* th = reinterpret_cast<const __half*>(slot + 64);  // [16 rows][2] scales, then biases
          const int gl = c >> 1;
          p0 = __halves2half2(th[r * 2 + gl], th[32 + r * 2 + gl]);
          p1 = __halves2half2(th[(r + 8) * 2 + gl], th[32 + (r + 8) * 2 + gl]);
        } else {
          const __half2* sbm = sb + m * 16 * sbs;
          p0 = sbm[r * sbs + g];
          p1 = sbm[(r + 8) * sbs + g];
        }
        mlxcel_qmv::tile_mma(q0, q1, __low2half2(p0), __high2half2(p0), __low2half2(p1), __high2half2(p1),
                             xs + (t * 128 + c * 32) / 2, acc[m]);
      } else {
        fold ^= q0.x ^ q0.y ^ q0.z ^ q0.w ^ q1.x ^ q1.y ^ q1.z ^ q1.w;
        if constexpr ((PRO & 1) != 0) fold ^= reinterpret_cast<const u32*>(xs)[(t * 128 + c * 32) / 2];
        if constexpr ((PRO & 2) != 0) fold ^= mlxcel_qmv::as_u32(sb[m * 16 * sbs + r * sbs + g]);
        if constexpr (RS) fold ^= reinterpret_cast<const u32*>(slot + 64)[lane];
      }
    }
  }
  if constexpr ((PRO & 8) != 0) {
#pragma unroll
    for (int m = 0; m < MATS; ++m) fold ^= __float_as_uint(acc[m][0]) ^ __float_as_uint(acc[m][2]);
  }
  if constexpr ((PRO & 4) != 0) {
    if (c == 0) red[warp * 16 + r] = fold;
    __syncthreads();
    if (tid < 16) {
      u32 v = 0;
#pragma unroll
      for (int w = 0; w < NW; ++w) v ^= red[w * 16 + tid];
      fold ^= v;
    }
    __syncthreads();
  }
}
out[static_cast<long long>(blockIdx.x) * NT + tid] = fold;
