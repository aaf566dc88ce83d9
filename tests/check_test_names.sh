#!/bin/sh
# Fails when a Catch2 test name holds a character CTest's test discovery cannot carry.
# SPDX-License-Identifier: MIT
# usage: check_test_names.sh TEST_PROGRAM
# A name with '[', ']' or ';' is registered under a mangled name, or merged with the names
# after it, and the registered test then runs nothing or the wrong tests.
set -eu
# Catch2 exits with the number of tests it listed.
names="$("$1" --list-test-names-only)" || true
count="$(printf '%s\n' "$names" | grep -c . || true)"
if [ "$count" -eq 0 ]; then
  echo "$1 listed no test names"
  exit 1
fi
bad="$(printf '%s\n' "$names" | grep '[][;]' || true)"
if [ -n "$bad" ]; then
  printf '%s\n' "$bad" | sed 's/^/test name with [, ] or ; (CTest cannot register it; reword it): /'
  exit 1
fi
echo "$count test names, all registrable"
