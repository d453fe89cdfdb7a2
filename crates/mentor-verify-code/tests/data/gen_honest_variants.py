"""Writes honest_variants.jsonl: honest programs of the classes the two-instance judge once
misjudged (iterators, subclasses of plain types, truthiness, CPU time, `doctest` under a
`__main__` guard, stdlib modules the tests read), each run by *native* CPython the way the
benchmarks' own harnesses run it, with the native outcome recorded.

HumanEval: prompt + program + test + `check(entry_point)` in one namespace; MBPP: test imports,
program, test setup code, then the asserts. The Rust suite (tests/it/honest.rs) judges every
case in the sandbox and requires the native outcome.

    python3 gen_honest_variants.py /path/to/datasets > honest_variants.jsonl

Setup-time tool; the recorded CPython version is in every line.
"""
import json
import platform
import subprocess
import sys
from pathlib import Path

CASES = [
    # --- iterators returned where the tests wrap the result in tuple()/set()/list() ---
    ("iterators", "HumanEval/33", "generator",
     "def sort_third(l):\n    l = list(l)\n    l[::3] = sorted(l[::3])\n    return (x for x in l)\n"),
    ("iterators", "HumanEval/33", "map",
     "def sort_third(l):\n    l = list(l)\n    l[::3] = sorted(l[::3])\n    return map(lambda x: x, l)\n"),
    ("iterators", "HumanEval/37", "itertools.chain",
     "import itertools\n\ndef sort_even(l):\n    evens = sorted(l[::2])\n    odds = l[1::2]\n"
     "    out = itertools.chain.from_iterable(zip(evens, odds))\n    if len(evens) > len(odds):\n"
     "        out = itertools.chain(out, [evens[-1]])\n    return out\n"),
    ("iterators", "HumanEval/37", "itertools.islice",
     "import itertools\n\ndef sort_even(l):\n    l = list(l)\n    l[::2] = sorted(l[::2])\n"
     "    return itertools.islice(l, None)\n"),
    ("iterators", "mbpp-sanitized/2", "filter",
     "def similar_elements(a, b):\n    b = set(b)\n    return filter(lambda x: x in b, a)\n"),
    ("iterators", "mbpp-sanitized/2", "dict_keys",
     "def similar_elements(a, b):\n    return dict.fromkeys(set(a) & set(b)).keys()\n"),
    ("iterators", "mbpp-sanitized/7", "generator",
     "import re\n\ndef find_char_long(text):\n    return (w for w in re.findall(r\"\\b\\w{4,}\\b\", text))\n"),
    ("iterators", "mbpp-sanitized/7", "map",
     "import re\n\ndef find_char_long(text):\n    return map(str, re.findall(r\"\\b\\w{4,}\\b\", text))\n"),
    ("iterators", "mbpp-sanitized/140", "dict_keys",
     "def extract_singly(test_list):\n    return dict.fromkeys(e for inner in test_list for e in inner).keys()\n"),
    ("iterators", "mbpp-sanitized/140", "itertools.chain",
     "import itertools\n\ndef extract_singly(test_list):\n    return itertools.chain.from_iterable(test_list)\n"),
    ("iterators", "mbpp-sanitized/232", "list_iterator",
     "import heapq\n\ndef larg_nnum(list1, n):\n    return iter(heapq.nlargest(n, list1))\n"),
    ("iterators", "mbpp-sanitized/232", "itertools.islice",
     "import itertools\n\ndef larg_nnum(list1, n):\n    return itertools.islice(sorted(list1, reverse=True), n)\n"),
    # Not wrapped by the test: fails natively too.
    ("iterators", "HumanEval/8", "generator compared unwrapped (fails natively)",
     "def sum_product(numbers):\n    s, p = 0, 1\n    for n in numbers:\n        s += n\n        p *= n\n"
     "    return (x for x in (s, p))\n"),
    # --- subclasses of plain types ---
    ("subclasses", "HumanEval/8", "namedtuple",
     "from collections import namedtuple\nSP = namedtuple('SP', 'sum product')\n\ndef sum_product(numbers):\n"
     "    s, p = 0, 1\n    for n in numbers:\n        s += n\n        p *= n\n    return SP(s, p)\n"),
    ("subclasses", "HumanEval/8", "namedtuple, fields swapped (fails natively)",
     "from collections import namedtuple\nSP = namedtuple('SP', 'product sum')\n\ndef sum_product(numbers):\n"
     "    s, p = 0, 1\n    for n in numbers:\n        s += n\n        p *= n\n    return SP(p, s)\n"),
    ("subclasses", "HumanEval/107", "namedtuple",
     "from collections import namedtuple\nCounts = namedtuple('Counts', ['even', 'odd'])\n\n"
     "def even_odd_palindrome(n):\n    e = o = 0\n    for i in range(1, n + 1):\n"
     "        if str(i) == str(i)[::-1]:\n            if i % 2:\n                o += 1\n            else:\n"
     "                e += 1\n    return Counts(e, o)\n"),
    ("subclasses", "HumanEval/107", "tuple subclass with its own repr",
     "class Counts(tuple):\n    def __repr__(self):\n        return 'Counts' + tuple.__repr__(self)\n\n"
     "def even_odd_palindrome(n):\n    e = o = 0\n    for i in range(1, n + 1):\n"
     "        if str(i) == str(i)[::-1]:\n            if i % 2:\n                o += 1\n            else:\n"
     "                e += 1\n    return Counts((e, o))\n"),
    ("subclasses", "HumanEval/0", "IntEnum member",
     "from enum import IntEnum\n\nclass Answer(IntEnum):\n    NO = 0\n    YES = 1\n\n"
     "def has_close_elements(numbers, threshold):\n    for i, a in enumerate(numbers):\n"
     "        for j, b in enumerate(numbers):\n            if i != j and abs(a - b) < threshold:\n"
     "                return Answer.YES\n    return Answer.NO\n"),
    ("subclasses", "HumanEval/28", "str subclass",
     "class Text(str):\n    pass\n\ndef concatenate(strings):\n    return Text(''.join(strings))\n"),
    ("subclasses", "HumanEval/28", "str subclass with its own __str__",
     "class Text(str):\n    def __str__(self):\n        return '<' + str.__str__(self) + '>'\n\n"
     "def concatenate(strings):\n    return Text(''.join(strings))\n"),
    ("subclasses", "HumanEval/111", "dict subclass",
     "class Hist(dict):\n    pass\n\ndef histogram(test):\n    words = [w for w in test.split(' ') if w]\n"
     "    if not words:\n        return Hist()\n    top = max(words.count(w) for w in words)\n"
     "    return Hist({w: top for w in words if words.count(w) == top})\n"),
    ("subclasses", "HumanEval/2", "float subclass",
     "class Frac(float):\n    pass\n\ndef truncate_number(number):\n    return Frac(number % 1.0)\n"),
    ("subclasses", "mbpp-sanitized/2", "list of namedtuples' fields",
     "from collections import namedtuple\nPair = namedtuple('Pair', 'a b')\n\ndef similar_elements(a, b):\n"
     "    return Pair(*sorted(set(a) & set(b)))\n"),
    # --- truthiness: the tests do `assert f(x)` / `assert not f(x)` ---
    ("truthiness", "mbpp-sanitized/737", "reference (re.Match)", None),
    ("truthiness", "mbpp-sanitized/787", "reference (re.Match)", None),
    ("truthiness", "mbpp-sanitized/794", "reference (re.Match)", None),
    ("truthiness", "mbpp-sanitized/737", "object with __bool__",
     "import re\n\nclass Found:\n    def __init__(self, ok):\n        self.ok = ok\n    def __bool__(self):\n"
     "        return self.ok\n\ndef check_str(string):\n"
     "    return Found(re.search('^[aeiouAEIOU][A-Za-z0-9_]*', string) is not None)\n"),
    ("truthiness", "mbpp-sanitized/794", "object with __len__",
     "import re\n\nclass Hits:\n    def __init__(self, n):\n        self.n = n\n    def __len__(self):\n"
     "        return self.n\n\ndef text_starta_endb(text):\n    return Hits(len(re.findall('a.*?b$', text)))\n"),
    ("truthiness", "mbpp-sanitized/787", "match object, wrong pattern (fails natively)",
     "import re\n\ndef text_match_three(text):\n    return re.search('abc', text)\n"),
    # --- CPU time ---
    ("time", "mbpp-sanitized/123", "reference (CPU-heavy)", None),
    # --- doctest and other stdlib under a __main__ guard ---
    ("doctest", "HumanEval/55", "doctest.testmod under a __main__ guard",
     "def fib(n: int):\n    \"\"\"Return n-th Fibonacci number.\n    >>> fib(10)\n    55\n    >>> fib(1)\n    1\n"
     "    \"\"\"\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n\n\n"
     "if __name__ == \"__main__\":\n    import doctest\n    doctest.testmod()\n"),
    ("doctest", "HumanEval/55", "doctest imported at the top",
     "import doctest\n\ndef fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n"
     "    return a\n\ndoctest.testmod(verbose=False)\n"),
    ("doctest", "HumanEval/55", "a __main__ guard that prints",
     "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n\n\n"
     "if __name__ == '__main__':\n    print(fib(10))\n"),
    # --- stdlib modules the tests read ---
    ("modules", "mbpp-sanitized/596", "reference (tests read sys)", None),
    ("modules", "mbpp-sanitized/82", "reference without its own import (tests read math)", None),
]


def load(datasets):
    he = {}
    for line in open(datasets / "humaneval" / "HumanEval.jsonl"):
        r = json.loads(line)
        he[r["task_id"]] = r
    san = {r["task_id"]: r for r in json.load(open(datasets / "mbpp" / "sanitized-mbpp.json"))}
    return he, san


def native_script(task_ref, program, he, san):
    if task_ref.startswith("HumanEval/"):
        r = he[task_ref]
        return r["prompt"] + "\n" + program + "\n" + r["test"] + "\n" + "check(" + r["entry_point"] + ")\n"
    r = san[int(task_ref.split("/")[1])]
    return "\n".join((r.get("test_imports") or []) + [program, r.get("test_setup_code") or ""] + r["test_list"]) + "\n"


def main():
    datasets = Path(sys.argv[1])
    he, san = load(datasets)
    version = platform.python_version()
    for cls, task_ref, variant, program in CASES:
        if program is None:
            program = san[int(task_ref.split("/")[1])]["code"]
            if variant.startswith("reference without"):
                program = "\n".join(l for l in program.split("\n") if l.strip() != "import math")
        script = native_script(task_ref, program, he, san)
        try:
            proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
            passed = proc.returncode == 0
        except subprocess.TimeoutExpired:
            passed = False
        line = {"class": cls, "task": task_ref, "variant": variant, "program": program,
                "native_passed": passed, "cpython": version}
        print(json.dumps(line))


if __name__ == "__main__":
    main()
