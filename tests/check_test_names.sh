#!/bin/sh
# Fails when a Catch2 test name holds a character CTest's test discovery cannot carry, or when two
# unit programs have a test of the same name (CTest would run one of them under both).
# SPDX-License-Identifier: MIT
# usage: check_test_names.sh TEST_PROGRAM...
# A name with '[', ']' or ';' is registered under a mangled name, or merged with the names
# after it, and the registered test then runs nothing or the wrong tests.
set -eu
all=""
for program in "$@"; do
  # Catch2 exits with the number of tests it listed.
  names="$("$program" --list-test-names-only)" || true
  count="$(printf '%s\n' "$names" | grep -c . || true)"
  if [ "$count" -eq 0 ]; then
    echo "$program listed no test names"
    exit 1
  fi
  bad="$(printf '%s\n' "$names" | grep '[][;]' || true)"
  if [ -n "$bad" ]; then
    printf '%s\n' "$bad" | sed 's/^/test name with [, ] or ; (CTest cannot register it; reword it): /'
    exit 1
  fi
  all="$all$(printf '%s\n' "$names" | grep .)
"
done
twice="$(printf '%s' "$all" | sort | uniq -d)"
if [ -n "$twice" ]; then
  printf '%s\n' "$twice" | sed 's/^/test name in two unit programs (CTest registers one; rename one): /'
  exit 1
fi
echo "$(printf '%s' "$all" | grep -c .) test names in $# programs, all registrable"
