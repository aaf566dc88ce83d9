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

# libtorch's headers take longer to parse than anything else in the build. With
# DISTSAMPLER_TORCH_PCH they are precompiled once and reused by every program of the
# libtorch adapter (`distsampler_use_torch_pch(target)`; the reusing targets must have
# the same flags). Measured with GCC 12 at -O2 -g1: making the precompiled header costs
# about 28 s of CPU and saves 5 to 7 s per translation unit, so it pays from about five
# libtorch translation units on; below that it lengthens a cold build.
option(DISTSAMPLER_TORCH_PCH "Precompile libtorch's headers for the adapter's tests and examples" OFF)
if(DISTSAMPLER_TORCH_PCH AND TARGET distsampler_torch AND NOT DISTSAMPLER_SANITIZE)
  file(CONFIGURE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/distsampler_torch_pch.cpp
       CONTENT "// The translation unit that carries the precompiled libtorch headers.\n")
  add_library(distsampler_torch_pch OBJECT ${CMAKE_CURRENT_BINARY_DIR}/distsampler_torch_pch.cpp)
  target_link_libraries(distsampler_torch_pch PRIVATE distsampler::torch distsampler_dev_flags)
  target_precompile_headers(distsampler_torch_pch PRIVATE <torch/torch.h>)
endif()
function(distsampler_use_torch_pch target)
  if(TARGET distsampler_torch_pch)
    target_precompile_headers(${target} REUSE_FROM distsampler_torch_pch)
  endif()
endfunction()
