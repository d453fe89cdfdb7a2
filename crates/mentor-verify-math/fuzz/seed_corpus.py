#!/usr/bin/env python3
"""Writes the seed corpus of the `check` fuzz target into corpus/check/: every case of the shared
fixture (gold, newline, completion) plus the depth repros of issue 17. Files are named by the
SHA-1 of their content, as libFuzzer names its own finds, so rerunning is idempotent."""

import hashlib
import json
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
FIXTURE = HERE.parent / "tests" / "data" / "math_equiv_cases.jsonl"
OUT = HERE / "corpus" / "check"


def repros():
    nest = lambda o, i, c, n: o * n + i + c * n
    chains = [
        "3" + "!" * 1500,
        "1" + "%" * 1500,
        "1" + "\\%" * 700,
        "2" + "!%" * 700,
        "-" * 1500 + "1",
        "^".join(["2"] * 1000),
        "^".join(["2!"] * 700),
        nest("(", "1", ")", 1500),
        nest("{", "1", "}", 1500),
        nest("\\frac{1}{", "2", "}", 300),
        nest("\\sqrt{", "2", "}", 400),
        nest("\\left(", "x", "\\right)", 250),
        nest("\\sin(", "x", ")", 500),
        nest("\\{", "1", "\\}", 600),
        nest("\\text{", "1", "}", 400),
        "\\sin " * 600 + "x",
        "_".join(["x"] * 1000),
        "(-\\frac{\\sqrt{2^{|{" * 100,
    ]
    for c in chains:
        yield "1\n\\boxed{" + c + "}"
        yield c + "\n\\boxed{1}"


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    seeds = []
    for line in FIXTURE.read_text().splitlines():
        if line.strip():
            case = json.loads(line)
            seeds.append(case["gold"] + "\n" + case["completion"])
    seeds.extend(repros())
    for s in seeds:
        data = s.encode()
        (OUT / hashlib.sha1(data).hexdigest()).write_bytes(data)
    print(f"{len(seeds)} seeds in {OUT}")


if __name__ == "__main__":
    main()
