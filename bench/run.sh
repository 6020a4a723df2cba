#!/usr/bin/env bash
# Builds the release preset (via scripts/lib.sh's set-up steps), installs the Jupyter baseline's
# packages, and runs, each printing its table and writing bench/results/<name>.{md,json}:
#   bench.mjs    latency against docker exec / docker run / a Jupyter kernel (latest.{md,json})
#   channel.mjs  the agent channel: per-sandbox socket against the engine's attach stream
#   connect.mjs  stdio connect and first run_code: the 2025-11-25 client against the v2 client
#                pinned to 2026-07-28 and in auto mode (connect.{md,json})
#   remote.mjs   a remote engine over TLS (scripts/tls_dockerd.sh, started here for it) against
#                the local engine (remote.{md,json})
#   scale.mjs    1/8/32/64 sessions at once, memory per session, cancellation (scale.{md,json})
#   sidecar.mjs  the MCP sidecar: host, relay and in-sandbox paths to server-everything
#   egress.mjs   the egress gateway: requests, a 100 MiB download, pip and npm installs through a
#                session's proxy against the host (egress.{md,json})
#   preload.mjs  the warm pool's Python preload: first data-stack import (preload.{md,json})
#   pause.mjs    idle sessions paused to disk: pause time, memory released, the next call's time
#                with the resume, sessions.persist across a restart (pause.{md,json})
#   many_paused.mjs  BENCH_PAUSED_SESSIONS paused sessions beside 64 running: a new session past
#                the limit, memory and disk (many_paused.{md,json})
#   density.mjs  64 idle data-stack sessions with the frozen tier on and off: host and sandbox
#                CPU, memory, the first call on a frozen session, how many idle sessions before a
#                call takes twice as long (density.{md,json})
#   figures.mjs  a figure's round trip as image content, a DataFrame preview (figures.{md,json})
#   preview.mjs  preview URLs (expose_port): a warm GET, a WebSocket round trip and a 100 MiB
#                download through the preview against the same client in the sandbox
#                (preview.{md,json})
#   workloads.mjs real code (printing, numpy, pandas, files, processes, git, sqlite) in a sandbox
#                against a plain runc container of the same image and limits (workloads.{md,json})
# See bench/README.md. About 10 minutes once the build is up to date.
#   BENCH_SCALE=0.2 bench/run.sh   fewer samples, for a quick try
#   bench/run.sh scale             only one of them (bench, channel, connect, remote, scale, sidecar,
#                                  egress, preload, pause, many_paused, density, figures,
#                                  preview or workloads)
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"

readonly BENCH_DIR="${SANDBOX_REPO_ROOT}/bench"
readonly BENCH_TIMEOUT_S=900
readonly TLS_DOCKERD="${SANDBOX_REPO_ROOT}/scripts/tls_dockerd.sh"
BENCH_PID_FILE=""
SERVER_BIN=""
TLS_ENGINE_STARTED=0 # 1: this run started the TLS engine (and stops it); one already up is kept

# Containers a sandbox-mcp server with this pid created (the server labels them with its pid), on
# the local engine and, once remote.mjs ran, on the TLS engine.
containers_of_server() {
  docker ps -aq --filter label=sandbox-mcp.managed=1 --filter "label=sandbox-mcp.pid=$1"
  if [[ -S "${SANDBOX_TLS_ENGINE_SOCKET:-}" ]]; then
    tls_engine_docker ps -aq --filter label=sandbox-mcp.managed=1 --filter "label=sandbox-mcp.pid=$1"
  fi
}

tls_engine_docker() { docker -H "unix://${SANDBOX_TLS_ENGINE_SOCKET}" "$@"; }

# The TLS-only second engine remote.mjs measures against (scripts/tls_dockerd.sh), and the
# SANDBOX_TLS_ENGINE_* variables naming it.
start_tls_engine() {
  bash "${TLS_DOCKERD}" env >/dev/null 2>&1 || TLS_ENGINE_STARTED=1
  bash "${TLS_DOCKERD}" start && eval "$(bash "${TLS_DOCKERD}" env)"
}

# Stops the TLS engine if this run started it (one that was already running serves someone else).
stop_tls_engine_if_ours() {
  ((TLS_ENGINE_STARTED)) || return 0
  TLS_ENGINE_STARTED=0
  bash "${TLS_DOCKERD}" stop || log_warn "could not stop the TLS engine: scripts/tls_dockerd.sh stop"
}

# Ids of containers left by this run: those of its servers (pids in BENCH_PID_FILE) and its own
# `docker run` baselines.
leftover_containers() {
  local pid
  while read -r pid; do
    [[ -n "${pid}" ]] && containers_of_server "${pid}"
  done <"${BENCH_PID_FILE}"
  docker ps -aq --filter label=sandbox-mcp.bench=1
}

# Runs on every exit, including a crash or Ctrl-C of bench.mjs: stops any server it started that
# is still alive (SIGTERM, by pid) and fails loudly if one of their containers remains.
cleanup_after_bench() {
  local status=$? pid
  [[ -n "${BENCH_PID_FILE}" && -f "${BENCH_PID_FILE}" ]] || return "${status}"
  while read -r pid; do
    [[ -n "${pid}" ]] || continue
    if kill -0 "${pid}" 2>/dev/null && [[ "$(readlink "/proc/${pid}/exe" || true)" == "${SERVER_BIN}" ]]; then
      log_warn "server pid ${pid} still running after the benchmark: sending SIGTERM"
      kill -TERM "${pid}"
      local deadline=$((SECONDS + 30))
      while kill -0 "${pid}" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
    fi
  done <"${BENCH_PID_FILE}"
  local leaked=()
  mapfile -t leaked < <(leftover_containers)
  if ((${#leaked[@]})); then
    # A server that died without cleaning up (e.g. SIGKILL) leaves containers that the engine
    # auto-removes once their agent sees stdin close; give that a moment before calling it a leak.
    log_warn "${#leaked[@]} container(s) of this run still exist after its servers stopped: ${leaked[*]}"
    local deadline=$((SECONDS + 15))
    while ((${#leaked[@]})) && ((SECONDS < deadline)); do
      sleep 0.5
      mapfile -t leaked < <(leftover_containers)
    done
  fi
  rm -f "${BENCH_PID_FILE}"
  if ((${#leaked[@]})); then
    printf '\nerror: LEAKED %d container(s) of this benchmark run: %s\n' "${#leaked[@]}" "${leaked[*]}" >&2
    printf 'error: removing them now; this is a bug in the server or bench.mjs, please report it\n' >&2
    thaw_containers "${leaked[@]}"
    docker rm -f "${leaked[@]}" >/dev/null 2>&1 || true
    [[ -S "${SANDBOX_TLS_ENGINE_SOCKET:-}" ]] && { tls_engine_docker rm -f "${leaked[@]}" >/dev/null 2>&1 || true; }
    stop_tls_engine_if_ours
    exit 1
  fi
  stop_tls_engine_if_ours
  log_step "no container of this run remains (label sandbox-mcp.managed=1 with our server pids, on the local and TLS engines)"
  local others
  others="$(docker ps -aq --filter label=sandbox-mcp.managed=1 | wc -l)"
  ((others == 0)) || log_info "${others} sandbox-mcp container(s) of other servers on this engine (not ours, left alone)"
  return "${status}"
}

# The Jupyter kernel baseline (bench/jupyter_kernel.py) runs Debian's ipykernel.
install_bench_packages() {
  local wanted=(python3-ipykernel python3-jupyter-client) missing=() pkg
  for pkg in "${wanted[@]}"; do apt_package_installed "${pkg}" || missing+=("${pkg}"); done
  ((${#missing[@]} == 0)) && return 0
  apt_update_once
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 ||
    die "apt-get install failed for: ${missing[*]}"
}

main() {
  run_setup_steps release
  install_bench_packages
  SERVER_BIN="$(release_server_binary)"
  node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' ||
    die "bench.mjs needs Node >= 20 (found $(node --version))"

  BENCH_PID_FILE="$(mktemp /tmp/sandbox-mcp-bench-pids.XXXXXX)"
  trap cleanup_after_bench EXIT
  local scripts=(bench.mjs channel.mjs connect.mjs remote.mjs scale.mjs sidecar.mjs egress.mjs preload.mjs pause.mjs many_paused.mjs density.mjs figures.mjs preview.mjs workloads.mjs) script
  case "${1:-}" in
    '') ;;
    bench | channel | connect | remote | scale | sidecar | egress | preload | pause | many_paused | density | figures | preview | workloads) scripts=("$1.mjs") ;;
    *) die "unknown benchmark '$1': use bench, channel, connect, remote, scale, sidecar, egress, preload, pause, many_paused, density, figures, preview or workloads (or nothing for all)" ;;
  esac
  for script in "${scripts[@]}"; do
    if [[ "${script}" == remote.mjs ]]; then
      start_tls_engine || die "the TLS engine did not start (scripts/tls_dockerd.sh start says why)"
    fi
    log_step "benchmark ${script} (${SERVER_BIN}); the machine is shared, so expect noise"
    local limit_s="${BENCH_TIMEOUT_S}"
    [[ "${script}" == density.mjs ]] && limit_s=$((BENCH_TIMEOUT_S * 3)) # 3 servers of 64 sessions
    SANDBOX_MCP_BIN="${SERVER_BIN}" BENCH_PID_FILE="${BENCH_PID_FILE}" \
      timeout --signal=TERM "${limit_s}" node "${BENCH_DIR}/${script}" ||
      die "${script} failed or timed out after ${limit_s} s (its output above says why)"
  done
}

main "$@"
