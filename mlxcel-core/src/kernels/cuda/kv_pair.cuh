// Shared by the cache writers: loading one head vector into a warp (all of them), and the
// warp layout of the K+V append launches (turbo_encode_kv.cu, int8_encode_kv.cu,
// turbo_encode_kv_asym.cu): warps [0, rows) write keys, warps [rows, 2 rows) values, rows =
// B * H * L of x [B, H, L, D]. Appended to decode_attention.cuh (rope_warp).
#pragma once

namespace mlxcel_enc {

// Loads x_row[0..D) into the warp as f32, lane l holding [l * QE, (l + 1) * QE) (QE = D/32);
// with ROPE, x_row is a key before RoPE and is rotated at position pos (inv_freq: D/2 f32).
// load_vals and rope_vals are its two halves: the encoders' *_vals entry points take values
// loaded earlier (the attention append loads them at its kernel's entry, MLXCEL_ATTN_APPEND).
template <int QE, typename T>
__device__ __forceinline__ void load_vals(const T* x_row, int lane, float (&v)[QE]) {
#pragma unroll
  for (int e = 0; e < QE; ++e) v[e] = static_cast<float>(x_row[lane * QE + e]);
}
template <int QE, bool ROPE, bool TRAD>
__device__ __forceinline__ void rope_vals(float (&v)[QE], int lane, float pos, const float* inv_freq) {
  if constexpr (ROPE) mlxcel_fd::rope_warp<QE, TRAD>(v, lane, pos, inv_freq);
}
template <int QE, bool ROPE, bool TRAD, typename T>
__device__ __forceinline__ void load_row(const T* x_row, int lane, float pos, const float* inv_freq, float (&v)[QE]) {
  load_vals<QE>(x_row, lane, v);
  rope_vals<QE, ROPE, TRAD>(v, lane, pos, inv_freq);
}

struct PairRow {
  long long row;  // the vector of x this warp writes: [0, rows)
  long long pos;  // its cache position: first_pos + row % L
  bool is_v;      // a value warp (warp-uniform)
  bool active;    // false for the warps past 2 rows (they return, whole warps together)
};

// This warp's row, for x of shape x_shape (x_ndim dims, L = x_shape[x_ndim - 2]) written
// from cache position first_pos on.
template <typename S>
__device__ __forceinline__ PairRow pair_row(const S& x_shape, int x_ndim, long long first_pos) {
  long long rows = 1;
  for (int i = 0; i + 1 < x_ndim; ++i) rows *= x_shape[i];
  const long long warp_id = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  PairRow p;
  p.active = warp_id < 2 * rows;
  p.is_v = warp_id >= rows;
  p.row = p.is_v ? warp_id - rows : warp_id;
  p.pos = first_pos + p.row % x_shape[x_ndim - 2];
  return p;
}

}  // namespace mlxcel_enc
