# distsampler tests: every code block of README.md and docs/*.md is run, compiled or parsed by a test.
# SPDX-License-Identifier: MIT
"""Which harness takes which fenced block (the marker grammar is in doc_blocks.py):

- ``python``: run here, as written, each in its own process (a ``fragment`` with the
  blocks after it); a few are also checked by name by test_tokens.py and test_mixture.py.
- ``cpp``: compiled by tests/CMakeLists.txt (``distsampler_doc_example``), and run there
  when it is a program; each needs its ``<!-- example: NAME -->`` marker.
- ``console``: transcripts ``$ distsampler ...`` followed by what they print, checked by
  tests/cli_test.sh for every document the CMake ``cli`` test passes to it.
- ``sh``: commands to type (install, build, launch). Parsed here: ``bash -n``, every
  repository path they name exists, every ``--target`` is a CMake target of the project,
  every ``--preset`` a preset of CMakePresets.json. The torchrun commands of
  docs/LAUNCHERS.md are also run, by test_launchers_torchrun_commands_behave_as_documented.
- ``cmake``: a consumer's CMake lines. Parsed here: balanced parentheses, and every
  ``distsampler::`` target they link is one the packaging test's consumer links.
- no language: a diagram or quoted output (a traceback), not code.

test_every_block_has_a_harness fails naming the file and line of any other block.
"""

import json
import os
import re
import shlex
import socket
import subprocess
import sys

import pytest
import torch

import doc_blocks

ROOT = doc_blocks.ROOT


def _read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def _cmake_sources():
    out = []
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "build"]
        out += [_read(os.path.relpath(os.path.join(top, f), ROOT)) for f in files if f == "CMakeLists.txt"]
    return "\n".join(out)


def _compiled_examples():
    """(file, marker) of every distsampler_doc_example call in tests/CMakeLists.txt."""
    text = _read("tests/CMakeLists.txt")
    return set(re.findall(r'distsampler_doc_example\(\s*"?([^\s")]+)"?\s+"([^"]+)"', text))


def _transcript_docs():
    """The documents tests/CMakeLists.txt passes to cli_test.sh."""
    m = re.search(r"set\(DISTSAMPLER_TRANSCRIPT_DOCS\s+([^)]*)\)", _read("tests/CMakeLists.txt"))
    return set(m.group(1).split()) if m else set()


def _python_programs():
    return [(b, code) for path in doc_blocks.documents() for b, code in doc_blocks.python_programs(path)]


def _check_sh(block, targets, presets):
    problems = []
    syntax = subprocess.run(["bash", "-n"], input=block.code, capture_output=True, text=True)
    if syntax.returncode != 0:
        problems.append(f"bash -n: {syntax.stderr.strip()}")
    for line in block.code.splitlines():
        line = line.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        try:
            words = shlex.split(line)
        except ValueError as e:
            problems.append(f"{line!r}: {e}")
            continue
        for i, w in enumerate(words):
            if re.match(r"^(scripts|examples|python|tests|bench|docs|cli|include|cmake)/[\w./-]+$", w):
                if not os.path.exists(os.path.join(ROOT, w)):
                    problems.append(f"{w} does not exist")
            if w == "--target" and i + 1 < len(words):
                for t in words[i + 1:]:
                    if t.startswith("-") or t in ("&&", ";"):
                        break
                    if t not in targets:
                        problems.append(f"--target {t} is not a target of the project")
            if w == "--preset" and i + 1 < len(words) and words[i + 1] not in presets:
                problems.append(f"--preset {words[i + 1]} is not in CMakePresets.json")
    return problems


def _check_cmake(block, consumer):
    problems = []
    if block.code.count("(") != block.code.count(")"):
        problems.append("unbalanced parentheses")
    for t in sorted(set(re.findall(r"distsampler::\w+", block.code))):
        if t not in consumer:
            problems.append(f"{t} is not linked by tests/consumer/CMakeLists.txt")
    return problems


@pytest.mark.processes
def test_every_block_has_a_harness():
    compiled = _compiled_examples()
    transcripts = _transcript_docs()
    cmake_text = _cmake_sources()
    targets = set(re.findall(r"add_(?:executable|library|custom_target)\(\s*([\w-]+)", cmake_text))
    targets |= set(re.findall(r"distsampler_add_example\(\s*([\w-]+)", cmake_text))
    presets_json = json.loads(_read("CMakePresets.json"))
    presets = {p["name"] for kind in ("configurePresets", "buildPresets", "testPresets", "workflowPresets")
               for p in presets_json.get(kind, [])}
    consumer = _read("tests/consumer/CMakeLists.txt")
    failures = []
    for path in doc_blocks.documents():
        for b in doc_blocks.all_blocks(path):
            where = f"{b.path}:{b.line}"
            if b.lang == "":
                continue
            if b.lang == "python":
                continue  # test_python_block_runs runs every one
            if b.lang == "cpp":
                name = b.marker if b.marker.startswith("example: ") else None
                if name is None or (path, name) not in compiled:
                    failures.append(f"{where}: a C++ block that tests/CMakeLists.txt does not compile (give it "
                                    f"<!-- example: NAME --> and a distsampler_doc_example({path} \"example: NAME\" "
                                    f"OUT) call)")
            elif b.lang == "console":
                first = b.code.splitlines()[0] if b.code.strip() else ""
                if path not in transcripts:
                    failures.append(f"{where}: a transcript in a document that cli_test.sh is not given "
                                    f"(add {path} to DISTSAMPLER_TRANSCRIPT_DOCS in tests/CMakeLists.txt)")
                elif not first.startswith("$ "):
                    failures.append(f"{where}: a console block that does not start with a `$ ` command")
                for line in b.code.splitlines():
                    if line.startswith("$ ") and not re.match(r"^\$ ((\w+=\$\()?distsampler |echo )", line):
                        failures.append(f"{where}: `{line}` is not a distsampler command (cli_test.sh runs only "
                                        "those, assignments from them and echo)")
            elif b.lang == "sh":
                failures += [f"{where}: {p}" for p in _check_sh(b, targets, presets)]
            elif b.lang == "cmake":
                failures += [f"{where}: {p}" for p in _check_cmake(b, consumer)]
            else:
                failures.append(f"{where}: no harness runs ```{b.lang} blocks (use python, cpp, console, sh or "
                                "cmake, or no language for a diagram)")
    assert not failures, "\n".join(failures)


def test_harness_finds_every_kind_of_block():
    # The walker above must see the blocks the harnesses run, or it would pass on nothing.
    langs = {b.lang for path in doc_blocks.documents() for b in doc_blocks.all_blocks(path)}
    assert {"python", "cpp", "console", "sh", "cmake"} <= langs
    assert len(_compiled_examples()) >= 8
    assert {"README.md", "docs/CLI.md"} <= _transcript_docs()


def test_the_readme_guides_table_lists_every_guide():
    # A guide missing from the README's table is a guide its readers do not find.
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    table = readme.split("\n## Guides\n", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| \[docs/([A-Z]+\.md)\]\(docs/\1\) \| ", table, re.M))
    guides = {p[len("docs/"):] for p in doc_blocks.documents() if p.startswith("docs/")}
    assert guides - listed == set(), f"README.md's guides table leaves out {sorted(guides - listed)}"
    assert listed - guides == set(), f"README.md's guides table names missing files {sorted(listed - guides)}"


def test_blocks_reader_reports_file_and_line(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("text\n<!-- fragment -->\n```python\na = 1\n```\n\n```python\nprint(a)\n```\n```sh\nopen\n")
    with pytest.raises(ValueError, match=r"x.md:10: a ``` fence that is never closed"):
        doc_blocks.all_blocks(str(doc))
    doc.write_text("text\n<!-- fragment -->\n```python\na = 1\n```\n\n```python\nprint(a)\n```\n")
    (first, code), = doc_blocks.python_programs(str(doc))
    assert first.line == 3 and first.marker == "fragment" and code == "a = 1\nprint(a)\n"


@pytest.mark.processes
@pytest.mark.parametrize("program", _python_programs(), ids=lambda p: f"{p[0].path}:{p[0].line}")
def test_python_block_runs(program, tmp_path):
    block, code = program
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env["OMP_NUM_THREADS"] = "1"
    script = tmp_path / "block.py"
    script.write_text(code)
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, f"{block.path}:{block.line}: the block fails as written:\n{out.stdout}{out.stderr}"


def _output(path, marker, tmp_path):
    block = doc_blocks.block(path, marker)
    script = tmp_path / "block.py"
    script.write_text(block.code)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")}
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.processes
def test_readme_python_example_reads_a_quarter_each_epoch(tmp_path):
    assert _output("README.md", "example: readme-python", tmp_path) == (
        "epoch 0: rank 1 read 250 samples, 250 distinct\nepoch 1: rank 1 read 250 samples, 250 distinct\n")


@pytest.mark.processes
def test_python_guide_checkpoint_resumes_the_rest_on_four_ranks(tmp_path):
    # 2 ranks read 20 batches of 10 each (400 of 1000); rank 0 of 4 reads a quarter of the other 600.
    assert _output("docs/PYTHON.md", "example: checkpoint-python", tmp_path) == (
        "epoch 0: 150 samples\nepoch 1: 250 samples\n")


TORCHRUN = "/usr/bin/torchrun"


def _commands(path, marker):
    return [line.split("  #")[0].strip() for line in doc_blocks.block(path, marker).code.splitlines()
            if line.strip() and not line.startswith("#")]


@pytest.mark.processes
@pytest.mark.skipif(not os.path.exists(TORCHRUN), reason="needs Debian's torchrun")
def test_launchers_torchrun_commands_behave_as_documented(tmp_path):
    (tmp_path / "probe.py").write_text(doc_blocks.block("docs/LAUNCHERS.md", "example: probe").code)
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    with socket.socket() as s:  # torchrun reads its --master_port default from PET_MASTER_PORT
        s.bind(("127.0.0.1", 0))
        env["PET_MASTER_PORT"] = str(s.getsockname()[1])
    env["OMP_NUM_THREADS"] = "1"

    def run(command):
        return subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)

    rank_line = r"^RANK (\d) LOCAL_RANK \1 WORLD_SIZE 2 LOCAL_WORLD_SIZE 2 get_rank \1$"
    flags = _commands("docs/LAUNCHERS.md", "example: torchrun-flags")
    assert len(flags) == 2
    for command in flags:
        out = run(command)
        assert out.returncode == 0, f"{command}:\n{out.stdout}{out.stderr}"
        assert sorted(re.findall(rank_line, out.stdout, re.M)) == ["0", "1"], f"{command}:\n{out.stdout}"
    # The venv form, with the venv running these tests for `.venv` and a train.py that imports the package.
    (venv_form,) = _commands("docs/LAUNCHERS.md", "example: torchrun-venv")
    assert venv_form.startswith(".venv/bin/python -m torch.distributed.run ") and venv_form.endswith(" train.py")
    (tmp_path / "train.py").write_text("import distsampler  # noqa: F401\n" + (tmp_path / "probe.py").read_text())
    out = run(shlex.quote(sys.executable) + venv_form[len(".venv/bin/python"):])
    assert out.returncode == 0, f"{venv_form}:\n{out.stdout}{out.stderr}"
    assert sorted(re.findall(rank_line, out.stdout, re.M)) == ["0", "1"], f"{venv_form}:\n{out.stdout}"
    (crash,) = _commands("docs/LAUNCHERS.md", "example: torchrun-crash")
    if torch.__version__.startswith("1.13") and sys.version_info[:2] == (3, 11):  # what the page describes
        out = run(crash)
        assert out.returncode != 0 and not re.findall(rank_line, out.stdout, re.M), out.stdout
        assert "AttributeError: 'NoneType' object has no attribute 'get'" in out.stderr, out.stderr
