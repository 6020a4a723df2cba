#include "agent/driver_reply.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace agent {

ExecResult resultFromDriverReply(const nlohmann::json& reply, const DriverReplyLimits& limits) {
  ExecResult result;
  const auto status = reply.find("status");
  result.status = status != reply.end() && *status == "success" ? protocol::ExecStatus::kSuccess
                                                                : protocol::ExecStatus::kError;
  const auto exit_code = reply.find("exit_code");
  result.exit_code =
      exit_code != reply.end() && exit_code->is_number_integer()
          ? static_cast<int>(std::clamp<std::int64_t>(exit_code->get<std::int64_t>(), -255, 255))
          : 1;
  if (const auto value = reply.find("result"); value != reply.end() && value->is_string()) {
    const auto& text = value->get_ref<const std::string&>();
    result.result = text.size() <= limits.max_result_bytes
                        ? text
                        : text.substr(0, limits.max_result_bytes) + "...[result cut]";
  }
  if (limits.rich_output) result.rich = common::parseRichOutput(reply, limits.images);
  // For the timing breakdown only; a forged value misleads nobody but its author.
  if (const auto exec_ms = reply.find("exec_ms");
      exec_ms != reply.end() && exec_ms->is_number() && exec_ms->get<double>() >= 0) {
    result.exec_ms = exec_ms->get<double>();
  }
  return result;
}

}  // namespace agent
