#!/usr/bin/env bash
# Builds the agent frame fuzzer with clang (libFuzzer + ASan + UBSan) and runs it briefly.
# Works from any build: it compiles its own binary into --build-dir, independent of the
# project's compiler. Usage: run_agent_fuzzer.sh [--build-dir DIR] [--seconds N] [-- libFuzzer args]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "${here}/../.." && pwd)"
build_dir="${repo}/build/agent-fuzz"
seconds=20
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "run_agent_fuzzer.sh: unknown argument '$1' (see the usage line in this script)" >&2; exit 2 ;;
  esac
done

clangxx="$(command -v clang++ || command -v clang++-14 || true)"
if [[ -z "${clangxx}" ]]; then
  echo "run_agent_fuzzer.sh: clang++ not found; install it with: apt-get install clang libclang-rt-14-dev" >&2
  exit 1
fi

mkdir -p "${build_dir}/corpus" "${build_dir}/artifacts"
binary="${build_dir}/agent_frame_fuzzer"
sources=("${repo}/mcp_server/protocol/exec_codec.cc" "${repo}/mcp_server/protocol/file_codec.cc"
  "${here}/agent_frame_fuzzer.cc")
headers=("${repo}"/mcp_server/common/*.h "${repo}"/mcp_server/agent/exec_request.h
         "${repo}"/mcp_server/agent/request_error.h "${repo}"/mcp_server/sandbox/sandbox_text.h)

# Rebuild only when a source or header is newer than the binary.
needs_build=1
if [[ -x "${binary}" ]]; then
  needs_build=0
  for file in "${sources[@]}" "${headers[@]}"; do
    [[ "${file}" -nt "${binary}" ]] && needs_build=1
  done
fi
if [[ "${needs_build}" -eq 1 ]]; then
  echo "run_agent_fuzzer.sh: building ${binary} with ${clangxx}"
  "${clangxx}" -std=c++20 -O1 -g -fno-omit-frame-pointer \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -Wall -Wextra -Werror -I"${repo}/mcp_server" "${sources[@]}" -o "${binary}.tmp"
  mv "${binary}.tmp" "${binary}"
fi

# Seeds are copied so libFuzzer's new inputs land in the build tree, never in the repository.
cp -n "${here}"/agent_fuzz_corpus/* "${build_dir}/corpus/" 2>/dev/null || true
exec "${binary}" "${build_dir}/corpus" \
  -max_total_time="${seconds}" -max_len=4096 -timeout=10 \
  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="${build_dir}/artifacts/" \
  "${extra[@]}"
