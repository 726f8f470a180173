//! L2 prefetch of the next GEMV's weights by the GEMV launch before it
//! ([`crate::flags::L2_PREFETCH`]; `NextPrefetch` in `cuda/qgemv4.cuh`).
//!
//! Why: a decode step is a chain of ~200 short kernels. Each GEMV starts by waiting a DRAM
//! round trip for its first weight tiles and ends with a tail of finishing CTAs, and in
//! between it streams at about half of DRAM bandwidth (in situ at 32K: o_proj 1.3 TB/s, down
//! 2.0-2.3 TB/s). A GEMV's weights never depend on the kernels before it, so the launch before
//! it can ask for them early: the first bytes of every row of the packed weights (the tiles
//! its warps read first) and its whole scale and bias tables, up to a byte budget per launch.
//! Prefetches only move data into the cache, so outputs are bit for bit the same.
//!
//! How the next weights reach the launch: the model layer names them around the call that
//! launches the GEMV before them ([`next_gemv`] returns a guard), and the first GEMV launch
//! inside that scope takes them ([`take`]). A scoped hint instead of a parameter because
//! every GEMV entry point (plain, residual, folded norm, qkv parts, qkv + cache append,
//! gate/up) would need it, and where no GEMV kernel runs (CPU, MLX's matmul) the hint is
//! simply dropped with the guard.

use std::cell::RefCell;

use crate::error::{Error, Result};
use crate::flags;
use crate::mlx::kernel::{Launch, TemplateArg};
use crate::mlx::ops::Quantized;
use crate::{Array, Dtype};

/// Where the launch issues the prefetches: `start` (at the ring's first tile, after the
/// launch's own first copies left), `mid` (at each warp's middle tile) or `end` (after the
/// outputs are written). Default `mid`.
pub const AT_VAR: &str = "MLXCEL_L2_PREFETCH_AT";
/// Bytes per launch, in MB (10^6 bytes): the scale and bias tables first, then the same
/// number of leading bytes of each packed row. Default 16; 0 prefetches nothing.
pub const MB_VAR: &str = "MLXCEL_L2_PREFETCH_MB";
/// The L2 priority of the prefetched lines: `last` (evict_last: they outlive the attention's
/// stream of the KV cache between the qkv GEMV and o_proj) or `normal`. Default `last`.
pub const EVICT_VAR: &str = "MLXCEL_L2_PREFETCH_EVICT";

/// How the launches prefetch (the three variables above).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// `PF` in the kernels: 1 start, 2 mid, 3 end.
    pub at: i32,
    pub budget_bytes: usize,
    pub evict_last: bool,
}

impl Settings {
    pub const DEFAULT: Settings = Settings {
        at: 2,
        budget_bytes: 16_000_000,
        evict_last: true,
    };

    /// The settings the environment asks for; a value that does not parse is an error, not
    /// a fallback.
    pub fn current() -> Result<Settings> {
        let mut s = Settings::DEFAULT;
        if let Some(v) = flags::var(AT_VAR) {
            s.at = match v.trim() {
                "start" => 1,
                "mid" => 2,
                "end" => 3,
                other => return Err(bad(AT_VAR, other, "start, mid or end")),
            };
        }
        if let Some(v) = flags::var(MB_VAR) {
            let mb: f64 = v
                .trim()
                .parse()
                .ok()
                .filter(|m: &f64| m.is_finite() && (0.0..=1024.0).contains(m))
                .ok_or_else(|| bad(MB_VAR, &v, "a number of MB from 0 to 1024"))?;
            s.budget_bytes = (mb * 1e6) as usize;
        }
        if let Some(v) = flags::var(EVICT_VAR) {
            s.evict_last = match v.trim() {
                "last" => true,
                "normal" => false,
                other => return Err(bad(EVICT_VAR, other, "last or normal")),
            };
        }
        Ok(s)
    }
}

fn bad(var: &str, value: &str, expected: &str) -> Error {
    Error::invalid(
        "l2 prefetch",
        format!("{var}={value:?}: expected {expected}"),
    )
}

/// The next GEMV's weights as one launch prefetches them.
#[derive(Clone)]
pub struct NextWeights {
    w: Array,
    scales: Array,
    biases: Array,
    /// `PFC`: leading bytes of each packed row (a multiple of 128, possibly 0).
    row_bytes: i32,
    settings: Settings,
}

impl NextWeights {
    /// What a launch prefetches of `q` under `settings`: the scale and bias tables whole,
    /// then as many leading 128-byte lines of every packed row as the rest of the budget
    /// buys (at most the row). `None` where the tables alone exceed the budget or `q` is not
    /// a 2-D uint32 weight with fp16 tables (what the GEMV kernels read).
    pub fn plan(q: &Quantized, settings: Settings) -> Option<NextWeights> {
        let ws = q.w.shape();
        if ws.len() != 2
            || q.w.dtype() != Dtype::U32
            || q.scales.dtype() != Dtype::F16
            || q.biases.dtype() != Dtype::F16
            || q.scales.shape() != q.biases.shape()
            || q.scales.ndim() != 2
        {
            return None;
        }
        let rows = ws[0] as usize;
        let full_row = (ws[1] as usize * 4).div_ceil(128) * 128;
        let tables = 2 * 2 * q.scales.size();
        let left = settings.budget_bytes.checked_sub(tables)?;
        if rows == 0 || settings.budget_bytes == 0 {
            return None;
        }
        let row_bytes = ((left / rows) / 128 * 128).min(full_row);
        Some(NextWeights {
            w: q.w.clone(),
            scales: q.scales.clone(),
            biases: q.biases.clone(),
            row_bytes: row_bytes as i32,
            settings,
        })
    }

    /// Bytes the launch asks for (lines of 128 bytes).
    pub fn bytes(&self) -> usize {
        self.w.dim(0) as usize * self.row_bytes as usize
            + 2 * (2 * self.scales.size()).div_ceil(128) * 128
    }
}

thread_local! {
    static NEXT: RefCell<Option<NextWeights>> = const { RefCell::new(None) };
}

/// Clears the hint when the scope that set it ends (whether or not a launch took it).
pub struct NextGuard(());

impl Drop for NextGuard {
    fn drop(&mut self) {
        NEXT.with(|n| n.borrow_mut().take());
    }
}

/// Names `next` as the weights the GEMV after the next GEMV launch of this thread reads (the
/// flag on and `next` a weight [`NextWeights::plan`] takes); the hint lasts until the guard
/// drops or a launch takes it. With the flag off this does nothing.
pub fn next_gemv(next: Option<&Quantized>) -> Result<NextGuard> {
    Ok(match next {
        Some(q) if flags::L2_PREFETCH.enabled() => next_gemv_with(q, Settings::current()?),
        _ => set(None),
    })
}

/// [`next_gemv`] with explicit settings, whatever the flag says (tests and benchmarks).
pub fn next_gemv_with(next: &Quantized, settings: Settings) -> NextGuard {
    set(NextWeights::plan(next, settings))
}

fn set(hint: Option<NextWeights>) -> NextGuard {
    NEXT.with(|n| *n.borrow_mut() = hint);
    NextGuard(())
}

/// The hint [`next_gemv`] left, for the launch that issues the prefetches (at most one).
pub(crate) fn take() -> Option<NextWeights> {
    NEXT.with(|n| n.borrow_mut().take())
}

/// Input names every GEMV kernel takes last: the next weights (placeholders without them).
pub(crate) const INPUTS: [&str; 3] = ["pf_w", "pf_s", "pf_b"];

/// `launch` with the inputs [`INPUTS`] and the template arguments `PF`, `PFC`, `PFL` for
/// `next` (`PF` 0 and `placeholder` three times without it).
pub(crate) fn with_next<'a>(
    launch: Launch<'a>,
    next: Option<&'a NextWeights>,
    placeholder: &'a Array,
) -> Launch<'a> {
    let (inputs, pf, pfc, pfl) = match next {
        Some(n) => (
            [&n.w, &n.scales, &n.biases],
            n.settings.at,
            n.row_bytes,
            n.settings.evict_last,
        ),
        None => ([placeholder; 3], 0, 0, false),
    };
    let mut launch = launch
        .template("PF", TemplateArg::Int(pf))
        .template("PFC", TemplateArg::Int(pfc))
        .template("PFL", TemplateArg::Bool(pfl));
    launch.inputs.extend(inputs);
    launch
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weight(n: i32, k: i32, group: i32) -> Quantized {
        Quantized {
            w: Array::zeros(&[n, k / 8], Dtype::U32).unwrap(),
            scales: Array::zeros(&[n, k / group], Dtype::F16).unwrap(),
            biases: Array::zeros(&[n, k / group], Dtype::F16).unwrap(),
            group_size: group,
            bits: 4,
        }
    }

    /// The budget buys the tables first, then whole 128-byte lines of every row, never more
    /// than a row; tables over the budget buy nothing.
    #[test]
    fn plans_spend_the_budget_on_tables_then_leading_lines() {
        let s = Settings::DEFAULT;
        // Llama-3-8B's down_proj: 4096 rows of 7168 bytes, tables 2 x 3.67 MB.
        let down = NextWeights::plan(&weight(4096, 14336, 64), s).unwrap();
        let tables = 2 * 2 * 4096 * 224;
        assert_eq!(down.row_bytes, (16_000_000 - tables) / 4096 / 128 * 128);
        assert!(down.bytes() <= s.budget_bytes);
        // o_proj (4096 x 2048-byte rows) fits whole.
        let o = NextWeights::plan(&weight(4096, 4096, 64), s).unwrap();
        assert_eq!(o.row_bytes, 2048);
        // A budget below the tables: nothing.
        let tiny = Settings {
            budget_bytes: 1_000_000,
            ..s
        };
        assert!(NextWeights::plan(&weight(4096, 14336, 64), tiny).is_none());
        let none = Settings {
            budget_bytes: 0,
            ..s
        };
        assert!(NextWeights::plan(&weight(16, 128, 64), none).is_none());
    }

    /// The launch gets three inputs and PF 0 without a hint, the weights and the settings
    /// with one.
    #[test]
    fn launches_name_the_next_weights_or_placeholders() {
        let x = Array::zeros(&[1, 1, 4096], Dtype::F16).unwrap();
        let plain = with_next(Launch::new(&[&x], [1, 1, 1], [1, 1, 1]), None, &x);
        assert_eq!(plain.inputs.len(), 4);
        assert!(plain
            .template
            .iter()
            .any(|(n, a)| *n == "PF" && matches!(a, TemplateArg::Int(0))));
        let next = NextWeights::plan(&weight(4096, 4096, 64), Settings::DEFAULT).unwrap();
        let l = with_next(Launch::new(&[&x], [1, 1, 1], [1, 1, 1]), Some(&next), &x);
        assert_eq!(l.inputs[1].shape(), vec![4096, 512]);
        assert!(l
            .template
            .iter()
            .any(|(n, a)| *n == "PFC" && matches!(a, TemplateArg::Int(2048))));
    }
}
