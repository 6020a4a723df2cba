// What an McpServer offers beside its tools: who it is, its prompts, its resources beside the
// sandbox:// ones, argument completion and listen streams. The product sets only its identity;
// a server built for other uses (tests/conformance) brings catalogs. Capabilities (initialize,
// server/discover) declare exactly what is set here. The catalogs must outlive the server.
#pragma once

#include <string>

#include "mcp/completions.h"
#include "mcp/prompt_catalog.h"
#include "mcp/resource_catalog.h"
#include "mcp/subscriptions.h"

namespace mcp {
class SandboxFileWatch;
}  // namespace mcp

namespace mcp {

struct ServerIdentity {
  std::string name;
  std::string title;
  std::string version;
  std::string instructions;  // empty: none
};

struct ServerFeatures {
  ServerIdentity identity;                     // empty name: the product's (sandbox-mcp)
  const PromptCatalog* prompts = nullptr;      // prompts/list, prompts/get
  const ResourceCatalog* resources = nullptr;  // listed and read before the session files
  const Completions* completions = nullptr;    // completion/complete
  // subscriptions/listen (2026-07-28) and resources/subscribe. Left null with session_resources,
  // McpServer brings its own: it announces the sessions' resources (their list and the files
  // clients subscribed to), each to its owner only.
  Subscriptions* subscriptions = nullptr;
  bool session_resources = true;           // sandbox://{session_id}/{path} files
  SandboxFileWatch* file_watch = nullptr;  // set by McpServer with its own subscriptions
};

}  // namespace mcp
