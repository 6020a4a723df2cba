// The restricted Dockerfile dialect: what a model may write, and what is refused before any
// engine call (ADD/COPY, URLs, flags, multi-stage, reserved labels, oversize input).
#include "sandbox/build_file.h"

#include <gtest/gtest.h>

#include "sandbox/backend.h"

namespace {

using sandbox::BuildOp;
using sandbox::parseBuildFile;

std::string refusal(const std::string& text, std::size_t max_steps = 32) {
  try {
    (void)parseBuildFile(text, max_steps);
  } catch (const sandbox::SandboxError& e) {
    return e.what();
  }
  return "";
}

TEST(BuildFile, ParsesTheSupportedInstructions) {
  const auto plan = parseBuildFile(
      "# comment\n"
      "FROM sandbox-mcp/python:latest AS base\n"
      "ENV A=1 B=\"two words\"\n"
      "ENV LEGACY some value\n"
      "RUN echo hi \\\n"
      "    && echo there\n"
      "RUN [\"python3\", \"-c\", \"print(1)\"]\n"
      "WORKDIR /opt/app\n"
      "USER 1000:1000\n"
      "label team=data\n",
      32);
  EXPECT_EQ(plan.from, "sandbox-mcp/python:latest");
  ASSERT_EQ(plan.steps.size(), 7U);
  EXPECT_EQ(plan.steps[0].op, BuildOp::kEnv);
  EXPECT_EQ(plan.steps[0].pairs[1], (std::pair<std::string, std::string>{"B", "two words"}));
  EXPECT_EQ(plan.steps[1].pairs[0], (std::pair<std::string, std::string>{"LEGACY", "some value"}));
  EXPECT_EQ(plan.steps[2].argv,
            (std::vector<std::string>{"/bin/sh", "-c", "echo hi     && echo there"}));
  EXPECT_EQ(plan.steps[2].line, 5);
  EXPECT_EQ(plan.steps[3].argv, (std::vector<std::string>{"python3", "-c", "print(1)"}));
  EXPECT_EQ(plan.steps[4].value, "/opt/app");
  EXPECT_EQ(plan.steps[5].value, "1000:1000");
  EXPECT_EQ(plan.steps[6].op, BuildOp::kLabel);
  EXPECT_EQ(plan.runCount(), 2U);
}

TEST(BuildFile, RefusesWhatReachesOutsideTheSandbox) {
  struct Row {
    const char* name;
    const char* text;
    const char* expected;  // a substring of the refusal
  };
  const Row rows[] = {
      {"add url", "FROM x\nADD http://127.0.0.1:18080/secret /h\n", "ADD is refused"},
      {"copy", "FROM x\nCOPY . /src\n", "COPY is refused"},
      {"lowercase add", "FROM x\nadd http://127.0.0.1/ /h\n", "ADD is refused"},
      {"add after continuation", "FROM x\nRUN true\nADD \\\n http://127.0.0.1/ /h\n",
       "line 3: ADD is refused"},
      {"run mount", "FROM x\nRUN --mount=type=bind,source=/,target=/h cat /h/etc/shadow\n",
       "RUN flags"},
      {"run network", "FROM x\nRUN --network=host true\n", "RUN flags"},
      {"from platform", "FROM --platform=linux/amd64 x\n", "no flags"},
      {"multi-stage", "FROM x AS a\nFROM y\n", "only one FROM"},
      {"not first", "RUN true\nFROM x\n", "first instruction must be FROM"},
      {"volume", "FROM x\nVOLUME /data\n", "VOLUME is not supported"},
      {"onbuild", "FROM x\nONBUILD ADD http://127.0.0.1/ /h\n", "ONBUILD is not supported"},
      {"arg", "FROM x\nARG A=1\n", "ARG is not supported"},
      {"shell", "FROM x\nSHELL [\"/bin/bash\", \"-c\"]\n", "SHELL is not supported"},
      {"reserved label", "FROM x\nLABEL sandbox-mcp.allowed=1\n", "reserved for the server"},
      {"reserved built label", "FROM x\nLABEL a=1 sandbox-mcp.built-base=sha256:0\n",
       "reserved for the server"},
      {"nested exec form", "FROM x\nRUN [[[[\"a\"]]]]\n", "flat array"},
      {"exec form not strings", "FROM x\nRUN [1, 2]\n", "array of strings"},
      {"empty", "# only a comment\n", "empty"},
      {"unterminated quote", "FROM x\nENV A=\"open\n", "unterminated quote"},
  };
  for (const auto& row : rows) {
    const auto message = refusal(row.text);
    EXPECT_FALSE(message.empty()) << row.name;
    EXPECT_NE(message.find(row.expected), std::string::npos) << row.name << ": " << message;
  }
  EXPECT_NE(refusal(std::string("FROM x\nRUN true\0\n", 17)).find("NUL"), std::string::npos);
  EXPECT_NE(refusal("FROM x\nRUN echo \xff\xfe\n").find("UTF-8"), std::string::npos);
}

TEST(BuildFile, CapsSizeAndSteps) {
  EXPECT_NE(refusal("FROM x\n" + std::string(sandbox::kMaxDockerfileBytes, '#')).find("bytes"),
            std::string::npos);
  std::string many = "FROM x\n";
  for (int i = 0; i < 5; ++i) many += "RUN true\n";
  EXPECT_NE(refusal(many, 4).find("sandbox.build_max_steps"), std::string::npos);
  EXPECT_EQ(refusal(many, 5), "");
  // Deep nesting is refused by a scan, never handed to a recursive parser.
  EXPECT_NE(refusal("FROM x\nRUN " + std::string(30000, '[') + "\n").find("flat array"),
            std::string::npos);
}

TEST(BuildFile, ExpandsVariablesFromEnv) {
  const std::vector<std::string> env = {"HOME=/root", "A=1", "A=2"};
  EXPECT_EQ(sandbox::expandVariables("$HOME/x ${A}-$MISSING-\\$A", env), "/root/x 2--$A");
  EXPECT_EQ(sandbox::expandVariables("${unterminated", env), "${unterminated");
}

TEST(BuildFile, ExpansionIsBounded) {
  // "ENV A=$A$A$A..." repeated would multiply the value at every step.
  std::string doubling;
  for (int i = 0; i < 1000; ++i) doubling += "$A";
  const std::vector<std::string> env = {"A=" + std::string(1000, 'x')};
  EXPECT_THROW((void)sandbox::expandVariables(doubling, env), sandbox::SandboxError);
  EXPECT_EQ(sandbox::expandVariables("$A", env).size(), 1000U);
}

}  // namespace
