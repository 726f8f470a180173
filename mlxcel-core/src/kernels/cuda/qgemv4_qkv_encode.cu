// The K+V cache append of a decode step (turbo4, turbo4-asym, int8), folded into the stacked
// qkv GEMV
// (MLXCEL_QKV_ENCODE; appended after qgemv4_store_qkv.cu + qgemv4.cu). Why: the separate
// in-place append launch (turbo_encode_kv.cu) took 7.3 us per layer in situ (session 11's
// ncu) for 16 warps of work, and one MLX node per layer; here the encode is the tail of the
// CTAs that produce the last rows of each K and V head.
// Each CTA whose 16 rows are K or V (row0 >= NQ; uniform per CTA, parts are multiples of
// 16) takes a ticket after its stores; the last of a head's D / 16 CTAs copies the head from
// yk / yv (the other CTAs' stores, read from L2) into shared memory and encodes it on warp 0
// exactly as turbo_encode_kv.cu does (mlxcel_enc::turbo_row: K rotated by RoPE at pos
// first when ROPE), into the cache buffers at head * cap + pos (B = 1), in place. KVFMT picks
// the cache format: 0 turbo4 K and V; 1 turbo4-asym, the keys stored as fp16 as
// turbo_encode_kv_asym.cu does (mlxcel_enc::fp16_row; k_packed is the fp16 key buffer
// [1, H, cap, D]); 2 int8 K and V as int8_encode_kv.cu does (mlxcel_enc::int8_row; k_packed,
// v_packed int8 [1, H, cap, D], k_norms, v_norms the fp16 scales). Codec inputs a format does
// not use are placeholders.
// Extra inputs: k_mids, k_lut, k_signs, v_mids, v_lut, v_signs (the codecs); k_packed,
// k_norms, v_packed, v_norms (the cache buffers, written through the const pointers);
// pos_marker (pos = pos_marker_shape[0] - 1); k_after, v_after (the sides' previous write
// tokens: inputs only to order this launch after them); inv_freq; tickets (persistent
// arrival counters, zero between calls) and slot_marker (this call's slot: slot_marker_shape[0]
// - 1, rotated by mlxcel so calls that may run concurrently never share counters). Extra
// output: done [4] int32, the token of both sides' write (kv/pending.rs).
// Template constants: D (64 or 128), ROPE, TRAD, KVFMT, TICKETS (counters per slot), ETAIL
// (MLXCEL_QKV_ENC_TAIL: the tables from shared memory, copied at the start by
// qgemv4_qkv_encode_pre.cu, and the ticket as one acquire-release atomic without fences),
// plus the qkv parts' NQ, NK, and CLUSTER (MLXCEL_QKV_CLUSTER: the launch in clusters of D / 16
// CTAs, one per K or V head, below).
static_assert(!MB, "the folded append needs one CTA per 16 rows");
static_assert(NK % D == 0 && D % 16 == 0, "K and V parts are whole heads of 16-row blocks");
static_assert(2 * (NK / D) <= TICKETS, "one ticket per K and V head");
if (blockIdx.x == 0 && tid == 0) done[0] = 1;
if (row0 >= NQ) {
  const bool is_v = row0 >= NQ + NK;
  const int head = static_cast<int>((row0 - (is_v ? NQ + NK : NQ)) / D);
  __shared__ int enc_last;
  __shared__ __align__(16) __half enc_x[D];
  unsigned int* ticket = const_cast<unsigned int*>(tickets) + static_cast<long long>(slot_marker_shape[0] - 1) * TICKETS +
                         (is_v ? NK / D : 0) + head;
  unsigned int rank = 0;  // CLUSTER: this CTA's rank in its head's cluster
  if constexpr (CLUSTER) {
    // CLUSTER: the head's D / 16 CTAs form one thread-block cluster (quantized_gemv.rs adds
    // __cluster_dims__ to the kernel's signature; NQ and NK are whole heads, so clusters never
    // mix parts). Each CTA's 16 threads that stored its rows send the same fp16 values, two per
    // st.async, into rank 0's enc_x; each completes its bytes on rank 0's enc_bar
    // (qgemv4_qkv_encode_pre.cu), and rank 0 encodes once all D * 2 bytes have landed. Why: the
    // ticket is a device-scope atomic round trip, and the last CTA then reads the head back
    // from L2 before its warp can start; a cluster barrier with release semantics compiles to
    // MEMBAR.ALL.GPU (a wait for the CTA's global stores) before its arrive, while st.async
    // with an mbarrier needs no fence. The same 128 (64) values reach the same encode:
    // identical cache bytes.
    unsigned int ranks;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(ranks));
    if (ranks != static_cast<unsigned int>(D / 16)) __trap();  // launched without the head's clusters
    // Completes the phase every CTA of the cluster arrived at on entry: rank 0's enc_bar is set up.
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
    if (warp == 0) {
      const unsigned int mine = __half_as_ushort(put_last);
      const unsigned int next = __shfl_down_sync(0xffffffffu, mine, 1);
      if (tid < 16 && (tid & 1) == 0) {
        unsigned int dst, bar;
        asm volatile("mapa.shared::cluster.u32 %0, %1, 0;"
                     : "=r"(dst)
                     : "r"(static_cast<unsigned int>(__cvta_generic_to_shared(enc_x + rank * 16 + tid))));
        asm volatile("mapa.shared::cluster.u32 %0, %1, 0;"
                     : "=r"(bar)
                     : "r"(static_cast<unsigned int>(__cvta_generic_to_shared(&enc_bar))));
        asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(dst),
                     "r"(mine | (next << 16)), "r"(bar)
                     : "memory");
      }
    }
    if (rank == 0) {
      // The tables' copies (ETAIL) by every thread of this CTA, published by the barrier.
      if constexpr (ETAIL) asm volatile("cp.async.wait_all;" ::: "memory");
      __syncthreads();
      if (warp == 0) {
        const unsigned int bar = static_cast<unsigned int>(__cvta_generic_to_shared(&enc_bar));
        unsigned int landed = 0;
        while (!landed) {
          asm volatile(
              "{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
              : "=r"(landed)
              : "r"(bar)
              : "memory");
        }
      }
    }
  } else if constexpr (ETAIL) {
    // The tables' copies (qgemv4_qkv_encode_pre.cu) land before the barrier publishes them.
    // No fences: the barrier orders this CTA's row stores (tid < 16) before tid 0's ticket,
    // whose release makes them visible with it; the last CTA's acquire on the same ticket,
    // then its barrier, order warp 0's reads of the head after every CTA's stores.
    asm volatile("cp.async.wait_all;" ::: "memory");
  } else {
    __threadfence();  // this CTA's rows (stored by tid < 16) are visible device-wide before its ticket
  }
  if constexpr (!CLUSTER) __syncthreads();
  if (!CLUSTER && tid == 0) {
    unsigned int prev;
    if constexpr (ETAIL) {
      asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(prev) : "l"(ticket) : "memory");
    } else {
      prev = atomicAdd(ticket, 1u);
    }
    enc_last = prev + 1 == static_cast<unsigned int>(D / 16);
    if (enc_last) atomicExch(ticket, 0u);  // every CTA of the head has arrived: ready for the next call
  }
  if constexpr (!CLUSTER) __syncthreads();
  if ((CLUSTER ? rank == 0 : enc_last) && warp == 0) {
    if constexpr (!CLUSTER) {
      if constexpr (!ETAIL) __threadfence();
      const unsigned short* src = reinterpret_cast<const unsigned short*>(is_v ? yv : yk) + static_cast<long long>(head) * D;
      for (int i = lane; i < D; i += 32) enc_x[i] = __ushort_as_half(__ldcg(src + i));
      __syncwarp();
    }
    const long long pos = pos_marker_shape[0] - 1;
    // The side's tables come from shared memory with ETAIL (enc_tab, copied by
    // qgemv4_qkv_encode_pre.cu at its ENC_* offsets), else from the inputs.
    const float* const t_freq = ETAIL ? enc_tab + ENC_FREQ : inv_freq;
    const long long dst = static_cast<long long>(head) * k_packed_shape[2] + pos;
    // The buffers' element types depend on KVFMT: reach them through void pointers.
    void* const k_data = const_cast<void*>(static_cast<const void*>(k_packed));
    void* const k_aux = const_cast<void*>(static_cast<const void*>(k_norms));
    void* const v_data = const_cast<void*>(static_cast<const void*>(v_packed));
    __half* const v_aux = static_cast<__half*>(const_cast<void*>(static_cast<const void*>(v_norms)));
    if constexpr (KVFMT == 2) {  // int8 keys and values (int8_encode_kv.cu)
      if (is_v) {
        mlxcel_enc::int8_row<D, false, false>(enc_x, lane, 0.0f, inv_freq, static_cast<int8_t*>(v_data), v_aux, dst);
      } else {
        mlxcel_enc::int8_row<D, ROPE, TRAD>(enc_x, lane, static_cast<float>(pos), t_freq, static_cast<int8_t*>(k_data),
                                            static_cast<__half*>(k_aux), dst);
      }
    } else if (is_v) {  // turbo4 values (turbo4 and turbo4-asym)
      mlxcel_enc::turbo_row<4, D, false, false>(enc_x, lane, ETAIL ? enc_tab + ENC_MIDS : v_mids,
                                               ETAIL ? enc_tab + ENC_LUT : v_lut, ETAIL ? enc_tab : v_signs, 0.0f, inv_freq,
                                               static_cast<unsigned char*>(v_data), v_aux, dst);
    } else if constexpr (KVFMT == 1) {  // turbo4-asym: fp16 keys (turbo_encode_kv_asym.cu)
      mlxcel_enc::fp16_row<D, ROPE, TRAD>(enc_x, lane, static_cast<float>(pos), t_freq, static_cast<__half*>(k_data), dst);
    } else {  // turbo4 keys (turbo_encode_kv.cu)
      mlxcel_enc::turbo_row<4, D, ROPE, TRAD>(enc_x, lane, ETAIL ? enc_tab + ENC_MIDS : k_mids,
                                              ETAIL ? enc_tab + ENC_LUT : k_lut, ETAIL ? enc_tab : k_signs,
                                              static_cast<float>(pos), t_freq,
                                              static_cast<unsigned char*>(k_data), static_cast<__half*>(k_aux), dst);
    }
  }
}
