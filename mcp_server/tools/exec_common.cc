#include "tools/exec_common.h"

#include <cstdio>

#include "common/base64.h"
#include "common/png_check.h"
#include "common/random_id.h"
#include "server/sandbox_uri.h"
#include "server/session_registry.h"
#include "tools/output_forwarder.h"
#include "tools/session_options.h"

namespace tools {

std::string renderExecText(const json& s) {
  char header[256];
  std::snprintf(header, sizeof header, "status: %s (exit_code %d, %.1f ms, session %s)",
                s["status"].get_ref<const std::string&>().c_str(), s["exit_code"].get<int>(),
                s["duration_ms"].get<double>(),
                s["session_id"].get_ref<const std::string&>().c_str());
  std::string text = header;
  const auto& out = s["stdout"].get_ref<const std::string&>();
  const auto& err = s["stderr"].get_ref<const std::string&>();
  if (!out.empty()) text += "\nstdout:\n" + out;
  if (!err.empty()) text += "\nstderr:\n" + err;
  if (!s["result"].is_null()) text += "\nresult: " + s["result"].get<std::string>();
  if (s["truncated"].get<bool>()) {
    text += "\n[output truncated: " + std::to_string(s["stdout_bytes"].get<std::uint64_t>()) +
            " stdout bytes and " + std::to_string(s["stderr_bytes"].get<std::uint64_t>()) +
            " stderr bytes were produced; only the first of each is shown]";
  }
  if (const auto table = s.find("table"); table != s.end()) {
    const auto& shape = (*table)["shape"];
    text += "\n[" + (*table)["kind"].get<std::string>() + " of shape " + shape.dump() + "]";
  }
  if (const auto images = s.find("images"); images != s.end()) {
    std::size_t number = 0;
    for (const auto& image : *images) {
      ++number;
      text += "\n[image " + std::to_string(number) + ": " +
              std::to_string(image["width"].get<std::int64_t>()) + "x" +
              std::to_string(image["height"].get<std::int64_t>()) + " PNG, sent at " +
              std::to_string(image["sent_width"].get<std::int64_t>()) + "x" +
              std::to_string(image["sent_height"].get<std::int64_t>()) +
              (image.contains("uri") ? "; full size: " + image["uri"].get<std::string>() : "") +
              "]";
    }
  }
  if (const auto saved = s.find("saved_output"); saved != s.end()) {
    for (const auto& file : *saved) {
      text += "\n[the whole " + file["stream"].get<std::string>() + " (" +
              std::to_string(file["bytes"].get<std::uint64_t>()) + " bytes" +
              (file["complete"].get<bool>() ? "" : ", cut at the saved-output limit") +
              ") is saved at " + file["path"].get<std::string>() +
              ": read it with resources/read " + file["uri"].get<std::string>() +
              " (add ?offset=N&length=N for ranges) or download_file]";
    }
  }
  return text;
}

// Links the saved output files of `result` into the structured result and the content, and
// remembers them for resources/list.
void linkSavedOutputs(const sandbox::ExecResult& result, const std::string& execution_id,
                      server::Session& session, ToolResult& out) {
  if (result.saved_outputs.empty()) return;
  json saved = out.structured.value("saved_output", json::array());
  for (const auto& file : result.saved_outputs) {
    const std::string uri = server::makeSandboxUri(session.id(), file.path);
    saved.push_back({{"stream", file.stream},
                     {"path", file.path},
                     {"uri", uri},
                     {"bytes", file.bytes},
                     {"complete", file.complete}});
    json resource{
        {"uri", uri},
        {"name", execution_id + "-" + file.stream + ".txt"},
        {"title", "Full " + file.stream + " of " + execution_id},
        {"description", "The whole " + file.stream + " of " + execution_id + " in session " +
                            session.id() + "; read it in ranges with ?offset=N&length=N"},
        {"mimeType", "text/plain"},
        {"size", file.bytes}};
    session.rememberResource(resource);
    resource["type"] = "resource_link";
    out.extra_content.push_back(std::move(resource));
  }
  out.structured["saved_output"] = std::move(saved);
}

namespace {

// What the images of one execution may inflate to in all (about 128 MiB), so that checking them
// costs the server at most a few hundred ms of CPU whatever sandbox code sends.
constexpr std::uint64_t kMaxDecodedImageBytesPerCall = 2 * common::kMaxPngDecodedBytes;

// Only a PNG that any decoder reads whole goes out as image content: sandbox code can hand over
// anything with a PNG header, and a model API may reject a whole turn for an undecodable image.
// Each one refused is named in `warnings`, with where its file stays in the sandbox.
void keepDecodableImages(common::RichOutput& rich, const server::Session& session,
                         std::int64_t max_px, std::vector<std::string>& warnings) {
  std::uint64_t decoded_left = kMaxDecodedImageBytesPerCall;
  std::vector<common::Image> kept;
  std::size_t number = 0;
  for (auto& image : rich.images) {
    ++number;
    const auto png = common::base64Decode(image.data_b64);
    const common::PngLimits limits{static_cast<std::uint32_t>(max_px),
                                   std::min(common::kMaxPngDecodedBytes, decoded_left)};
    const auto check =
        png ? common::checkPng(*png, limits) : common::PngCheck{false, "its data is not base64"};
    if (check) {
      decoded_left -= check.decoded_bytes;
      kept.push_back(std::move(image));
      continue;
    }
    std::string warning = "image " + std::to_string(number) + " of " +
                          std::to_string(rich.images.size()) +
                          " shown was not sent: it failed the PNG check (" + check.reason + ")";
    if (check.too_large && limits.max_decoded_bytes < common::kMaxPngDecodedBytes) {
      warning += "; the images of one call may decode to " +
                 std::to_string(kMaxDecodedImageBytesPerCall) + " bytes in all";
    }
    warning += image.path.empty()
                   ? "; no copy of it was kept"
                   : "; the file stays in the sandbox at " + image.path + " (resources/read " +
                         server::makeSandboxUri(session.id(), image.path) + ")";
    warnings.push_back(std::move(warning));
  }
  rich.images = std::move(kept);
}

// Images become MCP image content (downscaled, as the sandbox sent them) and entries of
// structuredContent.images whose uri reads the full-size file; a table's shape and dtypes go
// to structuredContent.table.
void addRichOutput(sandbox::ExecResult& result, const std::string& execution_id,
                   server::Session& session, ToolResult& out) {
  if (result.rich.table) {
    const auto& table = *result.rich.table;
    json dtypes = json::array();
    for (const auto& [column, dtype] : table.dtypes) {
      dtypes.push_back({{"column", column}, {"dtype", dtype}});
    }
    out.structured["table"] = {{"kind", table.kind},
                               {"shape", table.shape},
                               {"dtypes", std::move(dtypes)},
                               {"dtypes_cut", table.dtypes_cut}};
  }
  if (result.rich.images.empty()) return;
  json images = json::array();
  std::size_t number = 0;
  for (auto& image : result.rich.images) {
    ++number;
    json entry{{"mime", "image/png"},
               {"width", image.width},
               {"height", image.height},
               {"bytes", image.bytes},
               {"sent_width", image.data_width},
               {"sent_height", image.data_height},
               {"sent_bytes", image.data_bytes}};
    if (!image.path.empty()) {
      const std::string uri = server::makeSandboxUri(session.id(), image.path);
      entry["path"] = image.path;
      entry["uri"] = uri;
      session.rememberResource(
          {{"uri", uri},
           {"name", execution_id + "-image-" + std::to_string(number) + ".png"},
           {"title", "Image " + std::to_string(number) + " of " + execution_id},
           {"description", "Full-size PNG (" + std::to_string(image.width) + "x" +
                               std::to_string(image.height) + ") shown by " + execution_id +
                               " in session " + session.id()},
           {"mimeType", "image/png"},
           {"size", image.bytes}});
    }
    images.push_back(std::move(entry));
    out.extra_content.push_back(
        {{"type", "image"}, {"data", std::move(image.data_b64)}, {"mimeType", "image/png"}});
  }
  out.structured["images"] = std::move(images);
}

json toStructured(const sandbox::ExecResult& r, const std::string& execution_id,
                  const std::string& session_id, bool created) {
  return json{{"status", protocol::toString(r.status)},
              {"stdout", r.stdout_text},
              {"stderr", r.stderr_text},
              {"exit_code", r.exit_code},
              {"result", r.result ? json(*r.result) : json(nullptr)},
              {"execution_id", execution_id},
              {"session_id", session_id},
              {"session_created", created},
              {"duration_ms", r.duration_ms},
              {"truncated", r.stdout_truncated || r.stderr_truncated},
              {"stdout_bytes", r.stdout_bytes},
              {"stderr_bytes", r.stderr_bytes},
              {"state_lost", r.state_lost}};
}

}  // namespace

json execInputSchema(const config::ServerConfig& config, const char* code_field,
                     const char* code_description, bool with_language) {
  json properties = sessionOptionProperties();
  properties[code_field] = {{"type", "string"}, {"description", code_description}};
  properties["timeout"] = {
      {"type", "integer"},
      {"minimum", 1},
      {"maximum", config.execution.max_timeout_s},
      {"default", config.execution.default_timeout_s},
      {"description", "Seconds before the execution is stopped (the session survives)."}};
  if (with_language) {
    properties["language"] = {{"type", "string"},
                              {"enum", {"python", "javascript"}},
                              {"default", "python"},
                              {"description",
                               "python, or javascript (Node.js; its own persistent context "
                               "in the same sandbox and files)."}};
  }
  return json{{"type", "object"},
              {"properties", properties},
              {"required", {code_field}},
              {"additionalProperties", false}};
}

json execOutputSchema() {
  return json{
      {"type", "object"},
      {"properties",
       {{"status",
         {{"type", "string"},
          {"enum", {"success", "error", "timeout", "cancelled"}},
          {"description", "success: ran to completion without error"}}},
        {"stdout", {{"type", "string"}}},
        {"stderr", {{"type", "string"}}},
        {"exit_code", {{"type", "integer"}}},
        {"result",
         // anyOf rather than a type array: some clients' schema checks warn on type arrays.
         {{"anyOf", {{{"type", "string"}}, {{"type", "null"}}}},
          {"description",
           "repr of the value of a trailing expression (Python repr, JavaScript util.inspect)"}}},
        {"execution_id", {{"type", "string"}}},
        {"session_id", {{"type", "string"}, {"description", "pass it back to keep state"}}},
        {"session_created", {{"type", "boolean"}}},
        {"duration_ms", {{"type", "number"}}},
        {"truncated", {{"type", "boolean"}, {"description", "output exceeded the cap"}}},
        {"stdout_bytes", {{"type", "integer"}}},
        {"stderr_bytes", {{"type", "integer"}}},
        {"saved_output",
         {{"type", "array"},
          {"description",
           "output past the cap, saved whole in the sandbox; each uri is readable with "
           "resources/read (in ranges) and also sent as a resource_link content block"},
          {"items",
           {{"type", "object"},
            {"properties",
             {{"stream", {{"type", "string"}, {"enum", {"stdout", "stderr"}}}},
              {"path", {{"type", "string"}}},
              {"uri", {{"type", "string"}}},
              {"bytes", {{"type", "integer"}}},
              {"complete", {{"type", "boolean"}}}}},
            {"required", {"stream", "path", "uri", "bytes", "complete"}}}}}},
        {"images",
         {{"type", "array"},
          {"description",
           "images the cell showed (matplotlib figures open at its end or shown with plt.show(), "
           "display(obj), values with _repr_png_), in the order of the image content blocks; "
           "each was downscaled to fit the server's limits before sending, and uri reads the "
           "full-size PNG with resources/read"},
          {"items",
           {{"type", "object"},
            {"properties",
             {{"mime", {{"type", "string"}}},
              {"width", {{"type", "integer"}}},
              {"height", {{"type", "integer"}}},
              {"bytes", {{"type", "integer"}}},
              {"sent_width", {{"type", "integer"}}},
              {"sent_height", {{"type", "integer"}}},
              {"sent_bytes", {{"type", "integer"}}},
              {"path", {{"type", "string"}}},
              {"uri", {{"type", "string"}}}}},
            {"required",
             {"mime", "width", "height", "bytes", "sent_width", "sent_height", "sent_bytes"}}}}}},
        {"table",
         {{"type", "object"},
          {"description",
           "when the cell's value is a pandas DataFrame or Series: result holds it as a compact "
           "text table (rows and columns elided past a limit); this gives its shape and dtypes"},
          {"properties",
           {{"kind", {{"type", "string"}, {"enum", {"DataFrame", "Series"}}}},
            {"shape", {{"type", "array"}, {"items", {{"type", "integer"}}}}},
            {"dtypes",
             {{"type", "array"},
              {"items",
               {{"type", "object"},
                {"properties",
                 {{"column", {{"type", "string"}}}, {"dtype", {{"type", "string"}}}}}}}}},
            {"dtypes_cut", {{"type", "boolean"}}}}},
          {"required", {"kind", "shape", "dtypes"}}}},
        {"state_lost",
         {{"type", "boolean"},
          {"description",
           "the interpreter was restarted, or the session's sandbox was lost and replaced: "
           "variables (and, when the sandbox was replaced, files) are gone"}}},
        {"warnings",
         {{"type", "array"},
          {"items", {{"type", "string"}}},
          {"description",
           "things the session recovered from, e.g. a restarted MCP sidecar, and images that "
           "were not sent and why"}}}}},
      {"required",
       {"status", "stdout", "stderr", "exit_code", "result", "execution_id", "session_id",
        "duration_ms", "truncated"}}};
}

ToolResult runExecution(const json& arguments, ToolContext& ctx, sandbox::ExecKind kind,
                        const std::string& code) {
  const auto parsed = parseSessionOptions(arguments, ctx.config);
  const auto slot = ctx.sessions.claimExecutionSlot(ctx.caller);
  const std::string requested_id = arguments.value("session_id", "");
  auto acquired =
      ctx.sessions.acquire(ctx.caller, requested_id, parsed.options, parsed.given, &ctx.cancel);
  server::SessionUse session(acquired.session);
  std::vector<std::string> warnings;
  if (acquired.lost_reason) {
    warnings.push_back("the previous sandbox of session '" + session->id() + "' was lost (" +
                       *acquired.lost_reason +
                       "); this is a fresh sandbox: variables and files are gone");
  }
  if (auto* gateway = session->mcpGateway()) {
    try {
      if (auto notice = gateway->ensureRunning()) warnings.push_back(*notice);
    } catch (const sandbox::SandboxError& e) {
      warnings.emplace_back(e.what());  // the code still runs; only MCP calls will fail
    }
  }

  sandbox::ExecRequest request;
  request.kind = kind;
  request.code = code;
  request.timeout =
      std::chrono::seconds(arguments.value("timeout", ctx.config.execution.default_timeout_s));
  request.max_output_bytes = static_cast<std::size_t>(ctx.config.execution.max_output_bytes);
  request.save_output_bytes =
      static_cast<std::uint64_t>(ctx.config.execution.max_saved_output_bytes);
  OutputForwarder forwarder(ctx.updates);
  request.stream = forwarder.enabled();
  if (kind == sandbox::ExecKind::kPython) {
    request.images.max_count = static_cast<std::size_t>(ctx.config.images.max_per_call);
    request.images.max_px = ctx.config.images.max_px;
    request.images.max_bytes = static_cast<std::size_t>(ctx.config.images.max_bytes);
  } else {
    request.images.max_count = 0;
  }

  sandbox::ExecResult result;
  try {
    result = session->sandbox().exec(request, ctx.cancel, forwarder.callback());
  } catch (const sandbox::SandboxError& e) {
    if (!session->sandbox().alive()) {
      ctx.sessions.forget(acquired.session, e.what());
      throw sandbox::SandboxError("the sandbox was lost: " + std::string(e.what()) + ". Session '" +
                                  session->id() +
                                  "' has ended and its variables and files are gone; call again "
                                  "with the same session_id to start a fresh sandbox (the result "
                                  "will say state_lost).");
    }
    throw;
  }
  session->countExecution();
  if (auto* gateway = session->mcpGateway()) {
    // The model reads why pip or curl could not connect here, not only in their error text.
    for (const auto& refusal : gateway->takeEgressRefusals()) {
      warnings.push_back("egress refused " + refusal);
    }
  }

  ToolResult out;
  if (acquired.lost_reason) result.state_lost = true;
  const std::string execution_id = "exec-" + common::randomHex(8);
  out.structured = toStructured(result, execution_id, session->id(), acquired.created);
  if (kind == sandbox::ExecKind::kPython) {
    keepDecodableImages(result.rich, *session, ctx.config.images.max_px, warnings);
    addRichOutput(result, execution_id, *session, out);
  }
  linkSavedOutputs(result, execution_id, *session, out);
  out.text = renderExecText(out.structured);
  // Where the time went, for bench/ and operators (client time minus server_ms is transport).
  json timing = {{"channel_ms", result.channel_ms}, {"agent_ms", result.duration_ms}};
  if (result.exec_ms) timing["exec_ms"] = *result.exec_ms;
  out.meta[std::string(kTimingMetaKey)] = std::move(timing);
  if (!warnings.empty()) {
    out.structured["warnings"] = warnings;
    for (const auto& warning : warnings) out.text = "warning: " + warning + "\n" + out.text;
  }
  return out;
}

}  // namespace tools
