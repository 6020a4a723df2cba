// The manifest that seals a snapshot (sandbox/snapshot_store.h): manifest.json in the snapshot's
// directory names each image file with its size and SHA-256, with the snapshot's facts, and
// carries an HMAC-SHA256 (sandbox/snapshot_key.h) of its canonical bytes without the "hmac"
// field. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/backend.h"
#include "sandbox/snapshot_key.h"

namespace sandbox {

// A snapshot failed its check (manifest, file list or a file's bytes) and was not used.
class SnapshotTamperedError : public SandboxError {
 public:
  using SandboxError::SandboxError;
};

// What the caller knows about the checkpoint it wrote; sealed into the manifest.
struct SnapshotFacts {
  std::string owner;            // the principal whose session it is
  std::string session_id;       // the session it was taken from
  std::string name;             // a label: "pause", or a snapshot name the model chose
  std::string image;            // the image id the sandbox ran
  std::string runtime_version;  // e.g. "runsc 0.0~20240729.0"; a restore under another refuses
  nlohmann::json extra = nlohmann::json::object();  // e.g. the sandbox spec; opaque to the store

  friend bool operator==(const SnapshotFacts&, const SnapshotFacts&) = default;
};

// A sealed snapshot, as its (authenticated) manifest describes it.
struct SnapshotRecord {
  std::string id;  // SnapshotStore::kIdHexChars lowercase hex; its directory's name
  SnapshotFacts facts;
  std::string instance_id;        // the server instance that sealed it
  std::int64_t created_unix = 0;  // when it was sealed
  std::uint64_t bytes = 0;        // all image files together
  std::filesystem::path dir;
};

struct SnapshotFile {
  std::string name;
  std::uint64_t size = 0;
  std::string sha256;  // lowercase hex
};

struct SnapshotManifest {
  SnapshotRecord record;
  std::vector<SnapshotFile> files;
};

inline constexpr const char* kManifestFileName = "manifest.json";

// Whether `name` can be an image file: what runsc writes (letters, digits, '.', '_', '-', not
// starting with '.'), never a path, ".", "..", or the manifest itself. Pure.
[[nodiscard]] bool isSnapshotFileName(std::string_view name);

// Throws SnapshotTamperedError saying snapshot `id` was refused because of `what`.
[[noreturn]] void refuseSnapshot(const std::string& id, const std::string& what);

// Writes manifest.json (0600) into the open directory `dir_fd` (record.dir, for messages),
// signed with `key`. Written aside and renamed into place: a reader sees none or a whole one.
// Throws SandboxError.
void writeSnapshotManifest(int dir_fd, const SnapshotManifest& manifest, const SnapshotKey& key);

// Reads manifest.json of the open directory `dir_fd`, authenticates it, and checks that it is
// snapshot `id` of `instance_id` and names each file once, by a plain name, with a SHA-256.
// nullopt when there is none (a draft, or a snapshot being removed); record.dir is left empty.
// Throws SnapshotTamperedError (SandboxError when the file cannot be read).
[[nodiscard]] std::optional<SnapshotManifest> readSnapshotManifest(int dir_fd,
                                                                   const std::string& id,
                                                                   const SnapshotKey& key,
                                                                   const std::string& instance_id);

}  // namespace sandbox
