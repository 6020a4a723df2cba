// Loading a configuration: the file (read with a size bound) and fromJson, which runs the section
// readers (sections.h) in document order and checks the top-level keys.
#include "config/config.h"

#include <fstream>
#include <set>

#include "common/json_limits.h"
#include "config/object_reader.h"
#include "config/sections.h"

namespace config {

using nlohmann::json;

ServerConfig fromJson(const json& document) {
  ServerConfig config;
  ObjectReader root(document, "");
  readDocker(root, config.docker);
  readSandbox(root, config.sandbox);
  readExecution(root, config.execution);
  readResources(root, config.resources);
  readImages(root, config.images);
  readTasks(root, config.tasks);
  readSessions(root, config.sessions);
  readPool(root, config.pool);
  readVolumes(root, config.volumes);
  readHttp(root, config.http);
  readStdio(root, config.stdio);
  readPreview(root, config.preview);
  readMcp(root, config.mcp);
  readEgress(root, config.egress);
  readShutdown(root, config.shutdown);
  readInstanceId(root, config.instance_id);
  root.read("log_level", config.log_level);
  root.rejectUnknown();
  static const std::set<std::string> kLevels{"trace", "debug", "info", "warn", "error", "off"};
  if (!kLevels.count(config.log_level)) {
    ObjectReader::fail("log_level", "must be one of trace, debug, info, warn, error, off");
  }
  return config;
}

ServerConfig loadFile(const std::string& path) {
  // A configuration is a few kilobytes; the bound keeps a wrong --config path (a log, a device)
  // from being read whole.
  constexpr std::size_t kMaxConfigBytes = std::size_t{1} * 1024 * 1024;
  std::ifstream in(path);
  if (!in) throw ConfigError("config: cannot open " + path + " (check the --config path)");
  std::string text(kMaxConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxConfigBytes) {
    throw ConfigError("config: " + path + " is larger than " + std::to_string(kMaxConfigBytes) +
                      " bytes; is it the right file?");
  }
  json document;
  try {
    common::requireJsonDepth(text);
    document = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for "1e400"
    throw ConfigError("config: " + path + " is not valid JSON: " + e.what());
  }
  return fromJson(document);
}

}  // namespace config
