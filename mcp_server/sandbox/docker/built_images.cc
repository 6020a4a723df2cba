#include "sandbox/docker/built_images.h"

#include <algorithm>
#include <chrono>
#include <ctime>

#include "sandbox/image_policy.h"
#include "sandbox/log.h"

namespace sandbox::docker {

std::int64_t parseEngineTime(const std::string& text) {
  std::tm tm{};
  const char* end = ::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr || tm.tm_year < 70) return 0;  // "0001-01-01T00:00:00Z": never tagged
  return static_cast<std::int64_t>(::timegm(&tm));
}

std::vector<std::string> selectBuiltImagesToRemove(std::vector<BuiltImage> images,
                                                   std::int64_t now_unix,
                                                   const BuiltImageRetention& keep) {
  std::sort(images.begin(), images.end(), [](const BuiltImage& a, const BuiltImage& b) {
    return a.last_used_unix > b.last_used_unix;  // newest first
  });
  std::vector<std::string> doomed;
  std::size_t kept = 0;
  for (const auto& image : images) {
    const bool idle = now_unix - image.last_used_unix > keep.max_idle_s;
    if (!image.tagged || idle || kept >= keep.max_count) {
      doomed.push_back(image.id);
    } else {
      ++kept;
    }
  }
  std::reverse(doomed.begin(), doomed.end());
  return doomed;
}

int collectBuiltImages(EngineClient& engine, const BuiltImageRetention& keep) noexcept {
  try {
    const nlohmann::json filters = {{"label", {std::string(kLabelBuilt) + "=1"}}};
    const auto list =
        engine.request(Method::kGet, "/images/json?filters=" + urlEncode(filters.dump())).json();
    std::vector<BuiltImage> images;
    for (const auto& item : list) {
      BuiltImage image;
      image.id = item.value("Id", std::string());
      const auto tags = item.value("RepoTags", nlohmann::json::array());
      image.tagged = tags.is_array() && std::any_of(tags.begin(), tags.end(), [](const auto& t) {
                       return t.is_string() && t != "<none>:<none>";
                     });
      image.last_used_unix = item.value("Created", std::int64_t{0});
      try {
        const auto details = engine.request(Method::kGet, "/images/" + image.id + "/json").json();
        const auto tagged_at = parseEngineTime(details.value("Metadata", nlohmann::json::object())
                                                   .value("LastTagTime", std::string()));
        image.last_used_unix = std::max(image.last_used_unix, tagged_at);
      } catch (const EngineError&) {
        continue;  // removed meanwhile
      }
      images.push_back(std::move(image));
    }
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    int removed = 0;
    for (const auto& id : selectBuiltImagesToRemove(std::move(images), now, keep)) {
      try {
        engine.request(Method::kDelete, "/images/" + id);
        logger().info("removed built image {} (unused, or beyond sandbox.built_images_max)",
                      id.substr(0, 19));
        ++removed;
      } catch (const EngineError& e) {
        // In use by a container, a parent of another image, or tagged elsewhere: keep it.
        logger().debug("keeping built image {}: {}", id.substr(0, 19), e.what());
      }
    }
    return removed;
  } catch (const std::exception& e) {
    logger().warn("collecting built images failed: {}", e.what());
    return 0;
  }
}

}  // namespace sandbox::docker
