//! The one table model behind every table rocsweep writes (report.html, summary.md,
//! compare.md, recommend.md, a repro page, an import's summary): a builder says what a cell
//! holds, and each format (`markup::markdown::table`, the report's HTML writer) decides how it
//! looks, escaping with its own one escaper.

use crate::results::status::Status;

/// A piece of a cell made of text and code (a unit id followed by its parameters).
#[derive(Clone, Debug, PartialEq)]
pub enum Span {
    Text(String),
    /// Copied as it is: an id, a path, a command.
    Code(String),
    /// Where the format can, a new line inside the cell; otherwise a separator.
    Break,
}

/// One cell; each format decides how a kind looks (a badge, a code span, a folded log).
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Text(String),
    /// Right-aligned figures.
    Num(String),
    Status(Status),
    /// A status as a legend entry (its plot colour and its name), as in the counts table.
    Legend(Status),
    /// Text meant to be copied as it is: a unit id, a command.
    Code(String),
    /// An error: its first line shown, the worker's log tail (` | `-joined) folded below or cut.
    Error(String),
    /// Text with more behind it (a case's full parameters) where the format can show it.
    Titled {
        text: String,
        title: String,
    },
    /// Text that carries the answer (a status in a repro's facts).
    Strong(String),
    Spans(Vec<Span>),
}

impl Cell {
    /// Text, or `-` when there is none (the tables of compare and repro say so).
    pub fn or_dash(s: impl Into<String>) -> Cell {
        let s = s.into();
        Cell::Text(if s.is_empty() { "-".into() } else { s })
    }

    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }

    pub fn num(s: impl ToString) -> Cell {
        Cell::Num(s.to_string())
    }
}

pub struct Column {
    pub name: String,
    pub numeric: bool,
}

/// How a row stands among the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    Plain,
    /// A row that says nothing (a status no unit has): shown greyed where a format can, left out
    /// where it cannot.
    Faint,
    /// A sum of the rows above.
    Total,
}

pub struct TableRow {
    pub cells: Vec<Cell>,
    /// The unit it shows, so a format can make it a link target (`#u-<id>`).
    pub anchor: Option<String>,
    pub kind: RowKind,
}

/// A grid with a header, or a list of facts whose first cell names what the row says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    Grid,
    Facts,
}

pub struct Table {
    pub columns: Vec<Column>,
    pub rows: Vec<TableRow>,
    pub layout: Layout,
    /// Rows left out past a format's limit are counted in a note naming where they are.
    pub rest_in: &'static str,
    /// Rows never pushed, counted in that note (a table of 10^6 units keeps only those a
    /// format shows: [`Table::push_up_to`]).
    pub left_out: usize,
}

impl Table {
    /// A grid with these columns (name, numeric).
    pub fn new(columns: &[(&str, bool)]) -> Table {
        Table {
            columns: columns
                .iter()
                .map(|(name, numeric)| Column {
                    name: name.to_string(),
                    numeric: *numeric,
                })
                .collect(),
            rows: Vec::new(),
            layout: Layout::Grid,
            rest_in: "results.csv",
            left_out: 0,
        }
    }

    /// Facts: the first column names the fact, the others give it (one column, or one per
    /// thing compared); column names may be empty.
    pub fn facts(columns: &[&str]) -> Table {
        let cols: Vec<(&str, bool)> = columns.iter().map(|c| (*c, false)).collect();
        Table {
            layout: Layout::Facts,
            ..Table::new(&cols)
        }
    }

    /// Where the rows past a format's limit can be read.
    pub fn rest_in(mut self, file: &'static str) -> Table {
        self.rest_in = file;
        self
    }

    /// Pushes the row made by `cells` while the table has fewer than `limit` rows, else only
    /// counts it (`left_out`), so the row is never made.
    pub fn push_up_to(&mut self, limit: usize, cells: impl FnOnce() -> Vec<Cell>) {
        if self.rows.len() < limit {
            self.push(cells());
        } else {
            self.left_out += 1;
        }
    }

    pub fn push(&mut self, cells: Vec<Cell>) {
        self.push_as(cells, RowKind::Plain, None);
    }

    pub fn push_as(&mut self, cells: Vec<Cell>, kind: RowKind, anchor: Option<String>) {
        self.rows.push(TableRow {
            cells,
            anchor,
            kind,
        });
    }

    /// A fact: its name, then its values.
    pub fn fact(&mut self, name: &str, values: Vec<Cell>) {
        let mut cells = vec![Cell::text(name)];
        cells.extend(values);
        self.push(cells);
    }
}
