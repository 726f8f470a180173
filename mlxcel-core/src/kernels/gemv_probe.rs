//! A measuring probe of the 4-bit GEMV kernels' grid and ring (`cuda/qgemv4_probe.cu`):
//! the same per-lane `cp.async` ring over the same 16-row x 128-value tiles, with the GEMV's
//! other parts (x's staging, the scale tables, the epilogue's reduction, the arithmetic)
//! switched on one at a time, and with several 16-row blocks per CTA.
//!
//! Why: the layer GEMVs stream at ~55% of DRAM peak whatever their instruction count, weight
//! layout or copy mechanism (sessions 26-27, `benchmarks/kernel-notes/NOTES.md`); timing the
//! bare ring beside each part says which part holds them. Its output is a fold of the bytes
//! read, not a product: `mlxcel bench gemv --probes` times it; nothing else calls it.

use crate::kernels::quantized_gemv::{
    gemv_source, run, smem_arg, spec_field, table_bytes, weight_shape, SharedMemory,
};
use crate::mlx::kernel::{KernelBackend, KernelSource, Launch, TemplateArg};
use crate::mlx::ops::{Quantized, WeightLayout};
use crate::mlx::{Array, Dtype};
use crate::{Error, Result};

/// Dynamic shared memory of a padded probe (`parts & 64`): 4 CTAs fit an H200 SM's 228 KiB.
pub const PAD_BYTES: usize = 56 * 1024;

/// Which parts of the GEMV a probe launch runs (the kernel's `PRO` bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    /// Warps per CTA (each takes every `warps`-th tile of K, as the ring schedule).
    pub warps: i32,
    /// Ring stages per warp (1 KiB each).
    pub stages: i32,
    /// 16-row blocks per CTA (1 = the shipped grid), the ring running on across them.
    pub blocks_per_cta: i32,
    /// `PRO` bits: 1 x staged, 2 scale tables staged per block, 4 the cross-warp reduction
    /// per block, 8 the per-tile arithmetic (needs 1, and 2 or 16), 16 each tile's scales
    /// and biases copied into its ring slot (group 64 only), 32 the shipped (EARLY) prologue
    /// (needs 1 and 2), 64 shared memory padded to
    /// [`PAD_BYTES`] (4 CTAs per SM on the H200 whatever the registers).
    pub parts: i32,
}

impl Probe {
    /// Parses `probe:WARPS:STAGES:BLOCKS:PARTS` (e.g. `probe:8:3:1:0`, the bare ring on the
    /// shipped grid); `Display` prints the same form.
    pub fn parse(s: &str) -> Result<Probe> {
        let bad = || {
            Error::invalid(
                "gemv probe",
                format!("{s:?}: expected probe:WARPS:STAGES:BLOCKS:PARTS (WARPS 1-16, STAGES 2-16, BLOCKS 1-4096, PARTS 0-127: 8 needs 1, and 2 or 16; 32 needs 1 and 2)"),
            )
        };
        let num = |v: &str, range| spec_field(v, range).ok_or_else(bad);
        match s.split(':').collect::<Vec<_>>().as_slice() {
            ["probe", w, st, b, p] => {
                let probe = Probe {
                    warps: num(w, 1..=16)?,
                    stages: num(st, 2..=16)?,
                    blocks_per_cta: num(b, 1..=4096)?,
                    parts: num(p, 0..=127)?,
                };
                if (probe.parts & 8 != 0 && (probe.parts & 1 == 0 || probe.parts & 18 == 0))
                    || (probe.parts & 32 != 0 && probe.parts & 3 != 3)
                {
                    return Err(bad());
                }
                Ok(probe)
            }
            _ => Err(bad()),
        }
    }

    fn ctas(&self, n: usize) -> i32 {
        ((n / 16) as i32 + self.blocks_per_cta - 1) / self.blocks_per_cta
    }

    /// Dynamic shared memory: x (with part 1), the tables (part 2), the ring.
    fn shared_bytes(&self, k: usize, group: usize, mats: usize) -> usize {
        let x = if self.parts & 1 != 0 { 2 * k } else { 0 };
        let tables = if self.parts & 2 != 0 {
            table_bytes(k, group, mats)
        } else {
            0
        };
        let slot = if self.parts & 16 != 0 {
            1024 + 128
        } else {
            1024
        };
        let total = x + tables + self.warps as usize * self.stages as usize * slot;
        if self.parts & 64 != 0 {
            total.max(PAD_BYTES)
        } else {
            total
        }
    }
}

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "probe:{}:{}:{}:{}",
            self.warps, self.stages, self.blocks_per_cta, self.parts
        )
    }
}

fn source(shared: usize) -> KernelSource {
    gemv_source(
        "mlxcel_qgemv4_probe",
        &["w0", "s0", "b0", "w1", "s1", "b1", "x"],
        &["out"],
        include_str!("cuda/qgemv4_probe.cu"),
        shared,
    )
}

/// Runs the probe over one or two (gate, up) 4-bit weights of one shape in MLX's layout,
/// with x ([K] fp16) staged when the probe says so. CUDA only. Returns the folds (u32, one
/// per thread of the grid).
pub fn probe(x: &Array, mats: &[&Quantized], p: Probe) -> Result<Array> {
    let bad = |m: String| Error::invalid("gemv probe", m);
    if KernelBackend::current() != Some(KernelBackend::Cuda) {
        return Err(bad("the probe kernel is CUDA-only".into()));
    }
    let (first, second) = match mats {
        [a] => (*a, *a),
        [a, b] => (*a, *b),
        _ => return Err(bad(format!("{} matrices (1 or 2)", mats.len()))),
    };
    // The GEMV kernels' own test of a weight (4-bit, group 32 / 64 / 128, fp16 tables, N and
    // K multiples of 16 and 128), both matrices alike and in MLX's layout.
    let (n, k) = weight_shape(first)
        .filter(|&nk| {
            weight_shape(second) == Some(nk)
                && second.group_size == first.group_size
                && [first, second].iter().all(|q| q.layout == WeightLayout::Mlx)
                && (p.parts & 16 == 0 || first.group_size == 64)
        })
        .ok_or_else(|| {
            bad(format!(
                "weights of shape {:?}: expected 4-bit weights the GEMV kernels take (group 32, 64 or 128; 64 for scales in the ring), both of one shape, in MLX's layout",
                first.w.shape()
            ))
        })?;
    if x.size() != k || x.dtype() != Dtype::F16 {
        return Err(bad(format!(
            "x: {} values of {:?}, expected {k} fp16",
            x.size(),
            x.dtype()
        )));
    }
    let shared = SharedMemory::gemv(
        p.shared_bytes(k, first.group_size as usize, mats.len()),
        p.warps,
        first.group_size,
        false,
    );
    let ctas = p.ctas(n);
    let threads = p.warps * 32;
    let inputs = [
        &first.w,
        &first.scales,
        &first.biases,
        &second.w,
        &second.scales,
        &second.biases,
        x,
    ];
    let launch = Launch::new(&inputs, [ctas * threads, 1, 1], [threads, 1, 1])
        .output(&[ctas * threads], Dtype::U32)
        .template("G", TemplateArg::Int(first.group_size))
        .template("NW", TemplateArg::Int(p.warps))
        .template("S", TemplateArg::Int(p.stages))
        .template("BPC", TemplateArg::Int(p.blocks_per_cta))
        .template("MATS", TemplateArg::Int(mats.len() as i32))
        .template("PRO", TemplateArg::Int(p.parts))
        .template("SMEM", smem_arg(shared.dynamic));
    run("qgemv4_probe", shared, source, &launch)?
        .pop()
        .ok_or_else(|| bad("kernel returned no output".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_specs_parse_print_and_refuse() {
        let p = Probe::parse("probe:8:3:4:15").unwrap();
        assert_eq!(
            p,
            Probe {
                warps: 8,
                stages: 3,
                blocks_per_cta: 4,
                parts: 15
            }
        );
        assert_eq!(p.to_string(), "probe:8:3:4:15");
        for bad in [
            "probe:8:3:1",
            "probe:8:1:1:0",
            "probe:8:3:0:0",
            "probe:8:3:1:8",
            "probe:8:3:1:24",
            "probe:8:3:1:128",
            "ring:8:3",
        ] {
            let e = Probe::parse(bad).err().unwrap().to_string();
            assert!(e.contains("probe:WARPS:STAGES:BLOCKS:PARTS"), "{bad}: {e}");
        }
        // 4 blocks per CTA over 4096 rows (256 blocks): 64 CTAs; a ragged last CTA counts.
        assert_eq!(p.ctas(4096), 64);
        assert_eq!(Probe::parse("probe:8:3:3:0").unwrap().ctas(4096), 86);
        // The bare ring needs only its stages; the full probe the ring schedule's bytes.
        assert_eq!(
            Probe::parse("probe:8:3:1:0")
                .unwrap()
                .shared_bytes(4096, 64, 2),
            24576
        );
        // (37120 bytes: the shipped ring:8:3 kernel's at K = 4096; table rows of 64 + 4 pairs.)
        assert_eq!(p.shared_bytes(4096, 64, 1), 8192 + 16 * 68 * 4 + 24576);
        // Scales in the ring: 128 more bytes per slot, no tables; padding lifts to 56 KiB.
        assert_eq!(
            Probe::parse("probe:8:3:1:25")
                .unwrap()
                .shared_bytes(4096, 64, 2),
            8192 + 24 * 1152
        );
        assert_eq!(
            Probe::parse("probe:8:3:1:64")
                .unwrap()
                .shared_bytes(4096, 64, 2),
            56 * 1024
        );
        assert_eq!(
            Probe::parse("probe:8:6:1:64")
                .unwrap()
                .shared_bytes(14336, 64, 1),
            57344
        );
    }
}
