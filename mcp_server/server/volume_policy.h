// Decides whether a requested volume may be mounted: only host paths under directories the
// operator allowed (after resolving symlinks), read-only unless that directory allows rw.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/config.h"
#include "sandbox/backend.h"

namespace server {

// Parses the seed's volumes shape {"/host/dir": {"bind": "/mnt/data", "mode": "ro"|"rw"}} and
// checks each entry. Throws sandbox::SandboxError with a message naming the entry and the fix.
[[nodiscard]] std::vector<sandbox::VolumeMount> resolveVolumes(
    const nlohmann::json& volumes, const std::vector<config::AllowedHostDir>& allowed,
    const std::string& sandbox_workdir);

}  // namespace server
