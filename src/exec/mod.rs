//! Running a sweep: planning units, running each in a worker process under a watchdog,
//! journaling, and writing each result as it arrives.

pub mod confirm;
pub mod devices;
pub mod dry_run;
pub mod events;
pub mod fault;
pub mod handle;
pub mod journal;
pub mod libhash;
pub mod oneoff;
pub mod options;
pub mod plan;
pub mod pool;
pub mod progress;
pub mod protocol;
pub mod recorder;
pub mod resume;
pub mod row;
pub mod run;
pub mod setup;
pub mod shard;
pub mod slots;
pub mod strategy;
pub mod strategy_plan;
pub mod strategy_run;
pub mod supervisor;
pub mod trees;
pub mod trials;
pub mod unit;
pub mod worker;
