#!/usr/bin/env bash
# Prepares this machine to build, run and test sandbox-mcp: Debian packages, dockerd with the
# gVisor runtime, the offline sandbox image, a release build, and the e2e test's node modules.
# Idempotent: a second run changes nothing and says so.
#   SANDBOX_WITH_MINIMAL=1  also build the minimal image (sandbox-mcp/python-minimal: Python only)
#   SANDBOX_WITH_BROWSER=1  also install chromium for the browser e2e tests (test.sh sets it)
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

run_setup_steps release
