//! An A/B of one boolean `MLXCEL_*` flag inside one generation (`MLXCEL_STEP_AB=<flag>`), or
//! of several switched together (`MLXCEL_STEP_AB=<flag>,<flag>,...`): the pipelined decode
//! loop turns the flags off and on in alternating blocks of steps (`MLXCEL_STEP_AB_BLOCK`,
//! default 8), and `--profile` reports the host and device time per step of each arm. Several
//! flags at once measure a set of options in one run (a device call's minutes are few); the
//! ones that gain are then taken apart.
//!
//! Why: on the H200 machine the host's speed differs between processes by up to 1.6x (the
//! same turbo4 32K run takes 2.7-2.9 or 4.2-4.5 ms of host per step; NOTES, session 30), so
//! an A/B of a host-side lever across separate runs needs many runs per arm and still
//! mixes the two speeds. Inside one process both arms meet the same host.
//!
//! Meant for flags whose two settings give the same results (bit-identical paths): the
//! tokens of such a run are those of either setting. A flag that changes numerics in rounding
//! only (docs/usage.md says which) gives a run whose tokens follow neither arm exactly; its
//! times still compare the same kernels on the same shapes (with `--ignore-eos` the steps are
//! the same), which is all a speed A/B reads. The caller chooses the flags.

use mlxcel_core::flags::{self, Flag};

use super::steps::StepTimeline;
use crate::error::{ModelError, Result};

/// Names the flag to alternate, or several separated by commas (switched together).
pub const STEP_AB: &str = "MLXCEL_STEP_AB";
/// Steps per block (numeric, default [`DEFAULT_BLOCK`]).
pub const STEP_AB_BLOCK: &str = "MLXCEL_STEP_AB_BLOCK";
pub const DEFAULT_BLOCK: usize = 8;

/// The alternation: which flags, the block length, and each queued step's setting.
pub(super) struct StepAb {
    flags: Vec<Flag>,
    block: usize,
    /// The flags' values before the generation, restored at the end.
    before: Vec<bool>,
    /// The setting each queued step was built with, in queue order.
    arms: Vec<bool>,
}

/// One arm's means over its counted steps (`None` without device clocks).
#[derive(Debug, Clone, serde::Serialize)]
pub struct StepAbArm {
    pub on: bool,
    pub steps: usize,
    pub host_seconds_per_step: f64,
    pub submit_seconds_per_step: f64,
    pub device_seconds_inside_step: Option<f64>,
    /// Device idle from the previous step's last node to this step's first.
    pub device_seconds_before_step: Option<f64>,
}

/// The A/B's result for `--profile` and `--json`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StepAbStats {
    /// The flag, or the flags joined by commas.
    pub flag: String,
    pub block: usize,
    /// Off, then on.
    pub arms: [StepAbArm; 2],
}

impl StepAb {
    /// The A/B the environment asks for: `None` when `MLXCEL_STEP_AB` is unset or empty; an
    /// error when it names no flag or the block length is not a positive number.
    pub(super) fn from_env() -> Result<Option<StepAb>> {
        let name = match std::env::var(STEP_AB) {
            Ok(n) if !n.trim().is_empty() => n.trim().to_string(),
            _ => return Ok(None),
        };
        let block = match std::env::var(STEP_AB_BLOCK) {
            Err(_) => DEFAULT_BLOCK,
            Ok(v) => v.trim().parse().ok().filter(|&b| b > 0).ok_or_else(|| {
                ModelError::Unsupported(format!(
                    "{STEP_AB_BLOCK}={v}: expected a positive number of steps"
                ))
            })?,
        };
        StepAb::new(&name, block).map(Some)
    }

    /// The A/B of the flags `names` (one, or several separated by commas) in blocks of
    /// `block` steps; an error when a name is not a flag, is a load-time flag or comes twice,
    /// or `block` is 0.
    pub(super) fn new(names: &str, block: usize) -> Result<StepAb> {
        if block == 0 {
            return Err(ModelError::Unsupported(format!(
                "{STEP_AB_BLOCK}=0: expected a positive number of steps"
            )));
        }
        let mut chosen: Vec<Flag> = Vec::new();
        for name in names.split(',').map(str::trim) {
            let flag = flags::find(name).ok_or_else(|| {
                ModelError::Unsupported(format!(
                    "{STEP_AB}={names}: {name:?} is no flag (expected MLXCEL_* switches from docs/usage.md, separated by commas)"
                ))
            })?;
            if flags::LOAD_TIME.iter().any(|f| f.name == flag.name) {
                return Err(ModelError::Unsupported(format!(
                    "{STEP_AB}={names}: {name} is read only when the weights load (a layout), so switching it between steps would time the same kernels; compare separate runs with {name}=0 and =1"
                )));
            }
            if chosen.iter().any(|f| f.name == flag.name) {
                return Err(ModelError::Unsupported(format!(
                    "{STEP_AB}={names}: {name} is named twice"
                )));
            }
            chosen.push(flag);
        }
        let joined: Vec<&str> = chosen.iter().map(|f| f.name).collect();
        tracing::info!(
            "{STEP_AB}: {} off and on in alternating blocks of {block} decode steps",
            joined.join(" + ")
        );
        Ok(StepAb {
            before: chosen.iter().map(|f| f.enabled()).collect(),
            flags: chosen,
            block,
            arms: Vec::new(),
        })
    }

    /// Sets the flags for the next queued step: off in even blocks, on in odd ones.
    pub(super) fn before_step(&mut self) {
        let on = (self.arms.len() / self.block) % 2 == 1;
        for f in &self.flags {
            f.set_kept(on);
        }
        self.arms.push(on);
    }

    /// Whether queued step `i` counts: not in either arm's first block (each arm's kernels
    /// compile and its CUDA graphs are instantiated there) and not the first step of a
    /// block (it overlaps the other arm's step on the device).
    fn counts(&self, i: usize) -> bool {
        i >= 2 * self.block && !i.is_multiple_of(self.block)
    }

    /// Per-arm means of the queued steps' host times (`build`: graph building and submit;
    /// `submit`: the `async_eval` part) and, with device clocks, their device times.
    pub(super) fn stats(
        &self,
        build: &[f64],
        submit: &[f64],
        timeline: Option<&[StepTimeline]>,
    ) -> StepAbStats {
        let arm = |on: bool| {
            let idx: Vec<usize> = (0..self.arms.len().min(build.len()))
                .filter(|&i| self.arms[i] == on && self.counts(i))
                .collect();
            let mean = |f: &dyn Fn(usize) -> Option<f64>| -> Option<f64> {
                let v: Vec<f64> = idx.iter().filter_map(|&i| f(i)).collect();
                (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
            };
            let ns = |x: u64| x as f64 * 1e-9;
            StepAbArm {
                on,
                steps: idx.len(),
                host_seconds_per_step: mean(&|i| Some(build[i])).unwrap_or(0.0),
                submit_seconds_per_step: mean(&|i| submit.get(i).copied()).unwrap_or(0.0),
                device_seconds_inside_step: timeline.and_then(|t| {
                    mean(&|i| {
                        t.get(i)
                            .map(|s| ns(s.device_last.saturating_sub(s.device_first)))
                    })
                }),
                device_seconds_before_step: timeline.and_then(|t| {
                    mean(&|i| {
                        let (prev, s) = (t.get(i.checked_sub(1)?)?, t.get(i)?);
                        Some(ns(s.device_first.saturating_sub(prev.device_last)))
                    })
                }),
            }
        };
        StepAbStats {
            flag: self
                .flags
                .iter()
                .map(|f| f.name)
                .collect::<Vec<_>>()
                .join(","),
            block: self.block,
            arms: [arm(false), arm(true)],
        }
    }
}

impl Drop for StepAb {
    /// The flags go back to their values from before the generation.
    fn drop(&mut self) {
        for (f, &b) in self.flags.iter().zip(&self.before) {
            f.set_kept(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests flip `MLXCEL_FOLD_TAIL`: read only by the CUDA decode kernel, so no other test
    /// of this crate (CPU) sees it change.
    const FLAG: &str = "MLXCEL_FOLD_TAIL";

    /// The flags are process-wide: the tests that switch them take turns.
    static SWITCHING: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn switching() -> std::sync::MutexGuard<'static, ()> {
        SWITCHING.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn ab(block: usize) -> StepAb {
        StepAb {
            flags: vec![flags::find(FLAG).expect("a listed flag")],
            block,
            before: vec![false],
            arms: Vec::new(),
        }
    }

    #[test]
    fn arms_alternate_in_blocks_and_skip_each_arms_first_block_and_block_starts() {
        let _turn = switching();
        let mut a = ab(2);
        for _ in 0..10 {
            a.before_step();
        }
        assert_eq!(
            a.arms,
            [false, false, true, true, false, false, true, true, false, false]
        );
        let counted: Vec<usize> = (0..10).filter(|&i| a.counts(i)).collect();
        assert_eq!(counted, [5, 7, 9]);
        // Host times 1 ms (off) and 3 ms (on); device inside 2 / 4 ms, idle 0.5 ms.
        let build: Vec<f64> = a
            .arms
            .iter()
            .map(|&on| if on { 3e-3 } else { 1e-3 })
            .collect();
        let ms = 1_000_000u64;
        let mut t = 0u64;
        let timeline: Vec<StepTimeline> = a
            .arms
            .iter()
            .map(|&on| {
                let first = t + ms / 2;
                let last = first + if on { 4 * ms } else { 2 * ms };
                t = last;
                StepTimeline::device_only(first, last)
            })
            .collect();
        let s = a.stats(&build, &build, Some(&timeline));
        assert_eq!(s.flag, FLAG);
        let (off, on) = (&s.arms[0], &s.arms[1]);
        assert_eq!((off.on, off.steps, on.on, on.steps), (false, 2, true, 1));
        assert!((off.host_seconds_per_step - 1e-3).abs() < 1e-12);
        assert!((on.host_seconds_per_step - 3e-3).abs() < 1e-12);
        assert!((off.device_seconds_inside_step.unwrap() - 2e-3).abs() < 1e-12);
        assert!((on.device_seconds_inside_step.unwrap() - 4e-3).abs() < 1e-12);
        assert!((on.device_seconds_before_step.unwrap() - 0.5e-3).abs() < 1e-12);
        let no_clock = a.stats(&build, &build, None);
        assert!(no_clock.arms[1].device_seconds_inside_step.is_none());
    }

    #[test]
    fn the_flag_follows_the_arm_and_is_restored() {
        let _turn = switching();
        let flag = flags::find(FLAG).unwrap();
        let initial = flag.enabled();
        {
            let mut a = ab(1);
            a.before = vec![true];
            a.before_step();
            assert!(!flag.enabled());
            a.before_step();
            assert!(flag.enabled());
            a.before_step();
            assert!(!flag.enabled());
        }
        assert!(flag.enabled(), "restored to the value from before");
        flag.set_kept(initial);
    }

    /// Two flags (both read only by CUDA kernels) switch together, each goes back to its own
    /// value, and the report names both.
    #[test]
    fn several_flags_switch_together_and_are_restored() {
        let _turn = switching();
        const SECOND: &str = "MLXCEL_MMA_VZERO";
        let (f1, f2) = (flags::find(FLAG).unwrap(), flags::find(SECOND).unwrap());
        let initial = (f1.enabled(), f2.enabled());
        f1.set_kept(true);
        f2.set_kept(false);
        {
            let mut a = StepAb::new(&format!("{FLAG}, {SECOND}"), 1).unwrap();
            a.before_step();
            assert!(!f1.enabled() && !f2.enabled());
            a.before_step();
            assert!(f1.enabled() && f2.enabled());
            let s = a.stats(&[1e-3, 1e-3], &[1e-3, 1e-3], None);
            assert_eq!(s.flag, format!("{FLAG},{SECOND}"));
        }
        assert!(
            f1.enabled() && !f2.enabled(),
            "each restored to its own value"
        );
        f1.set_kept(initial.0);
        f2.set_kept(initial.1);
        let twice = StepAb::new(&format!("{FLAG},{FLAG}"), 8)
            .err()
            .unwrap()
            .to_string();
        assert!(twice.contains("named twice"), "{twice}");
        let unknown = StepAb::new(&format!("{FLAG},MLXCEL_NO_SUCH_FLAG"), 8)
            .err()
            .unwrap()
            .to_string();
        assert!(
            unknown.contains("\"MLXCEL_NO_SUCH_FLAG\" is no flag"),
            "{unknown}"
        );
    }

    #[test]
    fn load_time_flags_and_unknown_names_are_refused() {
        for f in flags::LOAD_TIME {
            let err = StepAb::new(f.name, 8).err().expect(f.name).to_string();
            assert!(err.contains("separate runs"), "{err}");
        }
        let err = StepAb::new("MLXCEL_NO_SUCH_FLAG", 8)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("is no flag"), "{err}");
        assert!(StepAb::new(FLAG, 8).is_ok());
    }
}
