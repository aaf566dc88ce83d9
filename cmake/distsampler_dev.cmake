# distsampler's own programs (tests, examples, benchmarks): warnings, sanitizers, shared build pieces.
# SPDX-License-Identifier: MIT

# Warnings and sanitizers for distsampler's own programs (never imposed on consumers).
add_library(distsampler_dev_flags INTERFACE)
target_compile_options(distsampler_dev_flags INTERFACE -Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion
                                                       -Wshadow $<$<BOOL:${DISTSAMPLER_WERROR}>:-Werror>)
# With DISTSAMPLER_SANITIZE every program is built with ASan+UBSan except those marked by
# `distsampler_unsanitized(target)`: the ones linking libtorch or MPI (neither is built for the
# sanitizers, and MPI's own allocations are reported) and the compile-only checks.
if(DISTSAMPLER_SANITIZE)
  set(_ds_sanitized "$<NOT:$<BOOL:$<TARGET_PROPERTY:DISTSAMPLER_UNSANITIZED>>>")
  # GCC 12 reports false maybe-uninitialized warnings inside libstdc++ under ASan.
  foreach(_flag -fsanitize=address$<COMMA>undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
                -Wno-maybe-uninitialized)
    target_compile_options(distsampler_dev_flags INTERFACE $<${_ds_sanitized}:${_flag}>)
  endforeach()
  target_link_options(distsampler_dev_flags INTERFACE $<${_ds_sanitized}:-fsanitize=address$<COMMA>undefined>)
endif()

# distsampler_unsanitized(TARGET...): builds each TARGET without the sanitizers.
function(distsampler_unsanitized)
  set_target_properties(${ARGN} PROPERTIES DISTSAMPLER_UNSANITIZED ON)
endfunction()

# libtorch's headers take longer to parse and optimise than anything else in the build,
# while the programs that use them (the adapter's tests and examples) run in milliseconds.
# Every such program is declared with `distsampler_torch_program(target)`: it is compiled
# without optimisation or debug information, which takes a third off each libtorch
# translation unit (GCC 12), and it uses one precompiled header of the libtorch headers the
# adapter includes (made once, about 22 s of CPU; each libtorch translation unit then takes
# about 5 to 10 s instead of 17 to 27 s). The libtorch header check uses it too.
if(TARGET distsampler_torch)
  set(_ds_torch_pch_tu "${CMAKE_BINARY_DIR}/distsampler_torch_pch.cpp")
  file(CONFIGURE OUTPUT "${_ds_torch_pch_tu}" CONTENT "// The translation unit that makes libtorch's precompiled header.\n")
  add_library(distsampler_torch_pch OBJECT "${_ds_torch_pch_tu}")
  target_link_libraries(distsampler_torch_pch PRIVATE distsampler::torch distsampler_dev_flags)
  target_compile_options(distsampler_torch_pch PRIVATE -O0 -g0)
  set_target_properties(distsampler_torch_pch PROPERTIES DISTSAMPLER_UNSANITIZED ON)
  target_precompile_headers(distsampler_torch_pch PRIVATE <torch/types.h> <torch/data/samplers/base.h>
                            <torch/serialize/archive.h> <torch/csrc/distributed/c10d/TCPStore.hpp>)
endif()
function(distsampler_torch_program target)
  target_compile_options(${target} PRIVATE -O0 -g0)
  distsampler_unsanitized(${target})
  target_precompile_headers(${target} REUSE_FROM distsampler_torch_pch)
endfunction()
