// Makes a finished execution's result small enough to keep in the server's memory (a task's result
// waiting to be fetched): stdout and stderr past `keep_bytes` each go whole to a file in the
// sandbox and are replaced by their first bytes and a link, as run_code does for output past
// execution.max_output_bytes. Thread-safe (one result per call).
#pragma once

#include <cstddef>
#include <string>

#include "tools/tool.h"

namespace server {
class Session;
}  // namespace server

namespace tools {

// Returns the bytes the result's streams lost from memory (0: nothing was over `keep_bytes`).
// `stem` names the files (e.g. the task id). A stream whose file cannot be written is cut all the
// same, and the result's warnings say so.
std::size_t spillExecOutput(ToolResult& result, server::Session& session, const std::string& stem,
                            std::size_t keep_bytes);

}  // namespace tools
