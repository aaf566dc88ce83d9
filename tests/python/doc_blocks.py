# distsampler tests: finds the fenced code blocks of a Markdown document and the marker comment before each.
# SPDX-License-Identifier: MIT
"""The fenced code blocks of README.md and docs/*.md, as the doc tests read them.

A block is a fence (three backticks and a language) up to the next closing fence. The
line right before the fence may be a marker comment, ``<!-- MARKER -->``:

- ``<!-- example: NAME -->`` names the block for the test that reads it by name
  (``distsampler_doc_example(FILE "example: NAME" OUT)`` in tests/CMakeLists.txt for C++,
  a test of tests/python for Python);
- ``<!-- fragment -->`` on a Python block: it continues in the next Python block of the
  same file, and the doc tests run them together.
"""

import collections
import os
import re

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

Block = collections.namedtuple("Block", ["path", "line", "lang", "marker", "code"])
Block.__doc__ = ("One fenced block: the file (relative to the repository root), the line of its opening fence "
                 "(1-based), its language ('' for none), the marker before it ('' for none) and its text.")

_FENCE = re.compile(r"^(\s*)```\s*([A-Za-z0-9_+-]*)\s*$")
_MARKER = re.compile(r"^\s*<!--\s*(.*?)\s*-->\s*$")


def documents():
    """README.md and every docs/*.md, relative to the repository root, sorted."""
    docs = os.path.join(ROOT, "docs")
    return ["README.md"] + sorted("docs/" + f for f in os.listdir(docs) if f.endswith(".md"))


def all_blocks(path):
    """Every fenced block of `path` (relative to the repository root, or absolute), in order.
    Raises ValueError naming the line of a fence that is never closed."""
    full = path if os.path.isabs(path) else os.path.join(ROOT, path)
    with open(full, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start = i
        marker = _MARKER.match(lines[i - 1]) if i > 0 else None
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            j += 1
        if j == len(lines):
            raise ValueError(f"{path}:{start + 1}: a ``` fence that is never closed")
        indent = len(m.group(1))
        code = "\n".join(line[indent:] if line[:indent].strip() == "" else line for line in lines[start + 1:j])
        out.append(Block(path, start + 1, m.group(2), marker.group(1) if marker else "", code + "\n"))
        i = j + 1
    return out


def blocks(path, lang):
    """The blocks of `path` in language `lang` ("python", "cpp", "console", "sh", ...)."""
    return [b for b in all_blocks(path) if b.lang == lang]


def block(path, marker):
    """The one block of `path` after ``<!-- MARKER -->``; KeyError when there is none."""
    found = [b for b in all_blocks(path) if b.marker == marker]
    if len(found) != 1:
        raise KeyError(f"{path} has {len(found)} blocks after <!-- {marker} --> (expected 1)")
    return found[0]


def python_programs(path):
    """The Python blocks of `path` as programs: a block marked ``fragment`` is joined with the
    blocks after it up to the first one that is not. Each program is (first Block, code)."""
    out, pending = [], []
    for b in blocks(path, "python"):
        pending.append(b)
        if b.marker != "fragment":
            out.append((pending[0], "".join(p.code for p in pending)))
            pending = []
    if pending:
        raise ValueError(f"{path}:{pending[-1].line}: a Python fragment with no block after it")
    return out
