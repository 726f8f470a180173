//! Host time spent building a decode step's graph, split by part of the model
//! (`MLXCEL_BUILD_PROFILE=1`; `mlxcel generate --profile` prints it).
//!
//! Why: since the pipelined loop overlaps host and device (ADR 0006), a decode step takes as
//! long as the host needs to build and submit it, and turbo4's graph building measured 0.7 ms
//! per step more than fp16's on the H200 (2.04 vs 1.30 ms at 4K). Which part of a layer
//! (projections, cache append, attention, MLP) holds that time can only be measured on the
//! host that builds the CUDA graph, so the model code marks its parts with [`span`] and the
//! generation loop collects the totals once per step ([`take`]). Off, a span costs one
//! thread-local read.

use std::cell::{Cell, RefCell};
use std::time::Instant;

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static TOTALS: RefCell<Vec<(&'static str, f64)>> = const { RefCell::new(Vec::new()) };
}

/// Turns collection on or off for this thread (the generation loop does, from its
/// parameters or `MLXCEL_BUILD_PROFILE`) and drops what was collected so far (e.g. by a
/// generation that stopped on an error with collection on).
pub fn set_enabled(on: bool) {
    ON.with(|c| c.set(on));
    TOTALS.with(|t| t.borrow_mut().clear());
}

/// Whether collection is on for this thread.
pub fn enabled() -> bool {
    ON.with(Cell::get)
}

/// Times the enclosing scope as `part` (spans of one part add up; do not nest spans, or
/// the time counts twice).
#[must_use = "the span measures until it is dropped"]
pub fn span(part: &'static str) -> Span {
    Span(ON.with(Cell::get).then(|| (part, Instant::now())))
}

/// Prefix of the parts [`inner_span`] records: time inside an outer part, reported beside
/// the parts and left out of their sum.
pub const INNER_PREFIX: &str = "inside: ";

/// Whether `part` was recorded by [`inner_span`].
pub fn is_inner(part: &str) -> bool {
    part.starts_with(INNER_PREFIX)
}

/// Times a scope that runs inside some [`span`] (e.g. every call into MLX's custom-kernel
/// API, from whichever part makes it): `part` must start with [`INNER_PREFIX`]. Why: turbo4's
/// attention and KV-append parts cost 0.425 and 0.244 ms per step against fp16's 0.137 and
/// 0.107 on the H200 (session 8) while queueing fewer MLX ops; this says how much of that
/// is MLX building the custom-kernel primitive and how much is mlxcel's preparation.
#[must_use = "the span measures until it is dropped"]
pub fn inner_span(part: &'static str) -> Span {
    debug_assert!(is_inner(part), "inner parts start with {INNER_PREFIX:?}");
    span(part)
}

/// See [`span`].
pub struct Span(Option<(&'static str, Instant)>);

impl Drop for Span {
    fn drop(&mut self) {
        if let Some((part, start)) = self.0.take() {
            let s = start.elapsed().as_secs_f64();
            TOTALS.with(|t| {
                let mut t = t.borrow_mut();
                match t.iter_mut().find(|(p, _)| *p == part) {
                    Some((_, total)) => *total += s,
                    None => t.push((part, s)),
                }
            });
        }
    }
}

/// The seconds per part since the last call, in the order the parts first ran; resets.
pub fn take() -> Vec<(&'static str, f64)> {
    TOTALS.with(|t| std::mem::take(&mut *t.borrow_mut()))
}

#[cfg(test)]
mod tests {
    use super::{inner_span, is_inner, set_enabled, span, take};

    #[test]
    fn spans_add_up_per_part_only_when_enabled() {
        set_enabled(false);
        drop(span("a"));
        assert!(take().is_empty());
        set_enabled(true);
        for _ in 0..3 {
            let _s = span("a");
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        drop(span("b"));
        {
            let _outer = span("c");
            drop(inner_span("inside: d"));
        }
        let (nested, t): (Vec<_>, Vec<_>) = take()
            .into_iter()
            .partition(|(p, _)| ["c", "inside: d"].contains(p));
        for (p, _) in &nested {
            assert_eq!(is_inner(p), *p == "inside: d");
        }
        assert_eq!(t.iter().map(|(p, _)| *p).collect::<Vec<_>>(), ["a", "b"]);
        assert!(t[0].1 >= 0.006, "{t:?}");
        assert!(t[1].1 < t[0].1, "{t:?}");
        assert!(take().is_empty(), "take resets");
        set_enabled(false);
    }
}
