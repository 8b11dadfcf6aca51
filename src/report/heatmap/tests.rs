//! Issue 31, point 3: the map's text is never cut. Panel titles wrap inside their panel (four
//! env combinations with long names and two solvers), row labels show every parameter that
//! varies (dtype, groups, layout), and report.html's map carries its legend and says what an
//! empty cell is. Widths are measured with the font the pictures are drawn in.

use super::*;
use crate::results::rundata::RunData;

fn rdna1_like() -> RunData {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs/rdna1-like");
    match RunData::load(&dir) {
        Ok(r) => r,
        Err(e) => panic!("fixture: {e}"),
    }
}

/// The words of `text`, to compare a wrapped title with the original.
fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

fn assert_wrapped(map: &Heatmap, p: &Panel) {
    let room = map.panel_w() - MARGIN;
    let lines = map.panel_title_lines(p);
    let tf = draw::bold(PANEL_TITLE_PX);
    for l in &lines {
        assert!(
            draw::text_width(&tf, l) <= room,
            "`{l}` is wider than its panel ({room} px)"
        );
    }
    // Nothing lost: every word of the title is on some line (a `·` may move to the next one).
    assert_eq!(words(&lines.join(" ")), words(&p.title), "{lines:?}");
    assert!(lines.len() as u32 <= map.title_lines);
}

#[test]
fn panel_titles_of_four_env_combinations_and_two_solvers_wrap_instead_of_being_cut() {
    let mut run = rdna1_like();
    let envs = [
        "MIOPEN_FIND_MODE=NORMAL;MIOPEN_DEBUG_CONV_GEMM=0;MIOPEN_DEBUG_CONV_WINOGRAD=0",
        "MIOPEN_FIND_MODE=NORMAL;MIOPEN_DEBUG_CONV_GEMM=1;MIOPEN_DEBUG_CONV_WINOGRAD=1",
        "MIOPEN_FIND_MODE=FAST;MIOPEN_DEBUG_CONV_GEMM=0;MIOPEN_DEBUG_CONV_WINOGRAD=1",
        "MIOPEN_FIND_MODE=FAST;MIOPEN_DEBUG_CONV_GEMM=1;MIOPEN_DEBUG_CONV_WINOGRAD=0",
    ];
    for (i, r) in run.rows.iter_mut().enumerate() {
        r.env = envs[i % 4].into();
        r.solver = if i % 3 == 0 {
            "ConvBinWinogradRxSf2x3g1".into()
        } else {
            "default".into()
        };
    }
    let f = Facts::new(&run);
    let map = build(&f).expect("a map");
    assert!(map.panels.len() >= 12, "{} panels", map.panels.len());
    let long = map
        .panels
        .iter()
        .filter(|p| draw::text_width(&draw::bold(PANEL_TITLE_PX), &p.title) > map.panel_w())
        .count();
    assert!(long > 0, "the test must have titles wider than a panel");
    for p in &map.panels {
        assert_wrapped(&map, p);
    }
    assert!(map.title_lines > 1);
    // The panels, however many lines their titles take, fit the picture.
    let (w, _) = map.size();
    assert!(map.cols * map.panel_w() + 2 * MARGIN <= w);
}

#[test]
fn row_labels_show_dtype_groups_and_layout_uncut() {
    let mut run = rdna1_like();
    for (i, r) in run.rows.iter_mut().enumerate() {
        let values = [
            ("groups", ["1", "2"][i % 2]),
            ("dtype", ["f16", "bf16"][(i / 2) % 2]),
            ("layout", ["nchw_vectorized_c4", "nhwc"][(i / 4) % 2]),
        ];
        for (name, value) in values {
            r.params.set(name, value);
            if !run.param_names.iter().any(|n| n == name) {
                run.param_names.push(name.to_string());
            }
        }
    }
    let f = Facts::new(&run);
    let map = build(&f).expect("a map");
    let lf = draw::font(LABEL_PX);
    for l in &map.y_labels {
        assert_eq!(
            &draw::fit(&lf, l, map.y_label_w - 8),
            l,
            "the label is drawn whole"
        );
        assert!(l.contains("groups="), "{l}");
        assert!(l.contains("f16"), "{l}");
        assert!(
            l.contains("nhwc") || l.contains("nchw_vectorized_c4"),
            "{l}"
        );
    }
    for layout in ["nhwc", "nchw_vectorized_c4"] {
        assert!(map.y_labels.iter().any(|l| l.contains(layout)), "{layout}");
    }
    let labels: std::collections::BTreeSet<&String> = map.y_labels.iter().collect();
    assert_eq!(labels.len(), map.y_labels.len(), "no two rows read alike");
}

#[test]
fn the_html_map_has_its_legend_and_says_what_an_empty_cell_is() {
    let mut run = rdna1_like();
    // One unit fewer: its cell has no unit.
    run.rows.remove(3);
    let f = Facts::new(&run);
    let map = build(&f).expect("a map");
    assert!(map.has_empty_cells());
    assert!(map.subtitle.iter().any(|l| l == NO_UNIT_TEXT));
    let mut h = String::new();
    super::super::map::write(&mut h, &map, &HashSet::new());
    assert!(h.contains("<ul class=\"legend\">"), "{h}");
    for s in Status::ALL {
        assert!(
            h.contains(&facts::hex(facts::color(s))),
            "{s} in the legend"
        );
    }
    assert!(h.contains("H:phase hang"), "{h}");
    assert!(h.contains("</span>no unit</li>"), "{h}");
    assert!(
        h.contains("light grey (no unit): no unit of the run has these values"),
        "{h}"
    );
    // Said once, under the legend, not also among the notes above the map.
    assert_eq!(h.matches("light grey (no unit)").count(), 1, "{h}");

    // A full map has no empty cell and says nothing about one.
    let full = rdna1_like();
    let f = Facts::new(&full);
    let map = build(&f).expect("a map");
    assert!(!map.has_empty_cells());
    let mut h = String::new();
    super::super::map::write(&mut h, &map, &HashSet::new());
    assert!(h.contains("</span>no unit</li>"));
    assert!(!h.contains("light grey (no unit):"), "{h}");
}
