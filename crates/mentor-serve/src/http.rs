//! HTTP/1.1 on a `TcpStream`: a request's head parsed strictly and its body read against a
//! deadline (the socket's read timeout set to the time left before every read, so a trickle
//! does not extend it), and a reply encoded with its length and `Connection: close`.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use crate::openai::Reply;

/// Largest request body read (bytes); larger ones get 413.
pub(crate) const MAX_BODY: u64 = 4 << 20;
/// Largest request head (request line and headers, bytes); larger ones get 431.
pub(crate) const MAX_HEAD: usize = 16 << 10;

pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Payload Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

/// The bytes of a reply: JSON, a length, and `Connection: close`.
pub(crate) fn encode_reply(reply: &Reply) -> Vec<u8> {
    let body = reply.body.to_string();
    let retry = if reply.status == 503 { "Retry-After: 1\r\n" } else { "" };
    let mut out = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{retry}\r\n",
        reply.status,
        reason(reply.status),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

pub(crate) fn write_reply(mut stream: &TcpStream, reply: &Reply) -> std::io::Result<()> {
    stream.write_all(&encode_reply(reply))?;
    stream.flush()
}

/// A request read in full.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Request {
    pub(crate) method: String,
    pub(crate) target: String,
    pub(crate) body: Vec<u8>,
}

/// Why no request came out of a connection.
#[derive(Debug, PartialEq)]
pub(crate) enum Failure {
    /// The client closed the connection or it failed: nothing to answer.
    Gone,
    /// Answer this and close.
    Reply(Reply),
}

pub(crate) fn invalid(status: u16, message: impl Into<String>) -> Failure {
    Failure::Reply(Reply::error(status, "invalid_request_error", message, None))
}

/// What the head of a request says.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Head {
    pub(crate) method: String,
    pub(crate) target: String,
    pub(crate) content_length: Option<u64>,
    pub(crate) expect_continue: bool,
}

/// Parses a request head (the bytes before the blank line).
pub(crate) fn parse_head(head: &[u8]) -> std::result::Result<Head, Failure> {
    let text = std::str::from_utf8(head).map_err(|_| invalid(400, "the request head is not UTF-8"))?;
    // A client may send empty lines before the request line (RFC 9112 §2.2).
    let mut lines = text.trim_start_matches("\r\n").split("\r\n");
    let line = lines.next().unwrap_or("");
    let mut parts = line.split(' ');
    let (method, target, version) = match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v), None) if !m.is_empty() && !t.is_empty() => (m, t, v),
        _ => return Err(invalid(400, format!("malformed request line {line:?}"))),
    };
    if !method.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(invalid(400, format!("malformed method {method:?}")));
    }
    match version {
        "HTTP/1.1" | "HTTP/1.0" => {}
        v if v.starts_with("HTTP/") => {
            return Err(invalid(505, format!("{v} is not supported: send HTTP/1.1")));
        }
        v => return Err(invalid(400, format!("malformed HTTP version {v:?}"))),
    }
    let mut content_length = None;
    let mut expect_continue = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(invalid(400, format!("malformed header line {line:?}")));
        };
        if name.is_empty() || name.bytes().any(|b| b.is_ascii_whitespace()) {
            return Err(invalid(400, format!("malformed header name {name:?}")));
        }
        let value = value.trim_matches([' ', '\t']);
        if name.eq_ignore_ascii_case("content-length") {
            let n = (!value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()))
                .then(|| value.parse::<u64>().ok())
                .flatten()
                .ok_or_else(|| invalid(400, format!("malformed Content-Length {value:?}")))?;
            if content_length.is_some_and(|m| m != n) {
                return Err(invalid(400, "conflicting Content-Length headers"));
            }
            content_length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(invalid(411, "chunked request bodies are not supported: send a Content-Length"));
        } else if name.eq_ignore_ascii_case("expect") {
            expect_continue |= value.eq_ignore_ascii_case("100-continue");
        }
    }
    Ok(Head { method: method.to_string(), target: target.to_string(), content_length, expect_continue })
}

/// One read that gives up at `deadline` (408).
pub(crate) fn read_by(
    mut stream: &TcpStream,
    buf: &mut [u8],
    deadline: Instant,
) -> std::result::Result<usize, Failure> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(invalid(408, "the request did not arrive within the read timeout"));
        }
        stream.set_read_timeout(Some(left)).map_err(|_| Failure::Gone)?;
        match stream.read(buf) {
            Ok(0) => return Err(Failure::Gone),
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return Err(Failure::Gone),
        }
    }
}

/// Reads one request (head and body) by `deadline`.
pub(crate) fn read_request(stream: &TcpStream, deadline: Instant) -> std::result::Result<Request, Failure> {
    let mut buf = Vec::with_capacity(2048);
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        if buf.len() > MAX_HEAD {
            return Err(invalid(431, format!("the request head is over {MAX_HEAD} bytes")));
        }
        let n = read_by(stream, &mut chunk, deadline)?;
        buf.extend_from_slice(&chunk[..n]);
    };
    if head_end > MAX_HEAD {
        return Err(invalid(431, format!("the request head is over {MAX_HEAD} bytes")));
    }
    let head = parse_head(&buf[..head_end])?;
    let len = head.content_length.unwrap_or(0);
    if len > MAX_BODY {
        return Err(Failure::Reply(Reply::error(
            413,
            "invalid_request_error",
            format!("request body over {MAX_BODY} bytes"),
            None,
        )));
    }
    let len = len as usize;
    let mut body = buf.split_off(head_end + 4);
    if head.expect_continue && body.len() < len {
        let mut s = stream;
        s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").map_err(|_| Failure::Gone)?;
    }
    while body.len() < len {
        let want = (len - body.len()).min(chunk.len());
        let n = read_by(stream, &mut chunk[..want], deadline)?;
        body.extend_from_slice(&chunk[..n]);
    }
    // Anything after the body (a pipelined request) is not served: the connection closes.
    body.truncate(len);
    Ok(Request { method: head.method, target: head.target, body })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn status(f: std::result::Result<Head, Failure>) -> u16 {
        match f {
            Err(Failure::Reply(r)) => r.status,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn heads_are_parsed_strictly() {
        let h = parse_head(b"\r\nPOST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: a\r\ncontent-length:  12 \r\nExpect: 100-Continue\r\nContent-Length: 12").unwrap();
        assert_eq!(
            h,
            Head {
                method: "POST".into(),
                target: "/v1/chat/completions?x=1".into(),
                content_length: Some(12),
                expect_continue: true
            }
        );
        let h = parse_head(b"GET /v1/models HTTP/1.0").unwrap();
        assert_eq!((h.content_length, h.expect_continue), (None, false));
        assert_eq!(status(parse_head(b"GET /v1/models")), 400);
        assert_eq!(status(parse_head(b"GET  /v1/models HTTP/1.1")), 400);
        assert_eq!(status(parse_head(b"G@T / HTTP/1.1")), 400);
        assert_eq!(status(parse_head(b"GET / HTTP/2.0")), 505);
        assert_eq!(status(parse_head(b"GET / HTTX")), 400);
        assert_eq!(status(parse_head(b"GET / HTTP/1.1\r\nno colon")), 400);
        assert_eq!(status(parse_head(b"GET / HTTP/1.1\r\n folded: x")), 400);
        assert_eq!(status(parse_head(b"POST / HTTP/1.1\r\nContent-Length: -1")), 400);
        assert_eq!(status(parse_head(b"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999")), 400);
        assert_eq!(status(parse_head(b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2")), 400);
        assert_eq!(status(parse_head(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked")), 411);
        assert_eq!(status(parse_head(b"GET / HTTP/1.1\r\nX: \xff")), 400);
    }

    #[test]
    fn replies_carry_length_and_close() {
        let text = String::from_utf8(encode_reply(&Reply::error(503, "server_error", "busy", None))).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 503 Service Unavailable\r\n"), "{head}");
        assert!(head.contains(&format!("Content-Length: {}", body.len())), "{head}");
        assert!(head.contains("Connection: close") && head.contains("Retry-After: 1"), "{head}");
        let v: Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], "server_busy");
    }
}
