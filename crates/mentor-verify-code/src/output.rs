//! Captured guest output with a cap that truncates and flags instead of failing the write.
//!
//! wasmtime-wasi's `MemoryOutputPipe` traps the guest once its capacity is reached, which
//! would turn a chatty but correct program into a crash. [`CappedOutput`] accepts every write,
//! keeps the first `cap` bytes and remembers that it dropped the rest.

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
}

/// Writes are accepted in chunks of at most this many bytes.
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
        Ok(PERMIT)
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
        assert_eq!(o.take(), (b"abc".to_vec(), false));
        o.write(Bytes::from_static(b"abcdefgh")).unwrap();
        o.write(Bytes::from_static(b"more")).unwrap();
        assert_eq!(o.check_write().unwrap(), PERMIT);
        assert_eq!(o.take(), (b"abcde".to_vec(), true));
    }
}
