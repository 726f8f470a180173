//! Choosing the next token: greedy (`temp = 0`), or sampling with temperature, top-k,
//! top-p, min-p and a repetition penalty, reproducible with a seed.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Sampling settings (the CLI's `--temp --top-k --top-p --min-p --repeat-penalty --seed`).
#[derive(Debug, Clone)]
pub struct SamplingParams {
    /// 0 = greedy.
    pub temperature: f32,
    /// 0 = off.
    pub top_k: usize,
    /// 1.0 = off.
    pub top_p: f32,
    /// 0.0 = off. Keeps tokens with probability >= min_p * p(max).
    pub min_p: f32,
    /// 1.0 = off. HF semantics: positive logits divided, negative multiplied.
    pub repetition_penalty: f32,
    /// How many recent tokens the penalty looks at.
    pub repetition_window: usize,
    pub seed: u64,
}

impl Default for SamplingParams {
    fn default() -> Self {
        SamplingParams {
            temperature: 0.0,
            top_k: 0,
            top_p: 1.0,
            min_p: 0.0,
            repetition_penalty: 1.0,
            repetition_window: 64,
            seed: 0,
        }
    }
}

impl SamplingParams {
    /// True when the choice is the argmax of the raw logits.
    pub fn is_greedy(&self) -> bool {
        self.temperature <= 0.0 && self.repetition_penalty == 1.0
    }
}

/// A seeded sampler over host-side logits.
pub struct Sampler {
    params: SamplingParams,
    rng: StdRng,
}

impl Sampler {
    pub fn new(params: SamplingParams) -> Sampler {
        let rng = StdRng::seed_from_u64(params.seed);
        Sampler { params, rng }
    }

    pub fn params(&self) -> &SamplingParams {
        &self.params
    }

    /// Picks a token from `logits` given the tokens so far.
    pub fn sample(&mut self, logits: &mut [f32], history: &[u32]) -> u32 {
        let p = &self.params;
        if p.repetition_penalty != 1.0 {
            let start = history.len().saturating_sub(p.repetition_window);
            let mut seen = std::collections::HashSet::new();
            for &t in &history[start..] {
                if seen.insert(t) {
                    if let Some(l) = logits.get_mut(t as usize) {
                        *l = if *l > 0.0 {
                            *l / p.repetition_penalty
                        } else {
                            *l * p.repetition_penalty
                        };
                    }
                }
            }
        }
        if p.temperature <= 0.0 {
            return argmax(logits);
        }
        // Candidates sorted by logit, best first.
        let mut idx: Vec<usize> = (0..logits.len()).collect();
        idx.sort_unstable_by(|&a, &b| logits[b].total_cmp(&logits[a]));
        if p.top_k > 0 && p.top_k < idx.len() {
            idx.truncate(p.top_k);
        }
        let max = logits[idx[0]];
        let mut probs: Vec<f32> = idx
            .iter()
            .map(|&i| ((logits[i] - max) / p.temperature).exp())
            .collect();
        let z: f32 = probs.iter().sum();
        probs.iter_mut().for_each(|x| *x /= z);
        if p.min_p > 0.0 {
            let floor = p.min_p * probs[0];
            let keep = probs.iter().take_while(|&&x| x >= floor).count().max(1);
            idx.truncate(keep);
            probs.truncate(keep);
        }
        if p.top_p < 1.0 {
            let mut acc = 0.0;
            let mut keep = probs.len();
            for (i, x) in probs.iter().enumerate() {
                acc += x;
                if acc >= p.top_p {
                    keep = i + 1;
                    break;
                }
            }
            idx.truncate(keep);
            probs.truncate(keep);
        }
        let total: f32 = probs.iter().sum();
        let mut r = self.rng.gen::<f32>() * total;
        for (i, x) in probs.iter().enumerate() {
            r -= x;
            if r <= 0.0 {
                return idx[i] as u32;
            }
        }
        idx[probs.len() - 1] as u32
    }
}

/// Index of the largest value (first on ties).
pub fn argmax(x: &[f32]) -> u32 {
    let mut best = 0;
    for (i, v) in x.iter().enumerate() {
        if *v > x[best] {
            best = i;
        }
    }
    best as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_is_argmax_and_penalty_changes_it() {
        let mut s = Sampler::new(SamplingParams::default());
        assert_eq!(s.sample(&mut [0.1, 2.0, 1.9], &[]), 1);
        let mut s = Sampler::new(SamplingParams {
            repetition_penalty: 2.0,
            ..Default::default()
        });
        assert_eq!(s.sample(&mut [0.1, 2.0, 1.9], &[1]), 2);
    }

    #[test]
    fn top_k_one_and_min_p_one_are_greedy() {
        for params in [
            SamplingParams {
                temperature: 1.0,
                top_k: 1,
                ..Default::default()
            },
            SamplingParams {
                temperature: 1.0,
                min_p: 1.0,
                ..Default::default()
            },
            SamplingParams {
                temperature: 1.0,
                top_p: 1e-6,
                ..Default::default()
            },
        ] {
            let mut s = Sampler::new(params);
            for _ in 0..50 {
                assert_eq!(s.sample(&mut [0.5, 3.0, 2.9, -1.0], &[]), 1);
            }
        }
    }

    #[test]
    fn sampling_follows_the_distribution_and_the_seed() {
        // p = softmax([0, ln 3]) = [0.25, 0.75]
        let params = SamplingParams {
            temperature: 1.0,
            seed: 42,
            ..Default::default()
        };
        let mut s = Sampler::new(params.clone());
        let n = 20_000;
        let ones = (0..n)
            .filter(|_| s.sample(&mut [0.0, 3f32.ln()], &[]) == 1)
            .count();
        let frac = ones as f64 / n as f64;
        assert!((frac - 0.75).abs() < 0.015, "{frac}");
        let mut a = Sampler::new(params.clone());
        let mut b = Sampler::new(params);
        let xa: Vec<u32> = (0..100)
            .map(|_| a.sample(&mut [0.0, 0.1, 0.2], &[]))
            .collect();
        let xb: Vec<u32> = (0..100)
            .map(|_| b.sample(&mut [0.0, 0.1, 0.2], &[]))
            .collect();
        assert_eq!(xa, xb);
    }
}
