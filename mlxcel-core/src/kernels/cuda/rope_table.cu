// A decode step's RoPE table: (cos, sin) of theta_i = pos * inv_freq[i] for each of the
// half = dims / 2 frequencies, at cs[2 i] and cs[2 i + 1], pos = len - 1 (the step's new
// position). Computed exactly as the attention kernel's own RoPE computes them (rope_warp_by in
// decode_attention.cuh: the f32 product, then sincosf), once per step for every layer's
// attention launch (RTAB in decode_attention_mma.cu, rope_table.rs).
// Inputs: inv_freq [half] f32, len_marker (len = len_marker_shape[0]). Output: cs [half, 2] f32.
// One thread per frequency; rope_table.rs launches at least half threads.
const int i = blockIdx.x * blockDim.x + threadIdx.x;
const int half = inv_freq_shape[0];
const int len = len_marker_shape[0];
if (i < half) {
  const float pos = static_cast<float>(len - 1);
  float s, c;
  sincosf(pos * inv_freq[i], &s, &c);
  cs[2 * i] = c;
  cs[2 * i + 1] = s;
}
