// y [N] = x [K] W^T (+ r [N] when RESID: the residual add of o_proj / down_proj folded into
// the epilogue) for 4-bit MLX-affine W (helpers and layout: qgemv4.cuh). One CTA of NW
// warps per 16 rows. Inputs: x (fp16, K values), w uint32 [N, K/8], scales, biases fp16
// [N, K/G], r fp16 [N] (read only when RESID), nw fp16 [K] (read only when NORM). Output: y
// fp16 [N]. Template constants: G (group size), NW (warps), S (ring stages; 0 = the batched
// schedule of U tiles in flight per warp), U, RESID, NORM and EPS (the folded RMSNorm), LATE
// (with NORM: the norm's scale applied to the row sums, MLXCEL_QMV_NORM_LATE), SMEM, MB (ring
// only: the grid is capped and each CTA owns several 16-row blocks, ring_blocks), EARLY (ring
// only, one CTA per 16 rows: the prologue's loads of x and of the scales before the ring's first
// copies, MLXCEL_QMV_EARLY; ring_rows16), POST (ring without MB: scales and biases applied per group after
// the mma, MLXCEL_QMV_POST; ring_rows16_post), OWNC (with POST: each lane reads back only its own
// copies, the mma's columns split by group, MLXCEL_QMV_OWN_CHUNKS), RT (with OWNC and TILED: the
// (scale, bias) pairs ride the ring with their tiles, `scales` holding them in tile order and
// `biases` unused, MLXCEL_QMV_RING_TABLES), XSF (with POST: its per-group sums of x formed while x
// is staged, MLXCEL_QMV_XSUM_STAGE), RB (16-row blocks per CTA: 2
// for the largest launches with POST, MLXCEL_QMV_PAIR_BLOCKS, else 1). Dynamic shared memory: the
// batched schedule K * 2 bytes (x in pair order), the ring schedule as ring_rows16 says (RB
// blocks' tables).
// Outputs are written through put(row, value), defined in front of this body by
// qgemv4_store.cu (y[row]) or qgemv4_store_qkv.cu (the stacked qkv projection's three
// outputs, MLXCEL_QKV_PARTS).
constexpr int NT = NW * 32;
// SMEM (the launch's dynamic shared memory) only names the kernel: see smem_arg in
// quantized_gemv.rs.
static_assert(SMEM >= 0, "SMEM is the dynamic shared memory in bytes");
// TILED: the weights in the tiled layout (tile_rows16 in quantized_gemv.rs), read by ring_rows16 and
// ring_rows16_post (not with bulk copies: those fill ring_rows16's slots).
static_assert(!TILED || (S > 0 && !MB && !(POST && BULK)), "tiled weights need the ring schedule, one CTA per 16 rows, no POST with bulk copies");
// BULK: the tiles by bulk copies (the bulk:W:S schedules; ring_rows16).
static_assert(!BULK || TILED, "bulk copies need the tiled layout");
// MLXCEL_QMV_DYN_ALIGN: 128 bytes unless MLXCEL_QMV_ALIGN128 is off (qgemv4.cuh says why).
extern __shared__ __align__(MLXCEL_QMV_DYN_ALIGN) unsigned char smem[];
// RB (MLXCEL_QMV_PAIR_BLOCKS): a CTA owns RB consecutive 16-row blocks, streamed through POST's
// loop as its matrices (each block's words 16 K / 8 further on in either layout, its scales
// 16 K / G further on), so x, its norm and POST's per-group sums of x are staged once per RB
// blocks. Why: the LM head (8016 CTAs of 4 tiles per warp) spent 66% of its warp samples in that
// prologue (session 43, ncu source counters with MLXCEL_QMV_OWN_CHUNKS).
static_assert(RB == 1 || (RB == 2 && S > 0 && !MB && POST), "two blocks per CTA: POST's ring, one grid block per CTA");
static_assert(!RT || (POST && OWNC && TILED && S > 0 && !MB), "tables in the ring: POST's OWN loop over tiled words");
__shared__ float red[NW * 16 * RB];
const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
const int K = w_shape[1] * 8;
const long long row0 = static_cast<long long>(blockIdx.x) * 16 * RB;
// NORM: x is the residual stream and MLX's rms_norm(x, nw, eps) is applied while staging it
// (stage_x_rms; EPS holds eps's f32 bits). Not with a capped grid (MB).
static_assert(!(NORM && MB), "the folded RMSNorm needs one CTA per 16 rows");
const float eps = __int_as_float(EPS);
__shared__ float nred[NORM ? NW : 1];
// LATE (MLXCEL_QMV_NORM_LATE; only with NORM): x staged as nw * x, the norm's scale applied to
// the row sums below (stage_x_late in qgemv4.cuh).
static_assert(!LATE || NORM, "LATE is the folded norm's scale applied late");
const mlxcel_qmv::StageX<NORM, NT, LATE> stage{x, nw, eps, nred};
if constexpr (S > 0 && MB) {
  // Several 16-row blocks per CTA (a capped grid): ring_blocks reduces and writes each.
  __shared__ float red2[2 * NW * 16];
  const mlxcel_qmv::QMat mats[1] = {{w, scales, biases}};
  mlxcel_qmv::ring_blocks<G, NW, S, 1>(mats, x, smem, K, w_shape[0] / 16, tid, warp, lane, red2,
                                       [&](long long row, const float (&v)[1]) {
                                         float o = v[0];
                                         if constexpr (RESID) o += __half2float(r[row]);
                                         put(row, __float2half_rn(o));
                                       });
} else {
  float acc[RB][4] = {};
  if constexpr (S > 0) {
    mlxcel_qmv::QMat mats[RB];
#pragma unroll
    for (int m = 0; m < RB; ++m) {
      const long long rows = 16LL * m;
      // RT: scales holds the (scale, bias) pairs in tile order, two halves per group and row.
      mats[m] = {w + rows * (K / 8), scales + (RT ? 2 : 1) * rows * (K / G), biases + rows * (K / G)};
    }
#ifdef MLXCEL_QMV_GATE
    // MLXCEL_QMV_GBAR_PROBE (quantized_gemv.rs's gbar source): a grid-wide barrier in the
    // prologue (mlxcel_qmv::grid_barrier), GBAR_START before anything, else after the ring's
    // first copies; its counters are slot gbar_slot_shape[0] - 1 of gbar, GBAR_SLOT_WORDS apart.
    const mlxcel_qmv::GridGate<GBAR_START> gate{const_cast<unsigned int*>(gbar) +
                                                static_cast<long long>(gbar_slot_shape[0] - 1) * GBAR_SLOT_WORDS};
#else
    const mlxcel_qmv::NoGate gate{};
#endif
    if constexpr (POST) {
      mlxcel_qmv::ring_rows16_post<G, NW, S, RB, EARLY, TILED, OWNC, RT, XSF>(mats, stage, smem, K, row0, tid, warp, lane, acc, gate);
    } else {
      mlxcel_qmv::ring_rows16<G, NW, S, RB, EARLY, TILED, BULK>(mats, stage, smem, K, row0, tid, warp, lane, acc, gate);
    }
  } else {
    __half2* xs = reinterpret_cast<__half2*>(smem);
    if constexpr (NORM) stage(xs, K, tid);
    else mlxcel_qmv::stage_x(x, xs, K, tid, NT);
    __syncthreads();
    mlxcel_qmv::rows16<G, NW, U>(w, scales, biases, xs, K, row0, warp, lane, acc[0]);
  }
  const float s = mlxcel_qmv::reduce_rows<NW, RB>(acc, red, warp, lane, tid);
  if (tid < 16 * RB) {
    float v = s;
    if constexpr (LATE) v *= mlxcel_qmv::late_scale<NW>(nred, eps, K);
    if constexpr (RESID) v += __half2float(r[row0 + tid]);
    put(row0 + tid, __float2half_rn(v));
  }
}
