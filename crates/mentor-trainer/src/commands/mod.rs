//! One module per `mentor` subcommand.

pub mod generate;
pub mod tasks;
pub mod verify;
#[cfg(feature = "code")]
#[path = "verify_code.rs"]
pub mod verify_code;
#[cfg(not(feature = "code"))]
#[path = "verify_code_disabled.rs"]
pub mod verify_code;
