#include "sandbox/snapshot_manifest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "common/fd_io.h"
#include "common/json_limits.h"
#include "common/unique_fd.h"

namespace sandbox {
namespace {

using nlohmann::json;

constexpr const char* kManifestTemp = ".manifest.json.new";  // not a plain name: never listed
constexpr int kFormat = 1;
constexpr std::size_t kMaxManifestBytes = std::size_t{4} << 20U;  // the spec in facts.extra fits
// NONBLOCK: opening a FIFO planted in its place must not hang.
constexpr int kOpenManifest = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;

bool isHex(std::string_view text, std::size_t length) {
  return text.size() == length && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// The canonical bytes the HMAC covers: nlohmann objects keep their keys sorted, so parsing and
// dumping again yields the same bytes.
std::string canonical(const json& body) {
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

json manifestJson(const SnapshotManifest& manifest) {
  const SnapshotRecord& record = manifest.record;
  json files = json::array();
  for (const auto& file : manifest.files) {
    files.push_back({{"name", file.name}, {"size", file.size}, {"sha256", file.sha256}});
  }
  const SnapshotFacts& facts = record.facts;
  return {{"format", kFormat},
          {"id", record.id},
          {"instance_id", record.instance_id},
          {"created_unix", record.created_unix},
          {"facts",
           {{"owner", facts.owner},
            {"session_id", facts.session_id},
            {"name", facts.name},
            {"image", facts.image},
            {"runtime_version", facts.runtime_version},
            {"extra", facts.extra}}},
          {"files", std::move(files)}};
}

// Throws nlohmann::json::exception on a missing field or a wrong type.
SnapshotManifest manifestFromJson(const json& body) {
  SnapshotManifest manifest;
  SnapshotRecord& record = manifest.record;
  record.id = body.at("id").get<std::string>();
  record.instance_id = body.at("instance_id").get<std::string>();
  record.created_unix = body.at("created_unix").get<std::int64_t>();
  const json& facts = body.at("facts");
  record.facts.owner = facts.at("owner").get<std::string>();
  record.facts.session_id = facts.at("session_id").get<std::string>();
  record.facts.name = facts.at("name").get<std::string>();
  record.facts.image = facts.at("image").get<std::string>();
  record.facts.runtime_version = facts.at("runtime_version").get<std::string>();
  record.facts.extra = facts.at("extra");
  for (const auto& file : body.at("files")) {
    manifest.files.push_back({file.at("name").get<std::string>(),
                              file.at("size").get<std::uint64_t>(),
                              file.at("sha256").get<std::string>()});
    record.bytes += manifest.files.back().size;
  }
  return manifest;
}

// nullopt when there is none.
std::optional<std::string> readManifestText(int dir_fd, const std::string& id) {
  const common::UniqueFd fd(::openat(dir_fd, kManifestFileName, kOpenManifest));
  if (!fd) {
    if (errno == ENOENT) return std::nullopt;
    if (errno == ELOOP) refuseSnapshot(id, "manifest.json is a symbolic link");
    throw SandboxError("cannot open manifest.json of snapshot " + id + ": " + std::strerror(errno));
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) {
    refuseSnapshot(id, "manifest.json is not a regular file");
  }
  if (static_cast<std::uint64_t>(info.st_size) > kMaxManifestBytes) {
    refuseSnapshot(id, "manifest.json holds " + std::to_string(info.st_size) +
                           " bytes, more than a manifest can");
  }
  std::string text(kMaxManifestBytes + 1, '\0');
  std::size_t filled = 0;
  while (filled < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + filled, text.size() - filled);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw SandboxError("cannot read manifest.json of snapshot " + id + ": " +
                         std::strerror(errno));
    }
    if (n == 0) break;
    filled += static_cast<std::size_t>(n);
  }
  if (filled > kMaxManifestBytes) refuseSnapshot(id, "manifest.json grew while it was read");
  text.resize(filled);
  return text;
}

// Authenticates before it reads any field.
SnapshotManifest openManifest(const std::string& text, const std::string& id,
                              const SnapshotKey& key, const std::string& instance_id) {
  json body = common::parseBoundedOrDiscarded(text);
  if (!body.is_object()) refuseSnapshot(id, "manifest.json is not a JSON object");
  const auto hmac = body.find("hmac");
  if (hmac == body.end() || !hmac->is_string()) refuseSnapshot(id, "manifest.json carries no HMAC");
  const std::string given = hmac->get<std::string>();
  body.erase("hmac");
  if (!key.verify(canonical(body), given)) {
    refuseSnapshot(
        id, "manifest.json does not match its HMAC (it was changed, or sealed with another key)");
  }
  if (body.value("format", json()) != kFormat) {
    refuseSnapshot(id, "manifest.json has a format this server does not read");
  }
  SnapshotManifest manifest;
  try {
    manifest = manifestFromJson(body);
  } catch (const json::exception& e) {
    refuseSnapshot(id, std::string("manifest.json is malformed (") + e.what() + ")");
  }
  if (manifest.record.id != id) {
    refuseSnapshot(id,
                   "manifest.json describes snapshot '" + manifest.record.id + "', not this one");
  }
  if (manifest.record.instance_id != instance_id) {
    refuseSnapshot(id, "manifest.json belongs to server instance '" + manifest.record.instance_id +
                           "', not to '" + instance_id + "'");
  }
  if (manifest.files.empty()) refuseSnapshot(id, "manifest.json lists no files");
  std::set<std::string> seen;
  for (const auto& file : manifest.files) {
    if (!isSnapshotFileName(file.name) || !seen.insert(file.name).second) {
      refuseSnapshot(id, "manifest.json lists '" + file.name +
                             "', which is not a plain file name or " + "is listed twice");
    }
    if (!isHex(file.sha256, 64))
      refuseSnapshot(id, "manifest.json has no SHA-256 for " + file.name);
  }
  return manifest;
}

}  // namespace

bool isSnapshotFileName(std::string_view name) {
  const bool plain = !name.empty() && name.size() <= 255 && name.front() != '.' &&
                     std::all_of(name.begin(), name.end(), [](char c) {
                       return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
                     });
  return plain && name != kManifestFileName;
}

[[noreturn]] void refuseSnapshot(const std::string& id, const std::string& what) {
  throw SnapshotTamperedError("snapshot " + id + " was refused: " + what +
                              ". Nothing of it was used; it may have been changed on disk, so "
                              "remove it and take a new snapshot.");
}

void writeSnapshotManifest(int dir_fd, const SnapshotManifest& manifest, const SnapshotKey& key) {
  json body = manifestJson(manifest);
  body["hmac"] = key.mac(canonical(body));
  const std::string text = canonical(body) + "\n";
  common::UniqueFd fd(
      ::openat(dir_fd, kManifestTemp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  const bool written = fd && common::writeAll(fd.get(), text);
  const int error = errno;
  fd.reset();
  if (!written || ::renameat(dir_fd, kManifestTemp, dir_fd, kManifestFileName) != 0) {
    throw SandboxError("cannot write " + (manifest.record.dir / kManifestFileName).string() + ": " +
                       std::strerror(written ? errno : error) +
                       "; the snapshot directory must be writable by the server");
  }
}

std::optional<SnapshotManifest> readSnapshotManifest(int dir_fd, const std::string& id,
                                                     const SnapshotKey& key,
                                                     const std::string& instance_id) {
  const auto text = readManifestText(dir_fd, id);
  if (!text) return std::nullopt;
  return openManifest(*text, id, key, instance_id);
}

}  // namespace sandbox
