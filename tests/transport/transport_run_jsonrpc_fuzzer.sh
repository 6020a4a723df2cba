#!/usr/bin/env bash
# Builds the JSON-RPC entry fuzzer with clang (libFuzzer + ASan + UBSan) and runs it briefly.
# Works from any build: it compiles its own binary into --build-dir, independent of the
# project's compiler. Usage: transport_run_jsonrpc_fuzzer.sh [--build-dir DIR] [--seconds N]
# [-- libFuzzer args]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "${here}/../.." && pwd)"
build_dir="${repo}/build/jsonrpc-fuzz"
seconds=20
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "transport_run_jsonrpc_fuzzer.sh: unknown argument '$1' (see the usage lines)" >&2; exit 2 ;;
  esac
done

clangxx="$(command -v clang++ || command -v clang++-14 || true)"
if [[ -z "${clangxx}" ]]; then
  echo "transport_run_jsonrpc_fuzzer.sh: clang++ not found; install it with:" \
       "apt-get install clang libclang-rt-14-dev" >&2
  exit 1
fi

mkdir -p "${build_dir}/corpus" "${build_dir}/artifacts"
binary="${build_dir}/jsonrpc_fuzzer"
sources=("${repo}/mcp_server/jsonrpc/dispatcher.cc" "${repo}/mcp_server/jsonrpc/reply.cc"
         "${here}/transport_jsonrpc_fuzzer.cc")
headers=("${repo}"/mcp_server/common/*.h "${repo}"/mcp_server/jsonrpc/*.h
         "${repo}/mcp_server/transport/message_util.h")

# Rebuild only when a source or header is newer than the binary.
needs_build=1
if [[ -x "${binary}" ]]; then
  needs_build=0
  for file in "${sources[@]}" "${headers[@]}"; do
    [[ "${file}" -nt "${binary}" ]] && needs_build=1
  done
fi
if [[ "${needs_build}" -eq 1 ]]; then
  echo "transport_run_jsonrpc_fuzzer.sh: building ${binary} with ${clangxx}"
  # spdlog as Debian builds it (a compiled library on external fmt).
  "${clangxx}" -std=c++20 -O1 -g -fno-omit-frame-pointer \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -Wall -Wextra -Werror -DSPDLOG_SHARED_LIB -DSPDLOG_COMPILED_LIB -DSPDLOG_FMT_EXTERNAL \
    -I"${repo}/mcp_server" "${sources[@]}" -lspdlog -lfmt -pthread -o "${binary}.tmp"
  mv "${binary}.tmp" "${binary}"
fi

# Seeds are copied so libFuzzer's new inputs land in the build tree, never in the repository.
# -max_len reaches past the depth limit (64 levels take 128 bytes) with room for long strings.
cp -n "${here}"/transport_jsonrpc_corpus/* "${build_dir}/corpus/" 2>/dev/null || true
exec "${binary}" "${build_dir}/corpus" \
  -dict="${here}/transport_jsonrpc.dict" -max_total_time="${seconds}" -max_len=4096 -timeout=10 \
  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="${build_dir}/artifacts/" \
  "${extra[@]}"
