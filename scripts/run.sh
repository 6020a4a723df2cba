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
  local server
  server="$(release_server_binary)"
  if (($# == 0)); then
    set -- --http 127.0.0.1:8765
    printf 'sandbox-mcp: Streamable HTTP at http://127.0.0.1:8765/mcp (for stdio instead: %s --stdio)\n' \
      "$0" >&2
  fi
  exec "${server}" "$@"
}

main "$@"
