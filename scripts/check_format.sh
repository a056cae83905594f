#!/usr/bin/env bash
# Checks that every C++ file git tracks (.cc, .h) is formatted as .clang-format says (clang-format
# 14, Debian's clang-format-14). Prints the files that are not and fails; formats nothing.
#   scripts/check_format.sh          check
#   scripts/check_format.sh --fix    format them in place instead
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fmt="${CLANG_FORMAT:-clang-format-14}"
if ! command -v "$fmt" >/dev/null; then
  echo "clang-format: $fmt not installed (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files -- '*.cc' '*.h')
if [ "${1:-}" = --fix ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 64 "$fmt" -i
  exit 0
fi
mapfile -t bad < <(printf '%s\0' "${files[@]}" | xargs -0 -n 64 "$fmt" --dry-run 2>&1 |
  sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: warning: code should be clang-formatted.*/\1/p' | sort -u)
if [ "${#bad[@]}" -gt 0 ]; then
  printf 'not formatted (scripts/check_format.sh --fix): %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "clang-format: ${#files[@]} files formatted"
