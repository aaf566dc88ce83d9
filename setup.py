# Builds the distsampler._core extension from python/core/ (one file per family) over the C++ headers in include/.
# SPDX-License-Identifier: MIT
from glob import glob

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension
from setuptools import setup

# The binding files compile in parallel: DISTSAMPLER_BUILD_JOBS jobs (default 2).
ParallelCompile("DISTSAMPLER_BUILD_JOBS", default=2).install()

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
            extra_compile_args=["-O2"],
        )
    ],
)
