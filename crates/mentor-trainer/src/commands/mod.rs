//! One module per `mentor` subcommand.

pub mod tasks;
