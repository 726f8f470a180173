//! [`KvMode`]: what `--kv` (or `--cache-type-k/--cache-type-v`) selects, and
//! [`make_caches`]: one cache per layer for a mode, with near-lossless boundary layers.

use std::fmt;

use crate::kv::delegated::DelegatedSide;
use crate::kv::fp16::Fp16Side;
use crate::kv::int8::Int8Side;
use crate::kv::side::KvSide;
use crate::kv::split::SplitKvCache;
use crate::kv::turbo::codec::group_for;
use crate::kv::turbo::rotation::{K_SEED, V_SEED};
use crate::kv::turbo::TurboSide;
use crate::kv::KvCache;
use crate::mlx::Dtype;
use crate::{Error, Result};

/// Storage of one side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SideFormat {
    Fp16,
    Int8,
    /// int8 of the randomized-Hadamard-rotated vector (the turbo codec's rotation): the
    /// rotation spreads a few large channels (Qwen2.5's keys) over all coordinates before the
    /// per-vector absmax scale is taken. On CUDA it has no fused kernel yet: attention takes
    /// the rotated-SDPA path.
    Int8Rotated,
    Turbo(u32),
    /// fp16 hot window + turbo4 cold blocks (values only).
    Turbo4Delegated,
}

impl SideFormat {
    fn parse(s: &str) -> Option<SideFormat> {
        Some(match s {
            "fp16" | "f16" | "float16" => SideFormat::Fp16,
            "int8" | "i8" | "q8" => SideFormat::Int8,
            "int8r" | "int8-rotated" => SideFormat::Int8Rotated,
            "turbo4" => SideFormat::Turbo(4),
            "turbo3" => SideFormat::Turbo(3),
            "turbo2" => SideFormat::Turbo(2),
            "turbo4-delegated" => SideFormat::Turbo4Delegated,
            _ => return None,
        })
    }

    fn is_turbo(self) -> bool {
        matches!(self, SideFormat::Turbo(_) | SideFormat::Turbo4Delegated)
    }

    /// Bits per stored element at `head_dim` (norms and scales included).
    pub fn bits_per_element(self, head_dim: usize) -> f64 {
        match self {
            SideFormat::Fp16 => 16.0,
            SideFormat::Int8 | SideFormat::Int8Rotated => 8.0 + 16.0 / head_dim as f64,
            SideFormat::Turbo(b) => {
                let g = group_for(head_dim).unwrap_or(head_dim);
                b as f64 + 16.0 / g as f64
            }
            SideFormat::Turbo4Delegated => {
                4.0 + 16.0 / group_for(head_dim).unwrap_or(head_dim) as f64
            }
        }
    }
}

impl fmt::Display for SideFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SideFormat::Fp16 => f.write_str("fp16"),
            SideFormat::Int8 => f.write_str("int8"),
            SideFormat::Int8Rotated => f.write_str("int8r"),
            SideFormat::Turbo(b) => write!(f, "turbo{b}"),
            SideFormat::Turbo4Delegated => f.write_str("turbo4-delegated"),
        }
    }
}

/// A KV cache mode: the storage of keys and of values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvMode {
    pub k: SideFormat,
    pub v: SideFormat,
}

/// The `--kv` names, for help texts and errors.
pub const MODE_NAMES: &str =
    "fp16, int8, int8r (rotated int8), turbo4-asym (= fp16+turbo4), turbo4, turbo4-delegated, \
     turbo3-asym (= fp16+turbo3), turbo2-asym (= fp16+turbo2), turbo3, turbo2";

impl KvMode {
    pub const FP16: KvMode = KvMode {
        k: SideFormat::Fp16,
        v: SideFormat::Fp16,
    };

    /// Parses a `--kv` value.
    pub fn parse(s: &str) -> Result<KvMode> {
        let s = s.trim().to_ascii_lowercase();
        use SideFormat::*;
        let pair = match s.as_str() {
            "fp16" | "f16" => (Fp16, Fp16),
            "int8" | "q8" => (Int8, Int8),
            "int8r" | "int8-rotated" => (Int8Rotated, Int8Rotated),
            "turbo4-asym" | "fp16+turbo4" => (Fp16, Turbo(4)),
            "turbo3-asym" | "fp16+turbo3" => (Fp16, Turbo(3)),
            "turbo2-asym" | "fp16+turbo2" => (Fp16, Turbo(2)),
            "turbo4" | "turbo4-sym" => (Turbo(4), Turbo(4)),
            "turbo3" | "turbo3-sym" => (Turbo(3), Turbo(3)),
            "turbo2" | "turbo2-sym" => (Turbo(2), Turbo(2)),
            "turbo4-delegated" | "fp16+turbo4-delegated" => (Fp16, Turbo4Delegated),
            other => match other.split_once('+') {
                Some((k, v)) => match (SideFormat::parse(k), SideFormat::parse(v)) {
                    (Some(k), Some(v)) => (k, v),
                    _ => {
                        return Err(Error::invalid(
                            "--kv",
                            format!("unknown mode '{s}' (known: {MODE_NAMES})"),
                        ))
                    }
                },
                None => {
                    return Err(Error::invalid(
                        "--kv",
                        format!("unknown mode '{s}' (known: {MODE_NAMES})"),
                    ))
                }
            },
        };
        KvMode::from_sides(pair.0, pair.1)
    }

    /// A mode from `--cache-type-k` / `--cache-type-v` values.
    pub fn from_side_names(k: &str, v: &str) -> Result<KvMode> {
        let parse = |flag: &str, s: &str| {
            SideFormat::parse(&s.trim().to_ascii_lowercase()).ok_or_else(|| {
                Error::invalid("kv", format!("{flag} '{s}' is not one of fp16, int8, int8r, turbo2, turbo3, turbo4, turbo4-delegated"))
            })
        };
        KvMode::from_sides(parse("--cache-type-k", k)?, parse("--cache-type-v", v)?)
    }

    fn from_sides(k: SideFormat, v: SideFormat) -> Result<KvMode> {
        if k == SideFormat::Turbo4Delegated {
            return Err(Error::invalid(
                "kv",
                "turbo4-delegated applies to values only",
            ));
        }
        Ok(KvMode { k, v })
    }

    /// True when any side is rotated int8 (which needs a rotation group, as turbo does).
    fn is_rotated_int8(&self) -> bool {
        self.k == SideFormat::Int8Rotated || self.v == SideFormat::Int8Rotated
    }

    /// True when any side is turbo (then boundary layers apply).
    pub fn has_turbo(&self) -> bool {
        self.k.is_turbo() || self.v.is_turbo()
    }

    /// Canonical name.
    pub fn name(&self) -> String {
        use SideFormat::*;
        match (self.k, self.v) {
            (Fp16, Fp16) => "fp16".into(),
            (Int8, Int8) => "int8".into(),
            (Int8Rotated, Int8Rotated) => "int8r".into(),
            (Fp16, Turbo(b)) => format!("turbo{b}-asym"),
            (Turbo(a), Turbo(b)) if a == b => format!("turbo{a}"),
            (Fp16, Turbo4Delegated) => "turbo4-delegated".into(),
            (k, v) => format!("{k}+{v}"),
        }
    }

    /// The name as K+V sides where they differ (`fp16+turbo4`, `fp16+int8`), else the side's
    /// own (`fp16`, `int8r`): how `--kv-boundary-type` spells a boundary-layer cache, where
    /// [`KvMode::name`]'s `turbo4-asym` would read as a mode of the whole model.
    pub fn sides_name(&self) -> String {
        if self.k == self.v {
            self.k.to_string()
        } else {
            format!("{}+{}", self.k, self.v)
        }
    }

    /// Checks the mode against a model; returns warnings to show the user.
    pub fn validate(&self, head_dim: usize) -> Result<Vec<String>> {
        if self.has_turbo() {
            group_for(head_dim)?;
        }
        if self.is_rotated_int8() && group_for(head_dim).is_err() {
            return Err(Error::invalid(
                "kv",
                format!(
                    "{}: int8r rotates each head vector in groups of 64 or 128, but head_dim is {head_dim}",
                    self.name()
                ),
            ));
        }
        let mut warnings = Vec::new();
        if self.is_rotated_int8() && on_cuda() && !crate::flags::INT8R_FUSED.enabled() {
            warnings.push(format!(
                "{}: MLXCEL_INT8R_FUSED=0, so int8r runs the rotated-SDPA path, which dequantizes the \
                 whole cache every step and is slow on long contexts",
                self.name()
            ));
        }
        let low_bits = [self.k, self.v]
            .iter()
            .any(|f| matches!(f, SideFormat::Turbo(b) if *b < 4));
        if low_bits && on_cuda() && !crate::flags::LOWBIT_CUDA.enabled() {
            // Why a warning: with the flag off a user picking a smaller mode for speed would get
            // the opposite without being told.
            warnings.push(format!(
                "{}: MLXCEL_LOWBIT_CUDA=0, so on CUDA its 2- and 3-bit turbo sides decode through \
                 the CUDA-core attention kernel (~0.4x of MLX's fp16 SDPA) and append through MLX \
                 ops: this mode decodes slower than fp16",
                self.name()
            ));
        }
        if let SideFormat::Turbo(b) = self.k {
            if b < 4 {
                warnings.push(format!(
                    "{}: {b}-bit keys cost much more quality than {b}-bit values (attention logits are \
                     sensitive to K error); prefer turbo{b}-asym (fp16 K)",
                    self.name()
                ));
            }
        }
        Ok(warnings)
    }

    /// Average bits per cached element (K and V) in a non-boundary layer.
    pub fn bits_per_element(&self, head_dim: usize) -> f64 {
        0.5 * (self.k.bits_per_element(head_dim) + self.v.bits_per_element(head_dim))
    }
}

impl fmt::Display for KvMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// What [`make_caches`] needs to know about the model.
#[derive(Debug, Clone, Copy)]
pub struct CacheSpec {
    pub mode: KvMode,
    pub num_layers: usize,
    pub head_dim: usize,
    /// The layers kept in `boundary_mode` in turbo modes.
    pub boundary_layers: BoundaryLayers,
    /// The boundary layers' mode ([`check_boundary_mode`]; default [`default_boundary_mode`]).
    pub boundary_mode: KvMode,
}

/// Which layers a turbo cache keeps in its boundary mode: the first `first` and the last
/// `last` of the model's layers. The two ends are separate counts because they do not matter
/// alike: the first layers carry the large key channels that a 4-bit codec loses most on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoundaryLayers {
    pub first: usize,
    pub last: usize,
}

impl BoundaryLayers {
    /// `n` layers at each end.
    pub const fn both(n: usize) -> BoundaryLayers {
        BoundaryLayers { first: n, last: n }
    }

    /// No boundary layers: every layer takes the cache's own mode.
    pub const NONE: BoundaryLayers = BoundaryLayers::both(0);

    /// Parses `N` (N at each end) or `FIRST,LAST`, as `--kv-boundary-layers` takes them.
    pub fn parse(s: &str) -> std::result::Result<BoundaryLayers, String> {
        let count = |v: &str| {
            v.trim().parse::<usize>().map_err(|_| {
                format!("expected N (layers at each end) or FIRST,LAST (e.g. 2 or 2,0), got {s:?}")
            })
        };
        match s.split_once(',') {
            Some((a, b)) => Ok(BoundaryLayers {
                first: count(a)?,
                last: count(b)?,
            }),
            None => Ok(BoundaryLayers::both(count(s)?)),
        }
    }

    /// Whether layer `layer` of `num_layers` is a boundary layer.
    pub fn contains(&self, layer: usize, num_layers: usize) -> bool {
        layer < self.first || layer + self.last >= num_layers
    }

    /// How many of `num_layers` layers are boundary layers (the ends may overlap).
    pub fn count(&self, num_layers: usize) -> usize {
        (self.first + self.last).min(num_layers)
    }

    pub fn is_none(&self) -> bool {
        self.first == 0 && self.last == 0
    }
}

impl fmt::Display for BoundaryLayers {
    /// `the first 2 and last 2`, `the first 2`, `the last 1` or `none`: how a log line names
    /// them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.first, self.last) {
            (0, 0) => f.write_str("none"),
            (a, 0) => write!(f, "the first {a}"),
            (0, b) => write!(f, "the last {b}"),
            (a, b) => write!(f, "the first {a} and last {b}"),
        }
    }
}

/// The first two and last two layers: the boundary layers of the turbo modes whose keys are fp16
/// (turbo4-asym, turbo3-asym, turbo2-asym, turbo4-delegated), and of every turbo mode until
/// session 60. For these modes the boundary layers differ from the rest only in their values
/// (int8 against 2-4 bits), so their count moves little: turbo4-asym's KLD with the first three
/// instead was -4.5% on SmolLM2 and +5.2% on Qwen2.5-Coder-0.5B (ADR 0028).
pub const FIRST_2_LAST_2: BoundaryLayers = BoundaryLayers::both(2);

/// The first three layers: the boundary layers of the turbo modes whose keys are quantized
/// (turbo4, turbo3, turbo2) since session 60 (ADR 0028). On three models the third first layer
/// protects turbo4 more than the last two do (KLD -2.7% SmolLM2, -24.8% Qwen2.5-Coder-0.5B, -3.6%
/// Qwen2.5-Coder-1.5B against the first 2 and last 2), with one layer of fp16 keys fewer: on an
/// H100 turbo4's 128K step 3.83 -> 3.77 ms (2.07x -> 2.10x fp16).
pub const FIRST_3: BoundaryLayers = BoundaryLayers { first: 3, last: 0 };

/// The boundary layers a turbo mode keeps unless told otherwise (`--kv-boundary-layers`):
/// [`FIRST_3`] where its keys are quantized, else [`FIRST_2_LAST_2`].
pub fn default_boundary_layers(mode: KvMode) -> BoundaryLayers {
    if mode.k.is_turbo() {
        FIRST_3
    } else {
        FIRST_2_LAST_2
    }
}

/// Boundary layers of fp16 keys and int8 values (`fp16+int8`): the default for the turbo modes
/// whose keys are fp16 (turbo4-asym, turbo3-asym, turbo2-asym, turbo4-delegated), and for every
/// turbo mode until session 57. The turbo peers keep fp16 ends (vLLM's boundary skip;
/// llama.cpp's turbo fork uses q8_0). On Qwen2.5-Coder-0.5B all of 8-bit storage's loss is in
/// the keys (KLD 0.024 for int8 keys, 0.00004 for int8 values), and fp16+int8 ends kept fp16
/// ends' turbo4 KLD within 3% on three models, while whole int8r ends raised that model's
/// turbo4 PPL penalty from +6.7% to +11.4%. On the H200 (session 16) they run on the fused
/// kernel instead of MLX's fp16 SDPA: turbo4's 128K step went from 4.93 to 4.53 ms.
/// `--kv-boundary-type fp16` restores fp16 ends; ADR 0012.
pub const FP16_INT8_ENDS: KvMode = KvMode {
    k: SideFormat::Fp16,
    v: SideFormat::Int8,
};

/// Boundary layers of fp16 keys and turbo4 values (`fp16+turbo4`, turbo4-asym's cache): the
/// default for the turbo modes whose keys are quantized (turbo4, turbo3, turbo2, mixed turbo
/// K/V) since session 57 (ADR 0027). Exact keys, where 8-bit ends lost on Qwen2.5, at 322 of
/// fp16+int8's 386 bytes per position and head (D = 128): turbo4's 128K step -0.085 ms on the
/// H200 (1.92x -> 1.98x fp16) and -0.10 ms on an H100 (2.00x -> 2.06x), two rounds each; turbo4's
/// KLD +1.8% / +2.2% (Qwen2.5-Coder-0.5B / 1.5B) and +6.3% (SmolLM2) against fp16+int8 ends,
/// its PPL within a point of theirs.
pub const FP16_TURBO4_ENDS: KvMode = KvMode {
    k: SideFormat::Fp16,
    v: SideFormat::Turbo(4),
};

/// The boundary layers' default mode for the cache mode `mode`, on every backend (quality must
/// not depend on the backend). Quantized keys get [`FP16_TURBO4_ENDS`]. Modes with fp16 keys
/// keep [`FP16_INT8_ENDS`]: fp16+turbo4 would be turbo4-asym's own cache, i.e. no boundary
/// protection at all: +40% of turbo4-asym's KLD on SmolLM2 (session 57). turbo3's and
/// turbo2's KLD moved +3.6% / -4.3% there with fp16+turbo4 ends.
pub fn default_boundary_mode(mode: KvMode) -> KvMode {
    if mode.k.is_turbo() {
        FP16_TURBO4_ENDS
    } else {
        FP16_INT8_ENDS
    }
}

/// Whether this process runs int8r caches on fused kernels: the CUDA backend with
/// `MLXCEL_INT8R_FUSED` (default on). The Metal backend has no int8r kernel.
pub fn int8r_fused_available() -> bool {
    on_cuda() && crate::flags::INT8R_FUSED.enabled()
}

fn on_cuda() -> bool {
    crate::mlx::kernel::KernelBackend::current() == Some(crate::mlx::kernel::KernelBackend::Cuda)
}

/// Boundary layers exist to protect the layers most sensitive to KV error, so they take
/// fp16, int8 (near-lossless on SmolLM2, but not on Qwen2.5, whose boundary layers' keys
/// have large channels), rotated int8, or fp16 keys with int8 / int8r values (`fp16+int8`:
/// on Qwen2.5-Coder-0.5B all of 8-bit storage's loss is in the keys: KLD 0.024 for int8
/// keys, 0.00004 for int8 values) or with turbo4 values (`fp16+turbo4`, turbo4-asym's cache:
/// exact keys at 322 of fp16+int8's 386 bytes per position and head at D = 128; turbo4's KLD
/// +1.8% / +2.2% on Qwen2.5-Coder-0.5B / 1.5B and +6.3% on SmolLM2 against fp16+int8 ends,
/// session 48), and nothing coarser; an error names the mode given.
pub fn check_boundary_mode(mode: KvMode) -> Result<()> {
    use SideFormat::*;
    match (mode.k, mode.v) {
        (Fp16, Fp16)
        | (Int8, Int8)
        | (Int8Rotated, Int8Rotated)
        | (Fp16, Int8)
        | (Fp16, Int8Rotated)
        | (Fp16, Turbo(4)) => Ok(()),
        _ => Err(Error::invalid(
            "kv boundary layers",
            format!(
                "boundary layers take fp16, int8 or int8r, or fp16 keys with int8, int8r or \
                 turbo4 values (fp16+int8, fp16+int8r, fp16+turbo4), not {mode}"
            ),
        )),
    }
}

/// An empty side of format `f` for head vectors of `head_dim` (turbo rotation `seed`).
pub fn new_side(f: SideFormat, head_dim: usize, seed: u64) -> Result<Box<dyn KvSide>> {
    Ok(match f {
        SideFormat::Fp16 => Box::new(Fp16Side::new(Dtype::F16)),
        SideFormat::Int8 => Box::new(Int8Side::new()),
        SideFormat::Int8Rotated => Box::new(Int8Side::rotated(head_dim, seed)?),
        SideFormat::Turbo(b) => Box::new(TurboSide::new(b, head_dim, seed)?),
        SideFormat::Turbo4Delegated => Box::new(DelegatedSide::new(head_dim, seed)?),
    })
}

/// Whether layer `i` is a boundary layer (kept in `spec.boundary_mode`) under `spec`.
pub fn is_boundary(spec: &CacheSpec, i: usize) -> bool {
    spec.mode.has_turbo() && spec.boundary_layers.contains(i, spec.num_layers)
}

/// One empty cache per layer.
pub fn make_caches(spec: &CacheSpec) -> Result<Vec<Box<dyn KvCache>>> {
    spec.mode.validate(spec.head_dim)?;
    check_boundary_mode(spec.boundary_mode)?;
    let seed_offset = crate::flags::turbo_seed_offset()?.wrapping_mul(2);
    (0..spec.num_layers)
        .map(|i| {
            let mode = if is_boundary(spec, i) {
                spec.boundary_mode
            } else {
                spec.mode
            };
            Ok(Box::new(SplitKvCache::new(
                new_side(mode.k, spec.head_dim, K_SEED.wrapping_add(seed_offset))?,
                new_side(mode.v, spec.head_dim, V_SEED.wrapping_add(seed_offset))?,
                mode.name(),
            )) as Box<dyn KvCache>)
        })
        .collect()
}
