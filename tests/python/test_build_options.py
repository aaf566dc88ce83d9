# The package build's options: DISTSAMPLER_OPT_LEVEL is checked before anything is compiled.
# SPDX-License-Identifier: MIT
import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def setup_py(*args, opt_level):
    env = dict(os.environ, DISTSAMPLER_OPT_LEVEL=opt_level)
    return subprocess.run([sys.executable, "setup.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.processes
@pytest.mark.parametrize("bad", ["4", "-O2", "fast", ""])
def test_an_unknown_optimisation_level_is_refused_naming_the_variable_and_the_value(bad):
    out = setup_py("--name", opt_level=bad)
    assert out.returncode != 0
    assert (f"setup.py: DISTSAMPLER_OPT_LEVEL {bad!r} is not an optimisation level "
            "(expected one of 0, 1, 2, 3, s, g)") in out.stderr


@pytest.mark.processes
def test_a_known_optimisation_level_is_accepted():
    out = setup_py("--name", opt_level="1")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "distsampler"
