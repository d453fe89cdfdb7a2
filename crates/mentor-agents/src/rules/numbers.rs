//! Finding numbers and checking simple arithmetic in free text (bounded, panic-free).

/// A number found in text, with its byte span.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Found {
    pub value: f64,
    pub start: usize,
    pub end: usize,
}

/// Relative tolerance used to compare intermediate values.
const TOL: f64 = 1e-6;

/// Whether two intermediate values are the same number.
pub(crate) fn same(a: f64, b: f64) -> bool {
    (a - b).abs() <= TOL * a.abs().max(b.abs()).max(1.0)
}

/// Every decimal number in `text` (`-12`, `1,234.5`, `.5`), in order. Thousands separators are
/// accepted only in groups of three digits. A `-` counts as a sign only when it does not follow
/// a digit or a closing bracket (so `5-3` yields 5 and 3).
pub(crate) fn numbers(text: &str) -> Vec<Found> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() && out.len() < 10_000 {
        let c = b[i];
        let starts_number = c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit));
        if !starts_number || (i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) {
            i += 1;
            continue;
        }
        let neg = i > 0
            && b[i - 1] == b'-'
            && (i < 2 || !(b[i - 2].is_ascii_digit() || b[i - 2] == b')' || b[i - 2] == b']'));
        let start = if neg { i - 1 } else { i };
        let mut j = i;
        let mut digits = String::new();
        while j < b.len() {
            if b[j].is_ascii_digit() {
                digits.push(b[j] as char);
                j += 1;
            } else if b[j] == b','
                && j + 3 < b.len() + 1
                && b.get(j + 1..j + 4).is_some_and(|g| g.iter().all(u8::is_ascii_digit))
                && !b.get(j + 4).is_some_and(u8::is_ascii_digit)
                && !digits.contains('.')
            {
                j += 1;
            } else if b[j] == b'.' && !digits.contains('.') && b.get(j + 1).is_some_and(u8::is_ascii_digit) {
                digits.push('.');
                j += 1;
            } else {
                break;
            }
        }
        if let Ok(v) = digits.parse::<f64>() {
            if v.is_finite() {
                out.push(Found { value: if neg { -v } else { v }, start, end: j });
            }
        }
        i = j.max(i + 1);
    }
    out
}

/// A computation `lhs = rhs` written in an attempt whose left side evaluates to something else.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Slip {
    /// The quoted computation as written.
    pub quote: String,
    /// What the left side actually equals.
    pub correct: f64,
    /// The result the attempt wrote.
    pub written: f64,
    /// The left side as written (`7 * 12`).
    pub lhs: String,
}

/// A computation `a op b ... = c` written in a text, right or wrong.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Computation {
    /// The computation as written, `lhs = rhs`.
    pub quote: String,
    /// The left side as written.
    pub lhs: String,
    /// The binary operators of the left side, in order (`*` for `x`, `×`, `·`; `/` for `÷`).
    pub ops: Vec<char>,
    /// The numbers of the left side, in order.
    pub operands: Vec<f64>,
    /// What the left side equals.
    pub value: f64,
    /// The result written on the right side.
    pub written: f64,
    /// Byte offset of the computation in the text.
    pub start: usize,
}

impl Computation {
    /// Whether the written result is what the left side equals.
    pub fn is_right(&self) -> bool {
        same(self.value, self.written)
    }
}

/// Finds written computations `a op b ... = c` whose arithmetic is wrong (see
/// [`computations`]).
pub(crate) fn arithmetic_slips(text: &str) -> Vec<Slip> {
    computations(text)
        .into_iter()
        .filter(|c| !c.is_right())
        .map(|c| Slip { quote: c.quote, correct: c.value, written: c.written, lhs: c.lhs })
        .collect()
}

/// Finds written computations `a op b ... = c` (also inside GSM8K `<<a*b=c>>` notes), in
/// order. Only `+ - * / × x ÷ ·` and parentheses are evaluated; expressions longer than 80
/// bytes are ignored.
pub(crate) fn computations(text: &str) -> Vec<Computation> {
    let mut out = Vec::new();
    for (eq, _) in text.match_indices('=').take(2_000) {
        let lhs_start = {
            let bytes = text.as_bytes();
            let mut s = eq;
            while s > 0 && eq - s < 80 {
                let c = bytes[s - 1];
                if c.is_ascii_digit() || b" .,+-*/()x\t$".contains(&c) {
                    s -= 1;
                } else if s >= 2 && ["×", "÷", "·"].iter().any(|op| &bytes[s - 2..s] == op.as_bytes()) {
                    s -= 2;
                } else {
                    break;
                }
            }
            s
        };
        let lhs = &text[lhs_start..eq];
        let mut window_end = text.len().min(eq + 40);
        while !text.is_char_boundary(window_end) {
            window_end -= 1;
        }
        let rhs_num = numbers(&text[eq + 1..window_end]).into_iter().next();
        let Some(rhs) = rhs_num else { continue };
        if !text[eq + 1..eq + 1 + rhs.start].trim_matches(|c: char| c == ' ' || c == '$').is_empty() {
            continue;
        }
        let expr = lhs.trim().trim_start_matches(['$', ' ']);
        // Skip a leading unary-minus-free fragment like ", 3 + 4" by trimming separators.
        let expr = expr.trim_start_matches([',', ' ', ')', '.']);
        let Some(tokens) = tokenize(&clean(expr)) else { continue };
        let Some(value) = eval_tokens(&tokens) else { continue };
        let mut ops = Vec::new();
        let mut operands = Vec::new();
        let mut after_operand = false;
        for t in tokens {
            match t {
                Tok::Num(v) => {
                    operands.push(v);
                    after_operand = true;
                }
                Tok::Op(op) if after_operand => {
                    ops.push(op);
                    after_operand = false;
                }
                Tok::Close => after_operand = true,
                Tok::Op(_) | Tok::Open => after_operand = false,
            }
        }
        let quote_end = eq + 1 + rhs.end;
        let quote = text[lhs_start..quote_end].trim().trim_start_matches([',', ' ', ')', '$', '.']);
        out.push(Computation {
            quote: quote.to_string(),
            lhs: expr.trim().to_string(),
            ops,
            operands,
            value,
            written: rhs.value,
            start: lhs_start,
        });
    }
    out
}

/// The expression with `× ÷ ·` as ASCII operators and `$ ,` removed.
fn clean(expr: &str) -> String {
    expr.replace('×', "*")
        .replace('÷', "/")
        .replace('·', "*")
        .chars()
        .filter(|c| !matches!(c, '$' | ','))
        .collect()
}

/// Evaluates a tokenized arithmetic expression with at least one binary operator; `None`
/// otherwise.
fn eval_tokens(tokens: &[Tok]) -> Option<f64> {
    if !tokens.iter().any(|t| matches!(t, Tok::Op(_))) {
        return None;
    }
    let mut p = Parser { tokens, pos: 0, depth: 0 };
    let v = p.sum()?;
    (p.pos == tokens.len() && v.is_finite()).then_some(v)
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tok {
    Num(f64),
    Op(char),
    Open,
    Close,
}

fn tokenize(s: &str) -> Option<Vec<Tok>> {
    let mut out = Vec::new();
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            ' ' | '\t' => {}
            '(' => out.push(Tok::Open),
            ')' => out.push(Tok::Close),
            '+' | '-' | '*' | '/' => out.push(Tok::Op(c)),
            'x' => out.push(Tok::Op('*')),
            '0'..='9' | '.' => {
                let mut end = i + c.len_utf8();
                while let Some(&(j, d)) = chars.peek() {
                    if d.is_ascii_digit() || d == '.' {
                        end = j + 1;
                        chars.next();
                    } else {
                        break;
                    }
                }
                out.push(Tok::Num(s[i..end].parse().ok()?));
            }
            _ => return None,
        }
    }
    Some(out)
}

struct Parser<'a> {
    tokens: &'a [Tok],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn sum(&mut self) -> Option<f64> {
        let mut v = self.product()?;
        while let Some(Tok::Op(op @ ('+' | '-'))) = self.tokens.get(self.pos).copied() {
            self.pos += 1;
            let r = self.product()?;
            v = if op == '+' { v + r } else { v - r };
        }
        Some(v)
    }

    fn product(&mut self) -> Option<f64> {
        let mut v = self.atom()?;
        while let Some(Tok::Op(op @ ('*' | '/'))) = self.tokens.get(self.pos).copied() {
            self.pos += 1;
            let r = self.atom()?;
            v = if op == '*' { v * r } else { v / r };
        }
        Some(v)
    }

    fn atom(&mut self) -> Option<f64> {
        self.depth += 1;
        if self.depth > 32 {
            return None;
        }
        let t = *self.tokens.get(self.pos)?;
        self.pos += 1;
        let v = match t {
            Tok::Num(n) => Some(n),
            Tok::Op('-') => self.atom().map(|v| -v),
            Tok::Open => {
                let v = self.sum()?;
                (self.tokens.get(self.pos) == Some(&Tok::Close)).then(|| {
                    self.pos += 1;
                    v
                })
            }
            _ => None,
        };
        self.depth -= 1;
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(t: &str) -> Vec<f64> {
        numbers(t).into_iter().map(|f| f.value).collect()
    }

    #[test]
    fn finds_numbers_with_separators_signs_and_decimals() {
        assert_eq!(values("She has 1,234 apples and -5 pears, 2.5 kg, .5 l"), vec![1234.0, -5.0, 2.5, 0.5]);
        assert_eq!(values("5-3=2"), vec![5.0, 3.0, 2.0]);
        assert_eq!(values("x2 and a1b"), Vec::<f64>::new());
        assert_eq!(values("1,23 and 12,345,678"), vec![1.0, 23.0, 12345678.0]);
    }

    #[test]
    fn finds_wrong_computations_only() {
        let s = arithmetic_slips("eggs left. 9 * 2 = 16 dollars.");
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].quote, "9 * 2 = 16");
        let s = arithmetic_slips(
            "First 16 - 3 - 4 = 9 eggs. Then 9 * 2 = $20 per day. <<3*4=12>> ok, 7 × 6 = 41.",
        );
        let quotes: Vec<_> = s.iter().map(|s| s.quote.as_str()).collect();
        assert_eq!(quotes, vec!["9 * 2 = $20", "7 × 6 = 41"]);
        assert_eq!(s[0].correct, 18.0);
        assert!(arithmetic_slips("x = 5 and y = 7").is_empty(), "no operator, no claim");
        assert!(arithmetic_slips("(2 + 3) * 4 = 20").is_empty());
        assert!(arithmetic_slips(&"(".repeat(500)).is_empty());
        assert!(arithmetic_slips("1/0 = 3").is_empty(), "non-finite left sides are not judged");
    }
}
