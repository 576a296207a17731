//! `spinmutex bench`: the contention benchmark grids, and named scenarios beside the
//! mutex grid.
//!
//! Two workloads plug into the same shape (cells of a grid; in each cell, every arm
//! once per run, interleaved; summaries against a reference arm; text tables, CSV and
//! JSON): the mutex grid ([`mutex`], with its scenarios and chart) and the reader-writer
//! grid ([`rwlock`], `--rwlock`). The options are shared ([`args`]), and so is what both
//! grids do the same way ([`grid`]); neither grid imports the other. The workloads
//! themselves run in child processes of this command ([`workload`]).

mod args;
mod grid;
pub mod mutex;
pub mod rwlock;
pub mod scenario;
pub mod workload;

pub use args::{BenchArgs, Layout};
pub use mutex::{BenchReport, Cell, CellSummary, Config, RunJson};

use crate::Failure;

pub fn main(a: BenchArgs) -> Result<u8, Failure> {
    grid::check_outputs(&a)?;
    if a.rwlock {
        rwlock::main(a)
    } else {
        mutex::main(a)
    }
}
