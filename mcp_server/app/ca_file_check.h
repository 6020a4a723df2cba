// Start-up and doctor check of a CA file the operator names (mcp.upstream_ca_file,
// egress.upstream_ca_file): the sidecar loads it when each session's relay starts, so a missing or
// wrong file would otherwise show only as failed session creations.
#pragma once

#include <string>

#include "sandbox/backend.h"

namespace app {

// ok when `path` is a readable file of PEM certificates, at least one, and no broken block; the
// detail says how many, or what is wrong and which setting to fix.
[[nodiscard]] sandbox::HealthCheck caFileCheck(const std::string& setting, const std::string& path);

}  // namespace app
