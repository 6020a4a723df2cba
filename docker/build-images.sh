#!/usr/bin/env bash
# Builds the sandbox base images without an image registry, from Debian packages only:
#   sandbox-mcp/python:latest          the default: bookworm minbase + python3 with numpy, pandas,
#                                      matplotlib (Agg), scipy, pillow; Node.js; pip and npm
#                                      (installing into /tmp/.local, /workspace/node_modules);
#                                      procps, git, file, zip, unzip, jq, sqlite3
#   sandbox-mcp/python-minimal:latest  bookworm minbase + python3 only (--minimal)
#
# debootstrap fetches from the Debian mirror this machine's apt already uses, the root
# filesystem is trimmed, then `tar | docker import` turns it into an image. Each image is
# imported under a temporary tag and smoke-tested under gVisor (read-only root, uid 65534) before
# it replaces the old one, so a failed build never leaves you without a working image.
# Each image is labelled with a hash of its recipe (packages, environment and the code that
# shapes the root filesystem, comments aside): an image whose label differs is rebuilt, so a
# machine that has an older recipe's image picks the new one up by itself.
#
# Usage: docker/build-images.sh [--force] [--minimal]
#   --force      rebuild images even when their recipe is unchanged
#   --minimal    also build the minimal image (for `sandbox.image`, or images of your own)
#   --with-data  accepted and ignored: the data stack is in the default image now
# Exit status: 0 built, 3 everything already up to date (nothing done), anything else an error.
# Environment overrides:
#   SANDBOX_IMAGE_TAG          tag of the default image (default sandbox-mcp/python:latest)
#   SANDBOX_MINIMAL_IMAGE_TAG  tag of the minimal image (default sandbox-mcp/python-minimal:latest)
#   SANDBOX_DEBIAN_MIRROR      mirror URL               (default: from /etc/apt sources)
#   SANDBOX_DEBIAN_SUITE       Debian suite             (default: this machine's codename)
#   SANDBOX_KEEP_PYC=0         also delete the stdlib's precompiled __pycache__ (smaller, slower start)
# For machines with registry access, docker/Dockerfile.python{,-minimal} build equivalents.
set -euo pipefail

readonly DEFAULT_TAG="${SANDBOX_IMAGE_TAG:-sandbox-mcp/python:latest}"
readonly MINIMAL_TAG="${SANDBOX_MINIMAL_IMAGE_TAG:-sandbox-mcp/python-minimal:latest}"
readonly EXIT_UP_TO_DATE=3
readonly RECIPE_LABEL=sandbox-mcp.recipe

# The default image's extra packages, installed with --no-install-recommends. Fonts for
# matplotlib come with python3-matplotlib (fonts-dejavu-core); ca-certificates with nodejs.
readonly DATA_PACKAGES="python3-numpy python3-pandas python3-matplotlib python3-scipy python3-pil"
readonly TOOL_PACKAGES="nodejs procps git file zip unzip jq sqlite3"
# Package managers. The root is read-only and code runs as uid 65534, so both install into
# writable per-session places: pip into the user site under PYTHONUSERBASE (/tmp/.local, a tmpfs;
# driver.py keeps a running interpreter's sys.path in step with it), npm into
# /workspace/node_modules (npm install) or its prefix /tmp/.local (npm install -g).
readonly PACKAGE_MANAGERS="python3-pip npm"
# MPLBACKEND: no display in a sandbox. MPLCONFIGDIR: the root is read-only, /tmp is a tmpfs.
readonly DATA_ENV="MPLBACKEND=Agg MPLCONFIGDIR=/tmp/matplotlib"
# Quiet, non-interactive package managers that write only under /tmp and /workspace. No pip cache:
# /tmp is a tmpfs counted against the sandbox's memory, a second copy of every wheel would be too.
# NODE_PATH lets node anywhere (and a JavaScript session whatever its directory) require() what
# npm installed in /workspace or globally.
readonly USER_BASE=/tmp/.local
readonly PACKAGE_ENV="PYTHONUSERBASE=${USER_BASE} PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 \
PIP_NO_CACHE_DIR=1 PIP_PROGRESS_BAR=off PIP_ROOT_USER_ACTION=ignore \
npm_config_update_notifier=false npm_config_audit=false npm_config_fund=false \
npm_config_yes=true npm_config_progress=false npm_config_cache=/tmp/.npm \
npm_config_prefix=${USER_BASE} NODE_PATH=/workspace/node_modules:${USER_BASE}/lib/node_modules"
# Stub packages: empty packages that satisfy a dependency nothing needs at run time.
#  - python3-pythran (scipy depends on it): a compiler front end scipy never runs once built; the
#    real one depends on g++, the Boost and BLAS headers and python3-all-dev (~600 MB).
#  - unicode-data (python3-fonttools depends on it, 37 MB of text files): fontTools ships its own
#    tables; only its generator scripts read these.
#  - node-gyp (npm depends on it): builds native addons, which needs a C++ compiler the image
#    does not have; it pulls gyp, libnode-dev and libssl-dev (~25 MB). npm resolves its
#    bin/node-gyp.js when it starts, so the stand-in ships one that says why it cannot build
#    (stub_files); a package with a native addon fails to install either way.
#  - webpack (node-css-loader, whose bundled cssesc npm uses, depends on it): a bundler npm never
#    runs; it pulls babel, eslint, terser and tape (~70 MB, ~200 packages).
readonly STUB_PACKAGES="python3-pythran unicode-data node-gyp webpack"
# Smoke tests: shell scripts run (sh -c) in a candidate image under gVisor, read-only, uid 65534.
smoke_minimal() { echo "python3 -c 'import json, ast, csv, sqlite3; print(1)'"; }
smoke_default() {
  cat <<'SH'
set -e
python3 - <<'PY'
import numpy, pandas, scipy.optimize, scipy.stats, scipy.signal, scipy.interpolate, PIL.Image
import matplotlib.pyplot as plt
assert plt.get_backend().lower() == "agg", plt.get_backend()
plt.plot([1, 2]); plt.savefig("/tmp/smoke.png")
print("pandas", pandas.DataFrame({"a": numpy.arange(3)}).a.sum())
PY
node -e 'console.log("node", process.version)'
ps -e >/dev/null
git --version
file /tmp/smoke.png
jq -n 1 >/dev/null
sqlite3 :memory: 'select 1' >/dev/null
zip -v >/dev/null && unzip -v >/dev/null
pip --version
npm_version="$(npm --version)" && echo "npm ${npm_version}"
cd /workspace
# pip: a wheel built here installs into the user site (read-only root, no PEP 668 refusal) and a
# new interpreter imports it from there.
python3 - <<'PY'
import base64, hashlib, zipfile
info = "smoke_pkg-1.0.dist-info/"
files = {"smoke_pkg/__init__.py": "VALUE = 42\n",
         info + "METADATA": "Metadata-Version: 2.1\nName: smoke-pkg\nVersion: 1.0\n",
         info + "WHEEL": "Wheel-Version: 1.0\nGenerator: smoke\nRoot-Is-Purelib: true\n"
                         "Tag: py3-none-any\n"}
def digest(text):
    raw = hashlib.sha256(text.encode()).digest()
    return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
record = "".join("%s,%s,%d\n" % (n, digest(t), len(t.encode())) for n, t in files.items())
with zipfile.ZipFile("/tmp/smoke_pkg-1.0-py3-none-any.whl", "w") as wheel:
    for name, text in files.items():
        wheel.writestr(name, text)
    wheel.writestr(info + "RECORD", record + info + "RECORD,,\n")
PY
pip install -q --no-index /tmp/smoke_pkg-1.0-py3-none-any.whl
python3 -c 'import site, smoke_pkg
assert smoke_pkg.__file__.startswith(site.getusersitepackages()), smoke_pkg.__file__
print("pip user site", site.getusersitepackages())'
# npm: a package installs into /workspace/node_modules and node finds it there and elsewhere.
mkdir /tmp/smoke-js && cd /tmp/smoke-js
echo '{"name": "smoke-js", "version": "1.0.0", "main": "index.js"}' >package.json
echo 'module.exports = 42;' >index.js
npm pack --silent >/dev/null && cd /workspace
npm install --silent /tmp/smoke-js/smoke-js-1.0.0.tgz
node -e 'if (require("smoke-js") !== 42) process.exit(1)'
cd / && node -p '"npm module " + require.resolve("smoke-js")'
SH
}
readonly IMAGE_PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
readonly SMOKE_RUNTIME="${SANDBOX_SMOKE_RUNTIME:-runsc}"

log_step() { printf '==> %s\n' "$*" >&2; }
log_info() { printf '    %s\n' "$*" >&2; }
die() {
  printf 'error: %s\n' "$*" >&2
  exit 1
}

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; }

# --- finding the mirror ----------------------------------------------------------------------
# Prints "URI SIGNED_BY" of the first deb822 stanza that serves SUITE (Types: deb).
mirror_from_deb822() {
  local suite="$1" file
  for file in /etc/apt/sources.list.d/*.sources; do
    [[ -f "${file}" ]] || continue
    awk -v suite="${suite}" '
      function flush() {
        if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " suite " ") && uri != "") {
          print uri, signed; found = 1; exit
        }
        types = ""; suites = ""; uri = ""; signed = ""
      }
      /^[[:space:]]*$/ { flush(); next }
      /^[[:space:]]*#/ { next }
      tolower($1) == "types:"     { $1 = ""; types = substr($0, 2) }
      tolower($1) == "suites:"    { $1 = ""; suites = substr($0, 2) }
      tolower($1) == "uris:"      { uri = $2 }
      tolower($1) == "signed-by:" { signed = $2 }
      END { if (!found) flush() }
    ' "${file}"
  done | head -n 1
}

# Prints the URI of the first one-line "deb [opts] URI SUITE ..." entry for SUITE.
mirror_from_list() {
  local suite="$1"
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    sed -E 's/\[[^]]*\]//' |
    awk -v suite="${suite}" '$1 == "deb" && $3 == suite { print $2; exit }'
}

# Sets MIRROR and KEYRING (may be empty: debootstrap then uses its default keyring).
find_debian_mirror() {
  local suite="$1" line=""
  MIRROR="${SANDBOX_DEBIAN_MIRROR:-}"
  KEYRING=""
  if [[ -z "${MIRROR}" ]]; then
    line="$(mirror_from_deb822 "${suite}")"
    MIRROR="${line%% *}"
    [[ "${line}" == *" "* ]] && KEYRING="${line#* }"
  fi
  [[ -n "${MIRROR}" ]] || MIRROR="$(mirror_from_list "${suite}")"
  [[ -n "${MIRROR}" ]] ||
    die "no apt source for suite '${suite}' in /etc/apt: set SANDBOX_DEBIAN_MIRROR=<mirror URL>"
  [[ -z "${KEYRING}" || -f "${KEYRING}" ]] || KEYRING=""
}

# --- recipes ---------------------------------------------------------------------------------
# recipe_field KIND FIELD prints one field of an image kind's recipe.
recipe_field() {
  local kind="$1" field="$2"
  case "${kind}/${field}" in
    default/tag) echo "${DEFAULT_TAG}" ;;
    default/title) echo sandbox-mcp-python ;;
    default/packages) echo "${DATA_PACKAGES} ${TOOL_PACKAGES} ${PACKAGE_MANAGERS}" ;;
    default/stubs) echo "${STUB_PACKAGES}" ;;
    # Last on PATH: what pip and npm install (console scripts) never shadows the system's commands.
    default/env) echo "PATH=${IMAGE_PATH}:${USER_BASE}/bin ${DATA_ENV} ${PACKAGE_ENV}" ;;
    minimal/tag) echo "${MINIMAL_TAG}" ;;
    minimal/title) echo sandbox-mcp-python-minimal ;;
    minimal/env) echo "PATH=${IMAGE_PATH}" ;;
    minimal/packages | minimal/stubs) echo "" ;;
    *) die "internal: no recipe field ${kind}/${field}" ;;
  esac
}

# A hash of everything that decides what goes into an image of KIND: its fields, the suite, and
# the code of the steps that shape the rootfs (`declare -f` prints it without comments, so
# editing a comment rebuilds nothing).
recipe_hash() {
  local kind="$1" field
  {
    for field in packages stubs env; do recipe_field "${kind}" "${field}"; done
    echo "${SUITE} keep_pyc=${SANDBOX_KEEP_PYC:-1}"
    declare -f bootstrap_rootfs stub_files make_stub_deb install_extra_packages \
      unmark_externally_managed trim_rootfs import_rootfs smoke_test "smoke_${kind}"
  } | sha256sum | cut -c1-16
}

image_recipe() {
  docker image inspect --format "{{ index .Config.Labels \"${RECIPE_LABEL}\" }}" "$1" 2>/dev/null || true
}

# --- building --------------------------------------------------------------------------------
bootstrap_rootfs() {
  local dir="$1"
  local args=(--variant=minbase --include=python3)
  [[ -n "${KEYRING}" ]] && args+=("--keyring=${KEYRING}")
  log_info "debootstrap ${SUITE} minbase + python3 from ${MIRROR}"
  if ! debootstrap "${args[@]}" "${SUITE}" "${dir}" "${MIRROR}" >"${WORK_DIR}/debootstrap.log" 2>&1; then
    tail -n 20 "${WORK_DIR}/debootstrap.log" >&2
    [[ -f "${dir}/debootstrap/debootstrap.log" ]] && tail -n 20 "${dir}/debootstrap/debootstrap.log" >&2
    die "debootstrap failed (log above): check the mirror (${MIRROR}) is reachable"
  fi
}

# stub_files NAME ROOT: the few files a stand-in must still provide, under ROOT.
stub_files() {
  local name="$1" root="$2"
  case "${name}" in
    node-gyp)
      install -d "${root}/usr/share/nodejs/node-gyp/bin"
      printf '%s\n' '#!/usr/bin/env node' \
        "console.error('node-gyp: this sandbox image cannot build native addons (no C/C++ '" \
        "  + 'compiler); use a package with prebuilt binaries or plain JavaScript');" \
        'process.exit(1);' >"${root}/usr/share/nodejs/node-gyp/bin/node-gyp.js"
      chmod 0755 "${root}/usr/share/nodejs/node-gyp/bin/node-gyp.js"
      ;;
  esac
}

# make_stub_deb NAME OUT_DIR: an empty package NAME (no dependencies, no files but stub_files')
# whose version sorts above any real one, so apt treats the dependency as met and never
# replaces it.
make_stub_deb() {
  local name="$1" out="$2" pkg="${WORK_DIR}/stub-$1"
  mkdir -p "${pkg}/DEBIAN"
  stub_files "${name}" "${pkg}"
  printf '%s\n' "Package: ${name}" "Version: 99:0+sandbox-mcp-stub" "Architecture: all" \
    "Maintainer: sandbox-mcp <nobody@invalid>" \
    "Description: empty stand-in installed by sandbox-mcp's docker/build-images.sh" \
    " The real package is not needed at run time (see that script)." >"${pkg}/DEBIAN/control"
  dpkg-deb --root-owner-group --build "${pkg}" "${out}/${name}.deb" >/dev/null
}

# Extra packages go in with apt inside the rootfs, not with debootstrap --include: debootstrap
# always takes the first of "a | b" alternatives; apt honours --no-install-recommends and stubs.
# install_extra_packages DIR "STUBS" PACKAGES...
install_extra_packages() {
  local dir="$1" stubs="$2"
  shift 2
  (($#)) || return 0
  log_info "apt-get install in the rootfs: $*${stubs:+ (stubbed: ${stubs})}"
  local stub_dir="${dir}/tmp/sandbox-mcp-stubs" stub
  mkdir -p "${stub_dir}"
  for stub in ${stubs}; do make_stub_deb "${stub}" "${stub_dir}"; done
  # minbase has no archive keyring: borrow the host's for the duration of the install.
  local trusted="${dir}/etc/apt/trusted.gpg.d/sandbox-mcp-build.gpg"
  cp "${KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}" "${trusted}"
  mount -t proc proc "${dir}/proc"
  local status=0
  # shellcheck disable=SC2016 # $@ and $deb expand inside the chroot's shell
  chroot "${dir}" /usr/bin/env -i PATH="${IMAGE_PATH}" LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
    sh -c 'set -e
      for deb in /tmp/sandbox-mcp-stubs/*.deb; do [ ! -e "$deb" ] || dpkg -i "$deb"; done
      apt-get update -qq
      apt-get install -y -qq --no-install-recommends "$@"' sh "$@" \
    >"${WORK_DIR}/apt.log" 2>&1 || status=$?
  umount "${dir}/proc"
  rm -rf "${trusted}" "${stub_dir}"
  if ((status != 0)); then
    tail -n 25 "${WORK_DIR}/apt.log" >&2
    die "apt-get install of '$*' in the rootfs failed (log above)"
  fi
}

# PEP 668: Debian marks its Python "externally managed", and pip then refuses every install, --user
# ones included, without --break-system-packages. The marker guards apt's files against pip; here
# the root is read-only and pip installs only into the user site, so it guards nothing. Removing it
# (rather than setting PIP_BREAK_SYSTEM_PACKAGES) also covers pip run with a scrubbed environment.
unmark_externally_managed() {
  rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED
}

rootfs_size() { du -sb --one-file-system "$1" | cut -f1; }
human() { numfmt --to=iec-i --suffix=B "$1"; }

# Removes what a sandbox never needs. Kept: C.UTF-8 (/usr/lib/locale/C.utf8, part of libc6),
# copyright files, fonts and data files that libraries read at run time.
trim_rootfs() {
  local dir="$1" before after
  before="$(rootfs_size "${dir}")"
  rm -rf "${dir}"/var/lib/apt/lists/* "${dir}"/var/cache/apt/* "${dir}"/var/cache/debconf/*-old \
    "${dir}"/var/cache/ldconfig/* "${dir}"/var/log/* "${dir}"/tmp/* "${dir}"/var/tmp/* \
    "${dir}"/usr/share/man "${dir}"/usr/share/info "${dir}"/usr/share/lintian \
    "${dir}"/usr/share/linda "${dir}"/usr/share/bug "${dir}"/usr/share/locale/*
  find "${dir}/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete 2>/dev/null || true
  find "${dir}/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
  if [[ "${SANDBOX_KEEP_PYC:-1}" == 0 ]]; then
    find "${dir}" -xdev -type d -name __pycache__ -prune -exec rm -rf {} +
  else
    # Precompiled bytecode stays (Debian's packages compile theirs at install time): the rootfs
    # is read-only and PYTHONDONTWRITEBYTECODE is set, so without it every session would
    # recompile each module it imports (numpy and pandas: seconds).
    find "${dir}" -xdev -type d -name __pycache__ -path '*/site-packages/*' -prune -exec rm -rf {} +
  fi
  # Docker bind-mounts its own; do not bake in the build host's.
  # rm first: never write through a symlink that points into the build host.
  rm -f "${dir}/etc/resolv.conf" "${dir}/etc/hostname"
  touch "${dir}/etc/resolv.conf" "${dir}/etc/hostname"
  # Writable, world-accessible working directory for any uid (the sandbox may run as 65534).
  install -d -m 1777 "${dir}/workspace"
  after="$(rootfs_size "${dir}")"
  log_info "rootfs trimmed: $(human "${before}") -> $(human "${after}")"
}

# import_rootfs DIR TAG TITLE RECIPE ENV (ENV sets PATH, among others)
import_rootfs() {
  local dir="$1" tag="$2" title="$3" recipe="$4" extra_env="$5"
  tar -C "${dir}" --numeric-owner --one-file-system -c . |
    docker import \
      --change "ENV LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 HOME=/tmp${extra_env:+ ${extra_env}}" \
      --change 'WORKDIR /workspace' \
      --change 'CMD ["python3"]' \
      --change "LABEL org.opencontainers.image.title=\"${title}\" sandbox-mcp.image=1 ${RECIPE_LABEL}=${recipe}" \
      --message "debootstrap ${SUITE} minbase, built by docker/build-images.sh" \
      - "${tag}" >/dev/null
}

# Runs SCRIPT the way sandboxes run code: read-only root, uid 65534, no network, tmpfs /tmp and
# /workspace (writable by anyone, executables allowed).
smoke_test() {
  local tag="$1" script="$2" status=0 tmpfs="rw,nosuid,nodev,exec,mode=1777"
  log_info "smoke test under ${SMOKE_RUNTIME} (read-only root, uid 65534, no network)"
  docker run --rm --runtime="${SMOKE_RUNTIME}" --network none --read-only \
    --tmpfs "/tmp:${tmpfs}" --tmpfs "/workspace:${tmpfs}" --workdir /workspace \
    --user 65534:65534 "${tag}" sh -c "${script}" >"${WORK_DIR}/smoke.log" 2>&1 || status=$?
  sed 's/^/      /' "${WORK_DIR}/smoke.log" >&2
  return "${status}"
}

# Replaces FINAL with the tested CANDIDATE, dropping the old image if nothing else uses it.
promote_image() {
  local candidate="$1" final="$2" old_id=""
  old_id="$(docker image inspect --format '{{.Id}}' "${final}" 2>/dev/null || true)"
  docker tag "${candidate}" "${final}"
  docker rmi "${candidate}" >/dev/null
  if [[ -n "${old_id}" && "${old_id}" != "$(docker image inspect --format '{{.Id}}' "${final}")" ]]; then
    docker rmi "${old_id}" >/dev/null 2>&1 || log_info "old image ${old_id:7:12} kept (still in use)"
  fi
}

# build_image KIND: builds the image of that recipe, smoke-tests it, then tags it.
build_image() {
  local kind="$1" tag title recipe
  tag="$(recipe_field "${kind}" tag)"
  title="$(recipe_field "${kind}" title)"
  recipe="$(recipe_hash "${kind}")"
  log_step "image ${tag} (recipe ${recipe})"
  local started=${SECONDS} rootfs="${WORK_DIR}/rootfs-${kind}" candidate="${tag%:*}:candidate-$$"
  bootstrap_rootfs "${rootfs}"
  # shellcheck disable=SC2046 # a space-separated package list
  install_extra_packages "${rootfs}" "$(recipe_field "${kind}" stubs)" $(recipe_field "${kind}" packages)
  unmark_externally_managed "${rootfs}"
  trim_rootfs "${rootfs}"
  import_rootfs "${rootfs}" "${candidate}" "${title}" "${recipe}" "$(recipe_field "${kind}" env)"
  rm -rf --one-file-system "${rootfs}"
  if ! smoke_test "${candidate}" "$("smoke_${kind}")"; then
    docker rmi "${candidate}" >/dev/null || true
    die "smoke test failed for ${tag} (output above); the previous image (if any) is untouched"
  fi
  promote_image "${candidate}" "${tag}"
  log_info "built ${tag}: $(human "$(docker image inspect --format '{{.Size}}' "${tag}")") in $((SECONDS - started)) s"
}

# Removes the work dir, first unmounting anything an interrupted debootstrap left mounted in it.
cleanup() {
  [[ -n "${WORK_DIR:-}" && -d "${WORK_DIR}" ]] || return 0
  local mount_point
  { findmnt -rn -o TARGET | grep "^${WORK_DIR}/" || true; } | sort -r | while read -r mount_point; do
    umount -l "${mount_point}" || true
  done
  rm -rf --one-file-system "${WORK_DIR}"
}

main() {
  local force=0 kinds=(default) arg
  for arg in "$@"; do
    case "${arg}" in
      --force) force=1 ;;
      --minimal) kinds+=(minimal) ;;
      --with-data) log_info "--with-data is no longer needed: the default image has the data stack" ;;
      -h | --help) usage; exit 0 ;;
      *) usage; die "unknown argument '${arg}'" ;;
    esac
  done
  docker info >/dev/null 2>&1 || die "dockerd is not answering: run scripts/setup.sh (or start dockerd) first"
  # shellcheck source=/dev/null
  SUITE="${SANDBOX_DEBIAN_SUITE:-$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")}"

  local stale=() kind tag recipe
  for kind in "${kinds[@]}"; do
    tag="$(recipe_field "${kind}" tag)"
    recipe="$(recipe_hash "${kind}")"
    if ((!force)) && [[ "$(image_recipe "${tag}")" == "${recipe}" ]]; then
      log_step "image ${tag}: up to date (recipe ${recipe})"
    else
      stale+=("${kind}")
    fi
  done
  ((${#stale[@]})) || exit "${EXIT_UP_TO_DATE}"

  [[ ${EUID} -eq 0 ]] || die "debootstrap needs root: run 'sudo $0 $*'"
  command -v debootstrap >/dev/null || die "debootstrap missing: apt-get install debootstrap"
  find_debian_mirror "${SUITE}"
  WORK_DIR="$(mktemp -d /var/tmp/sandbox-mcp-images.XXXXXX)"
  trap cleanup EXIT
  for kind in "${stale[@]}"; do build_image "${kind}"; done
}

main "$@"
