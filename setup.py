# Builds the distsampler extension from the C++ headers in include/ (the bindings: _core.cpp and one file per family in python/core/).
# SPDX-License-Identifier: MIT
from glob import glob

from pybind11.setup_helpers import Pybind11Extension
from setuptools import setup

setup(
    ext_modules=[
        Pybind11Extension(
            "distsampler._core",
            ["python/_core.cpp", "python/core/files.cpp"],
            include_dirs=["include"],
            # The headers are the library: a build directory kept from an earlier build (pip builds
            # in the source tree) is recompiled when any of them is newer than the extension.
            depends=sorted(glob("include/distsampler/**/*.hpp", recursive=True)),
            cxx_std=17,
            extra_compile_args=["-O2"],
        )
    ],
)
