#!/usr/bin/env python3
"""Generates tests/data/cases.jsonl: labelled (gold, completion, expected) cases.

Labels are right by construction, never taken from the checker:
- a reference solution, or the gold answer re-wrapped (boxed, `####`, "The answer is",
  `$..$`, `\\(..\\)`), re-spaced or re-spelled (`\\dfrac` for `\\frac`, thousands commas) is
  correct;
- a value changed by arithmetic done here in Python (n+1, 10n, -n, numerator+1) is wrong;
- several distinct boxed answers for a single gold are wrong (anti-hacking);
- hand-written cases cover each parsing and equivalence rule, their labels follow from
  elementary arithmetic (noted per case).

MATH-500 reference solutions carry their problem as `question`: the checker reads the
question's words and whether it asks for a percentage (`\\boxed{10}\\%` answers a question
for a rate in percent with 10).

Usage: python3 gen_cases.py /path/to/shared/datasets > cases.jsonl
"""

import json
import random
import re
import sys
from fractions import Fraction
from pathlib import Path

DATA = Path(sys.argv[1] if len(sys.argv) > 1 else "../../../../../shared/datasets")
rng = random.Random(7)
out = []


def case(gold, completion, expected, note, question=None):
    c = {"gold": gold, "completion": completion, "expected": expected, "note": note}
    if question is not None:
        c["question"] = question
    out.append(c)


def commas(n):
    return f"{n:,}"


# --- GSM8K test answers -------------------------------------------------------------------
gsm = [json.loads(l) for l in (DATA / "gsm8k/test.jsonl").read_text().splitlines() if l.strip()]
for k, rec in enumerate(gsm[:40]):
    sol = rec["answer"]
    ans = sol.rsplit("####", 1)[1].strip().replace(",", "")
    a = int(ans)
    prefix = sol.rsplit("####", 1)[0]
    case(ans, sol, True, f"gsm8k/test/{k}: reference solution")
    case(ans, prefix + f"#### {a + 1}", False, f"gsm8k/test/{k}: reference steps, final answer n+1")
    case(ans, f"Adding it all up, the answer is {commas(a)}.", True, f"gsm8k/test/{k}: answer phrase, thousands commas")
    case(ans, f"So she ends up with $\\boxed{{{a}}}$ in total.", True, f"gsm8k/test/{k}: boxed")
    if a != 0:
        case(ans, f"The answer is {-a}.", False, f"gsm8k/test/{k}: sign flipped")
        case(ans, f"\\boxed{{{a * 10}}}", False, f"gsm8k/test/{k}: off by a power of ten")
    case(ans, f"It is either \\boxed{{{a}}} or \\boxed{{{a + 2}}}", False, f"gsm8k/test/{k}: two boxed candidates")
    if k % 4 == 0:
        case(ans, f"Final Answer: {a}.00", True, f"gsm8k/test/{k}: trailing decimal zeros")
    if k % 4 == 1:
        case(ans, f"{a} dollars", True, f"gsm8k/test/{k}: unit word")
    if k % 4 == 2:
        case(ans, f"We compute step by step and get {a - 3} + 3 = {a}", True, f"gsm8k/test/{k}: last number")

# --- MATH-500 answers ----------------------------------------------------------------------
math = [json.loads(l) for l in (DATA / "math500/test.jsonl").read_text().splitlines() if l.strip()]
INT = re.compile(r"^-?\d+$")
FRAC = re.compile(r"^(-?)\\frac\{(\d+)\}\{(\d+)\}$")
picked = 0
for k, rec in enumerate(math):
    ans = rec["answer"]
    if picked >= 75:
        break
    picked += 1
    uid = rec.get("unique_id", f"math500/{k}")
    if "\\boxed" in rec["solution"] and k % 3 == 0:
        case(ans, rec["solution"], True, f"{uid}: reference solution", question=rec["problem"])
    case(ans, f"Final Answer: The final answer is ${ans}$. I hope it is correct.", True, f"{uid}: Minerva wrapper")
    case(ans, f"Putting it together, \\[ \\boxed{{{ans.replace(chr(92) + 'frac', chr(92) + 'dfrac')}}} \\]", True,
         f"{uid}: boxed display, dfrac")
    if k % 2 == 0:
        case(ans, f"so the result is \\({ans}\\).", True, f"{uid}: inline delimiters")
    if INT.match(ans):
        n = int(ans)
        case(ans, f"\\boxed{{{n + 1}}}", False, f"{uid}: integer n+1")
        case(ans, f"The answer is $\\frac{{{2 * n}}}{{2}}$.", True, f"{uid}: unsimplified fraction 2n/2")
        if n != 0:
            case(ans, f"$\\boxed{{{-n}}}$", False, f"{uid}: sign flipped")
    m = FRAC.match(ans)
    if m:
        sign, p, q = m.groups()
        f = Fraction(int(p), int(q)) * (-1 if sign else 1)
        case(ans, f"\\boxed{{{sign}\\frac{{{int(p) + 1}}}{{{q}}}}}", False, f"{uid}: numerator+1")
        case(ans, f"\\boxed{{{f.numerator}/{f.denominator}}}", True, f"{uid}: slash fraction")
        d = f.denominator
        while d % 2 == 0:
            d //= 2
        while d % 5 == 0:
            d //= 5
        if d == 1:
            dec = f"{float(f):.10f}".rstrip("0")
            case(ans, f"The answer is {dec}.", True, f"{uid}: terminating decimal of the fraction")

# --- AIME 2024: 3-digit answers with leading zeros ----------------------------------------
aime = [json.loads(l) for l in (DATA / "aime2024/test.jsonl").read_text().splitlines() if l.strip()]
for rec in aime[:10]:
    ans = str(rec["answer"]).strip()
    n = int(ans)
    case(f"{n:03d}", f"\\boxed{{{n}}}", True, f"aime2024/{rec.get('id')}: leading zeros")
    case(f"{n:03d}", f"\\boxed{{{n + 10}}}", False, f"aime2024/{rec.get('id')}: n+10")

# --- hand-written cases, one or more per rule -------------------------------------------
H = [
    # extraction
    ("7", "So $x = \\boxed{\\frac{14}{2}}$ and we are done.", True, "nested braces in box, 14/2 = 7"),
    ("7", "\\fbox{7}", True, "fbox"),
    ("7", "I first got \\boxed{6}, but fixing the sign gives \\boxed{7}.", True, "last box wins"),
    ("7", "\\boxed{7}, \\boxed{8}", False, "two distinct boxes side by side"),
    ("7", "\\boxed{7} and \\boxed{7}", True, "same answer boxed twice"),
    ("7", "Therefore\n#### 7", True, "GSM8K hashes"),
    ("7", "The answer is 7.", True, "answer phrase"),
    ("7", "Final Answer: 7", True, "Final Answer:"),
    ("7", "We get $3 + 4 = 7$, so $7$", True, "last math span"),
    ("7", "the value is \\(7\\)", True, "\\( \\) span"),
    ("7", "the value is \\[7\\]", True, "\\[ \\] span"),
    ("7", "We have 3 and 4 making 7", True, "last number fallback"),
    ("7", "**Final Answer:** 7", True, "markdown bold phrase"),
    ("\\frac{1}{2}", "The chance of that is 50% overall.", True, "last number keeps its percent sign: 50% = 1/2"),
    ("7", "So the answer is **7**.", True, "markdown bold answer"),
    ("7", "The answer is: 7", True, "colon after the phrase"),
    ("B", "The answer is (B) 12.", True, "choice letter with its value"),
    ("7", "no idea", False, "no answer"),
    ("7", "", False, "empty completion"),
    # parsing
    ("1234567", "1,234,567", True, "thousands commas"),
    ("1234567", "$1{,}234{,}567$", True, "braced thousands commas"),
    ("1234567", "$1\\,234\\,567$", True, "thin-space thousands"),
    ("0.75", "$.75$", True, "decimal without leading zero"),
    ("-4", "$-4$", True, "negative"),
    ("-4", "\u22124", True, "unicode minus"),
    ("4", "+4", True, "explicit plus sign"),
    ("\\frac{2}{5}", "\\dfrac{2}{5}", True, "dfrac"),
    ("\\frac{2}{5}", "\\tfrac{2}{5}", True, "tfrac"),
    ("\\frac{2}{5}", "2/5", True, "slash"),
    ("\\frac{1}{2}", "\\frac12", True, "braceless frac"),
    ("\\frac{7}{2}", "3\\frac{1}{2}", True, "mixed number 3 1/2 = 7/2"),
    ("-\\frac{7}{2}", "-3\\frac{1}{2}", True, "negative mixed number"),
    ("\\frac{7}{2}", "3\\frac{1}{3}", False, "mixed number 3 1/3 != 7/2"),
    ("20\\%", "20%", True, "percent sign"),
    ("20\\%", "0.2", True, "percent as fraction (default config)"),
    ("20\\%", "20", True, "percent dropped"),
    ("20\\%", "2%", False, "wrong percent"),
    ("0.2", "20\\%", True, "percent in prediction"),
    ("1500", "1.5 \\times 10^3", True, "scientific with times"),
    ("1500", "1.5e3", True, "e-notation"),
    ("0.0015", "1.5 \\cdot 10^{-3}", True, "negative exponent"),
    ("0.0015", "1.5 \\cdot 10^{-4}", False, "wrong exponent"),
    ("3\\sqrt{2}", "\\sqrt{18}", True, "sqrt 18 = 3 sqrt 2"),
    ("3\\sqrt{2}", "\\sqrt{2}\\cdot 3", True, "cdot"),
    ("3\\sqrt{2}", "3 \\times \\sqrt{2}", True, "times"),
    ("3\\sqrt{2}", "\\sqrt{12}", False, "sqrt 12 != 3 sqrt 2"),
    ("\\sqrt[3]{27}", "3", True, "cube root"),
    ("2\\pi", "\\pi \\cdot 2", True, "pi commuted"),
    ("2\\pi", "2 \\pi r", False, "extra variable"),
    ("2\\pi", "6.28", False, "rounded pi is not exact"),
    ("64", "2^6", True, "power"),
    ("64", "4^{3}", True, "braced power"),
    ("64", "8^{2}", True, "another power"),
    ("64", "2^7", False, "wrong power"),
    ("6x", "2 \\cdot 3x", True, "implicit multiplication"),
    ("6x", "6 x", True, "implicit multiplication with space"),
    ("(1, 2)", "\\left(1, 2\\right)", True, "left/right"),
    ("12", "1\\!2", True, "negative thin space joins digits"),
    ("12", "$12\\,\\text{cm}$", True, "unit after thin space"),
    ("12", "12\\mbox{ inches}", True, "mbox unit"),
    ("45^\\circ", "45", True, "degrees dropped"),
    ("5\\text{ cm}^2", "5", True, "squared unit dropped with its exponent"),
    ("5\\text{ cm}^2", "25", False, "unit exponent is not a power of the number"),
    ("[2, 5)", "x \\in [2, 5)", True, "membership written out"),
    ("45", "45^{\\circ}", True, "braced degrees"),
    ("45", "45 degrees", True, "degree word"),
    ("18", "\\$18", True, "escaped dollar"),
    ("18", "18.", True, "trailing period"),
    ("18", "18!", False, "factorial is not punctuation"),
    # equivalence
    ("\\frac{1}{3}", "0.\\overline{3}", True, "repeating decimal"),
    ("\\frac{1}{3}", "0.33", False, "rounded, not equal"),
    ("\\frac{1}{3}", "\\frac{2}{6}", True, "unsimplified fraction"),
    ("\\frac{1}{10}+\\frac{2}{10}", "0.3", True, "exact 0.1 + 0.2 = 0.3"),
    ("x^2 + 2x + 1", "(x+1)^2", True, "symbolic expansion"),
    ("x^2 + 2x + 1", "(x+1)^3", False, "different power"),
    ("\\frac{x^2-1}{x-1}", "x+1", True, "rational function simplifies"),
    ("\\sin^2 x + \\cos^2 x", "1", True, "trig identity"),
    ("2\\sin x \\cos x", "\\sin 2x", True, "double angle"),
    ("e^{\\ln 5}", "5", True, "exp of log"),
    ("\\log_3 81", "4", True, "log base 3"),
    ("\\sqrt{2}", "1.414", False, "3-decimal rounding of sqrt 2"),
    ("(3, -1)", "(3,-1)", True, "tuple"),
    ("(3, -1)", "(-1, 3)", False, "tuple order matters"),
    ("(3, -1)", "3, -1", True, "bare ordered list for a tuple"),
    ("\\{1, 3\\}", "\\{3, 1\\}", True, "set order does not matter"),
    ("\\{1, 3\\}", "\\{1, 3, 5\\}", False, "extra element"),
    ("1, 3", "3, 1", True, "unordered answer list"),
    ("1, 3", "3", False, "missing root"),
    ("[0, 1)", "[0,1)", True, "half-open interval"),
    ("[0, 1)", "[0,1]", False, "closed end differs"),
    ("[0, 1)", "(0,1)", False, "open end differs"),
    ("(-\\infty, 0) \\cup (1, \\infty)", "(1,\\infty) \\cup (-\\infty,0)", True, "union reordered"),
    ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\begin{bmatrix} 1 \\\\ 2 \\end{bmatrix}", True, "pmatrix vs bmatrix"),
    ("\\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}", "\\begin{pmatrix} 1 & 0 \\\\ 0 & 2 \\end{pmatrix}", False, "matrix entry"),
    ("\\begin{pmatrix} 1 & 2 \\end{pmatrix}", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", False, "row vs column"),
    ("x = 5", "5", True, "assignment gold"),
    ("5", "x = 5", True, "assignment prediction"),
    ("5", "x = 6", False, "wrong assignment"),
    ("y = 3x - 2", "y = -2 + 3x", True, "equation commuted"),
    ("y = 3x - 2", "3x - y = 2", True, "equation rearranged"),
    ("y = 3x - 2", "y = 3x + 2", False, "equation sign"),
    ("\\text{(C)}", "The answer is (C).", True, "multiple choice"),
    ("C", "\\boxed{C}", True, "boxed choice"),
    ("C", "\\boxed{D}", False, "wrong choice"),
    ("C", "Answer: c", True, "lower-case choice"),
    ("C", "\\boxed{A, C}", False, "several choices"),
    ("\\text{odd}", "odd", True, "text answer"),
    ("\\text{odd}", "\\boxed{\\text{even}}", False, "wrong text answer"),
    ("\\text{Monday}", "The answer is Monday.", True, "text answer in a phrase"),
    ("3+4i", "4i+3", True, "complex commuted"),
    ("3+4i", "3-4i", False, "conjugate"),
    ("i", "\\sqrt{-1}", True, "imaginary unit"),
    ("\\pm 3", "3, -3", True, "plus-minus as two roots"),
    ("2 \\pm \\sqrt{3}", "2+\\sqrt{3}, 2-\\sqrt{3}", True, "plus-minus expression"),
    ("2 \\pm \\sqrt{3}", "2+\\sqrt{3}", False, "one of two roots"),
    ("\\infty", "\\infty", True, "infinity"),
    ("\\infty", "-\\infty", False, "negative infinity"),
    ("52_8", "42", True, "base 8 numeral 52_8 = 42"),
    ("10", "\\binom{5}{2}", True, "binomial coefficient"),
    ("120", "5!", True, "factorial"),
    ("|-3|", "3", True, "absolute value"),
    ("[2, \\infty)", "x \\ge 2", True, "inequality for an interval: x >= 2 is [2, oo)"),
    ("[2, \\infty)", "x > 2", False, "strict inequality is the open interval"),
    ("(-1, 5]", "-1 < x \\le 5", True, "chained inequality"),
    ("12", "twelve", True, "number word"),
    ("-21", "The answer is negative twenty-one.", True, "negative number words"),
    ("21", "twenty-two", False, "wrong number word"),
    # anti-hacking
    ("4", "The answer is 3, 4, or 5.", False, "several candidates in a phrase"),
    ("4", "\\boxed{3, 4, 5}", False, "several candidates in a box"),
    ("4", "\\boxed{4, 4}", True, "the same value twice is one answer"),
]
for g, c, e, n in H:
    case(g, c, e, "rule: " + n)

for o in out:
    print(json.dumps(o, ensure_ascii=False))
print(f"{len(out)} cases", file=sys.stderr)
