//! Captured guest output with a cap that truncates and flags instead of failing the write.
//!
//! wasmtime-wasi's `MemoryOutputPipe` traps the guest once its capacity is reached, which
//! would turn a chatty but correct program into a crash. [`CappedOutput`] accepts every write,
//! keeps the first `cap` bytes and remembers that it dropped the rest.
//!
//! Invariant: every byte the program writes past the cap is either seen here (and flags the
//! truncation) or never leaves the guest because the cap was already flagged. The guest writes
//! at most the permit `check_write` grants and may silently drop the rest of a larger `write()`
//! (a 70,000-byte `sys.stdout.write` did), so until the cap is hit the permit is one byte more
//! than the room left: a write that does not fit always hands over at least one byte too many.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

#[derive(Debug, Default)]
struct Buffer {
    data: Vec<u8>,
    truncated: bool,
}

/// A shared, capped in-memory output stream (clones share the buffer).
#[derive(Debug, Clone)]
pub(crate) struct CappedOutput {
    cap: usize,
    buf: Arc<Mutex<Buffer>>,
}

impl CappedOutput {
    pub(crate) fn new(cap: usize) -> Self {
        Self { cap, buf: Arc::new(Mutex::new(Buffer::default())) }
    }

    fn push(&self, bytes: &[u8]) {
        let mut b = self.buf.lock().unwrap_or_else(PoisonError::into_inner);
        let room = self.cap.saturating_sub(b.data.len());
        if bytes.len() > room {
            b.truncated = true;
        }
        let keep = bytes.len().min(room);
        b.data.extend_from_slice(&bytes[..keep]);
    }

    /// The captured bytes and whether anything was dropped.
    pub(crate) fn take(&self) -> (Vec<u8>, bool) {
        let mut b = self.buf.lock().unwrap_or_else(PoisonError::into_inner);
        (std::mem::take(&mut b.data), b.truncated)
    }

    /// How many bytes the guest may write next: the room left plus one while nothing was
    /// dropped (so an overflowing write always reaches `push` and is flagged), [`PERMIT`] once
    /// the truncation is flagged (the rest is discarded anyway).
    fn permit(&self) -> usize {
        let b = self.buf.lock().unwrap_or_else(PoisonError::into_inner);
        if b.truncated {
            PERMIT
        } else {
            self.cap.saturating_sub(b.data.len()).saturating_add(1)
        }
    }
}

/// The write permit once the output is already cut.
const PERMIT: usize = 64 << 10;

#[wasmtime_wasi::async_trait]
impl Pollable for CappedOutput {
    async fn ready(&mut self) {}
}

impl OutputStream for CappedOutput {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }
    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }
    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(self.permit())
    }
}

impl tokio::io::AsyncWrite for CappedOutput {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl IsTerminal for CappedOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_prefix_and_flags_truncation() {
        let mut o = CappedOutput::new(5);
        o.write(Bytes::from_static(b"abc")).unwrap();
        assert_eq!(o.check_write().unwrap(), 3, "room 2, plus one");
        assert_eq!(o.take(), (b"abc".to_vec(), false));
        o.write(Bytes::from_static(b"abcdefgh")).unwrap();
        o.write(Bytes::from_static(b"more")).unwrap();
        assert_eq!(o.check_write().unwrap(), PERMIT);
        assert_eq!(o.take(), (b"abcde".to_vec(), true));
    }

    /// Writes the way the guest does: each `write()` hands over at most the permit and drops
    /// the rest of that write.
    fn guest_writes(cap: usize, writes: &[usize]) -> (usize, bool, usize) {
        let mut o = CappedOutput::new(cap);
        let mut total = 0;
        for &n in writes {
            total += n;
            let permit = o.check_write().unwrap();
            o.write(Bytes::from(vec![b'x'; n.min(permit)])).unwrap();
        }
        let (data, truncated) = o.take();
        (data.len(), truncated, total)
    }

    proptest::proptest! {
        /// Whatever the sizes and splits of the writes around the cap, output is flagged as
        /// truncated exactly when the program wrote more than the cap, and then the kept bytes
        /// are exactly the cap.
        #[test]
        fn truncation_is_always_flagged(
            cap in 0usize..(200 << 10),
            writes in proptest::collection::vec(0usize..(150 << 10), 1..6),
            near in proptest::option::of(-3isize..3),
        ) {
            let mut writes = writes;
            // Often, a first write that lands right at the cap.
            if let Some(d) = near {
                writes[0] = cap.saturating_add_signed(d);
            }
            let (kept, truncated, total) = guest_writes(cap, &writes);
            proptest::prop_assert_eq!(truncated, total > cap, "cap {} writes {:?}", cap, writes);
            proptest::prop_assert_eq!(kept, total.min(cap));
        }
    }

    #[test]
    fn one_write_past_a_64k_cap_is_flagged() {
        // The repro: "5\n" + 70,000 spaces + "WRONG" in one write, cap 64 KiB.
        assert_eq!(guest_writes(64 << 10, &[70_007]), (64 << 10, true, 70_007));
        assert_eq!(guest_writes(64 << 10, &[64 << 10]), (64 << 10, false, 64 << 10));
    }
}
