#!/usr/bin/env bash
# Builds the policy URL fuzzer with clang (libFuzzer + ASan + UBSan) and runs it briefly.
# Works from any build: it compiles its own binary into --build-dir, independent of the
# project's compiler. Usage: run_fuzzer.sh [--build-dir DIR] [--seconds N] [-- libFuzzer args]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "${here}/../.." && pwd)"
build_dir="${repo}/build/policy-fuzz"
seconds=20
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "run_fuzzer.sh: unknown argument '$1' (see the usage line in this script)" >&2; exit 2 ;;
  esac
done

clangxx="$(command -v clang++ || command -v clang++-14 || true)"
if [[ -z "${clangxx}" ]]; then
  echo "run_fuzzer.sh: clang++ not found; install it with: apt-get install clang libclang-rt-14-dev" >&2
  exit 1
fi

mkdir -p "${build_dir}/corpus" "${build_dir}/artifacts"
binary="${build_dir}/policy_url_fuzzer"
sources=("${repo}"/policy/*.cc "${here}/url_fuzzer.cc")

# Rebuild only when a source or header is newer than the binary.
needs_build=1
if [[ -x "${binary}" ]]; then
  needs_build=0
  for file in "${sources[@]}" "${repo}"/policy/*.h; do
    [[ "${file}" -nt "${binary}" ]] && needs_build=1
  done
fi
if [[ "${needs_build}" -eq 1 ]]; then
  echo "run_fuzzer.sh: building ${binary} with ${clangxx}"
  "${clangxx}" -std=c++20 -O1 -g -fno-omit-frame-pointer \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -Wall -Wextra -Werror -I"${repo}" "${sources[@]}" -o "${binary}.tmp"
  mv "${binary}.tmp" "${binary}"
fi

# Seeds are copied so libFuzzer's new inputs land in the build tree, never in the repository.
cp -n "${here}"/fuzz_corpus/* "${build_dir}/corpus/" 2>/dev/null || true
exec "${binary}" "${build_dir}/corpus" \
  -dict="${here}/url.dict" -max_total_time="${seconds}" -max_len=512 -timeout=10 \
  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="${build_dir}/artifacts/" \
  "${extra[@]}"
