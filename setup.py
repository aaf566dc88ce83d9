# Builds the distsampler extension from the C++ headers in include/ (one translation unit).
# SPDX-License-Identifier: MIT
from pybind11.setup_helpers import Pybind11Extension
from setuptools import setup

setup(
    ext_modules=[
        Pybind11Extension(
            "distsampler._core",
            ["python/_core.cpp"],
            include_dirs=["include"],
            cxx_std=17,
            extra_compile_args=["-O2"],
        )
    ],
)
