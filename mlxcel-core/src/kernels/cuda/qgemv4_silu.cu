// y [N] = silu(x Wg^T) * (x Wu^T) for 4-bit MLX-affine gate and up projections (the SwiGLU
// MLP's first half in one launch; helpers and layout: qgemv4.cuh). One CTA of NW warps per
// 16 outputs: it computes those 16 rows of both projections, so the activation never
// leaves the CTA and stays fp32 until the one rounding of y. Inputs: x (fp16, K values),
// wg/wu uint32 [N, K/8], sg/su, bg/bu fp16 [N, K/G], nw fp16 [K] (read only when NORM).
// Output: y fp16 [N]. Template constants (POST included) and dynamic shared memory as qgemv4.cu (the ring
// schedule streams gate, then up, through one ring and stages both scale tables).
constexpr int NT = NW * 32;
// SMEM (the launch's dynamic shared memory) only names the kernel: see smem_arg in
// quantized_gemv.rs.
static_assert(SMEM >= 0, "SMEM is the dynamic shared memory in bytes");
// TILED: the weights in the tiled layout (tile_rows16 in quantized_gemv.rs), read by ring_rows16 and
// ring_rows16_post (not with bulk copies: those fill ring_rows16's slots).
static_assert(!TILED || (S > 0 && !MB && !(POST && BULK)), "tiled weights need the ring schedule, one CTA per 16 rows, no POST with bulk copies");
// BULK: the tiles by bulk copies (the bulk:W:S schedules; ring_rows16).
static_assert(!BULK || TILED, "bulk copies need the tiled layout");
// RT (MLXCEL_QMV_RING_TABLES): sg and su hold the (scale, bias) pairs in tile order (bg, bu unused).
// XSF (MLXCEL_QMV_XSUM_STAGE, with POST): POST's per-group sums of x formed while x is staged.
static_assert(!RT || (POST && OWNC && TILED && S > 0 && !MB), "tables in the ring: POST's OWN loop over tiled words");
// MLXCEL_QMV_DYN_ALIGN: 128 bytes unless MLXCEL_QMV_ALIGN128 is off (qgemv4.cuh says why).
extern __shared__ __align__(MLXCEL_QMV_DYN_ALIGN) unsigned char smem[];
__shared__ float red[NW * 32];
__shared__ float gu[32];
const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
const int K = wg_shape[1] * 8;
const long long row0 = static_cast<long long>(blockIdx.x) * 16;
// NORM: x is the residual stream and MLX's rms_norm(x, nw, eps) is applied while staging it
// (stage_x_rms; EPS holds eps's f32 bits). Not with a capped grid (MB).
static_assert(!(NORM && MB), "the folded RMSNorm needs one CTA per 16 rows");
const float eps = __int_as_float(EPS);
__shared__ float nred[NORM ? NW : 1];
static_assert(!LATE || NORM, "LATE is the folded norm's scale applied late");
const mlxcel_qmv::StageX<NORM, NT, LATE> stage{x, nw, eps, nred};
if constexpr (S > 0 && MB) {
  // Several 16-row blocks per CTA (a capped grid): ring_blocks reduces and writes each.
  __shared__ float red2[2 * NW * 32];
  const mlxcel_qmv::QMat mats[2] = {{wg, sg, bg}, {wu, su, bu}};
  mlxcel_qmv::ring_blocks<G, NW, S, 2>(mats, x, smem, K, wg_shape[0] / 16, tid, warp, lane, red2,
                                       [&](long long row, const float (&v)[2]) {
                                         const float g = v[0], u = v[1];
                                         y[row] = __float2half_rn(g / (1.0f + __expf(-g)) * u);
                                       });
} else {
  float acc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
  if constexpr (S > 0) {
    const mlxcel_qmv::QMat mats[2] = {{wg, sg, bg}, {wu, su, bu}};
    if constexpr (POST) {
      mlxcel_qmv::ring_rows16_post<G, NW, S, 2, EARLY, TILED, OWNC, RT, XSF>(mats, stage, smem, K, row0, tid, warp, lane, acc);
    } else {
      mlxcel_qmv::ring_rows16<G, NW, S, 2, EARLY, TILED, BULK>(mats, stage, smem, K, row0, tid, warp, lane, acc);
    }
  } else {
    __half2* xs = reinterpret_cast<__half2*>(smem);
    if constexpr (NORM) stage(xs, K, tid);
    else mlxcel_qmv::stage_x(x, xs, K, tid, NT);
    __syncthreads();
    mlxcel_qmv::rows16<G, NW, U>(wg, sg, bg, xs, K, row0, warp, lane, acc[0]);
    mlxcel_qmv::rows16<G, NW, U>(wu, su, bu, xs, K, row0, warp, lane, acc[1]);
  }
  const float s = mlxcel_qmv::reduce_rows<NW, 2>(acc, red, warp, lane, tid);
  if (tid < 32) gu[tid] = s;
  __syncthreads();
  if (tid < 16) {
    float g = gu[tid], u = gu[16 + tid];
    if constexpr (LATE) {
      const float n = mlxcel_qmv::late_scale<NW>(nred, eps, K);
      g *= n;
      u *= n;
    }
    y[row0 + tid] = __float2half_rn(g / (1.0f + __expf(-g)) * u);
  }
}
