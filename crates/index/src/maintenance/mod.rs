//! Maintenance of an index directory: [`verify`] checks every file of an index and says
//! what is damaged ([`VerifyReport`]); [`IndexWriter::repair`](crate::IndexWriter::repair)
//! makes a damaged index readable again, durably, naming what was lost
//! ([`RepairReport`]). Readers make the same choices in memory, without writing
//! (`health`).

mod repair;
mod verify;

pub use repair::RepairReport;
pub use verify::{verify, FileCheck, VerifyReport};
