// RoPE of a decode step's queries, in a launch that also takes the last in-place cache
// write's tokens as inputs (kv/pending.rs). Why: MLX's CUDA graphs order a node after the
// nodes that produced its inputs' buffers; a kernel writing the cache in place produces only
// its token, so MLX's SDPA, reading the cache, would not wait for the write. Its queries come
// from this launch, which reads the token: SDPA then runs after the write, with no node
// added (this replaces MLX's rope on q) and no host wait.
// One warp per query vector of q [B, H, L, D] (lane l holds [l * D/32, (l + 1) * D/32)), at
// positions len - L .. len - 1, len = pos_marker_shape[0]; inv_freq: D/2 f32. Output: out,
// q's shape and dtype. Template constants: D (a multiple of 32, at most 256), TRAD.
constexpr int QE = D / 32;
const long long warp = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
const int lane = threadIdx.x & 31;
long long rows = 1;
for (int i = 0; i + 1 < q_ndim; ++i) rows *= q_shape[i];
if (warp >= rows) return;
const long long L = q_shape[q_ndim - 2];
const float pos = static_cast<float>(pos_marker_shape[0] - L + warp % L);
float v[QE];
mlxcel_enc::load_row<QE, true, TRAD>(q + warp * D, lane, pos, inv_freq, v);
#pragma unroll
for (int e = 0; e < QE; ++e) mlxcel_enc::store_f32(out + warp * D + lane * QE + e, v[e]);
