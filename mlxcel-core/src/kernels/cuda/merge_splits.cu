// Combines the per-split partial outputs of decode_attention.cu: out = sum_s e^(m_s - M) o_s
// / sum_s e^(m_s - M) l_s, then (ROT_V) applies the inverse rotation of V's stored basis,
// x = s1 * H (s2 * y) / sqrt(G), per group of GROUP_V. One CTA of D threads per (b, head).
// Inputs: o_part [B, Hq, S, D] f32, ml [B, Hq, S, 2] f32, rot_v [2, GROUP_V] f32 (s1; s2).
// Output: out [B, Hq, 1, D] in T_out.
__shared__ float x[D];
const int d = threadIdx.x;
const int bh = blockIdx.x;
const int S = o_part_shape[2];
float M = mlxcel_fd::neg_inf();
for (int s = 0; s < S; ++s) M = fmaxf(M, ml[(static_cast<long long>(bh) * S + s) * 2]);
float num = 0.0f, den = 0.0f;
for (int s = 0; s < S; ++s) {
  const long long o = static_cast<long long>(bh) * S + s;
  const float m = ml[o * 2];
  if (m == mlxcel_fd::neg_inf()) continue;
  const float w = __expf(m - M);
  num = fmaf(w, o_part[o * D + d], num);
  den = fmaf(w, ml[o * 2 + 1], den);
}
float y = num / den;
if constexpr (ROT_V) {
  const int gi = d % GROUP_V;
  x[d] = y * rot_v[GROUP_V + gi];
  __syncthreads();
  for (int grp = 0; grp < D / GROUP_V; ++grp) mlxcel_fd::wht_shared(&x[grp * GROUP_V], GROUP_V, d, D);
  y = x[d] * rot_v[gi] * rsqrtf(static_cast<float>(GROUP_V));
}
out[static_cast<long long>(bh) * D + d] = static_cast<T_out>(y);
