#!/usr/bin/env bash
# Checks (default) or applies (--fix) the project's .clang-format on every C/C++
# source under app core widgets backends resources tests. Run by the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format > /dev/null || { echo "check_format: clang-format is not installed (scripts/install_deps.sh)" >&2; exit 2; }
mapfile -t files < <(find app core widgets backends resources tests -name '*.cc' -o -name '*.h' -o -name '*.c' | sort)
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do clang-format --dry-run -Werror "$f" > /dev/null 2>&1 || bad+=("$f"); done
if [ ${#bad[@]} -gt 0 ]; then
  echo "check_format: ${#bad[@]} of ${#files[@]} files differ from .clang-format (fix: bash scripts/check_format.sh --fix):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check_format: ${#files[@]} files follow .clang-format"
