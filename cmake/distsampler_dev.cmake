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
# without optimisation or debug information, which takes a third off each libtorch
# translation unit (GCC 12). A precompiled <torch/torch.h> (565 MB, 23 s of CPU to make)
# saved less than it cost once the adapter's tests became one translation unit that
# includes only <torch/data.h> and <torch/serialize.h>, so there is none.
function(distsampler_torch_program target)
  target_compile_options(${target} PRIVATE -O0 -g0)
endfunction()
