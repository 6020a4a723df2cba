# shellcheck shell=bash
# The Docker engine's set-up steps (sourced by scripts/lib.sh, which defines the logging helpers
# and SANDBOX_DOCKERD_LOG / SANDBOX_DAEMON_JSON): gVisor's runsc from bookworm-backports,
# /etc/docker/daemon.json, and dockerd started in the background and checked.

# --- install_gvisor --------------------------------------------------------------------------
# Debian 12's own runsc (0.0~20221219) rejects statx(AT_NO_AUTOMOUNT), which coreutils uses:
# `ls`, `stat` and `find` fail with "Invalid argument" in every sandbox. The bookworm-backports
# package (0.0~20240729) fixes that. The suite is added on the machine's own Debian mirror (read
# from its apt sources at run time: no mirror host name is written into this repository).
readonly SANDBOX_MIN_RUNSC_VERSION="0.0~20240729"
readonly SANDBOX_BACKPORTS_LIST=/etc/apt/sources.list.d/sandbox-mcp-backports.list
# gVisor's platform for the runtime "runsc" unless SANDBOX_RUNSC_PLATFORM says otherwise.
readonly SANDBOX_DEFAULT_RUNSC_PLATFORM=systrap

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
    # shellcheck disable=SC2034 # read by apt_update_once (scripts/lib.sh): update again
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
#      --platform=P    gVisor's platform (how it intercepts the sandbox's system calls), P from
#                      SANDBOX_RUNSC_PLATFORM, else SANDBOX_DEFAULT_RUNSC_PLATFORM (below). Chosen
#                      by bench/workloads.mjs (real code: printing, numpy, files, processes), not
#                      by `1+1`: docs/performance.md "Real code". kvm needs KVM that works
#                      (kvm_usable).
#  - runtimes "runsc-systrap", "runsc-ptrace" (and "runsc-kvm" where KVM works): the same
#    with each platform, for sandbox.platform and for the benchmark to compare in one run.
#  - runtime "runsc-build": gVisor for the RUN steps of model-supplied Dockerfiles (only used when
#    the operator sets sandbox.allow_dockerfile). --overlay2=none: runsc's default root overlay
#    (root:self) keeps a container's writes inside the sandbox, so `docker commit` of a RUN step
#    would capture nothing; without the overlay the writes reach the container's layer (through
#    gVisor's gofer) and can be committed. No --host-uds: builds reach no host socket.
#  - "experimental": true: `POST /containers/{id}/start?checkpoint=` (a container started from a
#    gVisor checkpoint) is experimental in this engine; paused, forked and persisted sessions
#    restore through it (mcp_server/sandbox/CHECKPOINT_RESTORE_NOTES.md). It enables nothing a
#    sandbox can reach.
# Reload: dockerd re-reads "runtimes" on SIGHUP, but "bridge" and "experimental" only at start-up,
# so a change to either restarts dockerd while a runtime-only change just sends SIGHUP.
# KVM works: /dev/kvm exists and the CPU offers hardware virtualisation. Some VMs have the device
# without the CPU flags (no nested virtualisation); there runsc --platform=kvm spins at boot
# forever instead of failing, so such a runtime must not be offered.
kvm_usable() {
  [[ -c /dev/kvm ]] && grep -qwE 'vmx|svm' /proc/cpuinfo
}

configure_docker() {
  log_step "configure_docker (${SANDBOX_DAEMON_JSON})"
  local runsc_path
  runsc_path="$(command -v runsc)" || die "runsc not found: install it with 'apt-get install runsc'"

  local old='{}'
  if [[ -s "${SANDBOX_DAEMON_JSON}" ]]; then
    old="$(jq -S . "${SANDBOX_DAEMON_JSON}")" ||
      die "${SANDBOX_DAEMON_JSON} is not valid JSON: fix or remove it, then re-run"
  fi
  local platform="${SANDBOX_RUNSC_PLATFORM:-${SANDBOX_DEFAULT_RUNSC_PLATFORM}}"
  case "${platform}" in
    systrap | ptrace) ;;
    kvm) kvm_usable || die "SANDBOX_RUNSC_PLATFORM=kvm needs KVM (/dev/kvm and the CPU's vmx or svm flag), which this machine lacks" ;;
    *) die "SANDBOX_RUNSC_PLATFORM must be systrap, ptrace or kvm (got '${platform}')" ;;
  esac
  local platforms='["systrap", "ptrace"]'
  kvm_usable && platforms='["systrap", "ptrace", "kvm"]'
  local new
  new="$(jq -S --arg path "${runsc_path}" --arg platform "${platform}" \
      --argjson platforms "${platforms}" '
      def sandbox_args($p): ["--network=none", "--host-uds=open", "--platform=" + $p];
      .bridge = "none"
      | .experimental = true
      | .runtimes.runsc = ((.runtimes.runsc // {})
                           + {path: $path, runtimeArgs: sandbox_args($platform)})
      | reduce $platforms[] as $p (.;
          .runtimes["runsc-" + $p] = ((.runtimes["runsc-" + $p] // {})
                                      + {path: $path, runtimeArgs: sandbox_args($p)}))
      | if ($platforms | index("kvm")) then . else del(.runtimes["runsc-kvm"]) end
      | .runtimes["runsc-build"] = ((.runtimes["runsc-build"] // {})
                           + {path: $path, runtimeArgs: ["--network=none", "--overlay2=none", "--platform=" + $platform]})
    ' <<<"${old}")"

  if [[ "${new}" == "${old}" ]]; then
    log_info "unchanged (bridge none, runtimes runsc and runsc-build at ${runsc_path})"
    return 0
  fi
  local bridge_changed=0
  [[ "$(jq -r '.bridge // ""' <<<"${old}")" == "none" ]] || bridge_changed=1
  [[ "$(jq -r '.experimental // false' <<<"${old}")" == "true" ]] || bridge_changed=1

  mkdir -p "$(dirname "${SANDBOX_DAEMON_JSON}")"
  [[ -e "${SANDBOX_DAEMON_JSON}" ]] && cp -p "${SANDBOX_DAEMON_JSON}" "${SANDBOX_DAEMON_JSON}.bak"
  printf '%s\n' "${new}" >"${SANDBOX_DAEMON_JSON}.tmp"
  mv "${SANDBOX_DAEMON_JSON}.tmp" "${SANDBOX_DAEMON_JSON}"
  note_change "wrote ${SANDBOX_DAEMON_JSON} (previous copy in ${SANDBOX_DAEMON_JSON}.bak if any)"

  docker info >/dev/null 2>&1 || return 0 # not running: start_dockerd picks the file up
  if ((bridge_changed)); then
    log_info "dockerd is running and 'bridge' or 'experimental' changed: restarting it (both are read only at start)"
    restart_dockerd
  else
    log_info "dockerd is running: reloading runtimes with SIGHUP"
    kill -HUP "$(dockerd_pid)"
    sleep 1
  fi
}

# --- enable_app_huge_pages ------------------------------------------------------------------
# gVisor backs application memory with a memory file on the host (shmem); its --app-huge-pages
# (on by default) asks for transparent huge pages there with madvise, which the kernel honours
# only when shmem_enabled is "advise" (often "never"). Then touching fresh memory faults 2 MiB at a
# time, not 4 KiB: 200 MB of fresh numpy memory took 1.5 s in a sandbox here, 0.1-0.5 s with it
# (docs/performance.md "Real code"). It affects only mappings that ask for huge pages. Not
# persistent across a reboot: setup and test runs set it again.
readonly SANDBOX_SHMEM_THP=/sys/kernel/mm/transparent_hugepage/shmem_enabled
enable_app_huge_pages() {
  log_step "enable_app_huge_pages (${SANDBOX_SHMEM_THP})"
  if [[ ! -w "${SANDBOX_SHMEM_THP}" ]]; then
    log_info "not available here (no writable ${SANDBOX_SHMEM_THP}): sandboxes fault fresh memory 4 KiB at a time"
    return 0
  fi
  if grep -qE '\[(advise|always|within_size)\]' "${SANDBOX_SHMEM_THP}"; then
    log_info "already on: $(cat "${SANDBOX_SHMEM_THP}")"
    return 0
  fi
  if echo advise >"${SANDBOX_SHMEM_THP}" 2>/dev/null; then
    note_change "set ${SANDBOX_SHMEM_THP} to advise (gVisor's application memory may use huge pages)"
  else
    log_info "could not set ${SANDBOX_SHMEM_THP} (read-only here): sandboxes fault fresh memory 4 KiB at a time"
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
  # A frozen sandbox (sessions.freeze_after_idle_s) would never take the engine's stop.
  # shellcheck disable=SC2046
  thaw_containers $(docker ps -q --filter label=sandbox-mcp.managed=1 2>/dev/null)
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

# --- thaw_containers -------------------------------------------------------------------------
# Thaws containers the server froze on this host (sessions.freeze_after_idle_s) before they are
# removed by hand: the engine cannot remove a frozen container (`docker rm -f` waits until it is
# thawed). Each argument is a container id; one not frozen (or gone) is left as it is.
thaw_containers() {
  local id pid path
  for id in "$@"; do
    pid="$(docker inspect -f '{{.State.Pid}}' "${id}" 2>/dev/null)" || continue
    [[ "${pid}" =~ ^[1-9][0-9]*$ && -r "/proc/${pid}/cgroup" ]] || continue
    # v1: the freezer hierarchy's line; v2: the unified one ("0::/...").
    path="$(awk -F: '$2 ~ /(^|,)freezer(,|$)/ { print "/sys/fs/cgroup/freezer" $3 "/freezer.state" }' "/proc/${pid}/cgroup")"
    # Only the container's own cgroup (its directory names the id): never a reused pid's.
    [[ "${path}" == *"${id}"* ]] || path=""
    if [[ -n "${path}" && -w "${path}" ]]; then
      [[ "$(cat "${path}")" == THAWED ]] || echo THAWED >"${path}"
      continue
    fi
    path="$(awk -F: '$1 == "0" { print "/sys/fs/cgroup" $3 "/cgroup.freeze" }' "/proc/${pid}/cgroup")"
    [[ "${path}" == *"${id}"* && -w "${path}" ]] && echo 0 >"${path}"
  done
  return 0
}
