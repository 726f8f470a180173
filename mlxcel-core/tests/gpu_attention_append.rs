//! The fused attention launch that also writes a decode step's K+V into the cache
//! (`MLXCEL_ATTN_APPEND`, `KvCache::append_attend_rope_flat`; turbo4, turbo4-asym, int8, and
//! the turbo modes' fp16-key / int8-value boundary layers) against the separate in-place pair
//! append (`turbo_encode_kv.cu`, `turbo_encode_kv_asym.cu`, `int8_encode_kv.cu`,
//! `fp16_append_kv.cu`) followed by the fused attention, on fresh
//! random data. On the GPU host the attention output and every stored position (turbo codes
//! and norms, fp16 keys, int8 values and scales) must be bit-identical over three consecutive
//! steps, for Llama-3-8B's heads at head_dim 128 and a GQA-7 head_dim-64 shape with
//! traditional RoPE, at a context of a few positions (the new position's tile is among its
//! warp's first copies: the appending CTA issues none before its barrier), at a tile boundary
//! and at ~3K positions (several splits). On the CPU (CI) the path is never offered and the
//! cache is left as it was. Also: the timeline probe (`MLXCEL_ATTENTION_TIMING_PROBE=timeline`)
//! leaves that launch bit-identical, and so does the step's RoPE table (`MLXCEL_ROPE_TABLE`).

mod common;

use common::{f16_array, randn, rng, split_cache as cache, stored_bits};
use mlxcel_core::kv::split::SplitKvCache;
use mlxcel_core::kv::KvCache;
use mlxcel_core::mlx::kernel::KernelBackend;
use mlxcel_core::rope::RopeSpec;

/// The longest prefill the tests build without CUDA. There no attention launch is offered, and
/// the tests check that, that a flag changes nothing, and that the split path's outputs and
/// stored positions agree: short caches show all of it, while the GPU's ~3K and 131K prefills
/// exist for its multi-tile loops. Building and attending the ~3K caches on the CPU took most
/// of this binary's ~3 minutes in CI before session 74.
const CPU_MAX_PREFILL: i32 = 207;

/// `prefill` on CUDA, at most [`CPU_MAX_PREFILL`] elsewhere.
fn prefill_here(prefill: i32, on_cuda: bool) -> i32 {
    if on_cuda {
        prefill
    } else {
        prefill.min(CPU_MAX_PREFILL)
    }
}

#[test]
fn attention_append_writes_and_attends_as_the_separate_append_or_is_not_offered() {
    let mut r = rng("attention_append_writes_and_attends_as_the_separate_append_or_is_not_offered");
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    common::set_flags(&[("MLXCEL_ATTN_APPEND", true)]);
    let mut steps_checked = 0;
    // (mode, q heads, KV heads, head_dim, RoPE traditional, prefill positions)
    let shapes = [
        (32, 8, 128usize, false, 5i32),
        (32, 8, 128, false, 207),
        (32, 8, 128, false, 3001),
        (28, 4, 64, true, 5),
        (28, 4, 64, true, 3001),
    ];
    let cases = ["turbo4", "turbo4-asym", "int8", "fp16+int8"]
        .into_iter()
        .flat_map(|m| {
            shapes
                .iter()
                .map(move |&(a, b, c, d, e)| (m, a, b, c, d, e))
        });
    for (mode, nq, nkv, d, trad, prefill) in cases {
        if !on_cuda && prefill > CPU_MAX_PREFILL {
            continue;
        }
        let (mut a, mut b) = twin_caches(&mut r, mode, nkv, d, prefill);
        let rope = RopeSpec::new(d as i32, trad, 500000.0, None).unwrap();
        let scale = 1.0 / (d as f32).sqrt();
        for step in 0..3 {
            let (q, k, v) = step_inputs(&mut r, nq, nkv, d);
            let got = a.append_attend_rope_flat(&q, &k, &v, scale, &rope).unwrap();
            if !on_cuda {
                assert!(
                    got.is_none(),
                    "the attention append must not be offered on the CPU"
                );
                assert_eq!(a.len(), prefill as usize, "nothing appended");
                break;
            }
            let got = got.expect("the attention append must be offered on CUDA");
            // The reference: the in-place pair append, then the fused attention.
            b.append_rope(&k, &v, &rope).unwrap();
            let want = b.attend_rope_flat(&q, scale, &rope).unwrap();
            let len = prefill + step + 1;
            assert_eq!((a.len(), b.len()), (len as usize, len as usize));
            let case = format!("{mode} {nq}:{nkv}:{d} prefill {prefill} step {step}");
            assert_eq!(got.shape(), want.shape(), "{case}: output shapes");
            assert_same_bits(&case, "the output", &got, &want);
            assert_same_stored(&case, &a, &b, len);
            steps_checked += 1;
        }
    }
    common::clear_flags(&["MLXCEL_ATTN_APPEND"]);
    if on_cuda {
        eprintln!("attention append: {steps_checked} steps bit-identical to the separate append and attention");
        assert_eq!(steps_checked, 60, "4 modes x 5 shapes x 3 steps");
    }
}

/// Two `mode` caches holding the same random prefill of `prefill` positions on `nkv` KV heads of
/// `d` dims (fp16 keys and values): one for the launch under test, one for its reference.
fn twin_caches(
    r: &mut rand::rngs::StdRng,
    mode: &str,
    nkv: usize,
    d: usize,
    prefill: i32,
) -> (SplitKvCache, SplitKvCache) {
    let pre = [1, nkv as i32, prefill, d as i32];
    let n_pre = nkv * prefill as usize * d;
    let pk = f16_array(&randn(r, n_pre), &pre);
    let pv = f16_array(&randn(r, n_pre), &pre);
    (cache(mode, d, &pk, &pv), cache(mode, d, &pk, &pv))
}

/// A decode step's fresh random q `[1, nq, 1, d]`, k and v `[1, nkv, 1, d]` (fp16).
fn step_inputs(
    r: &mut rand::rngs::StdRng,
    nq: usize,
    nkv: usize,
    d: usize,
) -> (mlxcel_core::Array, mlxcel_core::Array, mlxcel_core::Array) {
    let kv = [1, nkv as i32, 1, d as i32];
    let k = f16_array(&randn(r, nkv * d), &kv);
    let v = f16_array(&randn(r, nkv * d), &kv);
    let q = f16_array(&randn(r, nq * d), &[1, nq as i32, 1, d as i32]);
    (q, k, v)
}

/// Asserts that two launches' outputs hold the same bits (`what` and `case` name them).
fn assert_same_bits(case: &str, what: &str, got: &mlxcel_core::Array, want: &mlxcel_core::Array) {
    let (g, w) = (common::bits(got), common::bits(want));
    let diff = g.iter().zip(&w).filter(|(x, y)| x != y).count();
    assert!(
        diff == 0 && g.len() == w.len(),
        "{case}: {what} differs in {diff} of {} values",
        w.len()
    );
}

/// Asserts that two caches store the same bits at their first `len` positions, codes and
/// per-position factors, on both sides.
fn assert_same_stored(case: &str, a: &SplitKvCache, b: &SplitKvCache, len: i32) {
    for (name, sa, sb) in [("K", &a.k, &b.k), ("V", &a.v, &b.v)] {
        let (ca, cb) = (stored_bits(sa.as_ref(), len), stored_bits(sb.as_ref(), len));
        assert!(ca == cb, "{case}: {name}'s stored positions differ");
    }
}

/// `MLXCEL_ATTENTION_TIMING_PROBE=timeline` (per-warp stamps printed as `MLXCEL_TL` lines) must
/// leave the attention launch's work alone: with it, the attention append's output and stored
/// positions equal the same launch's without it, bit for bit, for turbo4 (12-warp CTAs around
/// the pair table), turbo4-asym (12-warp CTAs without it) and the boundary layers' fp16-key /
/// int8-value sides, at a context length that prints (a multiple of 16) and one that does not.
/// At ~3K positions the launches fold their splits, so the fold's own stamps and its
/// `MLXCEL_TLF` line (session 67) run too. On the CPU (CI) the launch is never offered, with or
/// without the probe.
#[test]
fn timeline_probe_keeps_the_attention_launch_bit_identical() {
    let mut r = rng("timeline_probe_keeps_the_attention_launch_bit_identical");
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    const PROBE: &str = "MLXCEL_ATTENTION_TIMING_PROBE";
    let (nq, nkv, d) = (32usize, 8usize, 128usize);
    let prefill = prefill_here(3007, on_cuda);
    let rope = RopeSpec::new(d as i32, false, 500000.0, None).unwrap();
    let scale = 1.0 / (d as f32).sqrt();
    let mut steps_checked = 0;
    for mode in ["turbo4", "turbo4-asym", "fp16+int8"] {
        let (mut a, mut b) = twin_caches(&mut r, mode, nkv, d, prefill);
        // Lengths 3008 (printed) and 3009 (not) on CUDA.
        for step in 0..2 {
            let (q, k, v) = step_inputs(&mut r, nq, nkv, d);
            std::env::set_var(PROBE, "timeline");
            mlxcel_core::flags::reload();
            let got = a.append_attend_rope_flat(&q, &k, &v, scale, &rope);
            common::clear_flags(&[PROBE]);
            let want = b.append_attend_rope_flat(&q, &k, &v, scale, &rope).unwrap();
            let got = got.unwrap();
            if !on_cuda {
                assert!(got.is_none() && want.is_none(), "not offered on the CPU");
                break;
            }
            let (got, want) = (got.unwrap(), want.unwrap());
            let len = prefill + step + 1;
            let case = format!("{mode} length {len} with the timeline");
            assert_same_bits(&case, "the output", &got, &want);
            assert_same_stored(&case, &a, &b, len);
            steps_checked += 1;
        }
    }
    if on_cuda {
        eprintln!("timeline probe: {steps_checked} attention steps bit-identical");
        assert_eq!(steps_checked, 6, "3 modes x 2 lengths");
    }
}

/// What a flag must keep of the attention launches ([`flag_checks_the_attention_launches`]).
#[derive(Clone, Copy, PartialEq)]
enum Keeps {
    /// The same bits as with the flag off.
    Bits,
    /// Rounding may differ: within relative RMS 1e-3 of the flag off, and the attention
    /// append's output the same bits as the launch without the append (both kernels split
    /// and loop alike).
    Parity,
}

/// A test case's (query heads, KV heads, head_dim, traditional RoPE, prefill positions).
type Shape = (usize, usize, usize, bool, i32);

/// Runs three decode steps per mode and shape on twin caches, `flag` on for one and off for the
/// other, and asserts what `keeps` says of the attention append's output and of the attention
/// launch's without the append over the same contents, and that the stored K/V positions hold
/// the same bits. Every format the append writes (turbo4, turbo4-asym, int8, fp16+int8).
/// Shapes are (q heads, KV heads, head_dim, RoPE traditional, prefill positions). On the CPU
/// neither launch is offered and the flag changes nothing: the plain attention must agree too.
/// Returns the steps checked; leaves the flag cleared.
fn flag_checks_the_attention_launches(
    test: &str,
    flag: &str,
    shapes: &[Shape],
    keeps: Keeps,
) -> usize {
    // rel_rms takes 4-d arrays; the flat outputs are [B, 1, Hq * D].
    let rel_rms = |a: &mlxcel_core::Array, b: &mlxcel_core::Array| {
        let four = |x: &mlxcel_core::Array| x.reshape(&[1, 1, 1, -1]).unwrap();
        common::rel_rms(&four(a), &four(b))
    };
    let mut r = rng(test);
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    let mut steps_checked = 0;
    for mode in ["turbo4", "turbo4-asym", "int8", "fp16+int8"] {
        for &(nq, nkv, d, trad, prefill) in shapes {
            let prefill = prefill_here(prefill, on_cuda);
            let (mut a, mut b) = twin_caches(&mut r, mode, nkv, d, prefill);
            let rope = RopeSpec::new(d as i32, trad, 500000.0, None).unwrap();
            let scale = 1.0 / (d as f32).sqrt();
            for step in 0..3 {
                let len = prefill + step + 1;
                let case = format!("{mode} {nq}:{nkv}:{d} trad {trad} length {len} with {flag}");
                let (q, k, v) = step_inputs(&mut r, nq, nkv, d);
                common::set_flags(&[(flag, true)]);
                let got = a.append_attend_rope_flat(&q, &k, &v, scale, &rope).unwrap();
                common::set_flags(&[(flag, false)]);
                let want = b.append_attend_rope_flat(&q, &k, &v, scale, &rope).unwrap();
                if !on_cuda {
                    assert!(got.is_none() && want.is_none(), "not offered on the CPU");
                    a.append_rope(&k, &v, &rope).unwrap();
                    b.append_rope(&k, &v, &rope).unwrap();
                }
                // The attention launch without the append, over the same cache contents.
                common::set_flags(&[(flag, true)]);
                let got_plain = a.attend_rope_flat(&q, scale, &rope).unwrap();
                common::set_flags(&[(flag, false)]);
                let want_plain = b.attend_rope_flat(&q, scale, &rope).unwrap();
                let mut pairs = vec![("the attention output", got_plain.clone(), want_plain)];
                if let (Some(g), Some(w)) = (got, want) {
                    if keeps == Keeps::Parity {
                        assert_same_bits(
                            &case,
                            "the attention append's output (against the launch without it)",
                            &g,
                            &got_plain,
                        );
                    }
                    pairs.push(("the attention append's output", g, w));
                }
                for (what, g, w) in pairs {
                    match keeps {
                        Keeps::Bits => assert_same_bits(&case, what, &g, &w),
                        Keeps::Parity => {
                            let e = rel_rms(&g, &w);
                            assert!(e < 1e-3, "{case}: {what} {e} from the flag off");
                        }
                    }
                }
                assert_same_stored(&case, &a, &b, len);
                steps_checked += 1;
            }
        }
    }
    common::clear_flags(&[flag]);
    steps_checked
}

/// [`flag_checks_the_attention_launches`] with [`Keeps::Bits`].
fn flag_keeps_the_attention_launches_bit_identical(
    test: &str,
    flag: &str,
    shapes: &[Shape],
) -> usize {
    flag_checks_the_attention_launches(test, flag, shapes, Keeps::Bits)
}

/// `MLXCEL_ROPE_TABLE` (RoPE's cos/sin at the step's position read from one table per step
/// instead of computed in each launch) must leave the tensor-core attention bit-identical: the
/// attention append's output and stored K/V positions, and the attention launch without the
/// append, each equal to the same launch's with the flag off. Every format the append writes,
/// both RoPE layouts (halves at head_dim 128, adjacent pairs at 64), three steps from a ~3K
/// prefill, and on the CUDA host three steps from position 131000, where `sincosf` takes its
/// slow exact reduction for the highest frequencies (the reason for the table). On the CPU (CI)
/// neither launch is offered and the flag changes nothing: the plain attention must agree too.
#[test]
fn rope_table_keeps_the_attention_launches_bit_identical() {
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    let mut shapes = vec![(32, 8, 128, false, 3001), (28, 4, 64, true, 3001)];
    if on_cuda {
        let long = 131_000;
        assert!(
            long as f32 * 500000f32.powf(-2.0 / 128.0) > 105615.0,
            "past the fast reduction"
        );
        shapes.extend([(8, 2, 128, false, long), (14, 2, 64, true, long)]);
    }
    let steps_checked = flag_keeps_the_attention_launches_bit_identical(
        "rope_table_keeps_the_attention_launches_bit_identical",
        "MLXCEL_ROPE_TABLE",
        &shapes,
    );
    eprintln!("rope table: {steps_checked} steps bit-identical with and without it");
    let want = if on_cuda { 48 } else { 24 };
    assert_eq!(steps_checked, want, "4 modes x shapes x 3 steps");
}

/// `MLXCEL_MMA_QFIRST2` (the paired loop's first two ring tiles issued before the prologue's
/// barrier instead of one) must leave the attention append and the attention launch
/// bit-identical, in particular where the step's new position lies among a warp's first two
/// tiles, which the append's CTA must then hold back until it has written the position
/// (`app_hold`): short prefills (10, 200 and 400 positions: the new position within the first
/// few tiles of its split in turbo4's 12-warp CTAs of 16-token tiles) and a ~3K one.
#[test]
fn first_two_ring_tiles_early_keep_the_attention_launches_bit_identical() {
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    let shapes = [
        (32, 8, 128, false, 10),
        (32, 8, 128, false, 200),
        (28, 4, 64, true, 400),
        (32, 8, 128, false, 3001),
    ];
    let steps_checked = flag_keeps_the_attention_launches_bit_identical(
        "first_two_ring_tiles_early_keep_the_attention_launches_bit_identical",
        "MLXCEL_MMA_QFIRST2",
        &shapes,
    );
    eprintln!(
        "first two ring tiles early: {steps_checked} steps bit-identical with and without it"
    );
    assert_eq!(
        steps_checked, 48,
        "4 modes x 4 shapes x 3 steps (on CUDA: {on_cuda})"
    );
}

/// `MLXCEL_MMA_FCOPY1`, `MLXCEL_MMA_VZERO`, `MLXCEL_MMA_COMBINE_W1`, `MLXCEL_MMA_DEEP_PLAIN`,
/// `MLXCEL_MMA_VSEL` and `MLXCEL_MERGE_SIGNS_FIRST` (the ring refill's factor rows in one copy,
/// masked V factors zeroed instead of selects, the combine's weights once per warp and head, a
/// deeper ring for the kernels without the pair table, the V nibble interleave by bit selects,
/// the fold's merge loading V's rotation signs with its partials) must each leave the
/// attention append and the attention launch bit-identical:
/// a short prefill at head_dim 128 (the new position in its warp's first tile, masked tokens
/// after it) and a ~3K one at head_dim 64.
/// On the GPU also [`LONG_PREFILL`], where warps refill their rings and run pairs.
/// `MLXCEL_PARITY_FLAGS=A,B` limits the flags checked.
#[test]
fn refill_softmax_and_combine_trims_keep_the_attention_launches_bit_identical() {
    let shapes = with_long_prefill_on_cuda(&LOOP_TRIM_PREFILLS);
    for flag in [
        "MLXCEL_MMA_FCOPY1",
        "MLXCEL_MMA_VZERO",
        "MLXCEL_MMA_COMBINE_W1",
        "MLXCEL_MMA_DEEP_PLAIN",
        "MLXCEL_MMA_VSEL",
        "MLXCEL_MERGE_SIGNS_FIRST",
    ] {
        if !common::env_list_allows("MLXCEL_PARITY_FLAGS", flag) {
            continue;
        }
        let steps_checked = flag_keeps_the_attention_launches_bit_identical(
            "refill_softmax_and_combine_trims_keep_the_attention_launches_bit_identical",
            flag,
            &shapes,
        );
        eprintln!("{flag}: {steps_checked} steps bit-identical with and without it");
        assert_eq!(
            steps_checked,
            4 * shapes.len() * 3,
            "4 modes x shapes x 3 steps"
        );
    }
}

/// A ~40K prefill at head_dim 128 for the tests of changes inside the attention loop: at the
/// tests' ~3K prefills the default splits give each warp about one tile (16 splits of 12 warps),
/// so no warp refills its ring, runs a second pair or updates its softmax twice; at ~40K each
/// warp runs ~13 tiles. GPU only: on the CPU the same cases would run the split path over 40K
/// positions in every mode without reaching a kernel.
const LONG_PREFILL: Shape = (32, 8, 128, false, 40_001);

/// The loop trims' tests' shapes on every backend: a short prefill at head_dim 128 (the new
/// position in its warp's first tile, masked tokens after it) and a ~3K one at head_dim 64.
const LOOP_TRIM_PREFILLS: [Shape; 2] = [(32, 8, 128, false, 10), (28, 4, 64, true, 3001)];

/// `shapes`, and [`LONG_PREFILL`] where the kernels run (CUDA).
fn with_long_prefill_on_cuda(shapes: &[Shape]) -> Vec<Shape> {
    let mut all = shapes.to_vec();
    if KernelBackend::current() == Some(KernelBackend::Cuda) {
        all.push(LONG_PREFILL);
    }
    all
}

/// `MLXCEL_MMA_LAZY_RESCALE` and `MLXCEL_MMA_MASK_LAST` (the softmax's reference max moved only
/// past a margin; the pairs without the masks, the last tiles one at a time) change rounding,
/// not what the launches compute: [`Keeps::Parity`] in every format the append writes (the
/// flags reach turbo4's paired loop; the others must be unchanged), a short prefill at
/// head_dim 128 and a ~3K one at head_dim 64, three steps each. On the GPU also
/// [`LONG_PREFILL`]: only there does a warp update its softmax twice (what the lazy rescale
/// changes) or run a second pair (what the unmasked pairs change).
#[test]
fn lazy_rescale_and_last_tile_masks_keep_the_attention_launches_within_parity() {
    let shapes = with_long_prefill_on_cuda(&LOOP_TRIM_PREFILLS);
    for flag in ["MLXCEL_MMA_LAZY_RESCALE", "MLXCEL_MMA_MASK_LAST"] {
        let steps_checked = flag_checks_the_attention_launches(
            "lazy_rescale_and_last_tile_masks_keep_the_attention_launches_within_parity",
            flag,
            &shapes,
            Keeps::Parity,
        );
        eprintln!("{flag}: {steps_checked} steps within parity, append and launch agreeing");
        assert_eq!(
            steps_checked,
            4 * shapes.len() * 3,
            "4 modes x shapes x 3 steps"
        );
    }
}

/// One decode step as the model takes it: the attention append where the cache offers it,
/// else the append, then the attention.
fn decode_step(
    c: &mut SplitKvCache,
    (q, k, v): &(mlxcel_core::Array, mlxcel_core::Array, mlxcel_core::Array),
    scale: f32,
    rope: &RopeSpec,
) -> mlxcel_core::Array {
    if let Some(o) = c.append_attend_rope_flat(q, k, v, scale, rope).unwrap() {
        return o;
    }
    c.append_rope(k, v, rope).unwrap();
    c.attend_rope_flat(q, scale, rope).unwrap()
}

/// A conversation's next turn cuts the cache back (`KvCache::truncate`, `mlxcel chat`) after
/// decode steps that wrote into it (in place on CUDA), then decodes again: every step after
/// the cut must attend and store as a cache that never held the dropped positions, bit for
/// bit. On CUDA the steps take the fused launches and in-place writes, on the CPU (CI) the
/// split paths.
#[test]
fn decode_steps_after_a_truncation_equal_a_cache_that_never_held_the_dropped_positions() {
    let mut r =
        rng("decode_steps_after_a_truncation_equal_a_cache_that_never_held_the_dropped_positions");
    let mut steps_checked = 0;
    for (nq, nkv, d, trad, prefill) in [
        (32usize, 8usize, 128usize, false, 207i32),
        (28, 4, 64, true, 1001),
    ] {
        let rope = RopeSpec::new(d as i32, trad, 500000.0, None).unwrap();
        let scale = 1.0 / (d as f32).sqrt();
        for mode in [
            "turbo4",
            "turbo4-asym",
            "int8",
            "fp16+int8",
            "fp16",
            "turbo3",
            "turbo2",
        ] {
            let (mut a, mut b) = twin_caches(&mut r, mode, nkv, d, prefill);
            let kept = step_inputs(&mut r, nq, nkv, d);
            decode_step(&mut a, &kept, scale, &rope);
            decode_step(&mut b, &kept, scale, &rope);
            // Two steps that the cut drops again.
            for _ in 0..2 {
                let dropped = step_inputs(&mut r, nq, nkv, d);
                decode_step(&mut a, &dropped, scale, &rope);
            }
            a.truncate(prefill as usize + 1).unwrap();
            assert_eq!(a.len(), b.len());
            for step in 0..2 {
                let next = step_inputs(&mut r, nq, nkv, d);
                let got = decode_step(&mut a, &next, scale, &rope);
                let want = decode_step(&mut b, &next, scale, &rope);
                let len = prefill + 2 + step;
                assert_eq!((a.len(), b.len()), (len as usize, len as usize));
                let case = format!("{mode} {nq}:{nkv}:{d} after the cut, step {step}");
                assert_same_bits(&case, "the output", &got, &want);
                assert_same_stored(&case, &a, &b, len);
                steps_checked += 1;
            }
        }
    }
    eprintln!(
        "truncation: {steps_checked} steps after the cut bit-identical to a cache without the dropped positions ({:?})",
        KernelBackend::current()
    );
    assert_eq!(steps_checked, 28, "2 shapes x 7 modes x 2 steps");
}
