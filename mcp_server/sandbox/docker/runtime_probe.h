// A doctor check that runs something real under gVisor: Debian 12's own runsc (0.0~20221219)
// rejects statx(AT_NO_AUTOMOUNT), which coreutils uses, so `ls /` and `stat` fail with "Invalid
// argument" in every sandbox while everything else looks healthy. The probe starts a throwaway
// container (runtime, network none, removed afterwards) from the image and runs
// `ls / && ls /tmp && stat /etc/passwd` as its command. Thread-safe.
#pragma once

#include <map>
#include <string>

#include "sandbox/backend.h"
#include "sandbox/docker/engine_client.h"

namespace sandbox::docker {

[[nodiscard]] HealthCheck probeFileListing(EngineClient& engine, const std::string& image,
                                           const std::string& runtime,
                                           const std::map<std::string, std::string>& labels);

}  // namespace sandbox::docker
