//! One module per `mentor` subcommand.

pub mod demo;
pub mod eval;
pub mod experiment;
pub mod generate;
pub mod probe;
pub mod progress;
pub mod report;
pub mod rescue;
pub mod sandbox;
pub mod serve;
pub mod tasks;
pub mod train;
pub mod verify;
#[cfg(feature = "code")]
#[path = "verify_code.rs"]
pub mod verify_code;
#[cfg(not(feature = "code"))]
#[path = "verify_code_disabled.rs"]
pub mod verify_code;
