// Which built images the garbage collector removes: untagged, idle, or beyond the count cap.
#include "sandbox/docker/built_images.h"

#include <gtest/gtest.h>

namespace {

using sandbox::docker::BuiltImage;
using sandbox::docker::selectBuiltImagesToRemove;

TEST(BuiltImages, RemovesIdleUntaggedAndOldestBeyondTheCap) {
  const std::int64_t now = 1'000'000;
  std::vector<BuiltImage> images = {
      {"fresh", true, now - 10},  {"idle", true, now - 90'000},    {"untagged", false, now - 5},
      {"older", true, now - 100}, {"oldest-kept", true, now - 50},
  };
  const auto doomed = selectBuiltImagesToRemove(images, now, {2, 86'400});
  EXPECT_EQ(doomed, (std::vector<std::string>{"idle", "older", "untagged"}));
  EXPECT_TRUE(selectBuiltImagesToRemove({{"a", true, now}}, now, {1, 60}).empty());
}

TEST(BuiltImages, ParsesEngineTimes) {
  EXPECT_EQ(sandbox::docker::parseEngineTime("1970-01-02T00:00:00.5Z"), 86400);
  EXPECT_EQ(sandbox::docker::parseEngineTime("0001-01-01T00:00:00Z"), 0);
  EXPECT_EQ(sandbox::docker::parseEngineTime("garbage"), 0);
}

}  // namespace
