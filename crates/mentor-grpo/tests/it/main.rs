//! Integration tests for mentor-grpo: TRL parity on the shared fixture, properties of the
//! loss and advantages, and a training smoke test on a tiny model.

mod parity;
mod properties;
mod smoke;
