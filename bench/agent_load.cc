// sandbox-agent-load: the agents alone, without the MCP layer. Creates N sandboxes through the
// Docker backend as the server does (runsc, channel sockets, code user 65534, default limits),
// then runs M run_code("1+1") executions in each, all sandboxes at once (one thread each), and
// prints one JSON line: calls per second and per-call latency. bench/scale.mjs compares the
// server's throughput at the same concurrency with this (the issue's "within 80% of what the
// agents alone can do").
// Usage: sandbox-agent-load --agent PATH --sessions N --calls M [--image IMAGE] [--runtime NAME]
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/cancel_token.h"
#include "common/random_id.h"
#include "sandbox/docker/docker_backend.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string agent;
  std::string image = "sandbox-mcp/python:latest";
  std::string runtime = "runsc";
  int sessions = 8;
  int calls = 50;
};

bool parse(int argc, char** argv, Options& out) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--agent") {
      out.agent = std::filesystem::absolute(value).string();  // a bind mount needs it absolute
    } else if (flag == "--image") {
      out.image = value;
    } else if (flag == "--runtime") {
      out.runtime = value;
    } else if (flag == "--sessions") {
      out.sessions = std::max(1, std::atoi(value.c_str()));
    } else if (flag == "--calls") {
      out.calls = std::max(1, std::atoi(value.c_str()));
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && !out.agent.empty();
}

sandbox::SandboxSpec defaultSpec(const Options& options) {
  sandbox::SandboxSpec spec;
  spec.image = options.image;
  spec.runtime = options.runtime;
  spec.user = "65534:65534";
  spec.labels["sandbox-mcp.bench"] = "1";
  return spec;  // Limits{} are the server's defaults: 512 MiB, 1 CPU, 256 pids
}

double percentile(std::vector<double> samples, double p) {
  std::sort(samples.begin(), samples.end());
  const auto rank =
      static_cast<std::size_t>(std::max(1.0, p / 100.0 * static_cast<double>(samples.size())));
  return samples[std::min(samples.size(), rank) - 1];
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse(argc, argv, options)) {
    std::fprintf(stderr,
                 "usage: %s --agent PATH --sessions N --calls M [--image IMAGE] [--runtime NAME]\n",
                 argv[0]);
    return 2;
  }
  spdlog::set_level(spdlog::level::warn);  // one line of JSON on stdout, problems on stderr
  const std::string root = "/tmp/sandbox-agent-load-" + common::randomHex(6);
  int status = 0;
  try {
    sandbox::docker::DockerBackendOptions backend_options;
    backend_options.agent_path = options.agent;
    sandbox::docker::DockerBackend backend(backend_options);
    backend.useChannelSockets(root);
    std::vector<std::unique_ptr<sandbox::Sandbox>> sandboxes;
    sandboxes.reserve(static_cast<std::size_t>(options.sessions));
    for (int i = 0; i < options.sessions; ++i)
      sandboxes.push_back(backend.create(defaultSpec(options)));

    sandbox::ExecRequest request;
    request.kind = sandbox::ExecKind::kPython;
    request.code = "1+1";
    request.timeout = std::chrono::seconds(30);
    std::mutex mutex;
    std::vector<double> latencies;
    int failures = 0;
    const auto started = Clock::now();
    std::vector<std::thread> threads;
    threads.reserve(sandboxes.size());
    for (auto& sandbox : sandboxes) {
      threads.emplace_back([&, box = sandbox.get()] {
        std::vector<double> mine;
        mine.reserve(static_cast<std::size_t>(options.calls));
        int failed = 0;
        for (int call = 0; call < options.calls; ++call) {
          CancelToken cancel;
          const auto begin = Clock::now();
          const auto result = box->exec(request, cancel, nullptr);
          mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - begin).count());
          if (result.status != sandbox::ExecStatus::kSuccess || result.result != "2") ++failed;
        }
        const std::lock_guard lock(mutex);
        latencies.insert(latencies.end(), mine.begin(), mine.end());
        failures += failed;
      });
    }
    for (auto& thread : threads) thread.join();
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    const nlohmann::json report = {{"sessions", options.sessions},
                                   {"calls", latencies.size()},
                                   {"failures", failures},
                                   {"seconds", seconds},
                                   {"calls_per_s", static_cast<double>(latencies.size()) / seconds},
                                   {"p50_ms", percentile(latencies, 50)},
                                   {"p99_ms", percentile(latencies, 99)}};
    std::printf("%s\n", report.dump().c_str());
    status = failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sandbox-agent-load: %s\n", e.what());
    status = 1;
  }
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
  return status;
}
