//! Array construction, read-back, elementwise math, reductions and shape ops, each
//! compared against plain-Rust computations on fresh random inputs.

mod common;

use common::{assert_close, randn, rng, uniform};
use half::{bf16, f16};
use mlxcel_core::mlx::ops::{concatenate, stack, where_};
use mlxcel_core::{Array, Dtype};
use rand::Rng;

#[test]
fn round_trips_every_element_type() {
    let mut r = rng("round_trips_every_element_type");
    let f: Vec<f32> = randn(&mut r, 24);
    let a = Array::from_slice(&f, &[2, 3, 4]).unwrap();
    assert_eq!(a.shape(), vec![2, 3, 4]);
    assert_eq!(a.ndim(), 3);
    assert_eq!(a.size(), 24);
    assert_eq!(a.nbytes(), 96);
    assert_eq!(a.dtype(), Dtype::F32);
    assert_eq!(a.to_vec::<f32>().unwrap(), f);

    let h: Vec<f16> = f.iter().map(|&x| f16::from_f32(x)).collect();
    assert_eq!(
        Array::from_slice(&h, &[24])
            .unwrap()
            .to_vec::<f16>()
            .unwrap(),
        h
    );
    let b: Vec<bf16> = f.iter().map(|&x| bf16::from_f32(x)).collect();
    assert_eq!(
        Array::from_slice(&b, &[24])
            .unwrap()
            .to_vec::<bf16>()
            .unwrap(),
        b
    );
    let i: Vec<i32> = (0..24).map(|_| r.gen()).collect();
    assert_eq!(
        Array::from_slice(&i, &[4, 6])
            .unwrap()
            .to_vec::<i32>()
            .unwrap(),
        i
    );
    let u: Vec<u32> = (0..24).map(|_| r.gen()).collect();
    assert_eq!(
        Array::from_slice(&u, &[24])
            .unwrap()
            .to_vec::<u32>()
            .unwrap(),
        u
    );
    let u8s: Vec<u8> = (0..24).map(|_| r.gen()).collect();
    assert_eq!(
        Array::from_slice(&u8s, &[24])
            .unwrap()
            .to_vec::<u8>()
            .unwrap(),
        u8s
    );
    let i64s: Vec<i64> = (0..24).map(|_| r.gen()).collect();
    assert_eq!(
        Array::from_slice(&i64s, &[24])
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        i64s
    );
    let bools: Vec<bool> = (0..24).map(|_| r.gen()).collect();
    assert_eq!(
        Array::from_slice(&bools, &[24])
            .unwrap()
            .to_vec::<bool>()
            .unwrap(),
        bools
    );
    assert_eq!(Array::scalar(7i32).unwrap().item::<i32>().unwrap(), 7);
}

#[test]
fn astype_matches_half_crate_rounding() {
    let mut r = rng("astype_matches_half_crate_rounding");
    let f = randn(&mut r, 1000);
    let a = Array::from_slice(&f, &[1000]).unwrap();
    let h = a.astype(Dtype::F16).unwrap().to_vec::<f16>().unwrap();
    let b = a.astype(Dtype::BF16).unwrap().to_vec::<bf16>().unwrap();
    for i in 0..f.len() {
        assert_eq!(h[i], f16::from_f32(f[i]), "f16 rounding at {i}");
        assert_eq!(b[i], bf16::from_f32(f[i]), "bf16 rounding at {i}");
    }
}

#[test]
fn construction_errors_are_errors() {
    assert!(Array::from_slice(&[1.0f32, 2.0, 3.0], &[2, 2]).is_err());
    assert!(Array::from_slice(&[1.0f32], &[-1]).is_err());
    let a = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    assert!(
        a.to_vec::<i32>().is_err(),
        "dtype mismatch must be an error"
    );
    assert!(a.item::<f32>().is_err(), "item of a 2-element array");
}

#[test]
fn full_zeros_ones_arange() {
    assert_eq!(
        Array::full(&[2, 2], 3.5, Dtype::F32)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![3.5; 4]
    );
    assert_eq!(
        Array::zeros(&[3], Dtype::I32)
            .unwrap()
            .to_vec::<i32>()
            .unwrap(),
        vec![0; 3]
    );
    assert_eq!(
        Array::ones(&[2], Dtype::F16).unwrap().to_f32_vec().unwrap(),
        vec![1.0; 2]
    );
    assert_eq!(
        Array::arange(0.0, 5.0, 1.0, Dtype::I32)
            .unwrap()
            .to_vec::<i32>()
            .unwrap(),
        vec![0, 1, 2, 3, 4]
    );
    assert_eq!(
        Array::full(&[1], -70000.0, Dtype::I32)
            .unwrap()
            .item::<i32>()
            .unwrap(),
        -70000
    );
}

#[test]
fn unary_math_matches_rust() {
    let mut r = rng("unary_math_matches_rust");
    let x = uniform(&mut r, 257, 0.05, 4.0);
    let a = Array::from_slice(&x, &[257]).unwrap();
    type F = fn(f32) -> f32;
    let cases: Vec<(&str, Array, F)> = vec![
        ("exp", a.exp().unwrap(), f32::exp),
        ("log", a.log().unwrap(), f32::ln),
        ("sqrt", a.sqrt().unwrap(), f32::sqrt),
        ("rsqrt", a.rsqrt().unwrap(), |v| 1.0 / v.sqrt()),
        ("sin", a.sin().unwrap(), f32::sin),
        ("cos", a.cos().unwrap(), f32::cos),
        ("tanh", a.tanh().unwrap(), f32::tanh),
        ("sigmoid", a.sigmoid().unwrap(), |v| {
            1.0 / (1.0 + (-v).exp())
        }),
        ("silu", a.silu().unwrap(), |v| v / (1.0 + (-v).exp())),
        ("negative", a.negative().unwrap(), |v| -v),
        ("square", a.square().unwrap(), |v| v * v),
        ("reciprocal", a.reciprocal().unwrap(), |v| 1.0 / v),
        ("floor", a.floor().unwrap(), f32::floor),
        ("ceil", a.ceil().unwrap(), f32::ceil),
        ("log1p", a.log1p().unwrap(), f32::ln_1p),
        ("abs", a.negative().unwrap().abs().unwrap(), f32::abs),
    ];
    for (name, arr, f) in cases {
        let got = arr.to_vec::<f32>().unwrap();
        let want: Vec<f32> = x.iter().map(|&v| f(v)).collect();
        eprintln!("checking {name}");
        assert_close(&got, &want, 1e-5, 1e-5);
    }
}

#[test]
fn binary_ops_broadcast_like_numpy() {
    let mut r = rng("binary_ops_broadcast_like_numpy");
    let (m, n) = (5usize, 7usize);
    let x = uniform(&mut r, m * n, 0.5, 3.0);
    let y = uniform(&mut r, n, 0.5, 3.0);
    let a = Array::from_slice(&x, &[m as i32, n as i32]).unwrap();
    let b = Array::from_slice(&y, &[n as i32]).unwrap();
    type F = fn(f32, f32) -> f32;
    let cases: Vec<(&str, Array, F)> = vec![
        ("add", a.add(&b).unwrap(), |p, q| p + q),
        ("subtract", a.subtract(&b).unwrap(), |p, q| p - q),
        ("multiply", a.multiply(&b).unwrap(), |p, q| p * q),
        ("divide", a.divide(&b).unwrap(), |p, q| p / q),
        ("maximum", a.maximum(&b).unwrap(), f32::max),
        ("minimum", a.minimum(&b).unwrap(), f32::min),
        ("power", a.power(&b).unwrap(), f32::powf),
        ("logaddexp", a.logaddexp(&b).unwrap(), |p, q| {
            (p.exp() + q.exp()).ln()
        }),
    ];
    for (name, arr, f) in cases {
        eprintln!("checking {name}");
        assert_eq!(arr.shape(), vec![m as i32, n as i32]);
        let got = arr.to_vec::<f32>().unwrap();
        let want: Vec<f32> = (0..m * n).map(|i| f(x[i], y[i % n])).collect();
        assert_close(&got, &want, 1e-5, 1e-5);
    }
    let lt = a.less(&b).unwrap().to_vec::<bool>().unwrap();
    let ge = a.greater_equal(&b).unwrap().to_vec::<bool>().unwrap();
    for i in 0..m * n {
        assert_eq!(lt[i], x[i] < y[i % n]);
        assert_eq!(ge[i], x[i] >= y[i % n]);
    }
    let sel = where_(&a.less(&b).unwrap(), &a, &b)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    for i in 0..m * n {
        assert_eq!(sel[i], if x[i] < y[i % n] { x[i] } else { y[i % n] });
    }
    // A shape mismatch is an error from MLX, not an abort.
    let bad = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
    let err = a.add(&bad).unwrap_err().to_string();
    assert!(err.contains("add") && err.contains("broadcast"), "{err}");
}

#[test]
fn bitwise_ops_on_packed_words() {
    let mut r = rng("bitwise_ops_on_packed_words");
    let x: Vec<u32> = (0..64).map(|_| r.gen()).collect();
    let y: Vec<u32> = (0..64).map(|_| r.gen()).collect();
    let s: Vec<u32> = (0..64).map(|_| r.gen_range(0..32)).collect();
    let a = Array::from_slice(&x, &[64]).unwrap();
    let b = Array::from_slice(&y, &[64]).unwrap();
    let sh = Array::from_slice(&s, &[64]).unwrap();
    let and = a.bitwise_and(&b).unwrap().to_vec::<u32>().unwrap();
    let or = a.bitwise_or(&b).unwrap().to_vec::<u32>().unwrap();
    let xor = a.bitwise_xor(&b).unwrap().to_vec::<u32>().unwrap();
    let shl = a.left_shift(&sh).unwrap().to_vec::<u32>().unwrap();
    let shr = a.right_shift(&sh).unwrap().to_vec::<u32>().unwrap();
    let inv = a.bitwise_invert().unwrap().to_vec::<u32>().unwrap();
    for i in 0..64 {
        assert_eq!(and[i], x[i] & y[i]);
        assert_eq!(or[i], x[i] | y[i]);
        assert_eq!(xor[i], x[i] ^ y[i]);
        assert_eq!(shl[i], x[i] << s[i]);
        assert_eq!(shr[i], x[i] >> s[i]);
        assert_eq!(inv[i], !x[i]);
    }
}

#[test]
fn reductions_match_rust() {
    let mut r = rng("reductions_match_rust");
    let (m, n) = (6usize, 11usize);
    let x = randn(&mut r, m * n);
    let a = Array::from_slice(&x, &[m as i32, n as i32]).unwrap();
    let rows: Vec<&[f32]> = x.chunks(n).collect();
    let sum = a.sum(&[1], false).unwrap().to_vec::<f32>().unwrap();
    let mean = a.mean(&[1], false).unwrap().to_vec::<f32>().unwrap();
    let max = a.max(&[1], false).unwrap().to_vec::<f32>().unwrap();
    let min = a.min(&[1], false).unwrap().to_vec::<f32>().unwrap();
    let amax = a.argmax(&[1], false).unwrap().to_vec::<u32>().unwrap();
    let lse = a.logsumexp(&[1], false).unwrap().to_vec::<f32>().unwrap();
    for (i, row) in rows.iter().enumerate() {
        let s: f32 = row.iter().sum();
        let mx = row.iter().cloned().fold(f32::MIN, f32::max);
        assert!((sum[i] - s).abs() < 1e-4);
        assert!((mean[i] - s / n as f32).abs() < 1e-5);
        assert_eq!(max[i], mx);
        assert_eq!(min[i], row.iter().cloned().fold(f32::MAX, f32::min));
        assert_eq!(row[amax[i] as usize], mx);
        let l = mx + row.iter().map(|v| (v - mx).exp()).sum::<f32>().ln();
        assert!((lse[i] - l).abs() < 1e-5);
    }
    let col = a.sum(&[0], true).unwrap();
    assert_eq!(col.shape(), vec![1, n as i32]);
    assert!(a.argmax(&[0, 1], false).is_err(), "argmax takes one axis");
}

#[test]
fn softmax_matches_rust() {
    let mut r = rng("softmax_matches_rust");
    let x = randn(&mut r, 4 * 33);
    let a = Array::from_slice(&x, &[4, 33]).unwrap();
    let got = a.softmax(&[-1], true).unwrap().to_vec::<f32>().unwrap();
    for (row, g) in x.chunks(33).zip(got.chunks(33)) {
        let mx = row.iter().cloned().fold(f32::MIN, f32::max);
        let z: f32 = row.iter().map(|v| (v - mx).exp()).sum();
        let want: Vec<f32> = row.iter().map(|v| (v - mx).exp() / z).collect();
        assert_close(g, &want, 1e-6, 1e-5);
    }
}

#[test]
fn reshape_transpose_and_slices() {
    let mut r = rng("reshape_transpose_and_slices");
    let (p, q, s) = (3usize, 4usize, 5usize);
    let x = randn(&mut r, p * q * s);
    let a = Array::from_slice(&x, &[p as i32, q as i32, s as i32]).unwrap();
    // transpose (2, 0, 1): out[k][i][j] = a[i][j][k]
    let t = a.transpose(&[2, 0, 1]).unwrap();
    assert_eq!(t.shape(), vec![s as i32, p as i32, q as i32]);
    let tv = t.to_vec::<f32>().unwrap();
    for i in 0..p {
        for j in 0..q {
            for k in 0..s {
                assert_eq!(tv[(k * p + i) * q + j], x[(i * q + j) * s + k]);
            }
        }
    }
    assert_eq!(
        a.reshape(&[-1, s as i32]).unwrap().shape(),
        vec![(p * q) as i32, s as i32]
    );
    assert!(a.reshape(&[7, 7]).is_err());
    // slice a[1:3, ::2, 1:4]
    let sl = a.slice_strided(&[1, 0, 1], &[3, 4, 4], &[1, 2, 1]).unwrap();
    assert_eq!(sl.shape(), vec![2, 2, 3]);
    let sv = sl.to_vec::<f32>().unwrap();
    let mut idx = 0;
    for i in 1..3 {
        for j in (0..4).step_by(2) {
            for k in 1..4 {
                assert_eq!(sv[idx], x[(i * q + j) * s + k]);
                idx += 1;
            }
        }
    }
    assert_eq!(a.expand_dims(&[0]).unwrap().shape(), vec![1, 3, 4, 5]);
    assert_eq!(
        a.expand_dims(&[0]).unwrap().squeeze(&[0]).unwrap().shape(),
        vec![3, 4, 5]
    );
    let bc = Array::from_slice(&[1.0f32, 2.0], &[2, 1])
        .unwrap()
        .broadcast_to(&[2, 3])
        .unwrap();
    assert_eq!(
        bc.to_vec::<f32>().unwrap(),
        vec![1.0, 1.0, 1.0, 2.0, 2.0, 2.0]
    );
}

#[test]
fn slice_update_static_and_dynamic() {
    let mut r = rng("slice_update_static_and_dynamic");
    let base = Array::zeros(&[2, 8, 4], Dtype::F32).unwrap();
    let u = randn(&mut r, 2 * 3 * 4);
    let upd = Array::from_slice(&u, &[2, 3, 4]).unwrap();
    let out = base.slice_update(&upd, &[0, 2, 0], &[2, 5, 4]).unwrap();
    let dynamic = base
        .slice_update_dynamic(&upd, &Array::from_slice(&[2i32], &[1]).unwrap(), &[1])
        .unwrap();
    let ov = out.to_vec::<f32>().unwrap();
    assert_eq!(ov, dynamic.to_vec::<f32>().unwrap());
    for b in 0..2 {
        for t in 0..8 {
            for d in 0..4 {
                let want = if (2..5).contains(&t) {
                    u[(b * 3 + t - 2) * 4 + d]
                } else {
                    0.0
                };
                assert_eq!(ov[(b * 8 + t) * 4 + d], want);
            }
        }
    }
    // The source is unchanged (value semantics).
    assert!(base.to_vec::<f32>().unwrap().iter().all(|&v| v == 0.0));
    assert!(base.slice_update(&upd, &[0, 6, 0], &[2, 9, 4]).is_err());
}

#[test]
fn concatenate_stack_split() {
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let b = Array::from_slice(&[5.0f32, 6.0], &[2, 1]).unwrap();
    let c = concatenate(&[&a, &b], 1).unwrap();
    assert_eq!(
        c.to_vec::<f32>().unwrap(),
        vec![1.0, 2.0, 5.0, 3.0, 4.0, 6.0]
    );
    assert!(concatenate(&[&a, &b], 0).is_err());
    let s = stack(&[&a, &a], 0).unwrap();
    assert_eq!(s.shape(), vec![2, 2, 2]);
    let parts = c.split_at(&[1, 2], 1).unwrap();
    assert_eq!(parts.len(), 3);
    assert_eq!(parts[2].to_vec::<f32>().unwrap(), vec![5.0, 6.0]);
}

#[test]
fn take_and_gather() {
    let mut r = rng("take_and_gather");
    let (v, d) = (10usize, 3usize);
    let table = randn(&mut r, v * d);
    let t = Array::from_slice(&table, &[v as i32, d as i32]).unwrap();
    let ids: Vec<i32> = (0..6).map(|_| r.gen_range(0..v as i32)).collect();
    let got = t
        .take(&Array::from_slice(&ids, &[2, 3]).unwrap(), 0)
        .unwrap();
    assert_eq!(got.shape(), vec![2, 3, d as i32]);
    let gv = got.to_vec::<f32>().unwrap();
    for (n, &id) in ids.iter().enumerate() {
        assert_eq!(
            &gv[n * d..(n + 1) * d],
            &table[id as usize * d..(id as usize + 1) * d]
        );
    }
    let cols: Vec<u32> = (0..v).map(|_| r.gen_range(0..d as u32)).collect();
    let along = t
        .take_along_axis(&Array::from_slice(&cols, &[v as i32, 1]).unwrap(), 1)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    for i in 0..v {
        assert_eq!(along[i], table[i * d + cols[i] as usize]);
    }
}

#[test]
fn sort_topk_argpartition() {
    let mut r = rng("sort_topk_argpartition");
    let x = randn(&mut r, 50);
    let a = Array::from_slice(&x, &[50]).unwrap();
    let mut sorted = x.clone();
    sorted.sort_by(|p, q| p.partial_cmp(q).unwrap());
    assert_eq!(a.sort(0).unwrap().to_vec::<f32>().unwrap(), sorted);
    let idx = a.argsort(0).unwrap().to_vec::<u32>().unwrap();
    let by_idx: Vec<f32> = idx.iter().map(|&i| x[i as usize]).collect();
    assert_eq!(by_idx, sorted);
    let mut top = a.topk(5, 0).unwrap().to_vec::<f32>().unwrap();
    top.sort_by(|p, q| p.partial_cmp(q).unwrap());
    assert_eq!(top, sorted[45..].to_vec());
    let kth = 20;
    let part = a.argpartition(kth, 0).unwrap().to_vec::<u32>().unwrap();
    let pivot = x[part[kth as usize] as usize];
    assert_eq!(pivot, sorted[kth as usize]);
    assert!(part[..kth as usize].iter().all(|&i| x[i as usize] <= pivot));
    assert!(part[kth as usize..].iter().all(|&i| x[i as usize] >= pivot));
    let cs = a.cumsum(0, false, true).unwrap().to_vec::<f32>().unwrap();
    let mut acc = 0.0;
    for i in 0..50 {
        acc += x[i];
        assert!((cs[i] - acc).abs() < 1e-4);
    }
}

/// Reading an array queued by `async_eval` waits for that array only, not for work queued
/// after it: the pipelined decode loop reads token t after queueing step t + 1, and a read
/// that went through a new eval (a contiguous copy) waited for step t + 1 as well, a whole
/// step per token (found on the H200 in session 6). The later work here is a chain of
/// matmuls that takes far longer than reading a queued scalar should.
#[test]
fn reading_a_queued_array_does_not_wait_for_later_work() {
    use mlxcel_core::mlx::array::async_eval_all;
    use std::time::Instant;
    let a = Array::from_slice(&[3.0f32], &[1])
        .unwrap()
        .multiply(&Array::from_slice(&[2.0f32], &[1]).unwrap())
        .unwrap();
    async_eval_all(&[&a]).unwrap();
    let n = 1024;
    let avg = Array::from_slice(&vec![1.0 / n as f32; n * n], &[n as i32, n as i32]).unwrap();
    let mut later = Array::from_slice(&vec![1.0f32; n * n], &[n as i32, n as i32]).unwrap();
    for _ in 0..8 {
        later = later.matmul(&avg).unwrap();
    }
    let t = Instant::now();
    async_eval_all(&[&later]).unwrap();
    assert_eq!(a.item::<f32>().unwrap(), 6.0);
    let read = t.elapsed().as_secs_f64();
    later.eval().unwrap();
    let all = t.elapsed().as_secs_f64();
    assert!(
        all > 0.05,
        "the later work took {all:.3} s: too short to tell the waits apart"
    );
    assert!(
        read < 0.5 * all,
        "reading the queued scalar took {read:.3} s of the later work's {all:.3} s"
    );
    // Every entry stays 1 through the averaging matmuls.
    let v = later
        .slice(&[0, 0], &[1, 4])
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert!(v.iter().all(|x| (x - 1.0).abs() < 1e-4), "{v:?}");
}

#[test]
fn pending_ops_counts_what_evaluation_would_schedule() {
    let x = Array::from_slice(&[1f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    // Data from the host is available: nothing to schedule.
    assert_eq!(x.pending_ops().unwrap(), 0);
    let b = x.add(&x).unwrap();
    let c = b.multiply(&b).unwrap();
    assert_eq!(b.pending_ops().unwrap(), 1);
    // b is shared by both operands of c: counted once.
    assert_eq!(c.pending_ops().unwrap(), 2);
    // A split is one op with two outputs: counted once, plus the add of its halves.
    let halves = c.split_at(&[2], 0).unwrap();
    let d = halves[0].add(&halves[1]).unwrap();
    assert_eq!(d.pending_ops().unwrap(), 4);
    // Evaluated ops are no longer pending.
    b.eval().unwrap();
    assert_eq!(c.pending_ops().unwrap(), 1);
    assert_eq!(d.pending_ops().unwrap(), 3);
    d.eval().unwrap();
    assert_eq!(d.pending_ops().unwrap(), 0);
    assert_eq!(d.to_vec::<f32>().unwrap(), [4.0 + 36.0, 16.0 + 64.0]);
}

/// The fp16 KV cache appends each token with `slice_update` (kv::buffer) and relies on MLX
/// writing into the input's buffer when nothing else holds it (donation); when something does
/// (e.g. a previous step's attention still queued), MLX copies the whole cache first.
/// `Array::buffer_id` tells the two apart (examples/slice_update_donation.rs uses it on a decode
/// pattern): same buffer without other holders, a new one while a clone is held, and the
/// values right either way.
#[test]
fn slice_update_reuses_the_buffer_only_when_nothing_else_holds_it() {
    let mut r = rng("slice_update_reuses_the_buffer_only_when_nothing_else_holds_it");
    let base: Vec<f32> = randn(&mut r, 2 * 8 * 4);
    let row: Vec<f32> = randn(&mut r, 2 * 4);
    let cache = Array::from_slice(&base, &[2, 8, 4]).unwrap();
    let id = cache.buffer_id().unwrap();
    assert_ne!(id, 0);
    let lazy = cache.add_scalar(1.0).unwrap();
    assert_eq!(lazy.buffer_id().unwrap(), 0, "no buffer before evaluation");
    let upd = Array::from_slice(&row, &[2, 1, 4]).unwrap();
    let want = |pos: usize| {
        let mut w = base.clone();
        for b in 0..2 {
            w[(b * 8 + pos) * 4..(b * 8 + pos) * 4 + 4].copy_from_slice(&row[b * 4..b * 4 + 4]);
        }
        w
    };

    // Held elsewhere: the update must copy into a new buffer and leave the held array as is.
    let held = cache.clone();
    let copied = cache.slice_update(&upd, &[0, 3, 0], &[2, 4, 4]).unwrap();
    copied.eval().unwrap();
    assert_ne!(copied.buffer_id().unwrap(), id);
    assert_eq!(copied.to_vec::<f32>().unwrap(), want(3));
    assert_eq!(held.to_vec::<f32>().unwrap(), base);
    drop(held);

    // Sole holder (the input's handle dropped before evaluation, as kv::buffer does): the
    // update takes the input's buffer over.
    let id = copied.buffer_id().unwrap();
    let donated = copied.slice_update(&upd, &[0, 5, 0], &[2, 6, 4]).unwrap();
    drop(copied);
    donated.eval().unwrap();
    assert_eq!(donated.buffer_id().unwrap(), id);
    let mut w = want(3);
    for b in 0..2 {
        w[(b * 8 + 5) * 4..(b * 8 + 5) * 4 + 4].copy_from_slice(&row[b * 4..b * 4 + 4]);
    }
    assert_eq!(donated.to_vec::<f32>().unwrap(), w);
}
