// Which images a session may run and a Dockerfile may build FROM: the operator's decision, never
// widened by a model's arguments. An image is allowed when one of its tags (or digests) matches
// an entry of the list (exact "repo:tag", or "repo:*" for any tag of repo), when it carries the
// operator's label, or when our builder made it FROM an allowed image (labels below).
// Decisions are made on what the engine reports about the image (its tags, labels), so naming an
// allowed image by id or by another spelling gives the same answer. Pure. Thread-safe.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandbox {

// What the engine says about an image (GET /images/{ref}/json).
struct ImageFacts {
  std::string id;                      // "sha256:..."
  std::vector<std::string> repo_tags;  // "repo:tag", as the engine normalises them
  std::vector<std::string> repo_digests;
  std::map<std::string, std::string> labels;
};

// Labels our builder puts on every image it makes (model LABELs may not use the prefix).
inline constexpr std::string_view kLabelBuilt = "sandbox-mcp.built";           // "1"
inline constexpr std::string_view kLabelBuiltBase = "sandbox-mcp.built-base";  // base image id
inline constexpr std::string_view kLabelBuiltHash = "sandbox-mcp.built-hash";  // content hash

struct ImagePolicy {
  std::vector<std::string> allowed;  // normalised entries; the default image is always one
  std::string label_key;             // empty: no label allows
  std::string label_value;
};

struct ImageDecision {
  bool allowed = false;
  std::string reason;
};

// Builds the policy from sandbox.image, sandbox.allowed_images and sandbox.allowed_image_label.
[[nodiscard]] ImagePolicy makeImagePolicy(const std::string& default_image,
                                          const std::vector<std::string>& allowed_images,
                                          const std::string& allowed_label);

// "python" -> "python:latest", "docker.io/library/python:3" -> "python:3"; digests kept.
[[nodiscard]] std::string normalizeImageReference(std::string_view reference);

// `lookup` finds a built image's base by id (nullopt: gone). `requested` is the reference the
// caller used, for the reason text.
[[nodiscard]] ImageDecision decideImage(
    const ImagePolicy& policy, const ImageFacts& image, const std::string& requested,
    const std::function<std::optional<ImageFacts>(const std::string& id)>& lookup);

}  // namespace sandbox
