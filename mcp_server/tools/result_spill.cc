#include "tools/result_spill.h"

#include <string_view>

#include "common/utf8.h"
#include "sandbox/backend.h"
#include "server/session.h"
#include "tools/exec_common.h"

namespace tools {
namespace {

// Next to the outputs the agent saves itself (agent/output_spill.h), on the sandbox's /tmp.
constexpr std::string_view kSpillDir = "/tmp/.sandbox-mcp/outputs";

bool alreadySaved(const json& structured, const std::string& stream) {
  for (const auto& file : structured.value("saved_output", json::array())) {
    if (file.value("stream", "") == stream) return true;
  }
  return false;
}

void addWarning(json& structured, const std::string& text) {
  if (!structured.contains("warnings")) structured["warnings"] = json::array();
  structured["warnings"].push_back(text);
}

}  // namespace

std::size_t spillExecOutput(ToolResult& result, server::Session& session, const std::string& stem,
                            std::size_t keep_bytes) {
  json& s = result.structured;
  if (!s.is_object() || !s.contains("stdout") || !s.contains("status")) return 0;  // not an exec
  sandbox::ExecResult saved;
  std::size_t freed = 0;
  for (const std::string stream : {"stdout", "stderr"}) {
    if (!s.contains(stream) || !s[stream].is_string()) continue;
    std::string& text = s[stream].get_ref<std::string&>();
    if (text.size() <= keep_bytes) continue;
    // Output already saved whole by the agent needs no second copy: only the head shrinks.
    if (!alreadySaved(s, stream)) {
      const std::string path = std::string(kSpillDir) + "/" + stem + "-" + stream + ".txt";
      try {
        session.sandbox().writeFile(path, text, 0644);
        saved.saved_outputs.push_back({stream, path, text.size(), true});
      } catch (const std::exception& e) {
        addWarning(s, "the " + stream + " of this task (" + std::to_string(text.size()) +
                          " bytes) was cut to its first " + std::to_string(keep_bytes) +
                          " bytes to bound what the server keeps, and could not be saved in the "
                          "sandbox (" +
                          e.what() + ")");
      }
    }
    const std::size_t keep =
        common::completeUtf8PrefixLength(std::string_view(text).substr(0, keep_bytes));
    freed += text.size() - keep;
    text.resize(keep);
    text.shrink_to_fit();  // a kept result must not keep the whole stream's buffer behind it
    s["truncated"] = true;
  }
  if (freed == 0) return 0;
  linkSavedOutputs(saved, stem, session, result);
  result.text = renderExecText(s);
  return freed;
}

}  // namespace tools
