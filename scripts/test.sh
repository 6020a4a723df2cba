#!/usr/bin/env bash
# Sets the machine up (like scripts/setup.sh, but builds the asan-ubsan preset), then runs the
# whole test suite and prints "N passed, N failed". Exits non-zero on any failure.
#   unit tests:              in parallel (-j2)
#   integration, e2e, adversarial, other: one at a time (they share dockerd and its warm containers)
# Under this command the engine is set up, so nothing may skip: a skipped test counts as failed.
# A second, TLS-only engine on a loopback TCP port (scripts/tls_dockerd.sh) stands in for a remote
# engine during the run; it is stopped at the end (its data root, with the image, is kept).
# Afterwards no container labelled sandbox-mcp.managed=1, no container on the TLS engine, no runsc
# process without its container, no new Docker volume and no server run-time directory may remain
# (a leak is a bug; the TLS engine's agent volume is a cache in its own data root).
#   SANDBOX_TEST_TIMEOUT  default per-test timeout in seconds (300)
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

readonly PRESET=asan-ubsan
readonly MANAGED_LABEL=sandbox-mcp.managed=1

managed_containers() { docker ps -aq --no-trunc --filter "label=${MANAGED_LABEL}" | sort; }

# run_ctest NAME JOBS CTEST_ARGS... ; never fails (results are read from the JUnit file).
run_ctest() {
  local name="$1" jobs="$2"
  shift 2
  log_step "ctest: ${name} tests (-j${jobs})"
  (cd "${SANDBOX_REPO_ROOT}" &&
    ctest --preset "${PRESET}" --output-on-failure --no-tests=ignore -j"${jobs}" \
      --timeout "${SANDBOX_TEST_TIMEOUT:-300}" --output-junit "${RESULTS_DIR}/${name}.xml" "$@") ||
    true
}

# Prints "passed failed skipped" summed over the JUnit files CTest wrote.
count_results() {
  python3 - "${RESULTS_DIR}" <<'PY'
import pathlib, sys, xml.etree.ElementTree as ET
passed = failed = skipped = 0
for report in sorted(pathlib.Path(sys.argv[1]).glob("*.xml")):
    for case in ET.parse(report).getroot().iter("testcase"):
        status = case.get("status", "")
        if case.find("failure") is not None or case.find("error") is not None or status == "fail":
            failed += 1
        elif case.find("skipped") is not None or status in ("notrun", "disabled"):
            skipped += 1
        else:
            passed += 1
print(passed, failed, skipped)
PY
}

# Fails when the run left sandbox containers behind (ignores those that existed before).
check_container_leaks() {
  local before_file="$1" leaked=() id
  log_step "check for leaked containers (label ${MANAGED_LABEL})"
  local deadline=$((SECONDS + 10)) # removal after a session ends may still be in flight
  while :; do
    mapfile -t leaked < <(managed_containers | comm -13 "${before_file}" -)
    ((${#leaked[@]} == 0 || SECONDS >= deadline)) && break
    sleep 1
  done
  if ((${#leaked[@]} == 0)); then
    log_info "none"
    return 0
  fi
  printf 'error: the tests leaked %d sandbox container(s) (a bug: sessions must remove them):\n' \
    "${#leaked[@]}" >&2
  local short_ids=()
  for id in "${leaked[@]}"; do
    printf '    %s\n' "$(docker ps -a --filter "id=${id}" --format '{{.ID}}  {{.Image}}  {{.Status}}  {{.Names}}')" >&2
    short_ids+=("${id:0:12}")
  done
  thaw_containers "${leaked[@]}" # a frozen one would make `docker rm -f` wait
  printf '    remove them with: docker rm -f %s\n' "${short_ids[*]}" >&2
  return 1
}

# Server run-time directories (MCP sidecar sockets, policies, audit logs); see mcp.runtime_dir.
readonly RUNTIME_ROOT="/run/sandbox-mcp"
# A machine where no server has run yet has no root at all: that is an empty list, not an error.
runtime_dirs() {
  [[ -d "${RUNTIME_ROOT}" ]] || return 0
  find "${RUNTIME_ROOT}" -mindepth 1 -maxdepth 1 \( -type d -o -name '*.lock' \) | sort
}

# Fails when a server of this run left its run-time directory behind.
check_runtime_dir_leaks() {
  local before_file="$1" leaked=()
  log_step "check for leaked run-time directories (${RUNTIME_ROOT})"
  mapfile -t leaked < <(runtime_dirs | comm -13 "${before_file}" -)
  if ((${#leaked[@]} == 0)); then
    log_info "none"
    return 0
  fi
  printf 'error: the tests left %d server run-time director(ies) behind:\n' "${#leaked[@]}" >&2
  printf '    %s\n' "${leaked[@]}" >&2
  return 1
}

# Paused sessions' snapshots under the default sessions.snapshot_dir: instance directories (a
# server removes its own when empty) and the snapshots in them.
readonly SNAPSHOT_ROOT="/var/lib/sandbox-mcp/snapshots"
snapshot_entries() {
  [[ -d "${SNAPSHOT_ROOT}" ]] || return 0
  find "${SNAPSHOT_ROOT}" -mindepth 1 -maxdepth 2 -type d | sort
}

# Fails when a server of this run left a snapshot (or its instance directory) behind.
check_snapshot_leaks() {
  local before_file="$1" leaked=()
  log_step "check for leaked snapshots (${SNAPSHOT_ROOT})"
  mapfile -t leaked < <(snapshot_entries | comm -13 "${before_file}" -)
  if ((${#leaked[@]} == 0)); then
    log_info "none"
    return 0
  fi
  printf 'error: the tests left %d snapshot director(ies) behind:\n' "${#leaked[@]}" >&2
  printf '    %s\n' "${leaked[@]}" >&2
  return 1
}

# Prints the pids of runsc processes (gVisor sandboxes, gofers) whose container dockerd no longer
# runs: a sandbox that `docker ps` does not list but still holds memory is a leak too.
stray_runsc_pids() {
  local running pid cmdline id stray
  running=" $(docker ps -q --no-trunc | tr '\n' ' ') "
  for pid in $(pgrep -f '(^|/)runsc( |-)' || true); do
    cmdline="$(tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null || true)"
    [[ -n "${cmdline}" ]] || continue
    stray=1
    for id in $(grep -oE '\b[0-9a-f]{64}\b' <<<"${cmdline}" || true); do
      [[ "${running}" == *" ${id} "* ]] && stray=0
    done
    # A process naming no container id at all (e.g. `runsc --version`) is not a sandbox.
    grep -qE '\b[0-9a-f]{64}\b' <<<"${cmdline}" || stray=0
    ((stray)) && printf '%s\n' "${pid}"
  done
  return 0
}

# Fails when gVisor processes outlive their containers (checked after the container check, which
# waits for removals in flight).
check_runsc_leaks() {
  local stray=()
  log_step "check for runsc processes without a container"
  local deadline=$((SECONDS + 10))
  while :; do
    mapfile -t stray < <(stray_runsc_pids)
    ((${#stray[@]} == 0 || SECONDS >= deadline)) && break
    sleep 1
  done
  if ((${#stray[@]} == 0)); then
    log_info "none"
    return 0
  fi
  printf 'error: %d runsc process(es) run without a container (a leaked gVisor sandbox):\n' \
    "${#stray[@]}" >&2
  ps -o pid,etime,args -p "$(IFS=,; echo "${stray[*]}")" >&2 || true
  return 1
}

# Fails when the run left Docker volumes behind (anonymous VOLUMEs of sandbox images are removed
# with their container).
check_volume_leaks() {
  local before_file="$1" leaked=()
  log_step "check for leaked Docker volumes"
  mapfile -t leaked < <(docker volume ls -q | sort | comm -13 "${before_file}" -)
  if ((${#leaked[@]} == 0)); then
    log_info "none"
    return 0
  fi
  printf 'error: the tests left %d Docker volume(s) behind: %s\n' "${#leaked[@]}" "${leaked[*]}" >&2
  return 1
}

readonly TLS_DOCKERD="${SANDBOX_REPO_ROOT}/scripts/tls_dockerd.sh"

# Fails when the run left containers on the TLS engine (it serves these tests alone).
check_tls_engine_leaks() {
  local leaked=()
  log_step "check for containers left on the TLS engine"
  mapfile -t leaked < <(docker -H "unix://${SANDBOX_TLS_ENGINE_SOCKET}" ps -aq)
  if ((${#leaked[@]} == 0)); then
    log_info "none"
    return 0
  fi
  printf 'error: the tests left %d container(s) on the TLS engine: %s\n' "${#leaked[@]}" \
    "${leaked[*]}" >&2
  return 1
}

main() {
  # tests/e2e/images.test.mjs checks the minimal image too; the browser (chromium) is for the
  # e2e tests that load preview URLs (tests/e2e/browser.mjs)
  SANDBOX_WITH_MINIMAL=1 SANDBOX_WITH_BROWSER=1 run_setup_steps "${PRESET}"

  RESULTS_DIR="$(mktemp -d /tmp/sandbox-mcp-tests.XXXXXX)"
  trap 'bash "${TLS_DOCKERD}" stop || true; rm -rf "${RESULTS_DIR}"' EXIT
  # tests/sandbox/remote_engine_*_test.cc (SANDBOX_TLS_ENGINE_* name it)
  bash "${TLS_DOCKERD}" start
  eval "$(bash "${TLS_DOCKERD}" env)"
  local before="${RESULTS_DIR}/containers-before.txt"
  managed_containers >"${before}"
  local dirs_before="${RESULTS_DIR}/runtime-dirs-before.txt"
  runtime_dirs >"${dirs_before}"
  local snapshots_before="${RESULTS_DIR}/snapshots-before.txt"
  snapshot_entries >"${snapshots_before}"
  local volumes_before="${RESULTS_DIR}/volumes-before.txt"
  docker volume ls -q | sort >"${volumes_before}"
  [[ -s "${before}" ]] &&
    log_warn "$(wc -l <"${before}") ${MANAGED_LABEL} container(s) existed before the tests; they are ignored"

  rm -f "${SANDBOX_REPO_ROOT}/build/${PRESET}/conformance-totals.txt" # written by e2e_conformance
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
  run_ctest unit 2 -L '^unit$'
  run_ctest integration 1 -L '^integration$'
  run_ctest e2e 1 -L '^e2e$'
  run_ctest adversarial 1 -L '^adversarial$'
  run_ctest unlabelled 1 -LE '^(unit|integration|e2e|adversarial)$'

  local leak_status=0
  check_tls_engine_leaks || leak_status=1
  bash "${TLS_DOCKERD}" stop # before the runsc check: its sandboxes are not the main engine's
  check_container_leaks "${before}" || leak_status=1
  check_runtime_dir_leaks "${dirs_before}" || leak_status=1
  check_snapshot_leaks "${snapshots_before}" || leak_status=1
  check_runsc_leaks || leak_status=1
  check_volume_leaks "${volumes_before}" || leak_status=1

  local passed failed skipped
  read -r passed failed skipped < <(count_results)
  log_step "results"
  # tests/conformance/run_conformance.mjs (e2e_conformance) writes the suite's totals.
  local totals="${SANDBOX_REPO_ROOT}/build/${PRESET}/conformance-totals.txt"
  [[ -f "${totals}" ]] && cat "${totals}"
  ((skipped == 0)) ||
    log_warn "${skipped} test(s) skipped; under this command nothing may skip, so they count as failed"
  printf '%d passed, %d failed\n' "${passed}" "$((failed + skipped))"

  if ((passed + failed + skipped == 0)); then
    die "no tests ran: check that tests/ registers them (gtest_discover_tests with LABELS)"
  fi
  ((failed + skipped == 0 && leak_status == 0))
}

main "$@"
