//! Lloyd-Max scalar codebooks for the coordinates of a randomly rotated unit vector.
//!
//! After a random rotation, each coordinate of a unit vector in R^G is close to
//! N(0, 1/G). The optimal `bits`-bit scalar quantizer for that distribution is found by
//! Lloyd's iteration (centroid = conditional mean of its cell, boundary = midpoint of
//! neighbours), run here to convergence in f64 on the standard normal and scaled by
//! 1/sqrt(G). Each group size gets its own book (G = 64 is *not* the G = 128 book: the
//! coordinates are wider by sqrt(2)).

use half::f16;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

fn pdf(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

fn cdf(z: f64) -> f64 {
    0.5 * (1.0 + libm::erf(z / std::f64::consts::SQRT_2))
}

/// A codebook: sorted centroids and the midpoints between them.
#[derive(Debug, Clone)]
pub struct Codebook {
    pub bits: u32,
    pub group: usize,
    /// 2^bits centroids, ascending, for N(0, 1/group).
    pub centroids: Vec<f32>,
    /// 2^bits - 1 decision boundaries, ascending.
    pub midpoints: Vec<f32>,
    /// Mean squared error per coordinate of the standard-normal quantizer (the distortion
    /// of a unit vector, `E|x - x^|^2`, in the large-G limit).
    pub distortion: f64,
    /// Lloyd iterations until the largest centroid move fell below 1e-13.
    pub iterations: usize,
}

/// Lloyd-Max on N(0, 1) with `2^bits` levels, to convergence. Returns (centroids,
/// distortion, iterations).
pub fn lloyd_max_standard_normal(bits: u32) -> (Vec<f64>, f64, usize) {
    let n = 1usize << bits;
    // Start from equal-probability cells (quantiles), a good basin for Lloyd's method.
    let mut c: Vec<f64> = (0..n)
        .map(|k| {
            let p = (k as f64 + 0.5) / n as f64;
            // Inverse normal CDF by bisection (only at start-up).
            let (mut lo, mut hi) = (-10.0f64, 10.0f64);
            for _ in 0..200 {
                let mid = 0.5 * (lo + hi);
                if cdf(mid) < p {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            0.5 * (lo + hi)
        })
        .collect();
    let mut iterations = 0;
    for it in 0..100_000 {
        iterations = it + 1;
        let mut b = vec![f64::NEG_INFINITY];
        b.extend(c.windows(2).map(|w| 0.5 * (w[0] + w[1])));
        b.push(f64::INFINITY);
        let mut moved = 0f64;
        for k in 0..n {
            let (lo, hi) = (b[k], b[k + 1]);
            let p = cdf(hi) - cdf(lo);
            let new = (pdf(lo) - pdf(hi)) / p;
            moved = moved.max((new - c[k]).abs());
            c[k] = new;
        }
        if moved < 1e-13 {
            break;
        }
    }
    // At a Lloyd fixed point E[z * c(z)] = E[c(z)^2], so D = 1 - sum_k P_k c_k^2.
    let mut b = vec![f64::NEG_INFINITY];
    b.extend(c.windows(2).map(|w| 0.5 * (w[0] + w[1])));
    b.push(f64::INFINITY);
    let d = 1.0
        - (0..n)
            .map(|k| (cdf(b[k + 1]) - cdf(b[k])) * c[k] * c[k])
            .sum::<f64>();
    (c, d, iterations)
}

/// The codebook for `bits` and rotation group size `group` (cached).
pub fn codebook(bits: u32, group: usize) -> Codebook {
    static CACHE: OnceLock<Mutex<HashMap<(u32, usize), Codebook>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
    map.entry((bits, group))
        .or_insert_with(|| {
            let (c, d, iterations) = lloyd_max_standard_normal(bits);
            let s = 1.0 / (group as f64).sqrt();
            // Centroids rounded to fp16, the type the fused kernels decode into: the split
            // path (f32) and the kernels then decode a code to the same value. Why: the
            // tensor-core kernel's score error grows with the scores, and its fp16 centroids
            // were about half of it over keys growing 8-fold (session 52,
            // benchmarks/gpu/fp16_operand_error.py). The move is at most 2^-11 of a centroid.
            let centroids: Vec<f32> = c.iter().map(|x| f16::from_f64(x * s).to_f32()).collect();
            // Midpoints of the rounded centroids (exact in f32: two fp16 values' mean), so that
            // encoding still picks the nearest one.
            let midpoints = centroids
                .windows(2)
                .map(|w| (0.5 * (f64::from(w[0]) + f64::from(w[1]))) as f32)
                .collect();
            Codebook {
                bits,
                group,
                centroids,
                midpoints,
                distortion: d,
                iterations,
            }
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distortion_matches_the_optimal_gaussian_quantizer() {
        // Optimal MSE of the N(0,1) Lloyd-Max quantizer (Max 1960 / the project's spec).
        for (bits, want) in [(1, 0.3634), (2, 0.1175), (3, 0.03455), (4, 0.009497)] {
            let (c, d, it) = lloyd_max_standard_normal(bits);
            assert!(
                (d - want).abs() / want < 0.003,
                "bits {bits}: D {d} vs {want} after {it} iterations"
            );
            // Symmetric and sorted.
            for k in 0..c.len() {
                assert!((c[k] + c[c.len() - 1 - k]).abs() < 1e-9);
            }
            assert!(c.windows(2).all(|w| w[0] < w[1]));
        }
        // Known 4-bit outer centroid of the converged book: 2.7326 sigma.
        let (c, _, _) = lloyd_max_standard_normal(4);
        assert!((c[15] - 2.7326).abs() < 1e-3, "{}", c[15]);
    }

    #[test]
    fn group_64_gets_its_own_wider_book() {
        let a = codebook(3, 128);
        let b = codebook(3, 64);
        // Both rounded to fp16: the ratio holds to two fp16 roundings (2 x 2^-11).
        for (x, y) in a.centroids.iter().zip(&b.centroids) {
            assert!(
                (f64::from(*y) / f64::from(*x) / 2f64.sqrt() - 1.0).abs() < 2.0 / 2048.0 + 1e-9,
                "{x} {y}"
            );
        }
        assert_eq!(a.midpoints.len(), 7);
    }

    #[test]
    fn centroids_are_fp16_values_and_midpoints_their_means() {
        for bits in 1..=4 {
            for group in [64, 128] {
                let b = codebook(bits, group);
                let (c, _, _) = lloyd_max_standard_normal(bits);
                let s = 1.0 / (group as f64).sqrt();
                for (k, &x) in b.centroids.iter().enumerate() {
                    assert_eq!(f16::from_f32(x).to_f32(), x, "bits {bits} group {group}");
                    let exact = c[k] * s;
                    assert!(((f64::from(x) - exact) / exact).abs() <= 1.0 / 2048.0);
                }
                for (k, &m) in b.midpoints.iter().enumerate() {
                    let mean = 0.5 * (f64::from(b.centroids[k]) + f64::from(b.centroids[k + 1]));
                    assert_eq!(f64::from(m), mean, "bits {bits} group {group}");
                }
            }
        }
    }
}
