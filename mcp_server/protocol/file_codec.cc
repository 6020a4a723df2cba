// The list_files op's reply (agent_protocol.h).
#include <array>
#include <utility>

#include "protocol/agent_protocol.h"

namespace protocol {
namespace {

constexpr std::array<std::pair<FileType, std::string_view>, 4> kFileTypeNames = {{
    {FileType::kFile, "file"},
    {FileType::kDir, "dir"},
    {FileType::kSymlink, "symlink"},
    {FileType::kOther, "other"},
}};

}  // namespace

std::string_view toString(FileType type) noexcept {
  for (const auto& [candidate, name] : kFileTypeNames) {
    if (candidate == type) return name;
  }
  return "other";
}

FileType parseFileType(std::string_view text) noexcept {
  for (const auto& [type, name] : kFileTypeNames) {
    if (name == text) return type;
  }
  return FileType::kOther;
}

json encodeFileListing(const FileListing& listing) {
  json entries = json::array();
  for (const auto& entry : listing.entries) {
    entries.push_back({{"name", entry.name},
                       {"type", toString(entry.type)},
                       {"size", entry.size},
                       {"mtime", entry.mtime}});
  }
  json reply = {{"path", listing.path}, {"entries", std::move(entries)}};
  if (listing.truncated) reply["truncated"] = true;
  return reply;
}

FileListing decodeFileListing(const json& reply) {
  FileListing listing;
  listing.path = fieldOr<std::string>(reply, "path", "").substr(0, kMaxPathBytes);
  listing.truncated = fieldOr<bool>(reply, "truncated", false);
  for (const auto& item : memberOr(reply, "entries", json::value_t::array)) {
    if (listing.entries.size() == FileListing::kMaxListEntries) {
      listing.truncated = true;
      break;
    }
    FileEntry entry;
    entry.name = fieldOr<std::string>(item, "name", "").substr(0, kMaxNameBytes);
    entry.type = parseFileType(fieldOr<std::string>(item, "type", "other"));
    entry.size = fieldOr<std::uint64_t>(item, "size", 0);
    entry.mtime = fieldOr<std::int64_t>(item, "mtime", 0);
    listing.entries.push_back(std::move(entry));
  }
  return listing;
}

}  // namespace protocol
