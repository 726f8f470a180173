//! Which KV mode to use for a model, context and memory budget (`mlxcel recommend-quant`).
//!
//! The sizes are exact (the bytes each mode's cache holds at a context, boundary layers
//! included); the preference order comes from measurements, and the quality of a mode
//! depends on the model, so the advice names the command that measures it.
//! - Quality (`benchmarks/results/2026-11-29-kv-quality-*.md`, PPL vs fp16 KV): turbo4-asym
//!   +0.15% (SmolLM2) / +0.68% (Qwen2.5-Coder-1.5B); turbo3-asym +1.4%; int8 +0.07% /
//!   +3.39% (per-vector scales suffer from Qwen2.5's outlier key channels); turbo2-asym
//!   +6.2%; turbo4 +4.5% / +6.6%; turbo3 +19% / +22%.
//! - Speed (H200, end to end against fp16 on the same machine): up to 32K the gain is smallest
//!   and once followed the host (session 13: turbo4-asym 1.18x at 4K and 1.12x at 32K; session
//!   12's slower host: 0.86x and 1.00x; session 51 by device time: 1.20-1.29x at 4K, 1.26-1.38x
//!   at 32K), so fp16, which loses nothing, stays the pick while it fits; at 128K compressed caches
//!   decode faster on every machine measured. Against today's fp16 (in-place appends since
//!   session 23; before it, fp16's 128K step copied its cache and the ratios read up to 2.38x),
//!   by device time per step in session 51: turbo4-asym 1.36x, int8 1.61x, turbo4 1.95x
//!   (`benchmarks/results/2026-12-05-h200-session51.md`; 1.32x / 1.50x / 1.86x in session 45,
//!   1.23x / 1.44x / 1.75x in session 35, before the GEMV work of sessions 36-45).
//! - `int8r` (rotated int8) has int8's size and near turbo4-asym's quality (Qwen2.5 +0.64%,
//!   KLD 0.0054 against int8's 0.033 and turbo4-asym's 0.0042; SmolLM2 KLD 0.0002; on
//!   Qwen2.5-Coder-0.5B int8r and int8 are equal, +2.7% / +2.9%). Where it
//!   runs on fused kernels (CUDA, `MLXCEL_INT8R_FUSED`; checked on the H200 in session 15)
//!   it comes right after turbo4-asym (128K: 1.70x fp16's decode speed, session 15);
//!   elsewhere it is attended by dequantizing the whole cache each step, so it is left out.

use super::mode::{default_boundary_layers, default_boundary_mode, BoundaryLayers, KvMode};

/// What the advice needs to know about the model's cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheShape {
    pub num_layers: usize,
    pub num_kv_heads: usize,
    pub head_dim: usize,
    /// The layers kept in `boundary_mode` in turbo modes; `None`: each mode's default
    /// (`mode::default_boundary_layers`: the first 3 for quantized keys, the first and last 2
    /// for fp16 keys).
    pub boundary_layers: Option<BoundaryLayers>,
    /// The boundary layers' cache (see `mode::check_boundary_mode`); `None`: each mode's default
    /// (`mode::default_boundary_mode`: fp16+turbo4 for quantized keys, fp16+int8 for fp16 keys).
    pub boundary_mode: Option<KvMode>,
    /// Whether int8r runs on fused kernels here (`mode::int8r_fused_available`): then it is
    /// in the order.
    pub fused_int8r: bool,
}

/// Up to this context fp16 is the pick whenever it fits: it loses nothing, and compressed
/// caches gain least there (H200, session 51, device time per step: 1.20-1.29x at 4K, where
/// the host often decides tok/s, and 1.26-1.38x at 32K, against 1.36-1.95x at 128K).
pub const FP16_PREFERRED_MAX_CONTEXT: usize = 32 * 1024;

/// Fraction of the budget kept free for activations, MLX's buffer cache and the rest.
pub const HEADROOM: f64 = 0.10;

/// Compressed modes in order of measured quality (best first); the advice takes the first
/// that fits. int8 sits below the 4- and 3-bit asymmetric modes because its loss depends
/// on the model (0.07% on SmolLM2, 3.4% on Qwen2.5).
pub const QUALITY_ORDER: &[&str] = &[
    "turbo4-asym",
    "turbo3-asym",
    "int8",
    "turbo2-asym",
    "turbo4",
    "turbo3",
    "turbo2",
];

/// The order the advice follows for `shape`: [`QUALITY_ORDER`], and where int8r runs on fused
/// kernels int8r (as small as int8, Qwen2.5 +0.64% PPL against turbo3-asym's +1.4%) right
/// after turbo4-asym, which is larger. int8 stays for head_dims without a rotation group
/// (int8r needs 64 or 128); elsewhere it fits exactly when int8r does, so it is never the
/// pick.
pub fn quality_order(shape: &CacheShape) -> Vec<&'static str> {
    let mut order = QUALITY_ORDER.to_vec();
    if shape.fused_int8r {
        order.insert(1, "int8r");
    }
    order
}

impl CacheShape {
    /// The boundary layers `mode` keeps and their cache: the shape's choices where it has them,
    /// else the mode's defaults ([`default_boundary_layers`], [`default_boundary_mode`]).
    pub fn boundary_for(&self, mode: KvMode) -> (BoundaryLayers, KvMode) {
        (
            self.boundary_layers
                .unwrap_or_else(|| default_boundary_layers(mode)),
            self.boundary_mode
                .unwrap_or_else(|| default_boundary_mode(mode)),
        )
    }
}

/// Bytes a cache of `mode` holds at `context` positions (K and V, every layer; turbo modes
/// keep `boundary_layers` in `boundary_mode`, as `make_caches` does).
pub fn kv_bytes(mode: KvMode, shape: &CacheShape, context: usize) -> f64 {
    let per_layer = |m: KvMode| {
        2.0 * (shape.num_kv_heads * shape.head_dim * context) as f64
            * m.bits_per_element(shape.head_dim)
            / 8.0
    };
    let (layers, ends) = shape.boundary_for(mode);
    let boundary = if mode.has_turbo() {
        layers.count(shape.num_layers)
    } else {
        0
    };
    boundary as f64 * per_layer(ends) + (shape.num_layers - boundary) as f64 * per_layer(mode)
}

/// One mode's numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct ModeEstimate {
    pub mode: KvMode,
    pub kv_bytes: f64,
    /// Weights plus the cache.
    pub total_bytes: f64,
    pub fits: bool,
    /// The longest context that fits the budget (0 when even the weights do not).
    pub max_context: usize,
}

/// The advice: every mode's numbers and the pick, with the reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Advice {
    pub estimates: Vec<ModeEstimate>,
    pub pick: Option<KvMode>,
    pub reason: String,
}

/// Advice for a cache of `shape` at `context` positions next to `weight_bytes` of weights in
/// `budget_bytes` of memory ([`HEADROOM`] kept free). Modes the model cannot take
/// (`KvMode::validate`: the turbo codec needs a head_dim it has a rotation group for) are
/// left out.
pub fn advise(shape: &CacheShape, weight_bytes: f64, context: usize, budget_bytes: f64) -> Advice {
    let usable = budget_bytes * (1.0 - HEADROOM);
    let modes: Vec<KvMode> = std::iter::once("fp16")
        .chain(quality_order(shape))
        .filter_map(|n| KvMode::parse(n).ok())
        .filter(|m| m.validate(shape.head_dim).is_ok())
        .collect();
    let estimates: Vec<ModeEstimate> = modes
        .iter()
        .map(|&mode| {
            let kv = kv_bytes(mode, shape, context);
            let per_token = kv_bytes(mode, shape, 1);
            let max_context = if usable > weight_bytes && per_token > 0.0 {
                ((usable - weight_bytes) / per_token).floor() as usize
            } else {
                0
            };
            ModeEstimate {
                mode,
                kv_bytes: kv,
                total_bytes: weight_bytes + kv,
                fits: weight_bytes + kv <= usable,
                max_context,
            }
        })
        .collect();
    let fits = |name: &str| {
        estimates
            .iter()
            .find(|e| e.mode.name() == name && e.fits)
            .map(|e| e.mode)
    };
    let gb = |b: f64| b / 1e9;
    if weight_bytes > usable {
        return Advice {
            estimates,
            pick: None,
            reason: format!(
                "the weights alone ({:.1} GB) exceed the usable budget ({:.1} GB of {:.1} GB, {:.0}% kept free)",
                gb(weight_bytes),
                gb(usable),
                gb(budget_bytes),
                100.0 * HEADROOM
            ),
        };
    }
    if context <= FP16_PREFERRED_MAX_CONTEXT {
        if let Some(m) = fits("fp16") {
            return Advice {
                estimates,
                pick: Some(m),
                reason: format!(
                    "the fp16 cache fits and loses nothing; up to {}K tokens compressed caches gain least (H200, session 51: 1.2-1.4x fp16's decode speed by device time); compress to fit more or for that speed",
                    FP16_PREFERRED_MAX_CONTEXT / 1024
                ),
            };
        }
    }
    for name in quality_order(shape) {
        if let Some(m) = fits(name) {
            let why = if fits("fp16").is_some() {
                "beyond 32K compressed caches decode faster than fp16 on the H200 (128K, device time per step against fp16's in the same session: turbo4-asym 1.36x, int8 1.61x, turbo4 1.95x in session 51, 1.98x with its fp16+turbo4 boundary layers in session 57) while holding less memory; this is the best-measured-quality mode"
            } else {
                "the fp16 cache does not fit; this is the best-measured-quality mode that does"
            };
            return Advice {
                estimates,
                pick: Some(m),
                reason: why.to_string(),
            };
        }
    }
    let longest = estimates
        .iter()
        .max_by_key(|e| e.max_context)
        .map(|e| (e.mode, e.max_context));
    Advice {
        estimates,
        pick: None,
        reason: match longest {
            Some((m, n)) => format!(
                "no mode fits {context} tokens; the longest that fits is {n} tokens with {m}"
            ),
            None => format!("no mode fits {context} tokens"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Llama-3-8B: 32 layers, 8 KV heads of 128.
    const LLAMA8B: CacheShape = CacheShape {
        num_layers: 32,
        num_kv_heads: 8,
        head_dim: 128,
        boundary_layers: None,
        boundary_mode: Some(KvMode::FP16),
        fused_int8r: false,
    };

    #[test]
    fn sizes_are_the_bytes_each_cache_holds() {
        // fp16 Llama-3-8B: 2 (K, V) x 32 layers x 8 heads x 128 x 2 bytes = 128 KiB per token.
        assert_eq!(kv_bytes(KvMode::FP16, &LLAMA8B, 1), 131072.0);
        // int8: 8 bits + one fp16 scale per 128-vector, no boundary layers.
        let int8 = KvMode::parse("int8").unwrap();
        assert_eq!(
            kv_bytes(int8, &LLAMA8B, 1),
            2.0 * 32.0 * 8.0 * (128.0 + 2.0)
        );
        // turbo4: its 3 boundary layers (the first three, ADR 0028) in fp16 plus 29 at 4 bits +
        // an fp16 norm per vector.
        let t4 = KvMode::parse("turbo4").unwrap();
        let want = 3.0 * 2.0 * 8.0 * 256.0 + 29.0 * 2.0 * 8.0 * (64.0 + 2.0);
        assert_eq!(kv_bytes(t4, &LLAMA8B, 1), want);
        assert_eq!(kv_bytes(t4, &LLAMA8B, 1000), 1000.0 * want);
        // The first and last two on request: 4 layers.
        let both_2 = CacheShape {
            boundary_layers: Some(BoundaryLayers::both(2)),
            ..LLAMA8B
        };
        let want = 4.0 * 2.0 * 8.0 * 256.0 + 28.0 * 2.0 * 8.0 * (64.0 + 2.0);
        assert_eq!(kv_bytes(t4, &both_2, 1), want);
        // int8 boundary layers: 128 + 2 bytes per vector instead of 256.
        let int8_ends = CacheShape {
            boundary_mode: Some(int8),
            ..LLAMA8B
        };
        let want = 3.0 * 2.0 * 8.0 * (128.0 + 2.0) + 29.0 * 2.0 * 8.0 * (64.0 + 2.0);
        assert_eq!(kv_bytes(t4, &int8_ends, 1), want);
        // The defaults: turbo4's 3 ends hold fp16 keys (256 bytes) and turbo4 values (64 + 2);
        // turbo4-asym's 4 ends fp16 keys and int8 values (128 + 2).
        let default_ends = CacheShape {
            boundary_mode: None,
            ..LLAMA8B
        };
        let want = 3.0 * 8.0 * (256.0 + 66.0) + 29.0 * 2.0 * 8.0 * 66.0;
        assert_eq!(kv_bytes(t4, &default_ends, 1), want);
        let asym = KvMode::parse("turbo4-asym").unwrap();
        let want = 4.0 * 8.0 * (256.0 + 130.0) + 28.0 * 8.0 * (256.0 + 66.0);
        assert_eq!(kv_bytes(asym, &default_ends, 1), want);
    }

    #[test]
    fn the_pick_follows_context_and_budget() {
        let gb = 1e9;
        // Short context, room to spare: fp16.
        let a = advise(&LLAMA8B, 4.5 * gb, 8192, 80.0 * gb);
        assert_eq!(a.pick, Some(KvMode::FP16));
        // 128K with room for fp16 (17 GB of cache): a compressed mode anyway, the best quality.
        let a = advise(&LLAMA8B, 4.5 * gb, 131072, 80.0 * gb);
        assert_eq!(a.pick.map(|m| m.name()), Some("turbo4-asym".into()));
        // 32K in 8 GB (7.2 usable, 4.5 of weights): fp16 (4.3 GB of cache), turbo4-asym
        // (2.9 GB) and turbo3-asym (2.8 GB) do not fit; int8 (2.2 GB) does and comes next.
        let a = advise(&LLAMA8B, 4.5 * gb, 32768, 8.0 * gb);
        let fitting: Vec<String> = a
            .estimates
            .iter()
            .filter(|e| e.fits)
            .map(|e| e.mode.name())
            .collect();
        assert_eq!(fitting[0], "int8", "{fitting:?}");
        assert_eq!(a.pick.map(|m| m.name()), Some("int8".into()));
        // Every estimate's max context is the boundary of its fit.
        for e in &a.estimates {
            let at = kv_bytes(e.mode, &LLAMA8B, e.max_context) + 4.5 * gb;
            let past = kv_bytes(e.mode, &LLAMA8B, e.max_context + 1) + 4.5 * gb;
            assert!(
                at <= 7.2 * gb && past > 7.2 * gb,
                "{}: {}",
                e.mode,
                e.max_context
            );
        }
        // Weights too large, or no mode fits: no pick, and a reason that says so.
        let a = advise(&LLAMA8B, 10.0 * gb, 4096, 8.0 * gb);
        assert!(
            a.pick.is_none() && a.reason.contains("weights alone"),
            "{}",
            a.reason
        );
        let a = advise(&LLAMA8B, 4.5 * gb, 10_000_000, 8.0 * gb);
        assert!(
            a.pick.is_none() && a.reason.contains("longest that fits"),
            "{}",
            a.reason
        );
    }

    #[test]
    fn modes_the_head_dim_cannot_take_are_left_out() {
        let odd = CacheShape {
            head_dim: 80,
            ..LLAMA8B
        };
        let a = advise(&odd, 1e9, 65536, 100e9);
        assert!(
            a.estimates.iter().all(|e| !e.mode.has_turbo()),
            "{:?}",
            a.estimates
        );
        assert_eq!(a.pick.map(|m| m.name()), Some("int8".into()));
    }

    #[test]
    fn where_int8r_is_fused_it_follows_turbo4_asym() {
        let gb = 1e9;
        let cuda = CacheShape {
            fused_int8r: true,
            ..LLAMA8B
        };
        // 32K in 8 GB: turbo4-asym does not fit, int8r does and is picked before int8.
        let a = advise(&cuda, 4.5 * gb, 32768, 8.0 * gb);
        assert_eq!(a.pick.map(|m| m.name()), Some("int8r".into()));
        // head_dim 80 has no rotation group: int8 still is the pick.
        let odd = CacheShape {
            head_dim: 80,
            ..cuda
        };
        let a = advise(&odd, 1e9, 65536, 100e9);
        assert_eq!(a.pick.map(|m| m.name()), Some("int8".into()));
        // Off the fused kernels the order has no int8r.
        let a = advise(&LLAMA8B, 4.5 * gb, 32768, 8.0 * gb);
        assert!(a.estimates.iter().all(|e| e.mode.name() != "int8r"));
    }
}
