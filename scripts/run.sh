#!/usr/bin/env bash
# Sets the machine up (scripts/setup.sh) and starts the server in the foreground:
#   scripts/run.sh                 Streamable HTTP on 127.0.0.1:8765 (endpoint /mcp)
#   scripts/run.sh [args...]       any sandbox-mcp arguments, e.g. --stdio
# All set-up output goes to stderr, so stdout belongs to the server (an MCP stdio client can
# launch this script directly).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

main() {
  run_setup_steps release
  # The top-level CMakeLists.txt puts executables in bin/; mcp_server/ is the per-folder default.
  local build_dir="${SANDBOX_REPO_ROOT}/build/release" server="" candidate
  for candidate in "${build_dir}/bin/sandbox-mcp" "${build_dir}/mcp_server/sandbox-mcp"; do
    [[ -x "${candidate}" ]] && server="${candidate}" && break
  done
  [[ -n "${server}" ]] || die "no sandbox-mcp binary in ${build_dir}: check the build output above"
  if (($# == 0)); then
    set -- --http 127.0.0.1:8765
    printf 'sandbox-mcp: Streamable HTTP at http://127.0.0.1:8765/mcp (for stdio instead: %s --stdio)\n' \
      "$0" >&2
  fi
  exec "${server}" "$@"
}

main "$@"
