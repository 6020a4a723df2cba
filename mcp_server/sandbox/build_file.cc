#include "sandbox/build_file.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/utf8.h"
#include "sandbox/backend.h"

namespace sandbox {
namespace {

constexpr std::string_view kSupported = "FROM, RUN, ENV, WORKDIR, USER and LABEL";

[[noreturn]] void refuse(int line, const std::string& what) {
  throw SandboxError("dockerfile line " + std::to_string(line) + ": " + what);
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

struct LogicalLine {
  int line = 0;
  std::string text;
};

// Joins "\"-continued lines and drops comments and blank lines, as Docker's parser does.
std::vector<LogicalLine> logicalLines(std::string_view text) {
  std::vector<LogicalLine> out;
  LogicalLine current;
  bool continuing = false;
  int number = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = std::min(text.find('\n', start), text.size());
    std::string_view physical = text.substr(start, end - start);
    start = end + 1;
    ++number;
    const auto trimmed = trim(physical);
    if (trimmed.empty() || trimmed.front() == '#') {
      if (end == text.size()) break;
      continue;
    }
    if (!continuing) current = {number, ""};
    std::string_view body = physical;
    while (!body.empty() && std::isspace(static_cast<unsigned char>(body.back()))) {
      body.remove_suffix(1);
    }
    continuing = !body.empty() && body.back() == '\\';
    if (continuing) body.remove_suffix(1);
    current.text.append(body);
    if (!continuing) out.push_back(std::exchange(current, {}));
    if (end == text.size()) break;
  }
  if (continuing) out.push_back(std::move(current));  // a trailing "\" ends the file
  return out;
}

// Splits on unquoted whitespace; quotes are kept (unquote() removes them per value).
std::vector<std::string> splitWords(std::string_view text, int line) {
  std::vector<std::string> words;
  std::string word;
  char quote = 0;
  bool in_word = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote == 0 && std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    word.push_back(c);
    if (c == '\\' && quote != '\'' && i + 1 < text.size()) {
      word.push_back(text[++i]);
    } else if (quote == 0 && (c == '"' || c == '\'')) {
      quote = c;
    } else if (c == quote) {
      quote = 0;
    }
  }
  if (quote != 0) refuse(line, "unterminated quote");
  if (in_word) words.push_back(std::move(word));
  return words;
}

// Removes quotes: "..." honours backslash escapes, '...' is literal, bare "\x" is "x".
std::string unquote(std::string_view text) {
  std::string out;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote == 0 && (c == '"' || c == '\'')) {
      quote = c;
    } else if (c == quote) {
      quote = 0;
    } else if (c == '\\' && quote != '\'' && i + 1 < text.size() && text[i + 1] != '$') {
      out.push_back(text[++i]);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> keyValues(std::string_view rest, int line,
                                                           bool allow_legacy) {
  const auto words = splitWords(rest, line);
  if (words.empty()) refuse(line, "expects KEY=value");
  std::vector<std::pair<std::string, std::string>> pairs;
  if (allow_legacy && words.front().find('=') == std::string::npos) {  // ENV KEY value
    const auto key_end = rest.find_first_of(" \t");
    if (key_end == std::string_view::npos) refuse(line, "ENV expects KEY=value");
    pairs.emplace_back(std::string(rest.substr(0, key_end)), unquote(trim(rest.substr(key_end))));
    return pairs;
  }
  for (const auto& word : words) {
    const auto equals = word.find('=');
    if (equals == std::string::npos || equals == 0) {
      refuse(line, "expects KEY=value pairs, got '" + word + "'");
    }
    pairs.emplace_back(unquote(word.substr(0, equals)), unquote(word.substr(equals + 1)));
  }
  return pairs;
}

// Exec form: a flat JSON array of strings. Nesting is refused before parsing (no deep input).
std::vector<std::string> execForm(std::string_view rest, int line) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    const char c = rest[i];
    if (in_string) {
      if (c == '\\') ++i;
      if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > 1) refuse(line, "RUN [...] must be a flat array of strings");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  const auto parsed = nlohmann::json::parse(rest, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_array() || parsed.empty() ||
      !std::all_of(parsed.begin(), parsed.end(), [](const auto& v) { return v.is_string(); })) {
    refuse(line, "RUN [...] must be a JSON array of strings, e.g. RUN [\"python3\", \"-V\"]");
  }
  return parsed.get<std::vector<std::string>>();
}

BuildStep parseStep(const std::string& keyword, std::string_view rest, int line) {
  BuildStep step;
  step.line = line;
  if (keyword == "RUN") {
    step.op = BuildOp::kRun;
    if (rest.substr(0, 2) == "--") refuse(line, "RUN flags (--mount, --network, ...) are refused");
    step.argv = rest.front() == '[' ? execForm(rest, line)
                                    : std::vector<std::string>{"/bin/sh", "-c", std::string(rest)};
  } else if (keyword == "ENV" || keyword == "LABEL") {
    step.op = keyword == "ENV" ? BuildOp::kEnv : BuildOp::kLabel;
    step.pairs = keyValues(rest, line, keyword == "ENV");
    for (const auto& [key, value] : step.pairs) {
      if (key.empty() || key.find_first_of("=\0", 0, 2) != std::string::npos ||
          value.find('\0') != std::string::npos) {
        refuse(line, "invalid " + keyword + " key '" + key + "'");
      }
      if (step.op == BuildOp::kLabel && key.rfind(kReservedLabelPrefix, 0) == 0) {
        refuse(line, "LABEL keys starting with '" + std::string(kReservedLabelPrefix) +
                         "' are reserved for the server; rename '" + key + "'");
      }
    }
  } else if (keyword == "WORKDIR" || keyword == "USER") {
    step.op = keyword == "WORKDIR" ? BuildOp::kWorkdir : BuildOp::kUser;
    step.value = unquote(rest);
    if (step.value.find('\0') != std::string::npos) refuse(line, keyword + " is invalid");
  } else if (keyword == "ADD" || keyword == "COPY") {
    refuse(line, keyword +
                     " is refused: builds have no context and never fetch URLs. Create files "
                     "with RUN (e.g. RUN printf '...' > /path), or upload them into the session "
                     "with upload_file");
  } else if (keyword == "FROM") {
    refuse(line, "only one FROM is allowed (no multi-stage builds)");
  } else {
    refuse(line, keyword + " is not supported; a dockerfile here may use only " +
                     std::string(kSupported));
  }
  return step;
}

std::string parseFrom(std::string_view rest, int line) {
  const auto words = splitWords(rest, line);
  const bool alias = words.size() == 3 && upper(words[1]) == "AS";
  if (words.empty() || words.front().rfind("--", 0) == 0 || (words.size() != 1 && !alias)) {
    refuse(line, "FROM takes one image that is already on the Docker engine, e.g. FROM " +
                     std::string("sandbox-mcp/python:latest") + " (no flags)");
  }
  return words.front();
}

}  // namespace

std::size_t BuildPlan::runCount() const noexcept {
  return static_cast<std::size_t>(std::count_if(
      steps.begin(), steps.end(), [](const BuildStep& s) { return s.op == BuildOp::kRun; }));
}

BuildPlan parseBuildFile(std::string_view text, std::size_t max_steps) {
  if (text.size() > kMaxDockerfileBytes) {
    throw SandboxError("dockerfile is " + std::to_string(text.size()) + " bytes; at most " +
                       std::to_string(kMaxDockerfileBytes) + " are accepted");
  }
  if (text.find('\0') != std::string_view::npos) {
    throw SandboxError("dockerfile must not contain NUL bytes");
  }
  if (!common::isValidUtf8(text)) {  // values go into JSON engine requests, which need UTF-8
    throw SandboxError("dockerfile is not valid UTF-8; send it as UTF-8 text");
  }
  BuildPlan plan;
  const auto lines = logicalLines(text);
  if (lines.empty()) throw SandboxError("dockerfile is empty; start it with FROM <image>");
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto content = trim(lines[i].text);
    const auto split = content.find_first_of(" \t");
    const std::string keyword = upper(content.substr(0, split));
    const auto rest =
        split == std::string_view::npos ? std::string_view() : trim(content.substr(split));
    if (i == 0) {
      if (keyword != "FROM") refuse(lines[i].line, "the first instruction must be FROM <image>");
      if (rest.empty()) refuse(lines[i].line, "FROM needs an image");
      plan.from = parseFrom(rest, lines[i].line);
      continue;
    }
    if (rest.empty()) refuse(lines[i].line, keyword + " needs an argument");
    plan.steps.push_back(parseStep(keyword, rest, lines[i].line));
    if (plan.steps.size() > max_steps) {
      throw SandboxError("dockerfile has more than " + std::to_string(max_steps) +
                         " instructions after FROM (sandbox.build_max_steps); join RUN steps "
                         "with &&");
    }
  }
  return plan;
}

std::string expandVariables(std::string_view text, const std::vector<std::string>& env) {
  const auto lookup = [&env](std::string_view name) -> std::string {
    for (auto it = env.rbegin(); it != env.rend(); ++it) {
      if (it->size() > name.size() && it->compare(0, name.size(), name) == 0 &&
          (*it)[name.size()] == '=') {
        return it->substr(name.size() + 1);
      }
    }
    return {};
  };
  const auto is_name = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  };
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (out.size() > kMaxExpandedBytes) {
      throw SandboxError("dockerfile: a value expands to more than " +
                         std::to_string(kMaxExpandedBytes) + " bytes");
    }
    if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '$') {
      out.push_back('$');
      ++i;
    } else if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '{') {
      const auto close = text.find('}', i + 2);
      if (close == std::string_view::npos) {
        out.append(text.substr(i));
        break;
      }
      out += lookup(text.substr(i + 2, close - i - 2));
      i = close;
    } else if (text[i] == '$' && i + 1 < text.size() && is_name(text[i + 1])) {
      std::size_t end = i + 1;
      while (end < text.size() && is_name(text[end])) ++end;
      out += lookup(text.substr(i + 1, end - i - 1));
      i = end - 1;
    } else {
      out.push_back(text[i]);
    }
  }
  if (out.size() > kMaxExpandedBytes) {
    throw SandboxError("dockerfile: a value expands to more than " +
                       std::to_string(kMaxExpandedBytes) + " bytes");
  }
  return out;
}

}  // namespace sandbox
