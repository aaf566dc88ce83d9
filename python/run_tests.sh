#!/bin/sh
# Builds the distsampler Python package into a venv that sees Debian's torch, then runs its pytest suite.
# SPDX-License-Identifier: MIT
# Usage: python/run_tests.sh [pytest arguments]   (PYTHON, DISTSAMPLER_VENV override the defaults)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-/usr/bin/python3}
venv=${DISTSAMPLER_VENV:-$root/build/python-venv}
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv --system-site-packages "$venv"
fi
PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/pip" install --quiet --no-index --no-build-isolation --no-deps "$root"
cd "$root/tests/python"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
