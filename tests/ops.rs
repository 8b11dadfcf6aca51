//! Ops through the public API: hand-computed references, layouts, FLOP counts, and every op run
//! end to end on the CPU backend and verified against its reference.

use half::bf16;
use rocsweep::backend::cpu::CpuBackend;
use rocsweep::dtype::DType;
use rocsweep::exec::worker::unit::{Outcome, ReferenceCache, run_unit};
use rocsweep::op::value::Value;
use rocsweep::op::{Case, Inputs, OpKind, Problem};
use rocsweep::results::status::Status;
use rocsweep::spec::policy::Policies;
use rocsweep::tensor::HostData;

/// A case of `op` with the given parameters, defaults for the rest (as a sweep would build it).
fn case(op: OpKind, set: &[(&str, Value)]) -> Case {
    let text = format!(
        "name = \"t\"\nop = \"{}\"\n[axes]\n{}",
        op.name(),
        set.iter()
            .map(|(k, v)| match v {
                Value::Str(s) => format!("{k} = \"{s}\"\n"),
                other => format!("{k} = {other}\n"),
            })
            .collect::<String>()
    );
    let sweep =
        rocsweep::spec::load_str("t.toml", &text, &[]).unwrap_or_else(|e| panic!("{}", e.render()));
    let mut cases = sweep.cases();
    let c = cases.next().expect("one case").expect("valid case");
    assert!(cases.next().is_none());
    c
}

fn quick() -> Policies {
    let mut p = Policies::default();
    p.timing.enabled = false;
    p
}

fn run_cpu(c: &Case) -> Outcome {
    let mut b = CpuBackend::new();
    let mut no = |_: &'static str| {};
    run_unit(
        &mut b,
        c,
        &c.solver,
        &quick(),
        &mut ReferenceCache::default(),
        &mut no,
    )
}

fn int(v: i64) -> Value {
    Value::Int(v)
}

fn word(s: &str) -> Value {
    Value::Str(s.into())
}

#[test]
fn gemm_reference_matches_a_hand_computed_product() {
    let c = case(
        OpKind::Gemm,
        &[
            ("m", int(2)),
            ("n", int(2)),
            ("k", int(3)),
            ("trans_b", Value::Bool(true)),
        ],
    );
    let Problem::Gemm(g) = &c.problem else {
        panic!("gemm")
    };
    // A = [[1,2,3],[4,5,6]], B stored n x k = [[1,0,1],[0,1,0]] -> C = A * B^T = [[4,2],[10,5]].
    let inputs = rocsweep::op::gemm::GemmInputs {
        a: HostData::F32(vec![1., 2., 3., 4., 5., 6.]),
        b: HostData::F32(vec![1., 0., 1., 0., 1., 0.]),
    };
    assert_eq!(g.reference(&inputs), vec![4., 2., 10., 5.]);
    assert_eq!(c.problem.flops(), 2.0 * 2.0 * 2.0 * 3.0);
}

#[test]
fn conv_flops_and_bytes_follow_the_formula() {
    let c = case(
        OpKind::Conv2d,
        &[
            ("n", int(8)),
            ("c_in", int(64)),
            ("c_out", int(128)),
            ("h", int(56)),
            ("kernel", int(3)),
            ("pad", int(1)),
        ],
    );
    // 2 * n * c_out * oh * ow * c_in * kh * kw
    assert_eq!(
        c.problem.flops(),
        2.0 * 8.0 * 128.0 * 56.0 * 56.0 * 64.0 * 9.0
    );
    let elems = 8 * 64 * 56 * 56 + 128 * 64 * 9 + 8 * 128 * 56 * 56;
    assert_eq!(c.problem.bytes(), (elems * 4) as f64);
}

#[test]
fn conv_reference_hand_computed_with_stride_and_padding() {
    // 1x1x3x3 input 1..9, 2x2 all-ones filter, pad 1, stride 2: output 2x2 of window sums.
    let c = case(
        OpKind::Conv2d,
        &[
            ("c_in", int(1)),
            ("c_out", int(1)),
            ("h", int(3)),
            ("kernel", int(2)),
            ("pad", int(1)),
            ("stride", int(2)),
        ],
    );
    let Problem::Conv2d(p) = &c.problem else {
        panic!("conv")
    };
    let inputs = rocsweep::op::conv2d::ConvInputs {
        a: HostData::F32((1..=9).map(|x| x as f32).collect()),
        b: HostData::F32(vec![1.0; 4]),
    };
    // Padded input rows/cols start at -1; windows at (-1,-1),(−1,1),(1,−1),(1,1).
    assert_eq!(
        p.reference(&inputs),
        vec![1.0, 2.0 + 3.0, 4.0 + 7.0, 5.0 + 6.0 + 8.0 + 9.0]
    );
}

#[test]
fn nhwc_gives_the_nchw_result_permuted() {
    for dir in ["fwd", "bwd_data", "bwd_weights"] {
        let base = [
            ("direction", word(dir)),
            ("n", int(2)),
            ("c_in", int(4)),
            ("c_out", int(6)),
            ("h", int(5)),
            ("groups", int(2)),
        ];
        let nchw = case(OpKind::Conv2d, &base);
        let mut with = base.to_vec();
        with.push(("layout", word("nhwc")));
        let nhwc = case(OpKind::Conv2d, &with);
        let (Problem::Conv2d(a), Problem::Conv2d(b)) = (&nchw.problem, &nhwc.problem) else {
            panic!()
        };
        let ia = a.make_inputs(1);
        let g = a.geom;
        // Permute the NCHW inputs into NHWC (and KCRS filters into KRSC) for the NHWC problem.
        let perm = |d: &HostData, n, c, h, w| {
            let src = d.to_f32_vec();
            let mut dst = vec![0.0; src.len()];
            rocsweep::cpu::conv::nchw_to_nhwc(&src, n, c, h, w, &mut dst);
            HostData::F32(dst)
        };
        let (oh, ow) = (g.out_h(), g.out_w());
        let filt = |d: &HostData| perm(d, g.c_out, g.c_in / g.groups, g.kh, g.kw);
        let x = |d: &HostData| perm(d, g.n, g.c_in, g.h, g.w);
        let y = |d: &HostData| perm(d, g.n, g.c_out, oh, ow);
        let ib = match dir {
            "fwd" => rocsweep::op::conv2d::ConvInputs {
                a: x(&ia.a),
                b: filt(&ia.b),
            },
            "bwd_data" => rocsweep::op::conv2d::ConvInputs {
                a: y(&ia.a),
                b: filt(&ia.b),
            },
            _ => rocsweep::op::conv2d::ConvInputs {
                a: x(&ia.a),
                b: y(&ia.b),
            },
        };
        let ra = HostData::F32(a.reference(&ia).iter().map(|&v| v as f32).collect());
        let want = match dir {
            "fwd" => y(&ra),
            "bwd_data" => x(&ra),
            _ => filt(&ra),
        };
        let got: Vec<f32> = b.reference(&ib).iter().map(|&v| v as f32).collect();
        assert_eq!(got, want.to_f32_vec(), "direction {dir}");
    }
}

#[test]
fn cast_rounds_to_nearest_even_by_hand() {
    let c = case(
        OpKind::Cast,
        &[
            ("from", word("f32")),
            ("to", word("bf16")),
            ("count", int(4)),
        ],
    );
    let Problem::Cast(p) = &c.problem else {
        panic!("cast")
    };
    let input = HostData::F32(vec![
        1.0 + 2f32.powi(-8),       // halfway between 1 and 1+2^-7: even is 1.0 (0x3f80)
        1.0 + 3.0 * 2f32.powi(-8), // halfway between 1+2^-7 and 1+2^-6: even is 0x3f82
        1.0 + 2f32.powi(-8) + 2f32.powi(-20), // just past halfway: rounds up to 0x3f81
        -0.0,
    ]);
    let HostData::Bf16(out) = p.reference(&input) else {
        panic!("bf16 out")
    };
    let bits: Vec<u16> = out.iter().map(|x| x.to_bits()).collect();
    assert_eq!(bits, vec![0x3f80, 0x3f82, 0x3f81, 0x8000]);
    assert_eq!(bf16::from_f32(70000.0).to_f32(), 70144.0);
}

#[test]
fn every_op_and_dtype_runs_ok_on_the_cpu_backend() {
    let mut cases = Vec::new();
    for dt in ["f32", "f16", "bf16"] {
        for dir in ["fwd", "bwd_data", "bwd_weights"] {
            for layout in ["nchw", "nhwc"] {
                cases.push(case(
                    OpKind::Conv2d,
                    &[
                        ("direction", word(dir)),
                        ("layout", word(layout)),
                        ("dtype", word(dt)),
                        ("n", int(2)),
                        ("c_in", int(6)),
                        ("c_out", int(4)),
                        ("h", int(9)),
                        ("w", int(7)),
                        ("stride", int(2)),
                        ("dilation", int(2)),
                        ("groups", int(2)),
                    ],
                ));
            }
        }
        cases.push(case(
            OpKind::Gemm,
            &[
                ("dtype", word(dt)),
                ("m", int(33)),
                ("n", int(17)),
                ("k", int(300)),
                ("trans_a", Value::Bool(true)),
                ("batch", int(3)),
            ],
        ));
        cases.push(case(
            OpKind::Rng,
            &[
                ("dtype", word(dt)),
                ("count", int(200_000)),
                ("mean", Value::Float(3.0)),
                ("std", Value::Float(2.0)),
            ],
        ));
        cases.push(case(
            OpKind::Graph,
            &[
                ("dtype", word(dt)),
                ("channels", int(4)),
                ("size", int(6)),
                ("replays", int(3)),
                ("keep_outputs", Value::Bool(true)),
            ],
        ));
        for to in ["f32", "f16", "bf16"] {
            cases.push(case(
                OpKind::Cast,
                &[("from", word(dt)), ("to", word(to)), ("count", int(10_000))],
            ));
        }
    }
    cases.push(case(
        OpKind::Gemm,
        &[("compute", word("tf32")), ("m", int(64)), ("k", int(512))],
    ));
    for dir in ["h2d", "d2h", "d2d"] {
        for mem in ["pageable", "pinned"] {
            cases.push(case(
                OpKind::Copy,
                &[
                    ("direction", word(dir)),
                    ("memory", word(mem)),
                    ("bytes", int(4096)),
                ],
            ));
        }
    }
    let mut bad = Vec::new();
    for c in &cases {
        let out = run_cpu(c);
        if out.status != Status::Ok {
            bad.push(format!(
                "{}: {} {}",
                rocsweep::op::canonical_text(c.problem.kind(), &c.values),
                out.status,
                out.error
            ));
        }
        assert!(
            !out.reference.is_empty() && !out.reference.starts_with("none"),
            "verified: {}",
            out.reference
        );
    }
    assert!(bad.is_empty(), "units not ok:\n{}", bad.join("\n"));
}

#[test]
fn f16_accumulating_gemm_is_unsupported_on_the_cpu() {
    let c = case(
        OpKind::Gemm,
        &[
            ("dtype", word("f16")),
            ("compute", word("f16")),
            ("m", int(8)),
        ],
    );
    let out = run_cpu(&c);
    assert_eq!(out.status, Status::Unsupported);
    assert_eq!(out.phase, "compile");
    assert!(out.error.contains("f16-accumulating"), "{}", out.error);
}

#[test]
fn unknown_solver_for_the_backend_is_unsupported_not_a_crash() {
    let mut c = case(OpKind::Conv2d, &[("h", int(8))]);
    c.solver = "winograd".into();
    let out = run_cpu(&c);
    assert_eq!(out.status, Status::Unsupported);
    assert!(out.error.contains("no solver `winograd`"), "{}", out.error);
}

#[test]
fn large_references_are_skipped_and_say_so() {
    let c = case(OpKind::Gemm, &[("m", int(128))]);
    let mut p = quick();
    p.verify.max_reference_gflop = 0.001;
    let mut b = CpuBackend::new();
    let mut no = |_: &'static str| {};
    let out = run_unit(
        &mut b,
        &c,
        "default",
        &p,
        &mut ReferenceCache::default(),
        &mut no,
    );
    assert_eq!(out.status, Status::Ok);
    assert!(
        out.reference.starts_with("none (reference needs 0.0 GFLOP"),
        "{}",
        out.reference
    );
    assert!(out.verification.is_none());
}

#[test]
fn inputs_are_deterministic_per_seed_and_exact_in_their_dtype() {
    let c = case(OpKind::Gemm, &[("dtype", word("bf16")), ("m", int(16))]);
    let (Inputs::Gemm(a), Inputs::Gemm(b)) = (c.problem.make_inputs(42), c.problem.make_inputs(42))
    else {
        panic!()
    };
    assert_eq!(a.a, b.a);
    assert_eq!(a.a.dtype(), DType::Bf16);
    let Inputs::Gemm(other) = c.problem.make_inputs(43) else {
        panic!()
    };
    assert_ne!(a.a, other.a);
}
