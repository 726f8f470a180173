// The folded K+V append's tables, copied into shared memory at the start of the launch
// (MLXCEL_QKV_ENC_TAIL; ETAIL; placed before qgemv4.cu in the qkv + append kernel; the tail
// that reads them is qgemv4_qkv_encode.cu). Why: the encode is the serial tail of a head's
// last CTA, after its GEMV, and each of its global reads is a round trip there: the rotation
// signs and RoPE's inverse frequencies, the centroid midpoints, and the centroid of each code
// (a load that depends on the code). In situ at 32K (session 24) the launch took 12.64 us
// against 8.91 for the same GEMV without the append. Here every K or V CTA (any of them may be
// the last of its head) copies its side's tables with cp.async before the ring's first weight
// copies: no register waits for them, and the ring's first cp.async.wait_group covers their
// group (the oldest), so they cost the GEMV nothing but the copies themselves. enc_tab holds
// the signs [2 D], the midpoints [15] at 2 D, the centroids [16] at 2 D + 16 and the inverse
// frequencies [D / 2] at 2 D + 32; a side's codec only where its format has one (turbo4 keys
// with KVFMT 0, turbo4 values with KVFMT 0 and 1), the frequencies for K with ROPE.
__shared__ __align__(16) float enc_tab[ETAIL ? 2 * D + 32 + D / 2 : 1];
if constexpr (ETAIL) {
  const long long first_row = static_cast<long long>(blockIdx.x) * 16;
  if (first_row >= NQ) {
    const bool v_side = first_row >= NQ + NK;
    const bool codec = v_side ? KVFMT != 2 : KVFMT == 0;
    const float* signs = v_side ? v_signs : k_signs;
    const float* mids = v_side ? v_mids : k_mids;
    const float* lut = v_side ? v_lut : k_lut;
    auto copy4 = [](float* dst, const float* src) {
      const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
      asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(s), "l"(src) : "memory");
    };
    for (int i = threadIdx.x; i < 2 * D + 32 + D / 2; i += blockDim.x) {
      if (i < 2 * D) {
        if (codec) copy4(enc_tab + i, signs + i);
      } else if (i < 2 * D + 15) {
        if (codec) copy4(enc_tab + i, mids + (i - 2 * D));
      } else if (i >= 2 * D + 16 && i < 2 * D + 32) {
        if (codec) copy4(enc_tab + i, lut + (i - 2 * D - 16));
      } else if (i >= 2 * D + 32) {
        if (ROPE && !v_side) copy4(enc_tab + i, inv_freq + (i - 2 * D - 32));
      }
    }
    mlxcel_qmv::ring_commit();
  }
}
