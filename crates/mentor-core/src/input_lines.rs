//! Line-oriented input (JSONL) that survives bad bytes: a line that is not UTF-8 is reported
//! as such, with its number, and reading goes on with the next line. `BufRead::lines` stops at
//! the first such line, which would lose every record after it.

use std::io::BufRead;

/// One line of input, without its line terminator (`\n` or `\r\n`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputLine {
    /// A UTF-8 line.
    Text(String),
    /// A line that is not valid UTF-8.
    NotUtf8 {
        /// Byte offset of the first invalid byte within the line.
        valid_up_to: usize,
    },
}

impl InputLine {
    /// The text, or why there is none (`"not valid UTF-8 (byte N of the line)"`).
    pub fn into_text(self) -> std::result::Result<String, String> {
        match self {
            InputLine::Text(s) => Ok(s),
            InputLine::NotUtf8 { valid_up_to } => {
                Err(format!("not valid UTF-8 (byte {} of the line)", valid_up_to + 1))
            }
        }
    }
}

/// Iterates over the lines of `reader` as `(1-based line number, line)`; only I/O errors end
/// the iteration (as an `Err` item).
pub fn input_lines<R: BufRead>(reader: R) -> InputLines<R> {
    InputLines { reader, line: 0, buf: Vec::new() }
}

/// The iterator of [`input_lines`].
#[derive(Debug)]
pub struct InputLines<R> {
    reader: R,
    line: usize,
    buf: Vec<u8>,
}

impl<R: BufRead> Iterator for InputLines<R> {
    type Item = std::io::Result<(usize, InputLine)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.buf.clear();
        match self.reader.read_until(b'\n', &mut self.buf) {
            Ok(0) => None,
            Ok(_) => {
                self.line += 1;
                let mut end = self.buf.len();
                if self.buf[..end].ends_with(b"\n") {
                    end -= 1;
                    if self.buf[..end].ends_with(b"\r") {
                        end -= 1;
                    }
                }
                let line = match std::str::from_utf8(&self.buf[..end]) {
                    Ok(s) => InputLine::Text(s.to_string()),
                    Err(e) => InputLine::NotUtf8 { valid_up_to: e.valid_up_to() },
                };
                Some(Ok((self.line, line)))
            }
            Err(e) => Some(Err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the bytes, every line comes out once, in order, numbered, as its own text
        /// when it is UTF-8: no line is lost or merged because another one is bad.
        #[test]
        fn every_line_comes_out_once(lines in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..20)) {
            let lines: Vec<Vec<u8>> =
                lines.into_iter().map(|l| l.into_iter().filter(|b| *b != b'\n').collect()).collect();
            let input = lines.iter().map(|l| [l.as_slice(), b"\n"].concat()).collect::<Vec<_>>().concat();
            let out: Vec<(usize, InputLine)> = input_lines(input.as_slice()).map(|r| r.unwrap()).collect();
            prop_assert_eq!(out.len(), lines.len());
            for (i, ((n, got), want)) in out.iter().zip(&lines).enumerate() {
                prop_assert_eq!(*n, i + 1);
                let want = want.strip_suffix(b"\r").unwrap_or(want);
                match std::str::from_utf8(want) {
                    Ok(text) => prop_assert_eq!(got, &InputLine::Text(text.to_string())),
                    Err(e) => prop_assert_eq!(got, &InputLine::NotUtf8 { valid_up_to: e.valid_up_to() }),
                }
            }
        }
    }

    #[test]
    fn bad_bytes_are_reported_and_reading_goes_on() {
        let input: &[u8] = b"a\r\nb\xffc\n\nlast";
        let lines: Vec<(usize, InputLine)> = input_lines(input).map(|r| r.unwrap()).collect();
        assert_eq!(
            lines,
            vec![
                (1, InputLine::Text("a".into())),
                (2, InputLine::NotUtf8 { valid_up_to: 1 }),
                (3, InputLine::Text(String::new())),
                (4, InputLine::Text("last".into())),
            ]
        );
        assert_eq!(lines[1].1.clone().into_text().unwrap_err(), "not valid UTF-8 (byte 2 of the line)");
    }
}
