//! Expansion of sweeps into cases through the public API: product order, generators, zip
//! groups, filters, `--axis` overrides, defaults, env combinations and stable case ids.

use rocsweep::op::value::Value;
use rocsweep::op::{Case, OpKind, canonical_text};
use rocsweep::spec::expand::EnvCombo;
use rocsweep::spec::{self, Sweep};

/// The id of the all-defaults conv2d case: the first 16 hex digits of the SHA-256 of
/// `conv2d;direction=fwd;n=1;c_in=16;c_out=16;h=32;w=32;kernel=3;pad=1;stride=1;dilation=1;groups=1;layout=nchw;dtype=f32`.
/// Case ids name cases across runs (result CSVs, comparisons between runs): if this changes,
/// results from earlier runs no longer line up with new ones. Change it only on purpose.
const DEFAULT_CONV2D_ID: &str = "2d18f7ba3805f68a";

/// Loads a conv2d sweep whose body (axes, zip groups, drop...) follows the name and op lines.
fn conv(body: &str) -> Sweep {
    conv_with(body, &[])
}

fn conv_with(body: &str, overrides: &[&str]) -> Sweep {
    load(&format!("name = \"t\"\nop = \"conv2d\"\n{body}"), overrides)
}

fn load(text: &str, overrides: &[&str]) -> Sweep {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    spec::load_str("t.toml", text, &overrides).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn cases(s: &Sweep) -> Vec<Case> {
    s.cases()
        .map(|c| c.unwrap_or_else(|e| panic!("invalid case: {e}")))
        .collect()
}

/// Value of parameter `name` in a case.
fn get<'a>(op: OpKind, case: &'a Case, name: &str) -> &'a Value {
    let i = op
        .params()
        .iter()
        .position(|p| p.name == name)
        .unwrap_or_else(|| panic!("{} has no parameter {name}", op.name()));
    &case.values[i]
}

fn int(case: &Case, name: &str) -> i64 {
    get(OpKind::Conv2d, case, name)
        .as_i64()
        .unwrap_or_else(|| panic!("{name} is not an integer"))
}

fn text(case: &Case, name: &str) -> String {
    get(OpKind::Conv2d, case, name).to_string()
}

/// (a, b) integer pairs of every case, in expansion order.
fn pairs(s: &Sweep, a: &str, b: &str) -> Vec<(i64, i64)> {
    cases(s).iter().map(|c| (int(c, a), int(c, b))).collect()
}

/// Integer values of one axis as the sweep holds them (after generators and overrides).
fn axis_ints(s: &Sweep, name: &str) -> Vec<i64> {
    s.dims
        .iter()
        .flat_map(|d| &d.axes)
        .find(|a| a.name == name)
        .unwrap_or_else(|| panic!("no axis {name}"))
        .values
        .iter()
        .map(|v| v.as_i64().expect("integer axis"))
        .collect()
}

// ---- product, scalars, generators ---------------------------------------------------------------

#[test]
fn product_varies_the_last_axis_fastest() {
    let s = conv("[axes]\nc_in = [16, 32]\nc_out = [8, 16, 24]\n");
    assert_eq!(s.product_size(), 6);
    assert_eq!(
        pairs(&s, "c_in", "c_out"),
        vec![(16, 8), (16, 16), (16, 24), (32, 8), (32, 16), (32, 24)]
    );
}

#[test]
fn a_scalar_axis_is_one_value_everywhere() {
    let s = conv("[axes]\nn = 4\nc_in = [16, 32]\nlayout = \"nhwc\"\n");
    assert_eq!(s.product_size(), 2);
    let all = cases(&s);
    assert_eq!(all.len(), 2);
    assert!(
        all.iter()
            .all(|c| int(c, "n") == 4 && text(c, "layout") == "nhwc")
    );
}

#[test]
fn parameters_that_are_not_axes_take_their_defaults() {
    let s = conv("[axes]\nc_in = [32]\n");
    let c = &cases(&s)[0];
    assert_eq!(text(c, "direction"), "fwd");
    assert_eq!((int(c, "n"), int(c, "c_out"), int(c, "h")), (1, 16, 32));
    assert_eq!(
        (int(c, "kernel"), int(c, "pad"), int(c, "groups")),
        (3, 1, 1)
    );
    assert_eq!(
        (text(c, "layout"), text(c, "dtype")),
        ("nchw".into(), "f32".into())
    );
    assert_eq!(c.solver, "default");
}

#[test]
fn generators_expand_to_their_values() {
    let s = conv(
        "[axes]\nh = \"pow2(8..=64)\"\nc_in = \"range(16..=64, step=16)\"\nc_out = [4, \"pow2(8..16)\", 100]\n",
    );
    assert_eq!(axis_ints(&s, "h"), vec![8, 16, 32, 64]);
    assert_eq!(axis_ints(&s, "c_in"), vec![16, 32, 48, 64]);
    assert_eq!(axis_ints(&s, "c_out"), vec![4, 8, 100]);
    assert_eq!(s.product_size(), 4 * 4 * 3);
    assert_eq!(cases(&s).len(), 48);
}

#[test]
fn range_without_step_counts_by_one_and_excludes_the_end() {
    let s = conv("[axes]\npad = \"range(0..3)\"\n");
    assert_eq!(axis_ints(&s, "pad"), vec![0, 1, 2]);
}

// ---- zip groups ---------------------------------------------------------------------------------

#[test]
fn zip_group_axes_vary_together() {
    let s = conv(
        "[axes]\ndtype = [\"f32\", \"f16\"]\n\n[zip.ch]\nc_in = [3, 16, 32]\nc_out = [16, 32, 64]\n",
    );
    assert_eq!(
        s.product_size(),
        6,
        "2 dtypes x 3 channel pairs, not 2 x 3 x 3"
    );
    let got: Vec<(String, i64, i64)> = cases(&s)
        .iter()
        .map(|c| (text(c, "dtype"), int(c, "c_in"), int(c, "c_out")))
        .collect();
    let want: Vec<(String, i64, i64)> = ["f32", "f16"]
        .iter()
        .flat_map(|d| [(3, 16), (16, 32), (32, 64)].map(|(i, o)| (d.to_string(), i, o)))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn each_zip_group_is_one_dimension() {
    let s = conv(
        "[zip.ch]\nc_in = [3, 16]\nc_out = [16, 32]\n\n[zip.img]\nh = [8, 16, 32]\nkernel = [1, 3, 5]\n",
    );
    assert_eq!(s.dims.len(), 2);
    assert_eq!(s.dims[0].group.as_deref(), Some("ch"));
    assert_eq!(s.dims[1].group.as_deref(), Some("img"));
    assert_eq!(s.product_size(), 6);
    let got: Vec<(i64, i64, i64)> = cases(&s)
        .iter()
        .map(|c| (int(c, "c_in"), int(c, "h"), int(c, "kernel")))
        .collect();
    assert_eq!(
        got,
        vec![
            (3, 8, 1),
            (3, 16, 3),
            (3, 32, 5),
            (16, 8, 1),
            (16, 16, 3),
            (16, 32, 5)
        ]
    );
}

// ---- drop filters -------------------------------------------------------------------------------

#[test]
fn drop_removes_exactly_the_matching_combinations() {
    let s = conv("drop = [\"c_out < c_in\"]\n[axes]\nc_in = [16, 32, 64]\nc_out = [16, 32, 64]\n");
    assert_eq!(s.product_size(), 9, "product_size counts before filters");
    assert_eq!(
        pairs(&s, "c_in", "c_out"),
        vec![(16, 16), (16, 32), (16, 64), (32, 32), (32, 64), (64, 64)]
    );
}

#[test]
fn drop_can_cut_out_a_sub_grid() {
    let s =
        conv("drop = [\"h > 16 and c_in >= 32\"]\n[axes]\nh = [8, 16, 32]\nc_in = [16, 32, 64]\n");
    let got = pairs(&s, "h", "c_in");
    assert_eq!(got.len(), 7);
    assert!(!got.contains(&(32, 32)) && !got.contains(&(32, 64)));
    assert!(got.contains(&(32, 16)) && got.contains(&(16, 64)));
}

#[test]
fn several_drops_remove_the_union() {
    let s = conv(
        "drop = [\"c_in == 16\", \"dtype == 'f16' and c_in > 32\"]\n[axes]\nc_in = [16, 32, 64]\ndtype = [\"f32\", \"f16\"]\n",
    );
    let got: Vec<(i64, String)> = cases(&s)
        .iter()
        .map(|c| (int(c, "c_in"), text(c, "dtype")))
        .collect();
    assert_eq!(
        got,
        vec![(32, "f32".into()), (32, "f16".into()), (64, "f32".into())]
    );
}

// ---- `--axis` overrides -------------------------------------------------------------------------

#[test]
fn override_replaces_an_axis_in_place() {
    let body = "[axes]\nc_in = [16, 32]\nc_out = [8, 16]\n";
    let s = conv_with(body, &["c_in=8,range(64..=128, step=64)"]);
    assert_eq!(axis_ints(&s, "c_in"), vec![8, 64, 128]);
    assert_eq!(
        s.dims[0].axes[0].name, "c_in",
        "the axis keeps its place in the order"
    );
    assert_eq!(
        s.overrides,
        vec!["c_in=8,range(64..=128, step=64)".to_string()]
    );
    assert_eq!(pairs(&s, "c_in", "c_out")[..2], [(8, 8), (8, 16)]);
}

#[test]
fn override_adds_a_new_axis_as_the_fastest_dimension() {
    let s = conv_with("[axes]\nc_in = [16, 32]\n", &["pad=0,2"]);
    assert_eq!(s.product_size(), 4);
    assert_eq!(
        pairs(&s, "c_in", "pad"),
        vec![(16, 0), (16, 2), (32, 0), (32, 2)]
    );
}

#[test]
fn override_inside_a_zip_group_keeps_the_pairing() {
    let body = "[zip.ch]\nc_in = [3, 16, 32]\nc_out = [16, 32, 64]\n";
    let s = conv_with(body, &["c_out=8,8,8"]);
    assert_eq!(s.dims.len(), 1);
    assert_eq!(pairs(&s, "c_in", "c_out"), vec![(3, 8), (16, 8), (32, 8)]);
}

#[test]
fn every_axis_of_a_zip_group_given_makes_new_rows() {
    let body = "[zip.ch]\nc_in = [3, 16, 32]\nc_out = [16, 32, 64]\n";
    // One new pair: neither value is in the group.
    let s = conv_with(body, &["c_in=8", "c_out=8"]);
    assert_eq!(pairs(&s, "c_in", "c_out"), vec![(8, 8)]);
    // Two pairs, given in either order of the flags.
    let s = conv_with(body, &["c_out=48,8", "c_in=24,8"]);
    assert_eq!(pairs(&s, "c_in", "c_out"), vec![(24, 48), (8, 8)]);
    // A value the group has, paired anew: the rows are replaced, not selected.
    let s = conv_with(body, &["c_in=16", "c_out=64"]);
    assert_eq!(pairs(&s, "c_in", "c_out"), vec![(16, 64)]);
}

#[test]
fn set_overrides_one_setting_and_keeps_the_rest_of_the_file() {
    let body = "[axes]\nh = [8]\n[limits]\nrun = 30\ncompile = 90\n[timing]\nwarmup = 2\n";
    let s = conv_with(
        body,
        &[
            "--set limits.run=5",
            "--set timing.trials=1",
            "--set verify.enabled=false",
        ],
    );
    assert_eq!(s.limits.run, 5.0);
    assert_eq!(s.limits.compile, 90.0, "the file's other limits stay");
    assert_eq!(s.timing.trials, 1);
    assert_eq!(s.timing.warmup, 2);
    assert!(!s.verify.enabled);
    // Recorded with the axis overrides, as given.
    assert_eq!(s.overrides.len(), 3);
    assert_eq!(
        spec::sets::flag_and_value(&s.overrides[0]),
        ("--set", "limits.run=5")
    );
    assert_eq!(spec::sets::flag_and_value("c_in=16"), ("--axis", "c_in=16"));
}

#[test]
fn filters_see_the_overridden_values() {
    let body = "drop = [\"c_out < c_in\"]\n[axes]\nc_in = [16]\nc_out = [16]\n";
    let s = conv_with(body, &["c_out=8,16,32"]);
    assert_eq!(pairs(&s, "c_in", "c_out"), vec![(16, 16), (16, 32)]);
}

// ---- defaults that follow another parameter -----------------------------------------------------

#[test]
fn w_follows_h_when_it_is_not_an_axis() {
    let s = conv("[axes]\nh = [8, 16, 32]\n");
    for c in cases(&s) {
        assert_eq!(int(&c, "w"), int(&c, "h"));
    }
}

#[test]
fn w_keeps_its_own_values_when_it_is_an_axis() {
    let s = conv("[axes]\nh = [8, 16]\nw = [4]\n");
    assert_eq!(pairs(&s, "h", "w"), vec![(8, 4), (16, 4)]);
    let s = conv_with("[axes]\nh = [8, 16]\n", &["w=12"]);
    assert_eq!(pairs(&s, "h", "w"), vec![(8, 12), (16, 12)]);
}

#[test]
fn gemm_sizes_and_output_type_follow_their_defaults() {
    let s = load(
        "name = \"g\"\nop = \"gemm\"\n[axes]\nm = [64, 128]\nn = [32]\ndtype = [\"f16\"]\n",
        &[],
    );
    for c in cases(&s) {
        let g = |n: &str| get(OpKind::Gemm, &c, n).clone();
        assert_eq!(g("k"), g("m"), "k defaults to m");
        assert_eq!(g("n"), Value::Int(32), "n is an axis");
        assert_eq!(
            g("out_dtype"),
            Value::Str("f16".into()),
            "out_dtype defaults to dtype"
        );
    }
}

// ---- env combinations ---------------------------------------------------------------------------

#[test]
fn env_combos_are_the_product_of_env_axes_with_fixed_env_in_each() {
    let s = conv("[env]\nFIXED = \"1\"\n\n[env_axes]\nB = [\"x\", \"y\"]\nA = [\"p\", \"q\"]\n");
    let combos = s.env_combos();
    let vars: Vec<Vec<(&str, &str)>> = combos
        .iter()
        .map(|c| {
            c.vars
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect()
        })
        .collect();
    assert_eq!(
        vars,
        vec![
            vec![("FIXED", "1"), ("B", "x"), ("A", "p")],
            vec![("FIXED", "1"), ("B", "x"), ("A", "q")],
            vec![("FIXED", "1"), ("B", "y"), ("A", "p")],
            vec![("FIXED", "1"), ("B", "y"), ("A", "q")],
        ]
    );
    assert_eq!(
        combos[1].key(),
        "A=q;B=x;FIXED=1",
        "key() is sorted by name"
    );
}

#[test]
fn no_env_gives_one_empty_combo_and_a_scalar_env_axis_is_one_value() {
    assert_eq!(conv("").env_combos(), vec![EnvCombo::default()]);
    assert_eq!(conv("").env_combos()[0].key(), "");
    let s = conv("[env_axes]\nX = \"only\"\n");
    assert_eq!(s.env_combos().len(), 1);
    assert_eq!(s.env_combos()[0].key(), "X=only");
}

#[test]
fn env_key_sorts_whatever_the_order_of_vars() {
    let c = EnvCombo {
        vars: vec![("Z".into(), "1".into()), ("A".into(), "2".into())],
        ..EnvCombo::default()
    };
    assert_eq!(c.key(), "A=2;Z=1");
    // One backend: the unit ids' key is the env key, as before backend lists existed.
    assert_eq!(c.context_key(), "A=2;Z=1");
}

#[test]
fn several_backends_make_one_context_per_backend_and_env_combination() {
    use rocsweep::spec::expand::with_backends;
    let s = conv("[env_axes]\nX = [\"1\", \"2\"]\n");
    let one = with_backends(s.env_combos(), &["cpu".to_string()]);
    assert_eq!(one, s.env_combos());
    let two = with_backends(s.env_combos(), &["cpu".to_string(), "auto".to_string()]);
    let keys: Vec<String> = two.iter().map(|c| c.context_key()).collect();
    assert_eq!(
        keys,
        [
            "backend=cpu;X=1",
            "backend=cpu;X=2",
            "backend=auto;X=1",
            "backend=auto;X=2"
        ]
    );
    // The CSV's env column stays the env alone.
    assert_eq!(two[2].key(), "X=1");
    let bare = with_backends(
        conv("").env_combos(),
        &["cpu".to_string(), "auto".to_string()],
    );
    assert_eq!(bare[1].context_key(), "backend=auto");
}

// ---- case ids -----------------------------------------------------------------------------------

#[test]
fn the_default_case_id_is_pinned() {
    let all = cases(&conv(""));
    assert_eq!(all.len(), 1);
    assert_eq!(
        canonical_text(OpKind::Conv2d, &all[0].values),
        "conv2d;direction=fwd;n=1;c_in=16;c_out=16;h=32;w=32;kernel=3;pad=1;stride=1;dilation=1;groups=1;layout=nchw;dtype=f32"
    );
    assert_eq!(
        all[0].id, DEFAULT_CONV2D_ID,
        "case ids changed: results of earlier runs would no longer match new ones"
    );
}

#[test]
fn case_ids_depend_on_parameters_only() {
    let a = cases(&conv("[axes]\nc_in = [16, 32]\nh = [8, 16]\n"));
    let mut ids: Vec<&str> = a.iter().map(|c| c.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4, "different parameters give different ids");

    let b = cases(&conv("[axes]\nh = [8, 16]\nc_in = [16, 32]\n"));
    let id_of = |cs: &[Case], c_in: i64, h: i64| {
        cs.iter()
            .find(|c| int(c, "c_in") == c_in && int(c, "h") == h)
            .map(|c| c.id.clone())
            .unwrap()
    };
    for (c_in, h) in [(16, 8), (16, 16), (32, 8), (32, 16)] {
        assert_eq!(
            id_of(&a, c_in, h),
            id_of(&b, c_in, h),
            "axis order in the file"
        );
    }

    // The solver is not part of the case id; an explicit default value is the same case.
    let plain = cases(&conv(""));
    let solved = cases(&conv("[axes]\nsolver = \"im2col\"\nc_in = 16\n"));
    assert_eq!(plain[0].id, solved[0].id);
    assert_eq!(solved[0].solver, "im2col");
}

// ---- invalid combinations, product size, solvers ------------------------------------------------

#[test]
fn combinations_that_form_no_problem_come_out_as_errors() {
    let s = conv("[axes]\nc_in = [16, 24]\ngroups = [1, 16]\n");
    let got: Vec<Result<Case, String>> = s.cases().collect();
    assert_eq!(got.len(), 4);
    let errs: Vec<&String> = got.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].contains("groups=16 must divide c_in=24"),
        "{}",
        errs[0]
    );
    assert!(got[3].is_err(), "the error keeps its place in the order");
}

#[test]
fn product_size_multiplies_dimensions() {
    let s = conv(
        "drop = [\"c_in == 3\"]\n[axes]\ndtype = [\"f32\", \"f16\"]\nh = \"pow2(8..=64)\"\n\n[zip.ch]\nc_in = [3, 16, 32]\nc_out = [16, 32, 64]\n",
    );
    assert_eq!(s.product_size(), 2 * 4 * 3);
    assert_eq!(cases(&s).len(), 2 * 4 * 2);
    assert_eq!(conv("").product_size(), 1);
}

#[test]
fn solver_all_is_kept_for_planning() {
    let s = conv("[axes]\nsolver = \"all\"\nc_in = [16, 32]\n");
    let all = cases(&s);
    assert_eq!(all.len(), 2);
    assert!(all.iter().all(|c| c.solver == "all"));
}

/// Concrete solver names every backend writes into its CSV load back from a sweep file (what
/// `repro` relies on): cuDNN engine configurations, hipBLASLt picks, MIOpen names and ids.
#[test]
fn concrete_solver_names_of_every_backend_are_accepted() {
    for (op, solver) in [
        ("conv2d", "eng62-k2=0,k13=1"),
        ("conv2d", "ConvBinWinogradRxSf2x3"),
        ("conv2d", "solver#9999"),
        ("conv2d", "find"),
        ("conv2d", "implicit_precomp_gemm"),
        ("gemm", "hipblaslt#0-sol1000"),
        ("gemm", "rocblas"),
        ("gemm", "lt#2-algo21"),
    ] {
        let text = format!("name = \"s\"\nop = \"{op}\"\n[axes]\nsolver = \"{solver}\"\n");
        if let Err(e) = rocsweep::spec::load_str("s.toml", &text, &[]) {
            panic!("{op} solver {solver}: {}", e.render());
        }
    }
    let text = "name = \"s\"\nop = \"conv2d\"\n[axes]\nsolver = \"eng\"\n";
    assert!(rocsweep::spec::load_str("s.toml", text, &[]).is_err());
}

const WEIGHTED: &str = r#"
[axes]
solver = "all"

[[cases]]
# a comment, as `rocsweep import` writes the source lines
weight = 40
traced_ms = 12.5
c_in = 64
c_out = 64
h = 56
kernel = 1
pad = 0

[[cases]]
weight = 3
traced_ms = 0.5
c_in = 3
c_out = 64
h = 224
kernel = 7
pad = 3
"#;

#[test]
fn cases_tables_are_one_dimension_with_the_model_weights() {
    let s = conv(WEIGHTED);
    let got = cases(&s);
    assert_eq!(got.len(), 2, "one case per [[cases]] table");
    assert_eq!(get(OpKind::Conv2d, &got[0], "c_in"), &Value::Int(64));
    assert_eq!(get(OpKind::Conv2d, &got[1], "kernel"), &Value::Int(7));
    assert_eq!(
        get(OpKind::Conv2d, &got[1], "w"),
        &Value::Int(224),
        "w follows h"
    );
    let w = s.case_weights().expect("weighted");
    assert_eq!(w[&got[0].id].calls, 40.0);
    assert_eq!(w[&got[0].id].traced_ms, Some(12.5));
    assert_eq!(w[&got[1].id].calls, 3.0);
    // The same problem written in [zip] has the same case id: weights are not parameters.
    let zipped = conv(
        "[zip.p]\nc_in = [64, 3]\nc_out = [64, 64]\nh = [56, 224]\nkernel = [1, 7]\npad = [0, 3]\n",
    );
    let ids: Vec<String> = cases(&zipped).into_iter().map(|c| c.id).collect();
    assert_eq!(ids, vec![got[0].id.clone(), got[1].id.clone()]);
    assert!(zipped.case_weights().is_none(), "no weights, none invented");
}

#[test]
fn axis_override_on_cases_keeps_the_selected_rows_weights() {
    let s = conv_with(WEIGHTED, &["c_in=3"]);
    let got = cases(&s);
    assert_eq!(got.len(), 1);
    let w = s.case_weights().expect("the selected row keeps its weight");
    assert_eq!(w[&got[0].id].calls, 3.0);
    // New values are new problems: no weight is carried over to them.
    let s = conv_with(
        WEIGHTED,
        &["c_in=8,16", "c_out=8,16", "h=8,8", "kernel=1,1", "pad=0,0"],
    );
    assert_eq!(cases(&s).len(), 2);
    assert!(s.case_weights().is_none());
}

#[test]
fn several_rocm_trees_make_one_context_per_tree_inside_each_backend() {
    use rocsweep::spec::expand::{RocmTree, with_backends, with_trees};
    let s =
        conv("rocm = [\"/opt/rocm-5.7\", \"~/venvs/gfx1010\"]\n[env_axes]\nX = [\"1\", \"2\"]\n");
    assert_eq!(s.rocm, ["/opt/rocm-5.7", "~/venvs/gfx1010"]);
    let tree = |l: &str| RocmTree {
        label: l.into(),
        path: format!("/abs{l}"),
    };
    let trees = [tree("/a"), tree("/b")];
    assert_eq!(with_trees(s.env_combos(), &trees[..1]), s.env_combos());
    let both = with_backends(
        with_trees(s.env_combos(), &trees),
        &["rocm".to_string(), "torch".to_string()],
    );
    let keys: Vec<String> = both.iter().map(|c| c.context_key()).collect();
    assert_eq!(keys[0], "backend=rocm;rocm=/a;X=1");
    assert_eq!(keys[3], "backend=rocm;rocm=/b;X=2");
    assert_eq!(keys[4], "backend=torch;rocm=/a;X=1");
    assert_eq!(both.len(), 8);
    let only_trees = with_trees(conv("").env_combos(), &trees);
    assert_eq!(only_trees[1].context_key(), "rocm=/b");
    assert_eq!(only_trees[1].key(), "");
}
