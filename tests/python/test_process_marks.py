# The `processes` mark is kept true: a test without it cannot start a process (conftest.py).
# SPDX-License-Identifier: MIT
import multiprocessing
import subprocess
import sys

import pytest


def test_a_subprocess_in_an_unmarked_test_fails_naming_the_test_and_the_mark():
    with pytest.raises(RuntimeError) as caught:
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    message = str(caught.value)
    assert "test_a_subprocess_in_an_unmarked_test_fails_naming_the_test_and_the_mark" in message
    assert "starts a subprocess" in message and "without @pytest.mark.processes" in message


def test_a_multiprocessing_process_in_an_unmarked_test_fails():
    with pytest.raises(RuntimeError, match=r"starts a multiprocessing process .* without @pytest.mark.processes"):
        multiprocessing.get_context("spawn").Process(target=print).start()


@pytest.mark.processes
def test_a_marked_test_starts_processes():
    assert subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True,
                          check=True).stdout == "42\n"
