#include "sandbox/image_policy.h"

#include <algorithm>

namespace sandbox {
namespace {

constexpr int kMaxBuildChain = 8;  // FROM a built image FROM a built image ...

bool matchesEntry(const std::string& entry, const std::string& reference) {
  if (entry.size() >= 2 && entry.compare(entry.size() - 2, 2, ":*") == 0) {
    const auto repo = entry.substr(0, entry.size() - 1);  // "repo:"
    return reference.rfind(repo, 0) == 0 && reference.find('/', repo.size()) == std::string::npos;
  }
  return entry == reference;
}

std::optional<std::string> matchingEntry(const ImagePolicy& policy, const ImageFacts& image) {
  for (const auto& entry : policy.allowed) {
    for (const auto* names : {&image.repo_tags, &image.repo_digests}) {
      for (const auto& name : *names) {
        if (matchesEntry(entry, normalizeImageReference(name))) return entry;
      }
    }
  }
  return std::nullopt;
}

bool hasLabel(const ImageFacts& image, const std::string& key, const std::string& value) {
  const auto it = image.labels.find(key);
  return it != image.labels.end() && it->second == value;
}

}  // namespace

std::string normalizeImageReference(std::string_view reference) {
  std::string out(reference);
  for (const std::string_view prefix : {"docker.io/library/", "docker.io/", "index.docker.io/"}) {
    if (out.rfind(prefix, 0) == 0) {
      out.erase(0, prefix.size());
      break;
    }
  }
  if (out.find('@') != std::string::npos) return out;
  const auto slash = out.rfind('/');
  const auto colon = out.rfind(':');
  if (colon == std::string::npos || (slash != std::string::npos && colon < slash)) {
    out += ":latest";
  }
  return out;
}

ImagePolicy makeImagePolicy(const std::string& default_image,
                            const std::vector<std::string>& allowed_images,
                            const std::string& allowed_label) {
  ImagePolicy policy;
  policy.allowed.push_back(normalizeImageReference(default_image));
  for (const auto& entry : allowed_images) {
    const bool pattern = entry.size() >= 2 && entry.compare(entry.size() - 2, 2, ":*") == 0;
    policy.allowed.push_back(pattern ? entry : normalizeImageReference(entry));
  }
  if (const auto equals = allowed_label.find('='); equals != std::string::npos) {
    policy.label_key = allowed_label.substr(0, equals);
    policy.label_value = allowed_label.substr(equals + 1);
  }
  return policy;
}

ImageDecision decideImage(
    const ImagePolicy& policy, const ImageFacts& image, const std::string& requested,
    const std::function<std::optional<ImageFacts>(const std::string& id)>& lookup) {
  const ImageFacts* current = &image;
  std::optional<ImageFacts> base;
  for (int depth = 0; depth <= kMaxBuildChain; ++depth) {
    if (const auto entry = matchingEntry(policy, *current)) {
      return {true, depth == 0 ? "matches sandbox.allowed_images entry " + *entry
                               : "built by this server from an image matching " + *entry};
    }
    if (!policy.label_key.empty() && hasLabel(*current, policy.label_key, policy.label_value)) {
      return {true, "carries the label " + policy.label_key + "=" + policy.label_value};
    }
    // A built image is as allowed as the base it was built from (its labels are ours: model
    // LABELs may not use the sandbox-mcp. prefix).
    const auto built = current->labels.find(std::string(kLabelBuilt));
    const auto base_id = current->labels.find(std::string(kLabelBuiltBase));
    if (built == current->labels.end() || built->second != "1" ||
        base_id == current->labels.end() || !lookup) {
      break;
    }
    const std::string next = base_id->second;  // *current may live in `base`: copy first
    base = lookup(next);
    if (!base) break;
    current = &*base;
  }
  std::string allowed;
  for (const auto& entry : policy.allowed) allowed += (allowed.empty() ? "" : ", ") + entry;
  return {false, "image '" + requested + "' is not allowed on this server (allowed: " + allowed +
                     (policy.label_key.empty()
                          ? ""
                          : ", or images labelled " + policy.label_key + "=" + policy.label_value) +
                     "). Omit image to use the default, or ask the operator to add it to "
                     "sandbox.allowed_images (or label it with sandbox.allowed_image_label)"};
}

}  // namespace sandbox
