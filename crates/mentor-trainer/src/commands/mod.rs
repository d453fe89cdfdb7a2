//! One module per `mentor` subcommand.

pub mod tasks;
pub mod verify;
