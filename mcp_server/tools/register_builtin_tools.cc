#include "tools/builtin_tools.h"

namespace tools {

void registerBuiltinTools(ToolRegistry& registry, const config::ServerConfig& config) {
  registry.add(makeRunCodeTool(config));
  registry.add(makeRunShellTool(config));
  registry.add(makeUploadFileTool(config));
  registry.add(makeDownloadFileTool(config));
  registry.add(makeListFilesTool(config));
  registry.add(makeGetSessionStatsTool());
  registry.add(makeCleanupSessionTool());
  registry.add(makeListSessionsTool());
  registry.add(makeSnapshotSessionTool());
  registry.add(makeForkSessionTool(config));
  registry.add(makeRestoreSessionTool());
  if (config.preview.enabled()) {
    registry.add(makeExposePortTool(config));
    registry.add(makeUnexposePortTool());
  }
}

}  // namespace tools
