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
  libspdlog-dev libcurl4-openssl-dev libssl-dev libgtest-dev libgmock-dev zlib1g-dev
  clang-format clang-tidy ccache
  # libFuzzer for the policy URL parser's fuzz target (tests/policy): clang plus its runtime
  clang libclang-rt-14-dev
  # container engine and the offline image builder (docker/build-images.sh); gVisor (runsc)
  # comes from bookworm-backports: see install_gvisor
  docker.io debootstrap
  # script helpers, e2e/bench tooling; openssl makes scripts/tls_dockerd.sh's certificates and
  # tests/e2e/package_index.mjs's; pip installs from that index in its self-test
  python3 python3-pip curl jq hyperfine openssl
  # the sticky front of a fleet (deploy/haproxy.cfg), run by tests/e2e/fleet.test.mjs
  haproxy
)
# Only with SANDBOX_WITH_BROWSER=1 (scripts/test.sh sets it), so the run set-up stays lean: Debian's
# chromium, which tests/e2e/browser.mjs drives headless with puppeteer-core (npm) to load preview
# URLs in a real browser.
readonly SANDBOX_BROWSER_APT_PACKAGES=(chromium)

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
  [[ "${SANDBOX_WITH_BROWSER:-0}" == 1 ]] && wanted+=("${SANDBOX_BROWSER_APT_PACKAGES[@]}")
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

# --- install_gvisor, configure_docker, start_dockerd (scripts/docker_engine.sh) ----------------
# shellcheck source=scripts/docker_engine.sh
source "${SANDBOX_REPO_ROOT}/scripts/docker_engine.sh"

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
# tests/e2e: the official MCP clients and servers; tests/conformance: the official conformance
# suite and the Node 22 it needs (an npm package: the machine's node may be older).
install_node_deps() {
  install_node_deps_in "${SANDBOX_REPO_ROOT}/tests/e2e"
  install_node_deps_in "${SANDBOX_REPO_ROOT}/tests/conformance"
}

install_node_deps_in() {
  local dir="$1"
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
  enable_app_huge_pages
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
