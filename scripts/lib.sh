# shellcheck shell=bash
# Set-up steps shared by scripts/setup.sh, scripts/run.sh and scripts/test.sh (source it).
#
# Each step is idempotent: it checks first and changes the machine only when something is
# missing, so a second run is fast and reports "unchanged". Steps that change something call
# note_change; print_change_summary says at the end whether anything changed.
#
# Assumes: root on Debian 12, only Debian's apt repositories and the npm registry reachable,
# no systemd (dockerd is started in the background by start_dockerd).

set -euo pipefail

SANDBOX_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly SANDBOX_REPO_ROOT
readonly SANDBOX_DOCKERD_LOG="${SANDBOX_DOCKERD_LOG:-/var/log/sandbox-mcp-dockerd.log}"
readonly SANDBOX_DAEMON_JSON="${SANDBOX_DAEMON_JSON:-/etc/docker/daemon.json}"

SANDBOX_CHANGES=()
SANDBOX_APT_UPDATED=0

# --- logging ---------------------------------------------------------------------------------
# Everything goes to stderr: run.sh may hand stdout to an MCP stdio client afterwards.
log_step() { printf '==> %s\n' "$*" >&2; }
log_info() { printf '    %s\n' "$*" >&2; }
log_warn() { printf 'warning: %s\n' "$*" >&2; }
die() {
  printf 'error: %s\n' "$*" >&2
  exit 1
}
note_change() {
  SANDBOX_CHANGES+=("$*")
  log_info "changed: $*"
}
print_change_summary() {
  if ((${#SANDBOX_CHANGES[@]} == 0)); then
    log_step "setup complete: nothing changed (everything was already in place)"
  else
    log_step "setup complete: ${#SANDBOX_CHANGES[@]} change(s):"
    local change
    for change in "${SANDBOX_CHANGES[@]}"; do log_info "- ${change}"; done
  fi
}

require_root() {
  [[ ${EUID} -eq 0 ]] || die "these steps install packages and start dockerd: run as root (sudo bash $0)"
}

# --- install_packages ------------------------------------------------------------------------
readonly SANDBOX_APT_PACKAGES=(
  # C++ toolchain and libraries (CMakeLists.txt: Boost 1.81 for Beast's message_generator)
  build-essential cmake ninja-build pkg-config libboost1.81-dev nlohmann-json3-dev
  libspdlog-dev libcurl4-openssl-dev libssl-dev libgtest-dev libgmock-dev
  clang-format clang-tidy ccache
  # libFuzzer for the policy URL parser's fuzz target (tests/policy): clang plus its runtime
  clang libclang-rt-14-dev
  # container engine and the offline image builder (docker/build-images.sh); gVisor (runsc)
  # comes from bookworm-backports: see install_gvisor
  docker.io debootstrap
  # script helpers, e2e/bench tooling
  python3 curl jq hyperfine
)

apt_package_installed() {
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" == "install ok installed" ]]
}

apt_update_once() {
  ((SANDBOX_APT_UPDATED)) && return 0
  log_info "apt-get update"
  apt-get update -qq || die "apt-get update failed: check /etc/apt/sources.list.d/ and network access to the Debian mirror"
  SANDBOX_APT_UPDATED=1
}

install_packages() {
  log_step "install_packages"
  local wanted=("${SANDBOX_APT_PACKAGES[@]}")
  # Node may come from another source (e.g. a nodesource build that bundles npm): only ask apt
  # for nodejs/npm when the commands are missing.
  command -v node >/dev/null 2>&1 || wanted+=(nodejs)
  command -v npm >/dev/null 2>&1 || wanted+=(npm)

  local missing=() pkg
  for pkg in "${wanted[@]}"; do apt_package_installed "${pkg}" || missing+=("${pkg}"); done
  if ((${#missing[@]} == 0)); then
    log_info "all ${#wanted[@]} packages already installed"
    return 0
  fi
  log_info "missing: ${missing[*]}"
  apt_update_once
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 ||
    die "apt-get install failed for: ${missing[*]} (run 'apt-get install ${missing[*]}' to see why)"
  note_change "installed packages: ${missing[*]}"
}

# --- install_gvisor --------------------------------------------------------------------------
# Debian 12's own runsc (0.0~20221219) rejects statx(AT_NO_AUTOMOUNT), which coreutils uses:
# `ls`, `stat` and `find` fail with "Invalid argument" in every sandbox. The bookworm-backports
# package (0.0~20240729) fixes that. The suite is added on the machine's own Debian mirror (read
# from its apt sources at run time: no mirror host name is written into this repository).
readonly SANDBOX_MIN_RUNSC_VERSION="0.0~20240729"
readonly SANDBOX_BACKPORTS_LIST=/etc/apt/sources.list.d/sandbox-mcp-backports.list

# Prints the URI of the first apt source that serves Debian's main archive (suite bookworm).
debian_mirror_uri() {
  local uri
  uri="$(
    {
      # deb822 sources: a stanza with "URIs:" and a "Suites:" line naming bookworm
      awk 'BEGIN { RS = ""; FS = "\n" }
           /(^|\n)Suites:[^\n]*(^| )bookworm( |$|\n)/ {
             for (i = 1; i <= NF; i++) if ($i ~ /^URIs:/) { sub(/^URIs:[ \t]*/, "", $i); split($i, u, " "); print u[1]; exit }
           }' /etc/apt/sources.list.d/*.sources 2>/dev/null || true
      # one-line sources: "deb [opts] URI bookworm main"
      grep -hE '^deb[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
        sed -E 's/\[[^]]*\]//' | awk '$3 == "bookworm" { print $2; exit }' || true
    } | grep -v -- '-security' | head -n1
  )"
  [[ -n "${uri}" ]] || die "no apt source for Debian bookworm found in /etc/apt/sources.list{,.d/}: add one, then re-run"
  printf '%s\n' "${uri}"
}

runsc_version_ok() {
  local installed
  installed="$(dpkg-query -W -f='${Version}' runsc 2>/dev/null || true)"
  [[ -n "${installed}" ]] && dpkg --compare-versions "${installed}" ge "${SANDBOX_MIN_RUNSC_VERSION}"
}

install_gvisor() {
  log_step "install_gvisor (runsc >= ${SANDBOX_MIN_RUNSC_VERSION})"
  if runsc_version_ok; then
    log_info "runsc $(dpkg-query -W -f='${Version}' runsc) installed"
    return 0
  fi
  if [[ ! -s "${SANDBOX_BACKPORTS_LIST}" ]]; then
    local mirror
    mirror="$(debian_mirror_uri)"
    printf 'deb %s bookworm-backports main\n' "${mirror}" >"${SANDBOX_BACKPORTS_LIST}"
    note_change "added bookworm-backports (${mirror}) in ${SANDBOX_BACKPORTS_LIST}"
    SANDBOX_APT_UPDATED=0
  fi
  apt_update_once
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    -t bookworm-backports runsc >&2 ||
    die "installing runsc from bookworm-backports failed (see above); 'apt-cache policy runsc' shows what apt sees"
  runsc_version_ok || die "runsc $(dpkg-query -W -f='${Version}' runsc) is older than ${SANDBOX_MIN_RUNSC_VERSION}; 'ls' would fail in sandboxes"
  note_change "installed runsc $(dpkg-query -W -f='${Version}' runsc) from bookworm-backports"
}

# --- configure_docker ------------------------------------------------------------------------
# Merges our settings into daemon.json, keeping every unrelated key:
#  - "bridge": "none": no docker0 bridge and no default 172.17/16 network. Sandboxes run with
#    network none and test traffic must stay on loopback; nothing may land on a private range by
#    accident (a container without an explicit network would otherwise join docker0).
#  - runtime "runsc" (gVisor) with:
#      --network=none  runsc's own networking off; without it runsc refuses to start containers
#                      created with `--network none` (the only network sandboxes get).
#      --host-uds=open lets the sandbox connect() to host Unix sockets bind-mounted into it; the
#                      sidecar socket (/run/mcp/mcp.sock) fails with "Operation not permitted"
#                      without it.
#      --platform=ptrace  the backports runsc defaults to systrap, measured slower here for
#                      shell commands (37 vs 17 ms p50); kvm needs nested virtualisation.
#  - runtime "runsc-build": gVisor for the RUN steps of model-supplied Dockerfiles (only used when
#    the operator sets sandbox.allow_dockerfile). --overlay2=none: runsc's default root overlay
#    (root:self) keeps a container's writes inside the sandbox, so `docker commit` of a RUN step
#    would capture nothing; without the overlay the writes reach the container's layer (through
#    gVisor's gofer) and can be committed. No --host-uds: builds reach no host socket.
# Reload: dockerd re-reads "runtimes" on SIGHUP, but "bridge" only at start-up, so a changed
# bridge setting restarts dockerd while a runtime-only change just sends SIGHUP.
configure_docker() {
  log_step "configure_docker (${SANDBOX_DAEMON_JSON})"
  local runsc_path
  runsc_path="$(command -v runsc)" || die "runsc not found: install it with 'apt-get install runsc'"

  local old='{}'
  if [[ -s "${SANDBOX_DAEMON_JSON}" ]]; then
    old="$(jq -S . "${SANDBOX_DAEMON_JSON}")" ||
      die "${SANDBOX_DAEMON_JSON} is not valid JSON: fix or remove it, then re-run"
  fi
  local new
  new="$(jq -S --arg path "${runsc_path}" '
      .bridge = "none"
      | .runtimes.runsc = ((.runtimes.runsc // {})
                           + {path: $path, runtimeArgs: ["--network=none", "--host-uds=open", "--platform=ptrace"]})
      | .runtimes["runsc-build"] = ((.runtimes["runsc-build"] // {})
                           + {path: $path, runtimeArgs: ["--network=none", "--overlay2=none", "--platform=ptrace"]})
    ' <<<"${old}")"

  if [[ "${new}" == "${old}" ]]; then
    log_info "unchanged (bridge none, runtimes runsc and runsc-build at ${runsc_path})"
    return 0
  fi
  local bridge_changed=0
  [[ "$(jq -r '.bridge // ""' <<<"${old}")" == "none" ]] || bridge_changed=1

  mkdir -p "$(dirname "${SANDBOX_DAEMON_JSON}")"
  [[ -e "${SANDBOX_DAEMON_JSON}" ]] && cp -p "${SANDBOX_DAEMON_JSON}" "${SANDBOX_DAEMON_JSON}.bak"
  printf '%s\n' "${new}" >"${SANDBOX_DAEMON_JSON}.tmp"
  mv "${SANDBOX_DAEMON_JSON}.tmp" "${SANDBOX_DAEMON_JSON}"
  note_change "wrote ${SANDBOX_DAEMON_JSON} (previous copy in ${SANDBOX_DAEMON_JSON}.bak if any)"

  docker info >/dev/null 2>&1 || return 0 # not running: start_dockerd picks the file up
  if ((bridge_changed)); then
    log_info "dockerd is running and 'bridge' changed: restarting it (bridge is read only at start)"
    restart_dockerd
  else
    log_info "dockerd is running: reloading runtimes with SIGHUP"
    kill -HUP "$(dockerd_pid)"
    sleep 1
  fi
}

# --- start_dockerd ---------------------------------------------------------------------------
have_systemd() { [[ -d /run/systemd/system ]]; }

dockerd_pid() {
  local pid
  pid="$(cat /var/run/docker.pid 2>/dev/null || true)"
  [[ -n "${pid}" ]] && kill -0 "${pid}" 2>/dev/null || pid="$(pgrep -xo dockerd || true)"
  [[ -n "${pid}" ]] || die "dockerd answers but its pid is unknown (no /var/run/docker.pid)"
  printf '%s\n' "${pid}"
}

wait_for_docker() {
  local deadline=$((SECONDS + $1))
  while ((SECONDS < deadline)); do
    docker info >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  return 1
}

start_dockerd() {
  log_step "start_dockerd"
  if docker info >/dev/null 2>&1; then
    log_info "dockerd already running (pid $(dockerd_pid))"
    verify_docker_engine
    return 0
  fi
  if have_systemd; then
    systemctl start docker.service || die "systemctl start docker failed: see 'journalctl -u docker'"
  else
    # No init system here: run it in its own session so it outlives this script (and a Ctrl-C
    # in this terminal). dockerd from docker.io launches and supervises its own containerd
    # when none listens on /run/containerd/containerd.sock.
    log_info "starting dockerd in the background (log: ${SANDBOX_DOCKERD_LOG})"
    mkdir -p "$(dirname "${SANDBOX_DOCKERD_LOG}")"
    printf '\n--- %s: started by sandbox-mcp scripts/lib.sh\n' "$(date -Is)" >>"${SANDBOX_DOCKERD_LOG}"
    setsid -f nohup dockerd >>"${SANDBOX_DOCKERD_LOG}" 2>&1 </dev/null
  fi
  if ! wait_for_docker 30; then
    tail -n 25 "${SANDBOX_DOCKERD_LOG}" >&2 || true
    die "dockerd did not answer within 30 s; the log above (${SANDBOX_DOCKERD_LOG}) says why"
  fi
  note_change "started dockerd (pid $(dockerd_pid))"
  verify_docker_engine
}

stop_dockerd() {
  if have_systemd; then
    systemctl stop docker.service
    return 0
  fi
  local pid
  pid="$(dockerd_pid)"
  log_info "stopping dockerd (pid ${pid})"
  kill -TERM "${pid}"
  local deadline=$((SECONDS + 30))
  while kill -0 "${pid}" 2>/dev/null; do
    ((SECONDS < deadline)) || die "dockerd (pid ${pid}) did not exit within 30 s of SIGTERM"
    sleep 0.5
  done
}

restart_dockerd() {
  stop_dockerd
  start_dockerd
}

# Checks that the running engine has what the sandboxes need (a daemon started before
# daemon.json was written would lack them).
verify_docker_engine() {
  local runtimes
  runtimes="$(docker info --format '{{json .Runtimes}}')"
  jq -e 'has("runsc")' <<<"${runtimes}" >/dev/null ||
    die "dockerd has no 'runsc' runtime: run configure_docker, then restart dockerd"
  jq -e 'has("runsc-build")' <<<"${runtimes}" >/dev/null ||
    die "dockerd has no 'runsc-build' runtime (Dockerfile builds): run configure_docker, then restart dockerd"
  if docker network inspect bridge >/dev/null 2>&1; then
    die "dockerd still has the default bridge network: restart dockerd so '\"bridge\": \"none\"' applies"
  fi
  if [[ -S /run/containerd/containerd.sock ]]; then
    log_info "containerd: system instance (/run/containerd/containerd.sock)"
  elif [[ -S /var/run/docker/containerd/containerd.sock ]]; then
    log_info "containerd: managed by dockerd (/var/run/docker/containerd/containerd.sock)"
  else
    log_warn "no containerd socket found; dockerd works but check ${SANDBOX_DOCKERD_LOG}"
  fi
  log_info "engine ok: runtimes $(jq -r 'keys | join(",")' <<<"${runtimes}"), no default bridge"
}

# --- build_images ----------------------------------------------------------------------------
# docker/build-images.sh rebuilds an image only when its recipe (a label) differs from the
# script's, so a machine with an older image picks up a changed recipe here.
build_images() {
  log_step "build_images"
  local args=() status=0
  [[ "${SANDBOX_WITH_MINIMAL:-0}" == 1 ]] && args+=(--minimal)
  bash "${SANDBOX_REPO_ROOT}/docker/build-images.sh" "${args[@]}" >&2 || status=$?
  case "${status}" in
    0) note_change "built sandbox image(s) with docker/build-images.sh ${args[*]}" ;;
    3) ;; # up to date
    *) die "building the sandbox images failed (output above)" ;;
  esac
}

# --- build_project ---------------------------------------------------------------------------
# Prints the generator a configure preset sets (following "inherits"), or nothing.
preset_generator() {
  jq -r --arg name "$1" '
    . as $root
    | def gen($n):
        ($root.configurePresets[] | select(.name == $n)) as $p
        | if $p.generator then $p.generator
          else first(($p.inherits // [] | if type == "string" then [.] else . end)[] | gen(.))
          end;
    [gen($name)] | first // ""
  ' "${SANDBOX_REPO_ROOT}/CMakePresets.json"
}

preset_binary_dir() {
  jq -r --arg name "$1" '.configurePresets[] | select(.name == $name) | .binaryDir // ""' \
    "${SANDBOX_REPO_ROOT}/CMakePresets.json" | sed "s|\${sourceDir}|${SANDBOX_REPO_ROOT}|"
}

build_project() {
  local preset="$1"
  log_step "build_project (preset ${preset})"
  jq -e --arg name "${preset}" 'any(.configurePresets[]; .name == $name)' \
    "${SANDBOX_REPO_ROOT}/CMakePresets.json" >/dev/null ||
    die "no configure preset '${preset}' in CMakePresets.json"
  local build_dir
  build_dir="$(preset_binary_dir "${preset}")"
  [[ -n "${build_dir}" ]] || die "preset '${preset}' has no binaryDir"

  local configure_args=()
  # CI builds treat warnings as errors whatever the preset says.
  [[ "${CI:-}" == true ]] && configure_args+=(-DSANDBOX_WERROR=ON)
  local cache="${build_dir}/CMakeCache.txt"
  # Ninja unless the preset picks a generator; only on first configure (the cache keeps it,
  # and passing a different -G to an existing build dir is an error).
  [[ -f "${cache}" || -n "$(preset_generator "${preset}")" ]] || configure_args+=(-G Ninja)
  local generated=0 # a configure that failed at generate time leaves a cache but no build file
  [[ -f "${build_dir}/build.ninja" || -f "${build_dir}/Makefile" ]] && generated=1
  if [[ ! -f "${cache}" ]] || ((!generated)) ||
    { [[ "${CI:-}" == true ]] && ! grep -qx 'SANDBOX_WERROR:BOOL=ON' "${cache}"; }; then
    (cd "${SANDBOX_REPO_ROOT}" && cmake --preset "${preset}" "${configure_args[@]}" >&2) ||
      die "cmake configure failed for preset '${preset}' (output above); fix it and re-run"
    note_change "configured ${build_dir}"
  fi
  # The build re-runs configure by itself when a CMakeLists.txt changed.
  local output
  output="$(mktemp)"
  if ! (cd "${SANDBOX_REPO_ROOT}" && cmake --build --preset "${preset}" -j2 2>&1) |
    tee "${output}" >&2; then
    rm -f "${output}"
    die "build failed for preset '${preset}' (errors above); fix them and re-run"
  fi
  if grep -q 'ninja: no work to do' "${output}"; then
    log_info "up to date (${build_dir})"
  else
    note_change "built ${build_dir}"
  fi
  rm -f "${output}"
}

# --- build_sidecar_image ---------------------------------------------------------------------
# The runc image MCP sidecars run in: the libraries of this preset's sandbox-sidecar (sanitizer
# runtimes included), rebuilt only when they change.
build_sidecar_image() {
  local preset="$1" binary
  binary="$(preset_binary_dir "${preset}")/bin/sandbox-sidecar"
  log_step "build_sidecar_image (${binary#"${SANDBOX_REPO_ROOT}"/})"
  [[ -x "${binary}" ]] || die "no sandbox-sidecar at ${binary}: the build above should have made it"
  local status=0
  bash "${SANDBOX_REPO_ROOT}/docker/build-sidecar-image.sh" "${binary}" || status=$?
  case "${status}" in
    0) note_change "built image sandbox-mcp/sidecar:latest" ;;
    3) ;; # up to date
    *) die "building the sidecar image failed (output above)" ;;
  esac
}

# --- install_node_deps -----------------------------------------------------------------------
install_node_deps() {
  local dir="${SANDBOX_REPO_ROOT}/tests/e2e"
  log_step "install_node_deps (${dir#"${SANDBOX_REPO_ROOT}"/})"
  [[ -f "${dir}/package.json" ]] || die "${dir}/package.json is missing"
  local stamp="${dir}/node_modules/.sandbox-mcp-deps.sha256"
  local want
  want="$(cd "${dir}" && cat package.json package-lock.json 2>/dev/null | sha256sum | cut -d' ' -f1)"
  if [[ -d "${dir}/node_modules" && "$(cat "${stamp}" 2>/dev/null || true)" == "${want}" ]]; then
    log_info "node_modules up to date"
    return 0
  fi
  local npm_args=(--no-audit --no-fund)
  if [[ -f "${dir}/package-lock.json" ]]; then
    (cd "${dir}" && npm ci "${npm_args[@]}" >&2) ||
      die "npm ci failed in ${dir}: if package.json changed, run 'npm install' there to update the lockfile"
  else
    (cd "${dir}" && npm install "${npm_args[@]}" >&2) || die "npm install failed in ${dir} (output above)"
    want="$(cd "${dir}" && cat package.json package-lock.json | sha256sum | cut -d' ' -f1)"
  fi
  printf '%s\n' "${want}" >"${stamp}"
  note_change "installed node modules in ${dir}"
}

# --- orchestration ---------------------------------------------------------------------------
run_setup_steps() {
  local preset="$1"
  require_root
  install_packages
  install_gvisor
  configure_docker
  start_dockerd
  build_images
  build_project "${preset}"
  build_sidecar_image "${preset}"
  install_node_deps
  print_change_summary
}

# Prints the path of the release sandbox-mcp (the top-level CMakeLists.txt puts executables in bin/).
release_server_binary() {
  local server="${SANDBOX_REPO_ROOT}/build/release/bin/sandbox-mcp"
  [[ -x "${server}" ]] || die "no sandbox-mcp binary at ${server}: check the build output above"
  printf '%s\n' "${server}"
}
