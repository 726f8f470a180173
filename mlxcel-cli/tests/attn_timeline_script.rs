//! `benchmarks/gpu/attn_timeline.py` (the attention kernel's per-warp timeline,
//! `MLXCEL_ATTENTION_TIMING_PROBE=timeline`) on made-up probe output: it must group warp lines
//! into launches, turn cycles into microseconds by the lines' own clock rate, place each stamp
//! from the launch's first warp entry, and attach each folded launch's `MLXCEL_TLF` line (the
//! last CTA's ticket and merged store) to that launch only: same length, same CTA width, before
//! the next launch of that length (under the probe the ticket comes hundreds of us late, after
//! every CTA's printf). `--min-len` leaves out the random-kv fill's launches. The device prints
//! the real lines; here the arithmetic and the pairing are checked where CI sees them.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../benchmarks/gpu/attn_timeline.py")
}

/// The script run on one probe-output file, after `args`.
fn run(args: &[&str], file: &Path) -> Output {
    Command::new("python3")
        .arg(script())
        .args(args)
        .arg(file)
        .output()
        .unwrap()
}

/// A `%globaltimer`-like origin (ns).
const T0: u64 = 1_765_000_000_000_000_000;

/// Eight warp lines (2 splits x 4 warps, 10 tiles each) of a launch at `len` whose first warp
/// enters at `t0`: warp i enters i x 100 ns later; at 0.5 ns per cycle its barrier is 2 us after
/// its entry, its first tile 3 us, its loop end 8 us and its partials' stores 10 us.
fn launch(len: u64, t0: u64) -> Vec<String> {
    (0..8u64)
        .map(|i| {
            let g0 = t0 + i * 100;
            let (split, warp) = (i / 4, i % 4);
            format!(
                "MLXCEL_TL {len} 2 {split} 4 {warp} 10 {g0} {} 4000 6000 16000 20000",
                g0 + 10_000
            )
        })
        .collect()
}

#[test]
fn stamps_and_the_folds_tail_land_on_their_own_launch() {
    let dir = common::fresh_dir("attn-timeline");
    let t1 = T0 + 1_000_000; // a second launch 1 ms later, at the next length
    let mut lines = vec!["some generated text".to_string()];
    // A fill launch at 4096 positions, 0.5 ms before: --min-len 32768 leaves it out.
    lines.extend(launch(4096, T0 - 500_000));
    lines.push(format!(
        "MLXCEL_TLF 4096 2 4 {} {}",
        T0 - 480_000,
        T0 - 479_000
    ));
    lines.extend(launch(32768, T0));
    // The first launch's fold: ticket 411.5 us (late by the probe's printf, as on the device),
    // merged output stored 413.25 us after T0; still before the next launch at that length.
    lines.push(format!(
        "MLXCEL_TLF 32768 2 4 {} {}",
        T0 + 411_500,
        T0 + 413_250
    ));
    lines.extend(launch(32768, T0 + 600_000));
    lines.extend(launch(32784, t1));
    // A fold line at the second launch's length but from 12-warp CTAs: not that launch's.
    lines.push(format!(
        "MLXCEL_TLF 32784 2 12 {} {}",
        t1 + 11_000,
        t1 + 12_000
    ));
    let file = dir.join("tl-turbo4-asym-32768.json");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();

    let out = run(&["--min-len", "32768"], &file);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("24 warp lines, 2 fold lines; 0.5000 ns per cycle"),
        "{text}"
    );
    // entry: the last warp 0.7 us after the first; barrier: median entry 0.35 + 2; first tile
    // 3.35 / 3.70; loop end 8.35 / 8.70; partials 10.70; stream 8.35 - 3.35; the fold 411.50 /
    // 413.25, its merge 1.75.
    let row = "4 2 8 | 0.70 2.35 3.35/3.70 8.35/8.70 10.70 5.00 |";
    let rows: Vec<&str> = text.lines().filter(|l| l.contains(row)).collect();
    assert_eq!(
        rows,
        [
            format!("32768 {row} 411.50 413.25 1.75 | [10]"),
            // The same length 0.6 ms later: the fold line before it is not its own.
            format!("32768 {row} nan nan nan | [10]"),
            // Another length: the 12-warp fold line is not its own.
            format!("32784 {row} nan nan nan | [10]"),
        ],
        "{text}"
    );
    // The medians skip launches without a fold line.
    assert!(
        text.contains("NW 4, medians of 3 launches (us): entry 0.70, prologue 2.35"),
        "{text}"
    );
    assert!(
        text.contains("stream 5.00, fold_last 411.50, fold_end 413.25, merge 1.75"),
        "{text}"
    );

    // Without --min-len the fill's launch counts, its fold attached to it alone.
    let out = run(&[], &file);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("32 warp lines, 3 fold lines"), "{text}");
    assert!(
        text.contains(&format!("4096 {row} 20.00 21.00 1.00 | [10]")),
        "{text}"
    );
    assert!(text.contains("NW 4, medians of 4 launches"), "{text}");

    // A file without warp lines is refused with the probe's name.
    let empty = dir.join("empty.json");
    std::fs::write(&empty, "MLXCEL_TLF 32768 2 4 1 2\n").unwrap();
    let out = run(&[], &empty);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("MLXCEL_ATTENTION_TIMING_PROBE=timeline"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
