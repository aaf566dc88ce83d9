# Builds the distsampler._core extension from python/core/ (one file per family) over the C++ headers in include/.
# SPDX-License-Identifier: MIT
import os
from glob import glob

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension
from setuptools import setup

# The binding files compile in parallel: DISTSAMPLER_BUILD_JOBS jobs (default 2).
ParallelCompile("DISTSAMPLER_BUILD_JOBS", default=2).install()

# DISTSAMPLER_OPT_LEVEL picks the optimisation level (default 2); python/run_tests.sh builds at
# 1, which takes a third less compile time and runs the test suite as fast.
_opt_level = os.environ.get("DISTSAMPLER_OPT_LEVEL", "2")
if _opt_level not in ("0", "1", "2", "3", "s", "g"):
    raise SystemExit(f"setup.py: DISTSAMPLER_OPT_LEVEL {_opt_level!r} is not an optimisation level "
                     "(expected one of 0, 1, 2, 3, s, g)")

setup(
    ext_modules=[
        Pybind11Extension(
            "distsampler._core",
            sorted(glob("python/core/*.cpp")),
            include_dirs=["include"],
            # The headers are the library: a build directory kept from an earlier build (pip builds
            # in the source tree) is recompiled when any of them is newer than the extension. The
            # families' headers sit in subfolders of include/distsampler, hence the recursive glob.
            depends=sorted(glob("include/distsampler/**/*.hpp", recursive=True) + glob("python/core/*.hpp")),
            cxx_std=17,
            # -g0 after Python's own -g: debug information took 40% of each binding file's compile
            # (15.2 s against 9.4 s at -O1) and a wheel's is stripped anyway; DISTSAMPLER_DEBUG_INFO=1 keeps it.
            extra_compile_args=[f"-O{_opt_level}"] + ([] if os.environ.get("DISTSAMPLER_DEBUG_INFO") == "1" else ["-g0"]),
        )
    ],
)
