#!/usr/bin/env bash
# Builds the sidecar image (docker/Dockerfile.sidecar) without an image registry: the binary,
# its shared libraries (ldd closure, symlinks as the loader names them), CA certificates and a
# minimal /etc go into a FROM scratch image. The image is labelled with a hash of those files and
# rebuilt only when they change. It is smoke-tested (--help, as nobody, read-only, no network)
# under a temporary tag before it replaces the old one.
#
# Usage: docker/build-sidecar-image.sh BINARY [--force]
#   BINARY   the sandbox-sidecar to take the libraries from (e.g. build/release/bin/sandbox-sidecar)
#   --force  rebuild even when the label matches
# Environment: SANDBOX_SIDECAR_IMAGE_TAG (default sandbox-mcp/sidecar:latest)
# Exit status: 0 built, 3 already up to date (nothing done), anything else an error.
set -euo pipefail

readonly TAG="${SANDBOX_SIDECAR_IMAGE_TAG:-sandbox-mcp/sidecar:latest}"
readonly HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly EXIT_UP_TO_DATE=3

log_step() { printf '==> %s\n' "$*" >&2; }
log_info() { printf '    %s\n' "$*" >&2; }
die() {
  printf 'error: %s\n' "$*" >&2
  exit 1
}
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; }

BINARY=""
FORCE=0
for arg in "$@"; do
  case "${arg}" in
    --force) FORCE=1 ;;
    -h | --help) usage; exit 0 ;;
    -*) usage; die "unknown option ${arg}" ;;
    *) BINARY="${arg}" ;;
  esac
done
[[ -n "${BINARY}" ]] || { usage; die "name the sandbox-sidecar binary to package"; }
[[ -x "${BINARY}" ]] || die "${BINARY} is not an executable file: build the project first"
BINARY="$(readlink -f "${BINARY}")"

# Every file the loader opens for BINARY: the interpreter and each resolved library.
library_paths() {
  ldd "${BINARY}" | awk '
    $2 == "=>" && $3 ~ /^\// { print $3 }
    $1 ~ /^\// { print $1 }
  ' | sort -u
}

mapfile -t LIBS < <(library_paths)
((${#LIBS[@]} > 0)) || die "ldd found no libraries for ${BINARY}; is it dynamically linked?"
readonly CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
[[ -f "${CA_BUNDLE}" ]] || die "${CA_BUNDLE} is missing: apt-get install ca-certificates"

# The label: what goes into the image besides the binary (which sandbox-mcp mounts anyway).
content_hash() {
  {
    printf '%s\n' "${LIBS[@]}"
    sha256sum "${LIBS[@]}" "${CA_BUNDLE}" "${HERE}/Dockerfile.sidecar" "$0" 2>/dev/null |
      cut -d' ' -f1
    readlink -f "${LIBS[@]}"
  } | sha256sum | cut -d' ' -f1
}
readonly HASH="$(content_hash)"

log_step "sidecar image ${TAG}"
current="$(docker image inspect --format '{{ index .Config.Labels "sandbox-mcp.sidecar-libs" }}' "${TAG}" 2>/dev/null || true)"
if [[ "${current}" == "${HASH}" ]] && ((!FORCE)); then
  log_info "up to date (libraries unchanged)"
  exit "${EXIT_UP_TO_DATE}"
fi

WORK_DIR="$(mktemp -d /tmp/sandbox-sidecar-image.XXXXXX)"
TMP_TAG="sandbox-mcp/sidecar:build-$$"
cleanup() {
  rm -rf "${WORK_DIR}"
  docker image rm -f "${TMP_TAG}" >/dev/null 2>&1 || true
}
trap cleanup EXIT

ROOTFS="${WORK_DIR}/rootfs"
install -d "${ROOTFS}/usr/local/bin" "${ROOTFS}/etc/ssl/certs"
install -d -m 1777 "${ROOTFS}/tmp"
install -m 0755 "${BINARY}" "${ROOTFS}/usr/local/bin/sandbox-sidecar"
for lib in "${LIBS[@]}"; do
  # The real file, then the name the loader asks for (often a symlink to it).
  real="$(readlink -f "${lib}")"
  install -D -m "$(stat -c %a "${real}")" "${real}" "${ROOTFS}${real}" # the loader needs its x bit
  if [[ "${real}" != "${lib}" ]]; then
    install -d "$(dirname "${ROOTFS}${lib}")"
    ln -sf "${real}" "${ROOTFS}${lib}"
  fi
done
# Merged /usr: /lib64 -> usr/lib64 and /lib -> usr/lib on the host; the copies above already
# sit at the paths ldd printed, which is all the loader needs.
cp "${CA_BUNDLE}" "${ROOTFS}${CA_BUNDLE}"
printf 'root:x:0:0:root:/:/nonexistent\nnobody:x:65534:65534:nobody:/nonexistent:/nonexistent\n' \
  >"${ROOTFS}/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"${ROOTFS}/etc/group"
printf 'hosts: files dns\n' >"${ROOTFS}/etc/nsswitch.conf"
# getaddrinfo loads the NSS modules at run time (ldd cannot see them).
for nss in /lib/x86_64-linux-gnu/libnss_files.so.2 /lib/x86_64-linux-gnu/libnss_dns.so.2; do
  [[ -e "${nss}" ]] || continue
  real="$(readlink -f "${nss}")"
  install -D -m "$(stat -c %a "${real}")" "${real}" "${ROOTFS}${real}"
  [[ "${real}" == "${nss}" ]] || { install -d "$(dirname "${ROOTFS}${nss}")"; ln -sf "${real}" "${ROOTFS}${nss}"; }
done
cp "${HERE}/Dockerfile.sidecar" "${WORK_DIR}/Dockerfile"

log_info "context: $(du -sh "${ROOTFS}" | cut -f1) (${#LIBS[@]} libraries)"
if ! docker build --label "sandbox-mcp.sidecar-libs=${HASH}" -t "${TMP_TAG}" "${WORK_DIR}" \
  >"${WORK_DIR}/build.log" 2>&1; then
  tail -n 20 "${WORK_DIR}/build.log" >&2
  die "docker build of the sidecar image failed (log above)"
fi

log_info "smoke test: --help as nobody, read-only root, no capabilities, no network"
docker run --rm --runtime runc --network none --read-only --cap-drop ALL \
  --security-opt no-new-privileges --user 65534:65534 \
  -v "${BINARY}:/usr/local/bin/sandbox-sidecar:ro" "${TMP_TAG}" --help >/dev/null ||
  die "the sidecar image does not run sandbox-sidecar --help; see the output above"

docker tag "${TMP_TAG}" "${TAG}"
log_info "built ${TAG} ($(docker image inspect --format '{{.Size}}' "${TAG}" | numfmt --to=iec-i --suffix=B))"
