# distsampler's own programs (tests, examples, benchmarks): warnings, sanitizers, shared build pieces.
# SPDX-License-Identifier: MIT

# Warnings and sanitizers for distsampler's own programs (never imposed on consumers).
add_library(distsampler_dev_flags INTERFACE)
target_compile_options(distsampler_dev_flags INTERFACE -Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion
                                                       -Wshadow $<$<BOOL:${DISTSAMPLER_WERROR}>:-Werror>)
if(DISTSAMPLER_SANITIZE)
  # GCC 12 reports false maybe-uninitialized warnings inside libstdc++ under ASan.
  target_compile_options(distsampler_dev_flags INTERFACE -fsanitize=address,undefined -fno-sanitize-recover=all
                                                         -fno-omit-frame-pointer -Wno-maybe-uninitialized)
  target_link_options(distsampler_dev_flags INTERFACE -fsanitize=address,undefined)
endif()

# libtorch's headers take longer to parse and optimise than anything else in the build,
# while the programs that use them (the adapter's tests and examples) run in milliseconds.
# Every such program is declared with `distsampler_torch_program(target)`: it is compiled
# without optimisation or debug information and, with DISTSAMPLER_TORCH_PCH (on in the
# presets), reuses libtorch's headers precompiled once. Measured with GCC 12 on 2 cores:
# -O0 -g0 takes a third off each libtorch translation unit, and the precompiled header
# (about 25 s of CPU to make) saves more than that from about four units on (we have six).
option(DISTSAMPLER_TORCH_PCH "Precompile libtorch's headers for the adapter's tests and examples" OFF)
set(_ds_torch_program_flags -O0 -g0)
if(DISTSAMPLER_TORCH_PCH AND TARGET distsampler_torch AND NOT DISTSAMPLER_SANITIZE)
  file(CONFIGURE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/distsampler_torch_pch.cpp
       CONTENT "// The translation unit that carries the precompiled libtorch headers.\n")
  add_library(distsampler_torch_pch OBJECT ${CMAKE_CURRENT_BINARY_DIR}/distsampler_torch_pch.cpp)
  target_link_libraries(distsampler_torch_pch PRIVATE distsampler::torch distsampler_dev_flags)
  target_compile_options(distsampler_torch_pch PRIVATE ${_ds_torch_program_flags})
  target_precompile_headers(distsampler_torch_pch PRIVATE <torch/torch.h>)
endif()
function(distsampler_torch_program target)
  target_compile_options(${target} PRIVATE ${_ds_torch_program_flags})
  if(TARGET distsampler_torch_pch)
    target_precompile_headers(${target} REUSE_FROM distsampler_torch_pch)
  endif()
endfunction()
