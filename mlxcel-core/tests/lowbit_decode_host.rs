//! The tensor-core kernel's 2- and 3-bit decode (`kernels/cuda/lowbit_decode.cuh`, used with
//! `MLXCEL_LOWBIT_CUDA`) built for the host and run on codes from the codec. The header is
//! compiled by the system C++ compiler (`$CXX`, else `c++`) with a C++ model of the two PTX
//! instructions it uses (`prmt.b32` in its default mode, and the bit select that `lop3` does);
//! the words fed to it are the ones the kernel's lanes read (`k_row_low` and `v_pairs_low` in
//! `cuda/decode_attention_mma.cu`), and every decoded half must equal the fp16 codebook value of
//! the code `pack::unpack` gives for that element.
//!
//! The same cases run through the table path too (`fill_lut2` and `decode_pairs2_lut`,
//! `MLXCEL_MMA_LUT_LOW`): the driver fills a host copy of the 64 KiB table with the fill's 128
//! threads (after poisoning it) and looks each pair up at a lane's copy, K's part or V's.
//!
//! Why on the CPU: the kernel cannot run on this machine, and a wrong field order or sign bit in
//! its bit arithmetic is what a failing GPU parity case would explain least. The GPU parity
//! suite (`gpu_fused_decode.rs` with `MLXCEL_LOWBIT_CUDA=1`) still has to run the kernel itself.

mod common;

use common::{randn, rng};
use half::f16;
use mlxcel_core::kv::turbo::codec::TurboCodec;
use mlxcel_core::kv::turbo::pack::unpack;
use mlxcel_core::Array;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The driver: reads `N SIGN lo hi a b sab` per line, prints decode_pairs2's N words (with the
/// argument `lut`, decode_pairs2_lut's through a freshly filled table).
const DRIVER: &str = r#"
#include <cstdio>
#include <cstring>
#define __device__
#define __forceinline__ inline
namespace mlxcel_mma {
typedef unsigned int u32;
// prmt.b32, default mode: byte i of the result is byte (nibble i of sel) & 7 of {b, a} (a's
// bytes 0-3, b's 4-7); with the nibble's bit 3 set, that byte's sign replicated.
inline u32 prmt(u32 a, u32 b, u32 sel) {
  const unsigned long long src = (static_cast<unsigned long long>(b) << 32) | a;
  u32 d = 0;
  for (int i = 0; i < 4; ++i) {
    const u32 n = (sel >> (4 * i)) & 0xf;
    u32 byte = static_cast<u32>(src >> (8 * (n & 7))) & 0xff;
    if (n & 8) byte = (byte & 0x80) ? 0xff : 0;
    d |= byte << (8 * i);
  }
  return d;
}
// lop3.b32 with 0xe4: a where m is set, b elsewhere.
inline u32 bit_select(u32 a, u32 b, u32 m) { return (a & m) | (b & ~m); }
}  // namespace mlxcel_mma
#include "lowbit_decode.cuh"
using namespace mlxcel_mma;
static unsigned char table[256 * LUT2_ROW];
static int calls = 0;
template <int N, bool S>
void run(bool lut, const Book2& bk, u32 a, u32 b, u32 sab) {
  u32 out[N];
  if (lut) {
    // Poisoned, then both parts filled by the fill's 128 threads; each call reads another lane's
    // copy of K's part (even calls) or V's (odd), the other part holding another book (its
    // bytes rotated), so that a lane reading the wrong part reads wrong values.
    std::memset(table, 0xa5, sizeof table);
    auto store16 = [](unsigned char* p, u32 w0, u32 w1, u32 w2, u32 w3) {
      const u32 w[4] = {w0, w1, w2, w3};
      std::memcpy(p, w, 16);
    };
    const int read_part = calls % 2;
    const Book2 other{prmt(bk.lo, 0u, 0x2103u), prmt(bk.hi, 0u, 0x2103u)};
    for (int part = 0; part < 2; ++part)
      for (int t = 0; t < 128; ++t) fill_lut2(table, part == read_part ? bk : other, part, t, store16);
    auto load = [](u32 addr, u32& x, u32& y) {
      std::memcpy(&x, table + addr, 4);
      std::memcpy(&y, table + addr + 4, 4);
    };
    decode_pairs2_lut<N, S>(load, lut2_lane(calls % 32, read_part), a, b, sab, out);
    ++calls;
  } else {
    decode_pairs2<N, S>(bk, a, b, sab, out);
  }
  for (int k = 0; k < N; ++k) std::printf("%u ", out[k]);
  std::printf("\n");
}
int main(int argc, char** argv) {
  const bool lut = argc > 1 && std::strcmp(argv[1], "lut") == 0;
  int n, s;
  unsigned lo, hi, a, b, sab;
  while (std::scanf("%d %d %u %u %u %u %u", &n, &s, &lo, &hi, &a, &b, &sab) == 7) {
    const Book2 bk{lo, hi};
    if (n == 16 && s) run<16, true>(lut, bk, a, b, sab);
    else if (n == 16) run<16, false>(lut, bk, a, b, sab);
    else if (n == 8 && s) run<8, true>(lut, bk, a, b, sab);
    else run<8, false>(lut, bk, a, b, sab);
  }
  return 0;
}
"#;

fn cuda_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/kernels/cuda")
}

/// Compiles the driver into a fresh temporary directory and returns the binary's path.
fn build_driver() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "mlxcel-lowbit-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("driver.cc");
    std::fs::write(&src, DRIVER).unwrap();
    let bin = dir.join("driver");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let out = Command::new(&cxx)
        .args(["-std=c++17", "-O1", "-Wno-unknown-pragmas", "-I"])
        .arg(cuda_dir())
        .arg(&src)
        .arg("-o")
        .arg(&bin)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C++ compiler {cxx:?} (set CXX): {e}"));
    assert!(
        out.status.success(),
        "{cxx} failed on lowbit_decode.cuh:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    bin
}

/// One decode_pairs2 call: its inputs and the words it must return.
struct Case {
    n: usize,
    sign: bool,
    lo: u32,
    hi: u32,
    a: u32,
    b: u32,
    sab: u32,
    want: Vec<u32>,
    what: String,
}

/// Runs every case through the driver (through the table with `lut`) and returns the cases
/// whose words differ.
fn run(bin: &Path, cases: &[Case], lut: bool) -> Vec<String> {
    let mut child = Command::new(bin)
        .args(if lut { &["lut"][..] } else { &[][..] })
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        for c in cases {
            writeln!(
                stdin,
                "{} {} {} {} {} {} {}",
                c.n, c.sign as i32, c.lo, c.hi, c.a, c.b, c.sab
            )
            .unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), cases.len(), "one output line per case");
    let mut bad = Vec::new();
    for (c, line) in cases.iter().zip(lines) {
        let got: Vec<u32> = line
            .split_whitespace()
            .map(|w| w.parse().unwrap())
            .collect();
        if got != c.want {
            bad.push(format!(
                "{}: got {:08x?}, want {:08x?}",
                c.what, got, c.want
            ));
        }
    }
    bad
}

fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn le16(b: &[u8]) -> u32 {
    u16::from_le_bytes([b[0], b[1]]) as u32
}

/// Every (K lane, token) and (V lane, token pair) of `tokens` random vectors encoded with a
/// `bits`-bit codec of head dim `d`.
fn cases_for(bits: u32, d: usize, tokens: usize, r: &mut rand::rngs::StdRng) -> Vec<Case> {
    let codec = TurboCodec::new(bits, d, 11).unwrap();
    let x = Array::from_slice(&randn(r, tokens * d), &[tokens as i32, d as i32]).unwrap();
    let e = codec.encode(&x).unwrap();
    let packed = e.packed.to_vec::<u8>().unwrap();
    let codes = unpack(&e.packed, bits, d).unwrap().to_vec::<u8>().unwrap();
    let lut = codec.lut16().to_vec::<f32>().unwrap();
    let row = d * bits as usize / 8;
    assert_eq!(packed.len(), tokens * row);
    // The kernel's table (make_book2): turbo2's four values, turbo3's four magnitudes.
    let base = if bits == 3 { 4 } else { 0 };
    let (mut lo, mut hi) = (0u32, 0u32);
    for m in 0..4 {
        let h = f16::from_f32(lut[base + m]).to_bits() as u32;
        lo |= (h & 0xff) << (8 * m);
        hi |= (h >> 8) << (8 * m);
    }
    // What the kernel must produce for element i of token t: the fp16 value of its code.
    let val = |t: usize, i: usize| f16::from_f32(lut[codes[t * d + i] as usize]).to_bits() as u32;
    let sign = bits == 3;
    let mut cases = Vec::new();
    // K (k_row_low): lane column c holds dims c * DK + j and + DK / 2 as pair j.
    let dk = d / 4;
    for t in 0..tokens {
        let rb = &packed[t * row..(t + 1) * row];
        for c in 0..4 {
            let (a, b, sab) = if d == 128 {
                let sab = if sign { le32(&rb[d / 4 + c * 4..]) } else { 0 };
                (le32(&rb[c * 8..]), le32(&rb[c * 8 + 4..]), sab)
            } else {
                let m = le32(&rb[c * 4..]);
                let sab = if sign {
                    let s = le16(&rb[d / 4 + c * 2..]);
                    (s & 0xff) | ((s >> 8) << 16)
                } else {
                    0
                };
                (m, m >> 16, sab)
            };
            let want = (0..dk / 2)
                .map(|j| val(t, c * dk + j) | (val(t, c * dk + j + dk / 2) << 16))
                .collect();
            cases.push(Case {
                n: dk / 2,
                sign,
                lo,
                hi,
                a,
                b,
                sab,
                want,
                what: format!("turbo{bits} d={d} K token {t} lane column {c}"),
            });
        }
    }
    // V (v_pairs_low): lane row r holds dims r * DV + k of two tokens as pair k.
    let dv = d / 8;
    for t in 0..tokens - 1 {
        let (ta, tb) = (t, t + 1);
        let (ra, rb) = (
            &packed[ta * row..(ta + 1) * row],
            &packed[tb * row..(tb + 1) * row],
        );
        for lr in 0..8 {
            let mag = lr * (d / 32);
            let sg = d / 4 + lr * (d / 64);
            let (a, b, sab) = if d == 128 {
                let sab = if sign {
                    le16(&ra[sg..]) | (le16(&rb[sg..]) << 16)
                } else {
                    0
                };
                (le32(&ra[mag..]), le32(&rb[mag..]), sab)
            } else {
                let sab = if sign {
                    ra[sg] as u32 | ((rb[sg] as u32) << 16)
                } else {
                    0
                };
                (le16(&ra[mag..]), le16(&rb[mag..]), sab)
            };
            let want = (0..dv)
                .map(|k| val(ta, lr * dv + k) | (val(tb, lr * dv + k) << 16))
                .collect();
            cases.push(Case {
                n: dv,
                sign,
                lo,
                hi,
                a,
                b,
                sab,
                want,
                what: format!("turbo{bits} d={d} V tokens {ta},{tb} lane row {lr}"),
            });
        }
    }
    cases
}

#[test]
fn lowbit_decode_gives_the_codebook_values_of_the_codes_lanes_read() {
    let mut r = rng("lowbit_decode_gives_the_codebook_values_of_the_codes_lanes_read");
    let bin = build_driver();
    let mut total = 0;
    for bits in [2u32, 3] {
        for d in [64usize, 128] {
            let cases = cases_for(bits, d, 24, &mut r);
            total += cases.len();
            for lut in [false, true] {
                let bad = run(&bin, &cases, lut);
                assert!(
                    bad.is_empty(),
                    "table {lut}: {} of {} cases differ, first: {}",
                    bad.len(),
                    cases.len(),
                    bad[0]
                );
            }
        }
    }
    eprintln!("{total} decode_pairs2 and decode_pairs2_lut calls each match the codec");
    let _ = std::fs::remove_dir_all(bin.parent().unwrap());
}

#[test]
fn the_host_model_of_prmt_and_a_wrong_layout_are_caught() {
    // A wrong sign plane (the first token's signs for both) must fail: the comparison can fail.
    let mut r = rng("the_host_model_of_prmt_and_a_wrong_layout_are_caught");
    let bin = build_driver();
    let mut cases = cases_for(3, 128, 8, &mut r);
    for c in cases.iter_mut().filter(|c| c.what.contains(" V ")) {
        c.sab = (c.sab & 0xffff) | ((c.sab & 0xffff) << 16);
    }
    for lut in [false, true] {
        let bad = run(&bin, &cases, lut);
        assert!(
            !bad.is_empty(),
            "table {lut}: a wrong sign plane went unnoticed"
        );
    }
    let _ = std::fs::remove_dir_all(bin.parent().unwrap());
}
