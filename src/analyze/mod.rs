//! Everything after `run` reads only run directories (results.csv + manifest.json), never a
//! device: comparison of two runs, env-var recommendations, and stand-alone reproductions.

pub mod boundary;
pub mod boundary_render;
pub mod compare;
pub mod default_best;
pub mod effect;
pub mod layers;
pub mod noise;
pub mod ratio_plot;
pub mod recommend;
pub mod repro;
pub mod tree;
