//! Everything after `run` reads only run directories (results.csv + manifest.json), never a
//! device: comparison of two runs, env-var recommendations, and stand-alone reproductions.

pub mod compare;
pub mod recommend;
pub mod repro;
pub mod rundata;
