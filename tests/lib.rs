//! End-to-end tests of the MENTOR workspace live in `e2e/`; this library is empty.
