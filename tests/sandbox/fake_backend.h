// Test double for unit tests of the pure session/tool logic: sandboxes that live in memory.
// Integration tests use the real Docker backend.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/base64.h"
#include "sandbox/backend.h"

namespace testing_support {

class FakeSandbox : public sandbox::Sandbox {
 public:
  FakeSandbox(std::string id, std::string image, std::atomic<int>& live,
              std::shared_ptr<std::atomic<bool>> alive = std::make_shared<std::atomic<bool>>(true),
              std::shared_ptr<std::atomic<int>> waiting = std::make_shared<std::atomic<int>>(0))
      : id_(std::move(id)),
        image_(std::move(image)),
        live_(live),
        alive_(std::move(alive)),
        waiting_(std::move(waiting)) {
    ++live_;
  }
  ~FakeSandbox() override { --live_; }

  const std::string& id() const noexcept override { return id_; }
  const std::string& runtime() const noexcept override { return runtime_; }
  const std::string& image() const noexcept override { return image_; }
  std::string status() override { return "running"; }
  bool alive() const noexcept override { return alive_->load(); }

  // "wait-for-cancel" blocks until cancelled; "stream" emits output events when asked to;
  // "figure" shows a 1568x1045 image (when the request allows images) and returns a table;
  // anything else succeeds with stdout "ran: <code>".
  sandbox::ExecResult exec(const sandbox::ExecRequest& request, CancelToken& cancel,
                           const sandbox::OutputCallback& on_output) override {
    sandbox::ExecResult result;
    if (request.code == "stream") {
      if (request.stream && on_output) {
        on_output("stdout", "line 1\n");
        on_output("stderr", "oops\n");
        on_output("stdout", "line 2\n");
      }
      result.status = sandbox::ExecStatus::kSuccess;
      result.stdout_text = "line 1\nline 2\n";
      result.stderr_text = "oops\n";
      return result;
    }
    if (request.code == "figure") {
      result.status = sandbox::ExecStatus::kSuccess;
      result.result = "   a\n0  1";
      if (request.images.max_count > 0) {
        std::string png("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\x06\x20\0\0\x04\x15", 24);
        common::Image image;
        image.path = "/tmp/.sandbox-mcp/figures/figure-1-1.png";
        image.width = 4000;
        image.height = 2667;
        image.bytes = 90000;
        image.data_b64 = common::base64Encode(png);
        image.data_width = 1568;
        image.data_height = 1045;
        image.data_bytes = png.size();
        result.rich.images.push_back(image);
      }
      result.rich.table = common::TableSummary{"DataFrame", {1, 1}, {{"a", "int64"}}, false};
      return result;
    }
    if (request.code == "wait-for-cancel") {
      std::mutex m;
      std::condition_variable cv;
      bool done = false;
      CancelSubscription sub(cancel, [&] {
        std::lock_guard lock(m);
        done = true;
        cv.notify_all();
      });
      std::unique_lock lock(m);
      ++*waiting_;
      cv.wait_for(lock, std::chrono::seconds(10), [&] { return done; });
      --*waiting_;
      result.status = sandbox::ExecStatus::kCancelled;
      return result;
    }
    result.status = sandbox::ExecStatus::kSuccess;
    result.stdout_text = "ran: " + request.code;
    result.stdout_bytes = result.stdout_text.size();
    return result;
  }
  std::size_t writeFile(const std::string& path, std::string_view bytes, int) override {
    std::lock_guard lock(mutex_);
    files_[path] = std::string(bytes);
    return bytes.size();
  }
  std::string readFile(const std::string& path, std::size_t) override {
    std::lock_guard lock(mutex_);
    const auto it = files_.find(path);
    if (it == files_.end()) throw sandbox::SandboxError("No such file: " + path);
    return it->second;
  }
  sandbox::FileRange readFileRange(const std::string& path, std::uint64_t offset,
                                   std::size_t length) override {
    const std::string whole = readFile(path, 0);
    if (offset > whole.size()) throw sandbox::SandboxError("Offset past the end: " + path);
    return {whole.substr(offset, length), offset, whole.size()};
  }
  sandbox::FileListing listFiles(const std::string&) override {
    std::lock_guard lock(mutex_);
    sandbox::FileListing listing;
    for (const auto& [name, data] : files_) {
      listing.entries.push_back({name, sandbox::FileType::kFile, data.size(), 0});
    }
    return listing;
  }

 private:
  std::string id_;
  std::string image_;
  std::string runtime_ = "runsc";
  std::atomic<int>& live_;
  std::shared_ptr<std::atomic<bool>> alive_;
  std::shared_ptr<std::atomic<int>> waiting_;
  std::mutex mutex_;
  std::map<std::string, std::string> files_;
};

class FakeBackend : public sandbox::Backend {
 public:
  std::unique_ptr<sandbox::Sandbox> create(const sandbox::SandboxSpec& spec) override {
    if (fail_creates) throw sandbox::SandboxError("engine unavailable (fake)");
    {
      std::lock_guard lock(spec_mutex);
      last_spec = spec;
    }
    return std::make_unique<FakeSandbox>("c" + std::to_string(++created), spec.image, live,
                                         sandboxes_alive, waiting_for_cancel);
  }
  bool imageExists(const std::string& image) override { return image != "missing:latest"; }
  std::optional<sandbox::ImageFacts> inspectImage(const std::string& image) override {
    if (!imageExists(image)) return std::nullopt;
    return sandbox::ImageFacts{"sha256:" + image, {image}, {}, {}};
  }
  std::string buildImage(const sandbox::BuildRequest& request, const CancelToken& cancel) override {
    {
      std::lock_guard lock(spec_mutex);
      last_build = request;
    }
    return on_build ? on_build(cancel) : "built:1";
  }
  std::vector<std::string> runtimes() override { return runtime_names; }
  int removeOrphans() override { return 0; }
  std::vector<sandbox::HealthCheck> healthChecks() override { return {}; }

  std::atomic<int> created{0};
  std::atomic<int> live{0};
  std::atomic<bool> fail_creates{false};
  // Shared by every sandbox made so far: store false to make them all report a dead container.
  std::shared_ptr<std::atomic<bool>> sandboxes_alive = std::make_shared<std::atomic<bool>>(true);
  // How many "wait-for-cancel" executions are blocked right now (a test cancels only after one
  // really runs, else it would cancel a call that has not started).
  std::shared_ptr<std::atomic<int>> waiting_for_cancel = std::make_shared<std::atomic<int>>(0);
  std::mutex spec_mutex;
  sandbox::SandboxSpec last_spec;    // guarded by spec_mutex while a warm pool may be filling
  sandbox::BuildRequest last_build;  // guarded by spec_mutex
  std::vector<std::string> runtime_names{"runc", "runsc"};
  // When set, buildImage() runs it (e.g. to block until cancelled) and returns its tag.
  std::function<std::string(const CancelToken&)> on_build;
};

}  // namespace testing_support
