#!/bin/sh
# Builds the distsampler Python package into a venv that sees Debian's torch, then runs its pytest suite.
# SPDX-License-Identifier: MIT
# Usage: python/run_tests.sh [pytest arguments]   (PYTHON, DISTSAMPLER_VENV, DISTSAMPLER_OPT_LEVEL override the
# defaults; scripts/test adds pytest-xdist's `-n 3 --dist loadgroup`: most tests wait on launched processes)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-/usr/bin/python3}
venv=${DISTSAMPLER_VENV:-$root/build/python-venv}
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv --system-site-packages "$venv"
fi
# -O1: a third less compile time than the package's default -O2, and the suite runs as fast.
DISTSAMPLER_OPT_LEVEL=${DISTSAMPLER_OPT_LEVEL:-1} PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/pip" install --quiet --no-index --no-build-isolation --no-deps "$root"
cd "$root/tests/python"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
