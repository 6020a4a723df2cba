#!/usr/bin/env bash
# Builds the sandbox base images without an image registry, from Debian packages only:
#   sandbox-mcp/python:latest       bookworm minbase + python3           (always)
#   sandbox-mcp/python-data:latest  + python3-numpy/pandas/matplotlib   (--with-data; slow)
#
# debootstrap fetches from the Debian mirror this machine's apt already uses, the root
# filesystem is trimmed, then `tar | docker import` turns it into an image. Each image is
# imported under a temporary tag and smoke-tested under gVisor before it replaces the old one,
# so a failed build never leaves you without a working image.
#
# Usage: docker/build-images.sh [--force] [--with-data]
#   --force      rebuild images that already exist
#   --with-data  also build the data-science image
# Environment overrides:
#   SANDBOX_IMAGE_TAG       tag of the small image   (default sandbox-mcp/python:latest)
#   SANDBOX_DATA_IMAGE_TAG  tag of the data image    (default sandbox-mcp/python-data:latest)
#   SANDBOX_DEBIAN_MIRROR   mirror URL               (default: from /etc/apt sources)
#   SANDBOX_DEBIAN_SUITE    Debian suite             (default: this machine's codename)
#   SANDBOX_KEEP_PYC=0      also delete the stdlib's precompiled __pycache__ (smaller, slower start)
# For machines with registry access, docker/Dockerfile.python{,-data} build equivalents.
set -euo pipefail

readonly PYTHON_TAG="${SANDBOX_IMAGE_TAG:-sandbox-mcp/python:latest}"
readonly DATA_TAG="${SANDBOX_DATA_IMAGE_TAG:-sandbox-mcp/python-data:latest}"
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

# --- building --------------------------------------------------------------------------------
image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

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

# Extra packages go in with apt inside the rootfs, not with debootstrap --include: debootstrap
# always takes the first of "a | b" alternatives, and python3-fonttools' "python3-scipy |
# python3-munkres" then drags in scipy -> pythran -> gcc, g++ and Boost headers (~600 MB).
# apt takes the alternative we name (python3-munkres).
install_extra_packages() {
  local dir="$1"
  shift
  (($#)) || return 0
  log_info "apt-get install in the rootfs: $*"
  # minbase has no archive keyring: borrow the host's for the duration of the install.
  local trusted="${dir}/etc/apt/trusted.gpg.d/sandbox-mcp-build.gpg"
  cp "${KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}" "${trusted}"
  mount -t proc proc "${dir}/proc"
  local status=0
  chroot "${dir}" /usr/bin/env -i PATH="${IMAGE_PATH}" LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
    sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@"' sh "$@" \
    >"${WORK_DIR}/apt.log" 2>&1 || status=$?
  umount "${dir}/proc"
  rm -f "${trusted}"
  if ((status != 0)); then
    tail -n 25 "${WORK_DIR}/apt.log" >&2
    die "apt-get install of '$*' in the rootfs failed (log above)"
  fi
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
    # Precompiled stdlib bytecode stays: the rootfs is read-only and PYTHONDONTWRITEBYTECODE
    # is set, so without it every session would recompile each module it imports.
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

# import_rootfs DIR TAG TITLE [EXTRA_ENV]
import_rootfs() {
  local dir="$1" tag="$2" title="$3" extra_env="${4:-}"
  tar -C "${dir}" --numeric-owner --one-file-system -c . |
    docker import \
      --change "ENV LANG=C.UTF-8 PATH=${IMAGE_PATH} PYTHONDONTWRITEBYTECODE=1 HOME=/tmp${extra_env:+ ${extra_env}}" \
      --change 'WORKDIR /workspace' \
      --change 'CMD ["python3"]' \
      --change "LABEL org.opencontainers.image.title=\"${title}\" sandbox-mcp.image=1" \
      --message "debootstrap ${SUITE} minbase, built by docker/build-images.sh" \
      - "${tag}" >/dev/null
}

smoke_test() {
  local tag="$1" code="$2"
  log_info "smoke test under ${SMOKE_RUNTIME}: python3 -c '${code}'"
  docker run --rm --runtime="${SMOKE_RUNTIME}" --network none --read-only --tmpfs /tmp \
    --user 65534:65534 "${tag}" python3 -c "${code}"
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

# build_image TAG TITLE "EXTRA PACKAGES" SMOKE_CODE [EXTRA_ENV]
build_image() {
  local tag="$1" title="$2" packages="$3" code="$4" extra_env="${5:-}"
  log_step "image ${tag}"
  if image_exists "${tag}" && ((!FORCE)); then
    log_info "exists (use --force to rebuild)"
    return 0
  fi
  local started=${SECONDS} rootfs="${WORK_DIR}/rootfs-${title}" candidate="${tag%:*}:candidate-$$"
  bootstrap_rootfs "${rootfs}"
  # shellcheck disable=SC2086 # a space-separated package list
  install_extra_packages "${rootfs}" ${packages}
  trim_rootfs "${rootfs}"
  import_rootfs "${rootfs}" "${candidate}" "${title}" "${extra_env}"
  rm -rf "${rootfs}"
  if ! smoke_test "${candidate}" "${code}"; then
    docker rmi "${candidate}" >/dev/null || true
    die "smoke test failed for ${tag}; the previous image (if any) is untouched"
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
  FORCE=0
  local with_data=0 arg
  for arg in "$@"; do
    case "${arg}" in
      --force) FORCE=1 ;;
      --with-data) with_data=1 ;;
      -h | --help) usage; exit 0 ;;
      *) usage; die "unknown argument '${arg}'" ;;
    esac
  done
  [[ ${EUID} -eq 0 ]] || die "debootstrap needs root: run 'sudo $0 $*'"
  command -v debootstrap >/dev/null || die "debootstrap missing: apt-get install debootstrap"
  docker info >/dev/null 2>&1 || die "dockerd is not answering: run scripts/setup.sh (or start dockerd) first"

  # shellcheck source=/dev/null
  SUITE="${SANDBOX_DEBIAN_SUITE:-$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")}"
  find_debian_mirror "${SUITE}"
  WORK_DIR="$(mktemp -d /var/tmp/sandbox-mcp-images.XXXXXX)"
  trap cleanup EXIT

  build_image "${PYTHON_TAG}" sandbox-mcp-python "" \
    'import json, ast, csv, sqlite3; print(1)'
  if ((with_data)); then
    build_image "${DATA_TAG}" sandbox-mcp-python-data \
      "python3-numpy python3-pandas python3-matplotlib python3-munkres" \
      'import numpy, pandas, matplotlib.pyplot; print(1)' \
      'MPLBACKEND=Agg MPLCONFIGDIR=/tmp/matplotlib'
  fi
}

main "$@"
