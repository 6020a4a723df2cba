// What an operator's config weakens relative to the secure defaults, as sentences for the start-up
// log: every weakening is opt-in, and the server says each one out loud. Pure.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace config {

// One line per weakening, each starting "WEAKENED: " and naming the setting; empty for defaults.
[[nodiscard]] std::vector<std::string> weakenings(const ServerConfig& config);

}  // namespace config
