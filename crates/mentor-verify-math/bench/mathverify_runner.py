#!/usr/bin/env python3
"""Runs Hugging Face Math-Verify on labelled cases and prints one JSON object.

Input: a JSONL file of {"gold", "completion", "expected", ...} (lines with "ambiguous": true
are skipped, as in the Rust side). Gold is parsed as `$gold$` (LaTeX), the completion as is,
then `verify(gold, pred)`: Math-Verify's documented usage, with its default timeouts. Output (stdout):
{"tool": "math-verify", "version", "cases", "agree", "agreement", "seconds", "checks_per_sec",
 "verdicts": [bool, ...]}. Time covers parse + verify of every case, not the import or one warm-up call.

Usage: python mathverify_runner.py CASES.jsonl [CASES2.jsonl ...]
"""

import json
import sys
import time
from importlib.metadata import version

from math_verify import parse, verify


def load(paths):
    cases = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                c = json.loads(line)
                if c.get("ambiguous"):
                    continue
                cases.append(c)
    return cases


def judge(gold, completion):
    try:
        g = parse(f"${gold}$")
        p = parse(completion)
        return bool(verify(g, p))
    except Exception:  # Math-Verify raising counts as "not correct"
        return False


def main():
    cases = load(sys.argv[1:])
    # Warm-up outside the timed window (lazy imports, grammar loading).
    judge("\\frac{1}{2}", "$\\boxed{0.5}$")
    start = time.perf_counter()
    verdicts = [judge(c["gold"], c["completion"]) for c in cases]
    seconds = time.perf_counter() - start
    agree = sum(v == c["expected"] for v, c in zip(verdicts, cases))
    print(json.dumps({
        "tool": "math-verify",
        "version": version("math-verify"),
        "cases": len(cases),
        "agree": agree,
        "agreement": agree / len(cases) if cases else 0.0,
        "seconds": seconds,
        "checks_per_sec": len(cases) / seconds if seconds > 0 else 0.0,
        "verdicts": verdicts,
    }))


if __name__ == "__main__":
    main()
