#include "mcp/session_resources.h"

#include <algorithm>
#include <array>
#include <utility>

#include "common/base64.h"
#include "common/utf8.h"
#include "jsonrpc/errors.h"
#include "server/sandbox_uri.h"

namespace mcp {
namespace {

using json = nlohmann::json;

struct MimeByExtension {
  const char* extension;
  const char* mime;
};

constexpr std::array<MimeByExtension, 18> kMimeTypes{{
    {".txt", "text/plain"},
    {".log", "text/plain"},
    {".md", "text/markdown"},
    {".csv", "text/csv"},
    {".tsv", "text/tab-separated-values"},
    {".json", "application/json"},
    {".html", "text/html"},
    {".xml", "application/xml"},
    {".py", "text/x-python"},
    {".js", "text/javascript"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".jpg", "image/jpeg"},
    {".jpeg", "image/jpeg"},
    {".gif", "image/gif"},
    {".pdf", "application/pdf"},
    {".zip", "application/zip"},
    {".parquet", "application/vnd.apache.parquet"},
}};

std::string rangeUri(const server::SandboxUri& where, std::uint64_t offset, std::uint64_t length) {
  return server::makeSandboxUri(where.session_id, where.path) +
         "?offset=" + std::to_string(offset) + "&length=" + std::to_string(length);
}

}  // namespace

std::string guessMimeType(const std::string& path, bool is_utf8) {
  const auto dot = path.rfind('.');
  const auto slash = path.rfind('/');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) {
    std::string extension = path.substr(dot);
    std::transform(extension.begin(), extension.end(), extension.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (const auto& entry : kMimeTypes) {
      if (extension == entry.extension) return entry.mime;
    }
  }
  return is_utf8 ? "text/plain" : "application/octet-stream";
}

json SessionResources::listTemplates() const {
  return json{
      {"resourceTemplates",
       json::array({{{"uriTemplate", std::string(server::kSandboxUriTemplate)},
                     {"name", "session-file"},
                     {"title", "File in a sandbox session"},
                     {"description",
                      "Any file in one of your sessions' sandboxes: path is its absolute path "
                      "without the leading slash (sandbox://SESSION/workspace/out.csv). One read "
                      "returns at most " +
                          std::to_string(config_.resources.max_read_bytes) +
                          " bytes; read larger files in ranges with ?offset=N&length=N (length "
                          "at least 1; each result's _meta \"sandbox-mcp/range\" has file_size "
                          "and, while more remains, next_uri)."}}})}};
}

json SessionResources::list(const std::string& owner) const {
  json resources = json::array();
  for (const auto& session : sessions_.list(owner)) {
    for (auto& resource : session->recentResources()) resources.push_back(std::move(resource));
  }
  return json{{"resources", std::move(resources)}};
}

json SessionResources::read(const std::string& owner, const json& params) const {
  const auto uri_field = params.find("uri");
  if (uri_field == params.end() || !uri_field->is_string()) {
    throw jsonrpc::Error(jsonrpc::kInvalidParams,
                         "resources/read needs params.uri (a string such as "
                         "sandbox://SESSION/workspace/file.txt)");
  }
  const std::string& uri = uri_field->get_ref<const std::string&>();
  server::SandboxUri where;
  try {
    where = server::parseSandboxUri(uri);
  } catch (const server::SandboxUriError& e) {
    throw jsonrpc::Error(jsonrpc::kInvalidParams, e.what(), json{{"uri", uri}});
  }
  const auto max_read = static_cast<std::uint64_t>(config_.resources.max_read_bytes);
  const std::uint64_t offset = where.offset.value_or(0);
  const std::uint64_t wanted = std::min(where.length.value_or(max_read), max_read);
  sandbox::FileRange range;
  try {
    // Never waits for a sandbox still being created: that can take minutes, on a worker thread.
    auto session =
        sessions_.find(owner, where.session_id, server::SessionRegistry::IfStarting::kRefuse);
    server::SessionUse use(session);
    range = session->sandbox().readFileRange(where.path, offset, static_cast<std::size_t>(wanted));
  } catch (const sandbox::SandboxError& e) {
    throw jsonrpc::Error(kResourceNotFound, std::string("Resource not found: ") + e.what(),
                         json{{"uri", uri}});
  }

  // A range that ends inside a UTF-8 character still reads as text: the partial character is
  // left for the next range.
  const std::uint64_t end = range.offset + range.data.size();
  if (end < range.file_size) {
    const auto complete = common::completeUtf8PrefixLength(range.data);
    if (complete > 0 && common::isValidUtf8(std::string_view(range.data).substr(0, complete))) {
      range.data.resize(complete);
    }
  }
  const bool is_text = common::isValidUtf8(range.data);
  const std::uint64_t returned = range.data.size();
  json contents{{"uri", uri}, {"mimeType", guessMimeType(where.path, is_text)}};
  if (is_text) {
    contents["text"] = std::move(range.data);
  } else {
    contents["blob"] = common::base64Encode(range.data);
  }
  json meta{{"offset", range.offset}, {"length", returned}, {"file_size", range.file_size}};
  // A link only ever points past this range: one that returned nothing (a file that shrank
  // while it was read, or a size the sandbox misreports) ends the walk rather than repeat it.
  if (returned > 0 && range.offset + returned < range.file_size) {
    meta["next_uri"] = rangeUri(where, range.offset + returned, wanted);
  }
  contents["_meta"] = {{"sandbox-mcp/range", std::move(meta)}};
  return json{{"contents", json::array({std::move(contents)})}};
}

}  // namespace mcp
