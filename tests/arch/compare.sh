#!/bin/bash
# distsampler tests: builds tests/arch/digests.cpp for x86-64 (native and portable u128), i686 and s390x; compares.
# SPDX-License-Identifier: MIT
#
# usage: compare.sh SOURCE_DIR WORK_DIR NATIVE_CXX [NATIVE_STD]
# Every family's digest line must be the same in the four builds: no digest is stored, the
# architectures check each other (s390x is big-endian, i686 has a 32-bit std::size_t and no
# native 128-bit integer). A missing compiler or emulator fails the test, naming its package.
# The native x86-64 build uses NATIVE_STD (default c++17; the tests pass c++20, which makes it
# the C++20 check that instantiates and runs every family), the three others C++17.
set -u
src=$1
work=$2
native_cxx=$3
native_std=${4:-c++17}
[[ $native_std =~ ^c\+\+(17|20|23)$ ]] || {
  echo "arch_digests: FAIL: NATIVE_STD '$native_std' is not a language standard (expected c++17, c++20 or c++23)"
  exit 1
}
mkdir -p "$work"
fail() {
  echo "arch_digests: FAIL: $*"
  exit 1
}
need() {
  command -v "$1" > /dev/null 2>&1 || fail "$1 not found (expected Debian package $2; scripts/deps.sh installs it)"
}
need "$native_cxx" g++
need i686-linux-gnu-g++ g++-i686-linux-gnu
need s390x-linux-gnu-g++ g++-s390x-linux-gnu
need qemu-s390x qemu-user
need qemu-i386 qemu-user

# The compiler cache, when present, makes a rerun with unchanged headers quick (it caches
# compiles, not links: each build is compiled, then linked).
cache=()
if command -v ccache > /dev/null 2>&1; then cache=(ccache); fi
# -O0: optimising took half of each compile (9 s of 17 s for s390x) and saved under a second of
# run time under qemu; the sanitized unit tests, not this test, look for undefined behaviour.
flags=(-O0 -g0 -Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Wshadow -Werror
       -I "$src/include")
# build NAME COMPILER LINK_FLAGS COMPILE_FLAGS...: digests-NAME from digests.cpp, its log in NAME.log.
build() {
  local name=$1 cxx=$2 link=$3
  shift 3
  { "${cache[@]}" "$cxx" "${flags[@]}" "$@" -c "$src/tests/arch/digests.cpp" -o "$work/$name.o" &&
      "$cxx" ${link:+"$link"} "$work/$name.o" -o "$work/digests-$name"; } > "$work/$name.log" 2>&1
}
# Two builds at a time (the machines running the tests have few cores).
build x86_64 "$native_cxx" "" "-std=gnu++${native_std#c++}" &
p1=$!
build portable "$native_cxx" "" -std=gnu++17 -DDISTSAMPLER_PORTABLE_U128 &
p2=$!
wait $p1 || fail "the x86-64 build failed: $(cat "$work/x86_64.log")"
wait $p2 || fail "the x86-64 portable-u128 build failed: $(cat "$work/portable.log")"
build i686 i686-linux-gnu-g++ -static -std=gnu++17 -msse2 -mfpmath=sse &
p1=$!
build s390x s390x-linux-gnu-g++ -static -std=gnu++17 &
p2=$!
wait $p1 || fail "the i686 build failed: $(cat "$work/i686.log")"
wait $p2 || fail "the s390x build failed: $(cat "$work/s390x.log")"

# x87 math (no SSE2) must be refused, not produce other samples.
printf '#include <distsampler/distsampler.hpp>\n' > "$work/x87.cpp"
if i686-linux-gnu-g++ -std=gnu++17 -fsyntax-only -mfpmath=387 -I "$src/include" "$work/x87.cpp" 2> "$work/x87.log"; then
  fail "an i686 build with x87 math compiled (expected the FLT_EVAL_METHOD refusal)"
fi
grep -q "FLT_EVAL_METHOD is not 0 (x87 math)" "$work/x87.log" || fail "the x87 refusal's message is missing: $(cat "$work/x87.log")"
i686-linux-gnu-g++ -std=gnu++17 -fsyntax-only -mfpmath=387 -DDISTSAMPLER_ALLOW_EXCESS_PRECISION -I "$src/include" \
  "$work/x87.cpp" 2> "$work/x87-allowed.log" ||
  fail "DISTSAMPLER_ALLOW_EXCESS_PRECISION did not accept x87 math: $(cat "$work/x87-allowed.log")"

"$work/digests-x86_64" > "$work/x86_64.txt" || fail "the x86-64 program failed"
"$work/digests-portable" > "$work/portable.txt" || fail "the x86-64 portable-u128 program failed"
# i686 runs under qemu-i386 too: a 64-bit kernel built without 32-bit support (some CI machines)
# refuses to run it natively ("Exec format error").
qemu-i386 "$work/digests-i686" > "$work/i686.txt" || fail "the i686 program failed under qemu-i386"
qemu-s390x "$work/digests-s390x" > "$work/s390x.txt" || fail "the s390x program failed under qemu-s390x"

# The last line describes each build (u128, size_t, byte order): shown, not compared.
grep -q "^build: native u128, size_t 64 bits, little-endian$" "$work/x86_64.txt" || fail "x86-64: $(tail -1 "$work/x86_64.txt")"
grep -q "^build: portable u128, size_t 64 bits, little-endian$" "$work/portable.txt" ||
  fail "x86-64 portable: $(tail -1 "$work/portable.txt")"
grep -q "^build: portable u128, size_t 32 bits, little-endian$" "$work/i686.txt" || fail "i686: $(tail -1 "$work/i686.txt")"
grep -q "^build: native u128, size_t 64 bits, big-endian$" "$work/s390x.txt" || fail "s390x: $(tail -1 "$work/s390x.txt")"
grep -v '^build: ' "$work/x86_64.txt" > "$work/reference.txt"
families=$(grep -c -E '^[a-z0-9_]+: [0-9a-f]{16} \([0-9]+ bytes\)$' "$work/reference.txt")
[[ $families -ge 14 && $families -eq $(wc -l < "$work/reference.txt") ]] ||
  fail "x86-64 printed $families digest lines (expected one per family, at least 14): $(cat "$work/x86_64.txt")"
status=0
for arch in portable i686 s390x; do
  if ! diff <(grep -v '^build: ' "$work/$arch.txt") "$work/reference.txt" > "$work/$arch.diff"; then
    echo "arch_digests: $arch differs from x86-64 (< $arch, > x86-64):"
    cat "$work/$arch.diff"
    status=1
  fi
done
[[ $status -eq 0 ]] || fail "the architectures disagree"
cat "$work/reference.txt"
echo "arch_digests: $families families agree on x86-64 ($native_std), x86-64 with the portable u128, i686 and s390x"
