// The Executor's JavaScript side: a Node.js driver (js_driver.js) started on the first JavaScript
// exec, so sessions that never use JavaScript pay nothing, and restarted lazily after it dies.
#include <signal.h>

#include <cstdio>
#include <system_error>
#include <utility>

#include "agent/driver_reply.h"
#include "agent/executor.h"
#include "agent/executor_run.h"
#include "agent/js_driver_source.h"  // generated from js_driver.js: kJsDriverSource

namespace agent {
namespace {

constexpr const char* kNodeLabel = "Node.js";

}  // namespace

nlohmann::json Executor::javascriptInfo() const {
  const bool running = js_driver_ && js_driver_->ready();
  const bool available = node_looked_up_ ? node_.has_value() : findOnPath("node").has_value();
  return {
      {"javascript", available},
      {"node_version", running ? nlohmann::json(js_driver_->version()) : nlohmann::json(nullptr)}};
}

void Executor::startJavascript() {
  if (!node_looked_up_) {
    node_ = findOnPath("node");
    node_looked_up_ = true;
  }
  if (!node_) {
    js_failure_ =
        "this sandbox image has no `node` on PATH, so JavaScript cannot run here; the default "
        "image (sandbox-mcp/python:latest, built by docker/build-images.sh) has Node.js, the "
        "minimal one does not. Python (if the image has it) and run_shell still work";
    return;
  }
  js_startup_output_.clear();
  InterpreterDriver::Events events{
      [this] { onJavascriptReady(); },
      [this](OutputStream s, std::string_view d) { onJavascriptOutput(s, d); },
      [this](const nlohmann::json& reply) { onJavascriptReply(reply); },
      [this](int wait_status) { onJavascriptExit(wait_status); },
  };
  try {
    js_driver_ = std::make_unique<InterpreterDriver>(
        loop_, reaper_, *node_,
        std::vector<std::string>{"node", "--expose-internals", "-e", std::string(kJsDriverSource)},
        kNodeLabel, std::move(events));
    groups_.insert(js_driver_->pid());
  } catch (const std::system_error& e) {
    js_failure_ =
        std::string("cannot start Node.js (") + e.what() + "); Python and run_shell still work";
    std::fprintf(stderr, "sandbox-agent: %s\n", js_failure_.c_str());
  }
}

void Executor::onJavascriptReady() {
  js_failure_.clear();
  pump();
}

void Executor::onJavascriptOutput(OutputStream stream, std::string_view data) {
  if (run_ && run_->request.kind == ExecKind::kJavascript) {
    appendOutput(stream, data);
  } else if (js_driver_ && !js_driver_->ready() &&
             js_startup_output_.size() < kMaxStartupOutputBytes) {
    js_startup_output_.append(data.substr(0, kMaxStartupOutputBytes));
  }
  // Otherwise: output of a timer or promise between cells, which belongs to no execution.
}

void Executor::onJavascriptReply(const nlohmann::json& reply) {
  if (!run_ || run_->request.kind != ExecKind::kJavascript) {
    std::fprintf(stderr, "sandbox-agent: ignoring a Node.js reply with no execution running\n");
    return;
  }
  js_driver_->drainOutput();  // the driver wrote its output synchronously before replying
  if (!run_->stop_status) {
    finish(resultFromDriverReply(reply, {run_->request.max_output_bytes, false, {}}));
    return;
  }
  ExecResult result;
  result.status = *run_->stop_status;
  result.exit_code = run_->stoppedExitCode();
  run_->notes.push_back("[sandbox] execution " + run_->stoppedBecause() +
                        " and was interrupted; the JavaScript state (variables, functions) is "
                        "kept");
  finish(std::move(result));
}

void Executor::onJavascriptExit(int wait_status) {
  const bool was_ready = js_driver_->ready();
  js_driver_->drainOutput();
  js_driver_.reset();
  if (!was_ready) {
    std::string output = js_startup_output_;
    while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
    js_failure_ = "Node.js (" + *node_ + ") " + describeExit(wait_status) + " during start-up" +
                  (output.empty() ? "" : ": " + output) + "; Python and run_shell still work";
    std::fprintf(stderr, "sandbox-agent: %s\n", js_failure_.c_str());
    pump();  // the queued JavaScript request is answered with the failure
    return;
  }
  std::fprintf(stderr,
               "sandbox-agent: the Node.js driver %s; it restarts on the next "
               "JavaScript exec\n",
               describeExit(wait_status).c_str());
  if (!run_ || run_->request.kind != ExecKind::kJavascript) {
    js_state_lost_while_idle_ = true;
    return;
  }
  ExecResult result;
  result.state_lost = true;
  if (run_->stop_status) {
    result.status = *run_->stop_status;
    result.exit_code = run_->stoppedExitCode();
  } else {
    result.status = ExecStatus::kError;
    result.exit_code = shellStyleExitCode(wait_status);
  }
  run_->notes.push_back("[sandbox] the Node.js process " + describeExit(wait_status) +
                        "; the next JavaScript execution starts a fresh one (variables and "
                        "functions were lost)");
  finish(std::move(result));
}

void Executor::onJavascriptGraceExpired() {
  run_->grace_timer = 0;
  if (js_driver_) {
    js_driver_->drainOutput();
    js_driver_->killGroup();
    js_driver_.reset();
  }
  ExecResult result;
  result.status = *run_->stop_status;
  result.exit_code = run_->stoppedExitCode();
  result.state_lost = true;
  run_->notes.push_back("[sandbox] execution " + run_->stoppedBecause() +
                        " and did not stop when interrupted; Node.js was stopped and its state "
                        "(variables, functions) was lost");
  finish(std::move(result));
}

}  // namespace agent
