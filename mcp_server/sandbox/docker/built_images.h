// Garbage collection of the images our builder made (label sandbox-mcp.built=1): a built image
// unused for max_idle, untagged (replaced by a concurrent build of the same content), or beyond
// the newest max_count is removed. "Used" is the image's last tag time: the builder re-tags an
// image each time a session reuses it, and dockerd keeps that time across restarts. Images a
// container still uses are kept (removal is never forced). Runs at server start and after builds.
// Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sandbox/docker/engine_client.h"

namespace sandbox::docker {

struct BuiltImage {
  std::string id;
  bool tagged = true;
  std::int64_t last_used_unix = 0;
};

struct BuiltImageRetention {
  std::size_t max_count = 16;
  std::int64_t max_idle_s = 86400;
};

// Ids to remove, oldest first. Pure.
[[nodiscard]] std::vector<std::string> selectBuiltImagesToRemove(std::vector<BuiltImage> images,
                                                                 std::int64_t now_unix,
                                                                 const BuiltImageRetention& keep);

// "2026-11-23T15:34:59.487268862Z" -> unix seconds; 0 when unparsable or zero time. Pure.
[[nodiscard]] std::int64_t parseEngineTime(const std::string& text);

// Lists, selects and removes; returns how many images were removed. Never throws.
int collectBuiltImages(EngineClient& engine, const BuiltImageRetention& keep) noexcept;

}  // namespace sandbox::docker
