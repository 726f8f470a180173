//! The fused CUDA decode-attention path: one launch reads the packed cache directly
//! (`cuda/decode_attention.cu`, split over the sequence, all GQA heads of a KV head per
//! CTA, q rotated in the prologue for turbo K), a second merges the splits and applies the
//! inverse V rotation (`cuda/merge_splits.cu`). The split paths in
//! [`crate::attention`] are its exact references.

use crate::kv::side::RawSide;
use crate::mlx::kernel::{cached, KernelBackend, KernelSource, Launch, TemplateArg};
use crate::mlx::{Array, Dtype};
use crate::{Error, Result};

const HEADER: &str = include_str!("cuda/decode_attention.cuh");
const BODY: &str = include_str!("cuda/decode_attention.cu");
const MERGE: &str = include_str!("cuda/merge_splits.cu");

/// Threads per CTA of the main kernel (fixed in the CUDA source).
const THREADS: i32 = 128;
/// Fewest tokens per split.
const TILE: usize = 64;
/// CTAs the split count aims for: eight per SM of an H100/H200 (132 SMs). Each warp
/// streams tokens with one load in flight, so latency is hidden by many resident warps
/// (v1 aimed at two CTAs per SM and was latency-bound: benchmarks/kernel-notes/NOTES.md).
const TARGET_CTAS: usize = 1056;

fn source() -> KernelSource {
    let mut s = KernelSource::new(
        "mlxcel_decode_attention",
        &[
            "q", "k_data", "k_aux", "v_data", "v_aux", "lut_k", "lut_v", "rot_k", "len_arr",
        ],
        &["o_part", "ml"],
        BODY,
    );
    s.header = HEADER.to_string();
    s
}

fn merge_source() -> KernelSource {
    let mut s = KernelSource::new(
        "mlxcel_merge_splits",
        &["o_part", "ml", "rot_v"],
        &["out"],
        MERGE,
    );
    s.header = HEADER.to_string();
    s
}

/// Whether the fused kernel handles this combination.
pub fn supported(k: &RawSide<'_>, v: &RawSide<'_>, head_dim: usize, gqa: usize) -> bool {
    let fmt_ok = |f: i32| (0..=4).contains(&f);
    fmt_ok(k.format) && fmt_ok(v.format) && matches!(head_dim, 64 | 128) && (1..=8).contains(&gqa)
}

/// Number of sequence splits for a decode step: enough CTAs to fill the GPU, at least
/// one tile of tokens per split.
pub fn num_splits(batch: usize, kv_heads: usize, len: usize) -> usize {
    let by_ctas = TARGET_CTAS.div_ceil((batch * kv_heads).max(1));
    let by_len = len.div_ceil(TILE).max(1);
    by_ctas.min(by_len).max(1)
}

fn group_of(r: &RawSide<'_>, head_dim: usize) -> usize {
    r.rotation.map_or(head_dim.min(128), |rot| rot.group)
}

thread_local! {
    /// Placeholder inputs for sides without a codebook, rotation or aux buffer, built once
    /// (arrays made from host data every call cost a page migration each on CUDA).
    static DUMMIES: std::cell::RefCell<std::collections::HashMap<(usize, bool), Array>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

fn dummy(key: (usize, bool), make: impl FnOnce() -> Result<Array>) -> Result<Array> {
    if let Some(a) = DUMMIES.with(|d| d.borrow().get(&key).cloned()) {
        return Ok(a);
    }
    let a = make()?;
    a.eval()?;
    DUMMIES.with(|d| d.borrow_mut().insert(key, a.clone()));
    Ok(a)
}

fn signs(r: &RawSide<'_>, group: usize) -> Result<Array> {
    match r.rotation {
        Some(rot) => Ok(rot.signs_array().clone()),
        None => dummy((group, true), || {
            Array::from_slice(&vec![1f32; 2 * group], &[2, group as i32])
        }),
    }
}

fn lut(r: &RawSide<'_>) -> Result<Array> {
    match r.lut_array {
        Some(a) => Ok(a.clone()),
        None => dummy((16, false), || Array::from_slice(&[0f32; 16], &[16])),
    }
}

fn aux_or_dummy(r: &RawSide<'_>) -> Result<Array> {
    match r.aux {
        Some(a) => Ok(a.clone()),
        None => dummy((1, false), || {
            Array::from_slice(&[half::f16::ZERO], &[1, 1, 1, 1])
        }),
    }
}

/// Attention of one query position `q [B, Hq, 1, D]` over `len` cached positions.
/// Returns `[B, Hq, 1, D]` in q's dtype. `split_override` fixes the number of splits.
pub fn fused_decode(
    q: &Array,
    k: &RawSide<'_>,
    v: &RawSide<'_>,
    len: usize,
    scale: f32,
    split_override: Option<usize>,
) -> Result<Array> {
    let s = q.shape();
    if s.len() != 4 || s[2] != 1 {
        return Err(Error::invalid(
            "fused decode",
            format!("q must be [B, Hq, 1, D], got {s:?}"),
        ));
    }
    let (b, hq, d) = (s[0] as usize, s[1] as usize, s[3] as usize);
    let ks = k.data.shape();
    let hkv = ks[1] as usize;
    if hkv == 0 || hq % hkv != 0 || !supported(k, v, d, hq / hkv) {
        return Err(Error::invalid(
            "fused decode",
            format!("unsupported shape q {s:?}, k {ks:?}"),
        ));
    }
    if len == 0 || len > k.capacity || len > v.capacity {
        return Err(Error::invalid(
            "fused decode",
            format!("len {len} outside the cache capacity"),
        ));
    }
    let gqa = hq / hkv;
    let splits = split_override
        .unwrap_or_else(|| num_splits(b, hkv, len))
        .max(1);
    let (group_k, group_v) = (group_of(k, d), group_of(v, d));
    if (scale - 1.0 / (d as f32).sqrt()).abs() > 1e-6 * scale.abs() {
        return Err(Error::invalid(
            "fused decode",
            format!("the kernel uses scale 1/sqrt({d}); got {scale}"),
        ));
    }
    let (k_aux, v_aux) = (aux_or_dummy(k)?, aux_or_dummy(v)?);
    let len_arr = Array::from_slice(&[len as i32], &[1])?;
    let q32 = q
        .reshape(&[b as i32, hq as i32, d as i32])?
        .astype(Dtype::F32)?;
    let (lut_k, lut_v, rot_k) = (lut(k)?, lut(v)?, signs(k, group_k)?);
    let backend = KernelBackend::Cuda;
    let main = cached(backend, &source())?;
    let launch = Launch::new(
        &[
            &q32, k.data, &k_aux, v.data, &v_aux, &lut_k, &lut_v, &rot_k, &len_arr,
        ],
        [splits as i32 * THREADS, hkv as i32, b as i32],
        [THREADS, 1, 1],
    )
    .output(&[b as i32, hq as i32, splits as i32, d as i32], Dtype::F32)
    .output(&[b as i32, hq as i32, splits as i32, 2], Dtype::F32)
    .template("KFMT", TemplateArg::Int(k.format))
    .template("VFMT", TemplateArg::Int(v.format))
    .template("D", TemplateArg::Int(d as i32))
    .template("GQA", TemplateArg::Int(gqa as i32))
    .template("GROUP_K", TemplateArg::Int(group_k as i32))
    .template("GROUP_V", TemplateArg::Int(group_v as i32))
    .template("ROT_Q", TemplateArg::Bool(k.rotation.is_some()));
    let mut parts = main.call(&launch)?;
    let ml = parts.pop().expect("two outputs");
    let o_part = parts.pop().expect("two outputs");
    let rot_v = signs(v, group_v)?;
    let merge = cached(backend, &merge_source())?;
    let launch = Launch::new(
        &[&o_part, &ml, &rot_v],
        [(b * hq * d) as i32, 1, 1],
        [d as i32, 1, 1],
    )
    .output(&[b as i32, hq as i32, 1, d as i32], q.dtype())
    .template("D", TemplateArg::Int(d as i32))
    .template("GROUP_V", TemplateArg::Int(group_v as i32))
    .template("ROT_V", TemplateArg::Bool(v.rotation.is_some()))
    .template("T_out", TemplateArg::Dtype(q.dtype()));
    merge
        .call(&launch)?
        .pop()
        .ok_or_else(|| Error::invalid("fused decode", "no output"))
}
