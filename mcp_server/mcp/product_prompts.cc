#include "mcp/product_prompts.h"

#include <string>

namespace mcp {
namespace {

using nlohmann::json;

json userText(const std::string& text) {
  return json{{"role", "user"}, {"content", {{"type", "text"}, {"text", text}}}};
}

Prompt exploreData() {
  PromptSpec spec{
      "explore_data",
      "Explore a data file",
      "Load a data file (CSV, JSON, Excel, Parquet) into a Python sandbox and report its shape, "
      "columns, types, missing values and notable patterns, with a figure.",
      {{"file", "The file: a path inside a sandbox, or a file to upload first", true},
       {"question", "What you want to learn from it (optional)", false}}};
  return {std::move(spec), [](const json& arguments, const tools::ToolInputs&) {
            const std::string file = arguments.value("file", "");
            const std::string question = arguments.value("question", "");
            std::string text =
                "Explore the data in " + file +
                " with the sandbox tools. If it is not in a sandbox yet, upload it with "
                "upload_file (omit session_id to start a sandbox, then reuse the session_id "
                "returned). Then, with run_code in that session:\n"
                "1. Load it with pandas (read_csv, read_json, read_excel or read_parquet, as "
                "its extension says) and show its shape, dtypes and the first rows.\n"
                "2. Count missing values per column and describe() the numeric ones.\n"
                "3. Plot the most telling distribution or relationship with matplotlib "
                "(plt.show() returns the figure).\n"
                "4. Sum up what you found in a few sentences.\n"
                "Keep state between calls (the DataFrame stays loaded); the sandbox has no "
                "network, so use the packages it has.";
            if (!question.empty()) text += "\nAnswer this question in particular: " + question;
            PromptResult result;
            result.description = "Explore " + file;
            result.messages.push_back(userText(text));
            return result;
          }};
}

}  // namespace

PromptCatalog productPrompts() {
  PromptCatalog catalog;
  catalog.add(exploreData());
  return catalog;
}

}  // namespace mcp
