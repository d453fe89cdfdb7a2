//! Seed streams ([`mentor_core::seed`]): a deterministic 64-bit mix of seeds and stable keys of
//! strings and token ids. A leaf module (it imports nothing from this crate), so every part
//! that draws random numbers (sampling, tasks, controls, bootstrap intervals) can use it
//! without depending on another.

pub use mentor_core::seed::{ids_key, mix, str_key};
