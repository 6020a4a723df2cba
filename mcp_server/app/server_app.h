// Wires the pieces together for the two things the binary does: serve, or run the doctor.
#pragma once

#include "app/cli_options.h"

namespace app {

// Returns the process exit code. Never throws.
int runServer(const CliOptions& options) noexcept;
int runDoctor(const CliOptions& options) noexcept;

}  // namespace app
