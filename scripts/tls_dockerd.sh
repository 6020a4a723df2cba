#!/usr/bin/env bash
# A second Docker engine on this machine that is reached only over TCP with TLS, standing in for a
# remote engine in tests (tests/sandbox/remote_engine_integration_test.cc; scripts/test.sh starts
# and stops it). Everything stays on loopback.
#
#   scripts/tls_dockerd.sh start   make certificates, start the engine, load the sandbox image
#                                  (idempotent: a running engine is kept, an image already there
#                                  is not loaded again)
#   scripts/tls_dockerd.sh env     print `export` lines naming it (eval them)
#   scripts/tls_dockerd.sh stop    stop it (--purge also removes its data root: images, volumes)
#
# The engine: its own --data-root, --exec-root, --pidfile, Unix socket and containerd namespace,
# `-H tcp://127.0.0.1:PORT --tlsverify` with a fresh CA, a server certificate for IP:127.0.0.1
# and a client certificate (openssl, in the state directory), `--bridge none --iptables=false`,
# and runsc registered as the main engine has it (the "runtimes" of /etc/docker/daemon.json).
# A second CA with its own client certificate ("rogue") lets tests show that a client the engine
# does not trust is refused, and that a client trusting another CA refuses the engine.
#
#   SANDBOX_TLS_DOCKERD_DIR   state: certificates, sockets, pid, log, env (/run/sandbox-mcp-tls-dockerd)
#   SANDBOX_TLS_DOCKERD_DATA  data root, kept across runs (/var/lib/sandbox-mcp-tls-dockerd)
#   SANDBOX_TLS_DOCKERD_IMAGE image copied from the main engine (sandbox-mcp/python:latest)
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

readonly STATE_DIR="${SANDBOX_TLS_DOCKERD_DIR:-/run/sandbox-mcp-tls-dockerd}"
readonly DATA_ROOT="${SANDBOX_TLS_DOCKERD_DATA:-/var/lib/sandbox-mcp-tls-dockerd}"
readonly IMAGE="${SANDBOX_TLS_DOCKERD_IMAGE:-sandbox-mcp/python:latest}"
readonly CERTS="${STATE_DIR}/certs"
readonly SOCKET="${STATE_DIR}/docker.sock"
readonly PIDFILE="${STATE_DIR}/dockerd.pid"
readonly LOG="${STATE_DIR}/dockerd.log"
readonly NAMESPACE=sandbox-mcp-tls

tls_docker() { docker -H "unix://${SOCKET}" "$@"; }

engine_pid() {
  local pid
  pid="$(cat "${PIDFILE}" 2>/dev/null || true)"
  [[ -n "${pid}" ]] && kill -0 "${pid}" 2>/dev/null && printf '%s\n' "${pid}"
}

engine_up() { [[ -n "$(engine_pid || true)" ]] && tls_docker info >/dev/null 2>&1; }

# A free loopback port, chosen by the kernel.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# make_cert NAME CA_NAME EXT: a P-256 key and a certificate signed by CA_NAME, valid 2 days.
make_cert() {
  local name="$1" ca="$2" ext="$3"
  openssl ecparam -name prime256v1 -genkey -noout -out "${CERTS}/${name}-key.pem" 2>/dev/null
  openssl req -new -key "${CERTS}/${name}-key.pem" -subj "/CN=sandbox-mcp-${name}" \
    -out "${CERTS}/${name}.csr" 2>/dev/null
  printf '%s\n' "${ext}" >"${CERTS}/${name}.ext"
  openssl x509 -req -in "${CERTS}/${name}.csr" -CA "${CERTS}/${ca}.pem" \
    -CAkey "${CERTS}/${ca}-key.pem" -CAcreateserial -days 2 -sha256 \
    -extfile "${CERTS}/${name}.ext" -out "${CERTS}/${name}.pem" 2>/dev/null
  rm -f "${CERTS}/${name}.csr" "${CERTS}/${name}.ext"
}

make_ca() {
  local name="$1"
  openssl ecparam -name prime256v1 -genkey -noout -out "${CERTS}/${name}-key.pem" 2>/dev/null
  openssl req -new -x509 -key "${CERTS}/${name}-key.pem" -subj "/CN=sandbox-mcp test ${name}" \
    -days 2 -sha256 -addext basicConstraints=critical,CA:TRUE \
    -addext keyUsage=critical,keyCertSign,cRLSign -out "${CERTS}/${name}.pem" 2>/dev/null
}

make_certificates() {
  log_info "certificates in ${CERTS}"
  rm -rf "${CERTS}"
  mkdir -p "${CERTS}" && chmod 0700 "${CERTS}"
  make_ca ca
  make_cert server ca "$(printf '%s\n' 'subjectAltName=IP:127.0.0.1' \
    'extendedKeyUsage=serverAuth' 'keyUsage=critical,digitalSignature')"
  make_cert client ca "$(printf '%s\n' 'extendedKeyUsage=clientAuth' \
    'keyUsage=critical,digitalSignature')"
  make_ca rogue-ca
  make_cert rogue-client rogue-ca "$(printf '%s\n' 'extendedKeyUsage=clientAuth' \
    'keyUsage=critical,digitalSignature')"
  chmod 0600 "${CERTS}"/*-key.pem
}

# dockerd's own configuration file: only the runtimes (everything else is a flag, and a setting
# in both places is an error). Without --config-file dockerd would read the main engine's.
write_daemon_json() {
  jq '{runtimes: (.runtimes // {})}' "${SANDBOX_DAEMON_JSON}" >"${STATE_DIR}/daemon.json" ||
    die "cannot read the runtimes from ${SANDBOX_DAEMON_JSON}: run scripts/setup.sh first"
  jq -e '.runtimes | has("runsc")' "${STATE_DIR}/daemon.json" >/dev/null ||
    die "${SANDBOX_DAEMON_JSON} registers no runsc runtime: run scripts/setup.sh first"
}

start_engine() {
  local port
  port="$(free_port)"
  mkdir -p "${STATE_DIR}" "${DATA_ROOT}"
  chmod 0700 "${STATE_DIR}" "${DATA_ROOT}"
  make_certificates
  write_daemon_json
  printf '%s\n' "${port}" >"${STATE_DIR}/port"
  log_info "starting dockerd on tcp://127.0.0.1:${port} (TLS) and unix://${SOCKET} (log: ${LOG})"
  setsid -f nohup dockerd \
    --config-file "${STATE_DIR}/daemon.json" \
    --data-root "${DATA_ROOT}" --exec-root "${STATE_DIR}/exec" --pidfile "${PIDFILE}" \
    -H "unix://${SOCKET}" -H "tcp://127.0.0.1:${port}" \
    --tlsverify --tlscacert "${CERTS}/ca.pem" \
    --tlscert "${CERTS}/server.pem" --tlskey "${CERTS}/server-key.pem" \
    --bridge none --iptables=false --ip-forward=false --userland-proxy=false \
    --containerd-namespace "${NAMESPACE}" --containerd-plugins-namespace "${NAMESPACE}-plugins" \
    --cgroup-parent "/${NAMESPACE}" >>"${LOG}" 2>&1 </dev/null
  local deadline=$((SECONDS + 60))
  until engine_up; do
    if ((SECONDS >= deadline)); then
      tail -n 25 "${LOG}" >&2 || true
      die "the TLS dockerd did not answer within 60 s; its log (${LOG}) says why"
    fi
    sleep 0.5
  done
  tls_docker network inspect bridge >/dev/null 2>&1 &&
    die "the TLS dockerd has a default bridge network; it must run with --bridge none"
  log_info "TLS dockerd running (pid $(engine_pid))"
}

# The sandbox image, copied from the main engine when the TLS engine lacks it or has another
# build of it.
load_image() {
  local want have
  want="$(docker image inspect -f '{{.Id}}' "${IMAGE}")" ||
    die "the main engine has no ${IMAGE}: run scripts/setup.sh first"
  have="$(tls_docker image inspect -f '{{.Id}}' "${IMAGE}" 2>/dev/null || true)"
  if [[ "${have}" == "${want}" ]]; then
    log_info "${IMAGE} already loaded"
    return 0
  fi
  log_info "loading ${IMAGE} into the TLS engine (docker save | docker load)"
  docker save "${IMAGE}" | tls_docker load >/dev/null
}

cmd_start() {
  require_root
  log_step "tls_dockerd start (${STATE_DIR})"
  if engine_up; then
    log_info "already running (pid $(engine_pid), tcp://127.0.0.1:$(cat "${STATE_DIR}/port"))"
  else
    [[ -n "$(engine_pid || true)" ]] && cmd_stop
    start_engine
  fi
  load_image
}

cmd_env() {
  engine_up || die "the TLS dockerd is not running: scripts/tls_dockerd.sh start"
  printf 'export SANDBOX_TLS_ENGINE_HOST=tcp://127.0.0.1:%s\n' "$(cat "${STATE_DIR}/port")"
  printf 'export SANDBOX_TLS_ENGINE_CERTS=%s\n' "${CERTS}"
  printf 'export SANDBOX_TLS_ENGINE_SOCKET=%s\n' "${SOCKET}"
  printf 'export SANDBOX_TLS_ENGINE_IMAGE=%s\n' "${IMAGE}"
}

cmd_stop() {
  local pid
  pid="$(engine_pid || true)"
  log_step "tls_dockerd stop"
  if [[ -n "${pid}" ]]; then
    log_info "stopping the TLS dockerd (pid ${pid})"
    kill -TERM "${pid}"
    local deadline=$((SECONDS + 30))
    while kill -0 "${pid}" 2>/dev/null; do
      ((SECONDS < deadline)) || die "the TLS dockerd (pid ${pid}) did not exit within 30 s of SIGTERM"
      sleep 0.5
    done
  else
    log_info "not running"
  fi
  rm -rf --one-file-system "${STATE_DIR}"
  if [[ "${1:-}" == --purge ]]; then
    log_info "removing its data root ${DATA_ROOT}"
    rm -rf --one-file-system "${DATA_ROOT}"
  fi
}

case "${1:-}" in
  start) cmd_start ;;
  env) cmd_env ;;
  stop) cmd_stop "${2:-}" ;;
  *) die "usage: $0 start | env | stop [--purge]" ;;
esac
