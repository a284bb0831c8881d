#!/usr/bin/env bash
# Fails when a tracked C++ file does not follow .clang-format; prints the offending files.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cc' '*.hpp')
if ! out=$(clang-format --dry-run -Werror "${files[@]}" 2>&1); then
  echo "$out" | grep -E '^[^ ].*error:' | cut -d: -f1 | sort -u | sed 's/^/not clang-formatted: /'
  echo "run: clang-format -i \$(git ls-files '*.cpp' '*.h')" >&2
  exit 1
fi
echo "clang-format: ${#files[@]} files follow .clang-format"
