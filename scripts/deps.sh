# distsampler scripts: installs missing Debian packages (sourced by scripts/test, scripts/demo, scripts/bench).
# SPDX-License-Identifier: MIT

# ensure_packages PKG...: installs those of PKG... that are not installed, with apt-get
# (through sudo when not root). Does nothing when all are present.
ensure_packages() {
  local missing=()
  local pkg
  for pkg in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg")
    fi
  done
  if [[ ${#missing[@]} -eq 0 ]]; then return 0; fi
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
  echo "installing Debian packages: ${missing[*]}"
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# The packages every build needs.
core_packages=(cmake make ninja-build g++ catch2 libfmt-dev)
# What the full test suite adds: MPI for the multi-process tests, libtorch for the adapter,
# ccache (used when present) for rebuilds, and the cross compilers and emulator of the
# arch_digests test: i686 (a cross compiler, since Debian's g++-multilib conflicts with every
# cross gcc) and big-endian s390x, run under qemu-user; pytest-xdist runs the Python tests
# beside each other.
test_packages=(openmpi-bin libopenmpi-dev libtorch-dev ccache g++-i686-linux-gnu g++-s390x-linux-gnu qemu-user
               python3-pytest-xdist)
# The Python package's build and tests: Debian's interpreter with torch, pybind11 and pytest.
python_packages=(python3 python3-dev python3-venv python3-setuptools python3-pybind11 python3-numpy python3-pytest
                 python3-torch python3-hypothesis)
