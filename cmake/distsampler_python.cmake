# distsampler's Python package built by CMake (DISTSAMPLER_BUILD_PYTHON, the quick test tier): the
# extension distsampler._core from python/core/ (one file per family, each recompiled only when a
# header it includes changes, which pip's build cannot do), placed beside links to the package's
# Python files in BUILD/python/distsampler, so that `PYTHONPATH=BUILD/python` imports the package.
# The wheel (pip install .) is still built by setup.py; the full test tier tests that one.
# SPDX-License-Identifier: MIT
find_package(Python3 REQUIRED COMPONENTS Interpreter Development.Module)
# Debian's pybind11 (python3-pybind11) keeps its CMake files inside the Python package.
execute_process(COMMAND ${Python3_EXECUTABLE} -c "import pybind11; print(pybind11.get_cmake_dir())"
                OUTPUT_VARIABLE _ds_pybind11_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
find_package(pybind11 CONFIG REQUIRED HINTS "${_ds_pybind11_dir}")

file(GLOB _ds_binding_sources CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/python/core/*.cpp")
# NO_EXTRAS: no link-time optimisation or stripping (a test build; the wheel has its own flags).
pybind11_add_module(distsampler_python_core MODULE NO_EXTRAS ${_ds_binding_sources})
target_link_libraries(distsampler_python_core PRIVATE distsampler::distsampler)
# -O0 with pybind11's headers precompiled once: the binding files took 133 s of CPU at -O1 and
# take 78 s so (2 cores, GCC 12), while the Python tests run as fast (they wait on Python).
target_compile_options(distsampler_python_core PRIVATE -O0 -g0)
target_precompile_headers(distsampler_python_core PRIVATE <pybind11/pybind11.h> <pybind11/stl.h> <pybind11/numpy.h>)
set(_ds_python_dir "${CMAKE_BINARY_DIR}/python/distsampler")
set_target_properties(distsampler_python_core PROPERTIES OUTPUT_NAME _core LIBRARY_OUTPUT_DIRECTORY "${_ds_python_dir}"
                                                         DISTSAMPLER_UNSANITIZED ON)
file(GLOB_RECURSE _ds_python_files CONFIGURE_DEPENDS RELATIVE "${PROJECT_SOURCE_DIR}/python/distsampler"
     "${PROJECT_SOURCE_DIR}/python/distsampler/*.py" "${PROJECT_SOURCE_DIR}/python/distsampler/*.pyi"
     "${PROJECT_SOURCE_DIR}/python/distsampler/py.typed")
foreach(_file ${_ds_python_files})
  get_filename_component(_dir "${_ds_python_dir}/${_file}" DIRECTORY)
  file(MAKE_DIRECTORY "${_dir}")
  file(CREATE_LINK "${PROJECT_SOURCE_DIR}/python/distsampler/${_file}" "${_ds_python_dir}/${_file}" SYMBOLIC)
endforeach()

# The Python tests that compare the package with the distsampler program (pytest mark `cli`): run on
# this build's extension and program.
if(TARGET distsampler_cli AND DISTSAMPLER_BUILD_TESTS)
  add_test(NAME python_cli_agreement
           COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider -m cli
           WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}/tests/python")
  set_tests_properties(python_cli_agreement PROPERTIES
                       ENVIRONMENT "PYTHONPATH=${CMAKE_BINARY_DIR}/python;DISTSAMPLER_CLI=$<TARGET_FILE:distsampler_cli>"
                       PASS_REGULAR_EXPRESSION "[1-9][0-9]* passed" FAIL_REGULAR_EXPRESSION "failed|error|no tests ran"
                       LABELS cli)
endif()
