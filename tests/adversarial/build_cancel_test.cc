// Finding 6 of issue 18: a Dockerfile build ignored cancellation. A RUN step sleeping 90 s held
// its call for 90 s after notifications/cancelled, and a task's thread for 90 s after
// tasks/cancel. Now the step's container is killed and removed at once, nothing is committed,
// no sandbox starts, and the call answers "cancelled: ..." within seconds. (The drain's side of
// the finding, SIGTERM during a build, is build_drain.test.mjs.)
#include <chrono>
#include <future>

#include "build_fixture.h"
#include "common/random_id.h"
#include "sandbox/docker/ownership.h"

namespace build_attacks {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Far below the step's 90 s; a loaded machine still kills and removes a container within it.
constexpr auto kPrompt = 8s;

class CancelledBuild : public ServerFixture {
 protected:
  CancelledBuild() : images_before(ourImages()) {
    cfg.sandbox.allow_dockerfile = true;
    cfg.sandbox.build_timeout_s = 300;  // the default: only the cancel may end the step early
  }
  ~CancelledBuild() override {
    stop();
    EXPECT_TRUE(buildContainers(backend->engine()).empty()) << "a build container leaked";
    EXPECT_EQ(ourImages(), images_before) << "a cancelled build kept an image";
  }

  // Every image this server committed (step layers carry its build containers' labels).
  std::set<std::string> ourImages() {
    const json filters = {
        {"label", {std::string(sandbox::docker::kLabelInstance) + "=" + backend->instanceId()}}};
    std::set<std::string> ids;
    for (const auto& image :
         backend->engine()
             .request(Method::kGet, "/images/json?all=1&filters=" + urlEncode(filters.dump()))
             .json()) {
      ids.insert(image.at("Id").get<std::string>());
    }
    return ids;
  }
  // A first quick step (so one layer is committed before the cancel), then 90 s of sleep. Unique
  // content: no cached image may answer it.
  static std::string slowDockerfile() {
    return "FROM sandbox-mcp/python:latest\nRUN echo " + common::randomHex(8) +
           " > /nonce\nRUN sleep 90\n";
  }
  static json runShellWithBuild() {
    return {{"name", "run_shell"},
            {"arguments", {{"command", "echo the sandbox ran"}, {"dockerfile", slowDockerfile()}}}};
  }
  json send(const json& message) {
    jsonrpc::RequestContext ctx;
    const auto reply = endpoint->handle(message, ctx);
    return reply ? *reply : json();
  }
  // True once the `sleep 90` step's container runs (read from the listing: an earlier step's
  // container may be removed between a listing and an inspect).
  bool sleepStepRunning() {
    const json filters = {{"name", {std::string(sandbox::docker::kBuildContainerPrefix)}}};
    const auto deadline = Clock::now() + 90s;
    while (Clock::now() < deadline) {
      for (const auto& item :
           backend->engine()
               .request(Method::kGet, "/containers/json?filters=" + urlEncode(filters.dump()))
               .json()) {
        if (item.value("State", "") == "running" &&
            item.value("Command", "").find("sleep 90") != std::string::npos) {
          return true;
        }
      }
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }
  // The call did not end in time: remove the step so that the test fails now, not in 90 s.
  void removeBuildSteps() {
    for (const auto& id : buildContainers(backend->engine())) {
      sandbox::docker::forceRemoveContainer(backend->engine(), id);
    }
  }
  // The reply of `pending`, waiting at most kPrompt after the cancel at `cancelled_at`.
  json promptReply(std::future<json>& pending, Clock::time_point cancelled_at) {
    const bool prompt = pending.wait_until(cancelled_at + kPrompt) == std::future_status::ready;
    if (!prompt) removeBuildSteps();
    const json reply = pending.get();
    EXPECT_TRUE(prompt) << "the build went on after the cancel (its step sleeps 90 s)";
    std::printf("[ metric ] cancelled build answered %.1f ms after the cancel\n",
                std::chrono::duration<double, std::milli>(Clock::now() - cancelled_at).count());
    return reply;
  }
  bool refusedForMissingRuntime() {
    if (runtimeRegistered(cfg.sandbox.build_runtime)) return false;
    ADD_FAILURE() << "the build runtime " << cfg.sandbox.build_runtime
                  << " is not registered with dockerd, so this attack was not tried: run "
                     "scripts/setup.sh";
    return true;
  }

  std::set<std::string> images_before;
};

TEST_F(CancelledBuild, NotificationsCancelledStopsTheRunningStep) {
  if (refusedForMissingRuntime()) return;
  start();
  const json request = {
      {"jsonrpc", "2.0"}, {"id", 77}, {"method", "tools/call"}, {"params", runShellWithBuild()}};
  auto pending = std::async(std::launch::async, [&] { return send(request); });
  if (!sleepStepRunning()) {
    removeBuildSteps();
    FAIL() << "the sleep step never ran: " << pending.get().dump();
  }
  const auto cancelled_at = Clock::now();
  (void)send({{"jsonrpc", "2.0"},
              {"method", "notifications/cancelled"},
              {"params", {{"requestId", 77}, {"reason", "the user stopped it"}}}});
  const json result = promptReply(pending, cancelled_at).value("result", json());
  EXPECT_TRUE(result.value("isError", false)) << result.dump();
  EXPECT_EQ(text(result).rfind("cancelled: ", 0), 0U) << text(result);
  EXPECT_NE(text(result).find("dockerfile line 3"), std::string::npos) << text(result);
  EXPECT_TRUE(buildContainers(backend->engine()).empty())
      << "the step's container outlived the answer";
  EXPECT_EQ(sessions->size(), 0U) << "a session was created for a cancelled call";
}

TEST_F(CancelledBuild, TasksCancelStopsTheRunningStep) {
  if (refusedForMissingRuntime()) return;
  start();
  json params = runShellWithBuild();
  params["task"] = json::object();
  const json created =
      send({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"}, {"params", params}});
  const std::string task_id = created["result"]["task"].value("taskId", "");
  ASSERT_FALSE(task_id.empty()) << created.dump();
  if (!sleepStepRunning()) {
    removeBuildSteps();
    FAIL() << "the sleep step never ran";
  }
  const auto cancelled_at = Clock::now();
  const json cancelled = send({{"jsonrpc", "2.0"},
                               {"id", 2},
                               {"method", "tasks/cancel"},
                               {"params", {{"taskId", task_id}}}});
  EXPECT_EQ(cancelled["result"].value("status", ""), "cancelled") << cancelled.dump();
  // tasks/result waits for the task's thread: it answers once the tool call ended.
  auto pending = std::async(std::launch::async, [&] {
    return send({{"jsonrpc", "2.0"},
                 {"id", 3},
                 {"method", "tasks/result"},
                 {"params", {{"taskId", task_id}}}});
  });
  const json result = promptReply(pending, cancelled_at).value("result", json());
  EXPECT_EQ(text(result).rfind("cancelled: ", 0), 0U) << result.dump();
  EXPECT_TRUE(buildContainers(backend->engine()).empty())
      << "the step's container outlived the task";
  // The thread gives its slot back just after it stored the result.
  const auto deadline = Clock::now() + 2s;
  while (mcp->callsInFlight() > 0 && Clock::now() < deadline) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(mcp->callsInFlight(), 0U) << "the task still holds a task thread";
  EXPECT_EQ(sessions->size(), 0U) << "a session was created for a cancelled task";
}

}  // namespace
}  // namespace build_attacks
