// The operator's image policy: exact references and repo:* patterns, an optional label, and
// images our builder made from an allowed base. A model's spelling of a name never widens it.
#include "sandbox/image_policy.h"

#include <gtest/gtest.h>

namespace {

using sandbox::decideImage;
using sandbox::ImageFacts;
using sandbox::makeImagePolicy;

ImageFacts image(std::vector<std::string> tags, std::map<std::string, std::string> labels = {}) {
  return ImageFacts{"sha256:" + (tags.empty() ? std::string("none") : tags.front()),
                    std::move(tags),
                    {},
                    std::move(labels)};
}

bool allowed(const sandbox::ImagePolicy& policy, const ImageFacts& facts) {
  return decideImage(policy, facts, "requested", nullptr).allowed;
}

TEST(ImagePolicy, DefaultAllowsOnlyTheSandboxImage) {
  const auto policy = makeImagePolicy("sandbox-mcp/python:latest", {}, "");
  EXPECT_TRUE(allowed(policy, image({"sandbox-mcp/python:latest"})));
  EXPECT_TRUE(allowed(policy, image({"other:1", "sandbox-mcp/python:latest"})));
  EXPECT_FALSE(allowed(policy, image({"sandbox-mcp/sidecar:latest"})));
  EXPECT_FALSE(allowed(policy, image({"sandbox-mcp/python:old"})));
  EXPECT_FALSE(allowed(policy, image({})));  // untagged: known only by id
  const auto refusal = decideImage(policy, image({"secrets:1"}), "secrets:1", nullptr);
  EXPECT_NE(refusal.reason.find("sandbox.allowed_images"), std::string::npos) << refusal.reason;
  EXPECT_NE(refusal.reason.find("'secrets:1'"), std::string::npos) << refusal.reason;
}

TEST(ImagePolicy, ExactEntriesAndRepoPatterns) {
  const auto policy = makeImagePolicy("sandbox-mcp/python", {"team/py:*", "docker.io/tools"}, "");
  EXPECT_TRUE(allowed(policy, image({"sandbox-mcp/python:latest"})));
  EXPECT_TRUE(allowed(policy, image({"team/py:3.12"})));
  EXPECT_TRUE(allowed(policy, image({"tools:latest"})));
  EXPECT_FALSE(allowed(policy, image({"team/pyx:1"})));
  EXPECT_FALSE(allowed(policy, image({"team/py/evil:1"})));
  EXPECT_FALSE(allowed(policy, image({"tools:2"})));
}

TEST(ImagePolicy, LabelAllowsOnlyWhenConfigured) {
  const ImageFacts labelled = image({"x:1"}, {{"sandbox-mcp.allowed", "1"}});
  EXPECT_FALSE(allowed(makeImagePolicy("d:1", {}, ""), labelled));
  EXPECT_TRUE(allowed(makeImagePolicy("d:1", {}, "sandbox-mcp.allowed=1"), labelled));
  EXPECT_FALSE(allowed(makeImagePolicy("d:1", {}, "sandbox-mcp.allowed=yes"), labelled));
}

TEST(ImagePolicy, BuiltImagesInheritTheirBase) {
  const auto policy = makeImagePolicy("sandbox-mcp/python:latest", {}, "");
  const ImageFacts base = image({"sandbox-mcp/python:latest"});
  const ImageFacts other = image({"secrets:1"});
  const auto lookup = [&](const std::string& id) -> std::optional<ImageFacts> {
    if (id == base.id) return base;
    if (id == other.id) return other;
    return std::nullopt;
  };
  const auto built = [](const std::string& base_id) {
    return image({"sandbox-mcp-build:abc"},
                 {{"sandbox-mcp.built", "1"}, {"sandbox-mcp.built-base", base_id}});
  };
  EXPECT_TRUE(decideImage(policy, built(base.id), "b", lookup).allowed);
  EXPECT_FALSE(decideImage(policy, built(other.id), "b", lookup).allowed);
  EXPECT_FALSE(decideImage(policy, built("sha256:gone"), "b", lookup).allowed);
  // A self-referencing chain ends (bounded depth) and is refused.
  const ImageFacts loop =
      image({"loop:1"}, {{"sandbox-mcp.built", "1"}, {"sandbox-mcp.built-base", "sha256:loop:1"}});
  EXPECT_FALSE(
      decideImage(policy, loop, "loop:1", [&](const std::string&) { return loop; }).allowed);
}

TEST(ImagePolicy, NormalizesReferences) {
  EXPECT_EQ(sandbox::normalizeImageReference("python"), "python:latest");
  EXPECT_EQ(sandbox::normalizeImageReference("docker.io/library/python:3"), "python:3");
  EXPECT_EQ(sandbox::normalizeImageReference("localhost:5000/x"), "localhost:5000/x:latest");
  EXPECT_EQ(sandbox::normalizeImageReference("x@sha256:ab"), "x@sha256:ab");
}

}  // namespace
