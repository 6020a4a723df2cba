// The prompts sandbox-mcp offers its clients (prompts/list, prompts/get): starting points a
// person picks in their client (a slash command in most), each rendered as one user message that
// tells the model how to do the job with the sandbox tools.
#pragma once

#include "mcp/prompt_catalog.h"

namespace mcp {

[[nodiscard]] PromptCatalog productPrompts();

}  // namespace mcp
