// Turns an interpreter driver's reply line into an ExecResult. User code shares the driver's
// process and can write its reply pipe, so no field is trusted: wrong types fall back to an
// error, exit codes are clamped, the result is capped and images are checked.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>

#include "common/rich_output.h"
#include "protocol/agent_protocol.h"

namespace agent {

using protocol::ExecResult;

// What a language's replies may carry beyond status, exit code, result and timing.
struct DriverReplyLimits {
  std::size_t max_result_bytes = 0;  // the result text is cut past this
  bool rich_output = false;          // images and a table summary (Python); ignored otherwise
  common::ImageLimits images;        // bounds the images; refused ones land in rich.dropped
};

[[nodiscard]] ExecResult resultFromDriverReply(const nlohmann::json& reply,
                                               const DriverReplyLimits& limits);

}  // namespace agent
