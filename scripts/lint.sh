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

mapfile -t files < <(git ls-files -- '*.cc' '*.h' ':!:**/node_modules/**' ':!:build/**')
echo "==> clang-format (${#files[@]} files)"
clang-format --dry-run -Werror "${files[@]}"

[[ -f "${BUILD_DIR}/compile_commands.json" ]] ||
  { echo "error: no ${BUILD_DIR}/compile_commands.json; run: cmake --preset asan-ubsan" >&2; exit 1; }
pattern="^$(pwd)/($(IFS='|'; echo "${dirs[*]}"))/.*\.cc$"
echo "==> clang-tidy (${dirs[*]})"
# run-clang-tidy always passes --use-color: strip the escapes before matching diagnostics. It
# exits non-zero when a file fails to compile; that shows up as an "error:" finding below.
output="$(run-clang-tidy -p "${BUILD_DIR}" -quiet -j 2 "${pattern}" 2>/dev/null |
  sed 's/\x1b\[[0-9;]*m//g')" || true
checked="$(grep -c '^clang-tidy' <<<"${output}" || true)"
((checked > 0)) || { echo "error: no files matched ${pattern} in ${BUILD_DIR}" >&2; exit 1; }
findings="$(grep -E '^/.*: (warning|error):' <<<"${output}" | sort -u || true)"
if [[ -n "${findings}" ]]; then
  printf '%s\n' "${findings}"
  echo "error: clang-tidy reported $(wc -l <<<"${findings}") finding(s) in ${checked} file(s)" >&2
  exit 1
fi
echo "clean (${checked} files)"
