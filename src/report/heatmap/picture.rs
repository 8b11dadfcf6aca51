//! Drawing the map: panels of cells (status colour, hatching, the phase a unit hung in), their
//! axes and titles, and the legend; which panels a crowded map draws (`for_picture`). The layout
//! rules and the data are the parent's.

use super::*;

impl Heatmap {
    /// The map the picture draws when it has more than `MAX_DRAWN_SOLVER_PANELS` per-solver
    /// panels (None when it has no more): the overviews, then the per-solver panels with a unit
    /// not `ok` (the safety question), then ok ones, up to the limit, in their order; the
    /// subtitle says how many were left out.
    pub(super) fn for_picture(&self) -> Option<Heatmap> {
        let all_ok = |p: &Panel| p.cells.iter().flatten().all(|c| c.status.predicts_ok());
        let (failing, ok): (Vec<usize>, Vec<usize>) = (0..self.panels.len())
            .filter(|&i| !self.panels[i].overview)
            .partition(|&i| !all_ok(&self.panels[i]));
        let solvers = failing.len() + ok.len();
        if solvers <= MAX_DRAWN_SOLVER_PANELS {
            return None;
        }
        let kept: HashSet<usize> = failing
            .iter()
            .chain(&ok)
            .take(MAX_DRAWN_SOLVER_PANELS)
            .copied()
            .collect();
        let ok_left = ok.iter().filter(|i| !kept.contains(i)).count();
        let panels: Vec<Panel> = (0..self.panels.len())
            .filter(|i| self.panels[*i].overview || kept.contains(i))
            .map(|i| self.panels[i].clone())
            .collect();
        let mut subtitle = self.subtitle.clone();
        subtitle.push(format!(
            "{} of {solvers} solver panels left out ({ok_left} of them with every unit ok); report.html and results.csv have them all",
            solvers - kept.len()
        ));
        let mut map = Heatmap {
            title: self.title.clone(),
            subtitle,
            x_title: self.x_title.clone(),
            y_title: self.y_title.clone(),
            x_labels: self.x_labels.clone(),
            y_labels: self.y_labels.clone(),
            cols: columns(self.panel_w(), &panels),
            panels,
            cell_w: self.cell_w,
            y_label_w: self.y_label_w,
            title_lines: 1,
        };
        map.title_lines = map.wrap_titles();
        Some(map)
    }

    /// A panel's title in lines that each fit the panel (wrapped, never cut).
    pub(super) fn panel_title_lines(&self, p: &Panel) -> Vec<String> {
        draw::wrap(
            &draw::bold(PANEL_TITLE_PX),
            &p.title,
            self.panel_w() - MARGIN,
        )
    }

    /// The most lines any panel title takes.
    pub(super) fn wrap_titles(&self) -> u32 {
        self.panels
            .iter()
            .map(|p| self.panel_title_lines(p).len() as u32)
            .max()
            .unwrap_or(1)
            .max(1)
    }

    fn panel_title_h(&self) -> u32 {
        PANEL_TITLE_H + PANEL_TITLE_LINE_H * (self.title_lines - 1)
    }

    /// The figure's title and subtitle lines, wrapped to its width.
    fn head_lines(&self) -> (Vec<String>, Vec<String>) {
        let w = self.width();
        let sub: Vec<String> = self
            .subtitle
            .iter()
            .flat_map(|l| draw::subtitle_lines(l, w))
            .collect();
        (draw::title_lines(&self.title, w), sub)
    }
}

fn legend_items() -> Vec<LegendItem> {
    let mut v: Vec<LegendItem> = Status::ALL
        .iter()
        .map(|s| {
            let code = facts::code(*s);
            let mut text = if code.is_empty() {
                s.name().to_string()
            } else if facts::shows_phase(*s) {
                format!("{code}:phase {s}")
            } else {
                format!("{code} {s}")
            };
            if *s == Status::InferredOk {
                text.push_str(" (hatched: inferred, not run)");
            } else if *s == Status::InferredFail {
                text.push_str(" (hatched, in the colour of the failure it was inferred from)");
            }
            LegendItem {
                color: facts::color(*s),
                text,
                line: false,
                dash: None,
                hatched: s.is_inferred(),
                shape: None,
            }
        })
        .collect();
    v.push(LegendItem {
        color: NO_UNIT,
        text: "no unit".to_string(),
        line: false,
        dash: None,
        hatched: false,
        shape: None,
    });
    v
}

impl Heatmap {
    /// Cells over all panels.
    pub fn cells(&self) -> usize {
        self.panels.len() * self.x_labels.len() * self.y_labels.len()
    }
    /// Whether the map is small enough to draw (and to show as HTML): past it a note stands in.
    pub fn drawable(&self) -> bool {
        !too_large(self.size())
    }
    pub(super) fn panel_w(&self) -> u32 {
        self.y_label_w + self.cell_w * self.x_labels.len() as u32 + MARGIN
    }
    fn panel_h(&self) -> u32 {
        self.panel_title_h() + Y_TITLE_ROW_H + CELL_H * self.y_labels.len() as u32 + BELOW_GRID_H
    }
    fn width(&self) -> u32 {
        (self.cols * self.panel_w() + 2 * MARGIN).max(820)
    }
    fn top(&self) -> u32 {
        let (title, sub) = self.head_lines();
        TOP + draw::TITLE_LINE_H * (title.len() as u32).saturating_sub(1)
            + draw::SUBTITLE_LINE_H * (sub.len() as u32).saturating_sub(1)
    }

    fn draw_panel<DB: DrawingBackend>(
        &self,
        c: &Canvas<DB>,
        p: &Panel,
        (ox, oy): (i32, i32),
    ) -> DrawResult<DB> {
        let nx = self.x_labels.len();
        let ny = self.y_labels.len();
        let (cw, ch) = (self.cell_w as i32, CELL_H as i32);
        let gx = ox + self.y_label_w as i32;
        let gy = oy + (self.panel_title_h() + Y_TITLE_ROW_H) as i32;
        let grid_w = cw * nx as i32;
        let grid_h = ch * ny as i32;
        let tf = draw::bold(PANEL_TITLE_PX);
        // Centred on the panel (not the grid), so a title as wide as the panel stays inside it.
        let mid = ox + (self.panel_w() - MARGIN) as i32 / 2;
        for (i, line) in self.panel_title_lines(p).iter().enumerate() {
            let at = (
                mid,
                oy + PANEL_TITLE_H as i32 / 2 + (i as u32 * PANEL_TITLE_LINE_H) as i32,
            );
            c.text(line, at, &tf, &BLACK, draw::CENTER)?;
        }
        for yi in 0..ny {
            // Smallest configuration at the bottom, as on a plot's y axis.
            let y0 = gy + (ny - 1 - yi) as i32 * ch;
            for xi in 0..nx {
                let x0 = gx + xi as i32 * cw;
                let cell = p.cells[yi * nx + xi].as_ref();
                let bg = cell.map_or(NO_UNIT, |cell| facts::color(cell.shade));
                let (a, b) = ((x0 + 1, y0 + 1), (x0 + cw - 1, y0 + ch - 1));
                c.area.draw(&Rectangle::new([a, b], bg.filled()))?;
                if cell.is_some_and(|cell| cell.status.is_inferred()) {
                    draw::hatch(c, a, b, bg)?;
                }
                if let Some(cell) = cell {
                    cell_text(c, cell, (x0, y0), (cw, ch), draw::contrast(bg))?;
                }
            }
        }
        let lf = draw::font(LABEL_PX);
        for (yi, label) in self.y_labels.iter().enumerate() {
            let cy = gy + (ny - 1 - yi) as i32 * ch + ch / 2;
            let shown = draw::fit(&lf, label, self.y_label_w - 8);
            c.text(&shown, (gx - 6, cy), &lf, &draw::GREY, draw::RIGHT)?;
        }
        // Thin out x labels that would run into each other.
        let widest = self
            .x_labels
            .iter()
            .map(|l| draw::text_width(&lf, l))
            .max()
            .unwrap_or(0) as i32;
        let every = ((widest + 8) / cw.max(1) + 1).max(1) as usize;
        for (xi, label) in self.x_labels.iter().enumerate() {
            if xi % every == 0 {
                let at = (gx + xi as i32 * cw + cw / 2, gy + grid_h + 12);
                c.text(label, at, &lf, &draw::GREY, draw::CENTER)?;
            }
        }
        let af = draw::font(14.0);
        let at = (gx + grid_w / 2, gy + grid_h + 34);
        c.text(&self.x_title, at, &af, &BLACK, draw::CENTER)?;
        if !self.y_title.is_empty() {
            let yf = draw::bold(LABEL_PX);
            let shown = draw::fit(&yf, &self.y_title, self.y_label_w - 8);
            let at = (gx - 6, gy - Y_TITLE_ROW_H as i32 / 2);
            c.text(&shown, at, &yf, &draw::GREY, draw::RIGHT)?;
        }
        Ok(())
    }
}

/// Hang, crash and interrupted cells say in which phase; the others carry their letter.
fn cell_text<DB: DrawingBackend>(
    c: &Canvas<DB>,
    cell: &Cell,
    (x0, y0): (i32, i32),
    (cw, ch): (i32, i32),
    color: RGBColor,
) -> DrawResult<DB> {
    let code = facts::code(cell.status);
    if code.is_empty() {
        return Ok(());
    }
    let (cx, cy) = (x0 + cw / 2, y0 + ch / 2);
    let room = (cw - 6).max(0) as u32;
    if facts::shows_phase(cell.status) && !cell.phase.is_empty() {
        let text = cell.text();
        for px in [12.0, 10.0] {
            let f = draw::font(px);
            if draw::text_width(&f, &text) <= room {
                return c.text(&text, (cx, cy), &f, &color, draw::CENTER);
            }
        }
        let small = draw::font(9.5);
        if draw::text_width(&small, &cell.phase) <= room {
            c.text(code, (cx, cy - 7), &draw::bold(10.0), &color, draw::CENTER)?;
            return c.text(&cell.phase, (cx, cy + 7), &small, &color, draw::CENTER);
        }
    }
    c.text(code, (cx, cy), &draw::bold(12.0), &color, draw::CENTER)
}

impl Heatmap {
    /// (column, row) of each panel: the overview panels fill the first rows, the per-solver
    /// panels start on a row of their own.
    fn places(&self) -> Vec<(u32, u32)> {
        let mut out = Vec::with_capacity(self.panels.len());
        let (mut col, mut row) = (0u32, 0u32);
        for (i, p) in self.panels.iter().enumerate() {
            let section_starts = i > 0 && self.panels[i - 1].overview && !p.overview;
            if col == self.cols || (section_starts && col > 0) {
                col = 0;
                row += 1;
            }
            out.push((col, row));
            col += 1;
        }
        out
    }

    fn grid_rows(&self) -> u32 {
        self.places().last().map_or(0, |p| p.1 + 1)
    }
}

impl Figure for Heatmap {
    fn size(&self) -> (u32, u32) {
        let w = self.width();
        let legend = draw::legend_height(&legend_items(), &draw::font(13.0), w - 2 * MARGIN);
        (
            w,
            self.top() + self.grid_rows() * self.panel_h() + legend + 2 * MARGIN,
        )
    }

    fn draw<DB: DrawingBackend>(&self, c: &Canvas<DB>) -> DrawResult<DB> {
        let w = self.width();
        let (title, sub) = self.head_lines();
        draw::head(c, &title, &sub, w)?;
        // Centre the panel grid when the figure is wider than the panels need.
        let used = self.cols * self.panel_w();
        let left = ((w - used) / 2) as i32;
        for (p, (col, row)) in self.panels.iter().zip(self.places()) {
            let origin = (
                left + (col * self.panel_w()) as i32,
                (self.top() + row * self.panel_h()) as i32,
            );
            self.draw_panel(c, p, origin)?;
        }
        draw::draw_legend(
            c,
            &legend_items(),
            &draw::font(13.0),
            (
                MARGIN as i32,
                (self.top() + self.grid_rows() * self.panel_h() + MARGIN / 2) as i32,
            ),
            w - 2 * MARGIN,
        )
    }
}
