#!/usr/bin/env bash
# Checks formatting (clang-format) and static analysis (clang-tidy, .clang-tidy) of the project's
# C++ sources; exits non-zero on any finding. Needs a compile database: run scripts/test.sh (or
# `cmake --preset asan-ubsan`) first.
#   scripts/lint.sh          sources only
#   scripts/lint.sh --all    sources and tests
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

readonly BUILD_DIR=build/asan-ubsan
dirs=(mcp_server policy sidecar)
[[ "${1:-}" == "--all" ]] && dirs+=(tests)

mapfile -t files < <(git ls-files -- '*.cc' '*.h')
echo "==> clang-format (${#files[@]} files)"
clang-format --dry-run -Werror "${files[@]}"

[[ -f "${BUILD_DIR}/compile_commands.json" ]] ||
  { echo "error: no ${BUILD_DIR}/compile_commands.json; run: cmake --preset asan-ubsan" >&2; exit 1; }
pattern="^$(pwd)/($(IFS='|'; echo "${dirs[*]}"))/.*\.cc$"
echo "==> clang-tidy (${dirs[*]})"
output="$(run-clang-tidy -p "${BUILD_DIR}" -quiet -j 2 "${pattern}" 2>/dev/null)"
findings="$(grep -E '^/.*: (warning|error):' <<<"${output}" | sort -u || true)"
if [[ -n "${findings}" ]]; then
  printf '%s\n' "${findings}"
  echo "error: clang-tidy reported $(wc -l <<<"${findings}") finding(s)" >&2
  exit 1
fi
echo "clean"
