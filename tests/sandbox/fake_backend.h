// Test double for unit tests of the pure session/tool logic: sandboxes that live in memory.
// Integration tests use the real Docker backend. Tests that include it link ZLIB::ZLIB (its
// figures are real PNGs).
#pragma once

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "../support/png_fixture.h"
#include "common/base64.h"
#include "sandbox/backend.h"

namespace testing_support {

// The frozen tier's view of fake sandboxes: off unless `enabled`; each sandbox's CPU time is
// what a test sets under its id (0 until then), its memory 100 MiB.
struct FakeCgroups {
  std::atomic<bool> enabled{false};
  std::mutex mutex;
  std::map<std::string, std::uint64_t> cpu_ns;  // by sandbox id
  void addCpu(const std::string& id, std::uint64_t ns) {
    std::lock_guard lock(mutex);
    cpu_ns[id] += ns;
  }
  std::uint64_t cpuOf(const std::string& id) {
    std::lock_guard lock(mutex);
    return cpu_ns[id];
  }
};

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
  // "forged-figures" shows a real PNG between two that are PNGs only by their header (as
  // sandbox code can make them); "big-figures" shows 8 PNGs of 1568x1568 px that decode to
  // 19,670,560 bytes each; anything else succeeds with stdout "ran: <code>".
  // A file whose name ends in ".racing" claims 100 bytes more than a read returns, as a file
  // that shrinks while it is read.
  sandbox::ExecResult exec(const sandbox::ExecRequest& request, CancelToken& cancel,
                           const sandbox::OutputCallback& on_output) override {
    frozen_ = false;
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
        static const std::string png = makePng({1568, 1045, 1, 0, 0});
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
    if (request.code == "forged-figures") {
      result.status = sandbox::ExecStatus::kSuccess;
      const std::string real = makePng({40, 30, 8, 2, 0});
      const std::string forged = std::string(kPngSignature) +
                                 pngChunk("IHDR", ihdrData({40, 30, 8, 2, 0}), false) + "junk";
      const std::string bomb = pngAround({40, 30, 8, 2, 0}, zlibCompress(std::string(1 << 20, 0)));
      int number = 0;
      for (const auto* png : {&forged, &real, &bomb}) {
        result.rich.images.push_back(imageOf(*png, 40, 30, ++number));
      }
      return result;
    }
    if (request.code == "big-figures") {
      result.status = sandbox::ExecStatus::kSuccess;
      static const std::string big =
          pngAround({1568, 1568, 16, 6, 0},
                    zlibCompress(std::string(std::size_t{1568} * (1 + 1568 * 8), 0), 1), 1 << 20);
      for (int number = 1; number <= 8; ++number) {
        result.rich.images.push_back(imageOf(big, 1568, 1568, number));
      }
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
    frozen_ = false;
    std::lock_guard lock(mutex_);
    files_[path] = std::string(bytes);
    ++writes_[path];
    return bytes.size();
  }
  std::string readFile(const std::string& path, std::size_t) override {
    frozen_ = false;
    std::lock_guard lock(mutex_);
    const auto it = files_.find(path);
    if (it == files_.end()) throw sandbox::SandboxError("No such file: " + path);
    return it->second;
  }
  sandbox::FileRange readFileRange(const std::string& path, std::uint64_t offset,
                                   std::size_t length) override {
    const std::string whole = readFile(path, 0);
    if (offset > whole.size()) throw sandbox::SandboxError("Offset past the end: " + path);
    const bool racing = path.size() > 7 && path.substr(path.size() - 7) == ".racing";
    return {whole.substr(offset, length), offset, whole.size() + (racing ? 100 : 0)};
  }
  // The files directly in `dir`, by name (as the agent lists); mtime counts the writes.
  sandbox::FileListing listFiles(const std::string& dir) override {
    frozen_ = false;
    std::lock_guard lock(mutex_);
    sandbox::FileListing listing;
    listing.path = dir;
    const std::string prefix = dir.ends_with('/') ? dir : dir + '/';
    for (const auto& [path, data] : files_) {
      if (!path.starts_with(prefix) || path.find('/', prefix.size()) != std::string::npos) continue;
      listing.entries.push_back(
          {path.substr(prefix.size()), sandbox::FileType::kFile, data.size(), writes_[path]});
    }
    return listing;
  }
  // Writes its files to dir/state.img (a fake of runsc's image); restore() reads them back.
  void checkpoint(const std::filesystem::path& dir) override {
    frozen_ = false;
    std::lock_guard lock(mutex_);
    if (checkpoint_attempts_) ++*checkpoint_attempts_;
    if (fail_checkpoints_ && fail_checkpoints_->load()) {
      throw sandbox::SandboxError("a connection to a host socket is open (fake)");
    }
    std::ofstream(dir / "state.img") << nlohmann::json(files_).dump();
  }
  void countCheckpoints(std::shared_ptr<std::atomic<int>> attempts,
                        std::shared_ptr<std::atomic<bool>> fail) {
    checkpoint_attempts_ = std::move(attempts);
    fail_checkpoints_ = std::move(fail);
  }
  bool freeze() override {
    if (!cgroups_ || !cgroups_->enabled) return false;
    frozen_ = true;
    return true;
  }
  bool frozen() const noexcept override { return frozen_.load(); }
  std::optional<Usage> usage() override {
    if (!cgroups_ || !cgroups_->enabled) return std::nullopt;
    return Usage{cgroups_->cpuOf(id_), std::uint64_t{100} << 20};
  }
  void useCgroups(std::shared_ptr<FakeCgroups> cgroups) { cgroups_ = std::move(cgroups); }
  void restoreFiles(std::map<std::string, std::string> files) {
    std::lock_guard lock(mutex_);
    files_ = std::move(files);
  }

 private:
  static common::Image imageOf(const std::string& png, std::int64_t width, std::int64_t height,
                               int number) {
    common::Image image;
    image.path = "/tmp/.sandbox-mcp/figures/figure-1-" + std::to_string(number) + ".png";
    image.width = image.data_width = width;
    image.height = image.data_height = height;
    image.bytes = image.data_bytes = png.size();
    image.data_b64 = common::base64Encode(png);
    return image;
  }

  std::string id_;
  std::string image_;
  std::string runtime_ = "runsc";
  std::atomic<int>& live_;
  std::shared_ptr<std::atomic<bool>> alive_;
  std::shared_ptr<std::atomic<int>> waiting_;
  std::mutex mutex_;
  std::map<std::string, std::string> files_;
  std::map<std::string, std::int64_t> writes_;
  std::shared_ptr<std::atomic<int>> checkpoint_attempts_;
  std::shared_ptr<std::atomic<bool>> fail_checkpoints_;
  std::shared_ptr<FakeCgroups> cgroups_;
  std::atomic<bool> frozen_{false};
};

class FakeBackend : public sandbox::Backend {
 public:
  std::unique_ptr<sandbox::Sandbox> create(const sandbox::SandboxSpec& spec) override {
    if (fail_creates) throw sandbox::SandboxError("engine unavailable (fake)");
    {
      std::lock_guard lock(spec_mutex);
      last_spec = spec;
    }
    auto sandbox = std::make_unique<FakeSandbox>("c" + std::to_string(++created), spec.image, live,
                                                 sandboxes_alive, waiting_for_cancel);
    sandbox->countCheckpoints(checkpoint_attempts, fail_checkpoints);
    sandbox->useCgroups(cgroups);
    return sandbox;
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
  std::optional<std::string> checkpointUnsupported(const std::string&) override {
    if (checkpoints) return std::nullopt;
    return "no checkpoints (fake)";
  }
  std::string checkpointFormat(const std::string&) override { return checkpoint_format; }
  std::optional<std::string> freezeUnsupported() override {
    if (cgroups->enabled) return std::nullopt;
    return "no freezer (fake)";
  }
  std::unique_ptr<sandbox::Sandbox> restore(const sandbox::SandboxSpec& spec,
                                            const PlaceCheckpoint& place) override {
    if (fail_restores) throw sandbox::SandboxError("the engine is restarting (fake)");
    const auto dir =
        std::filesystem::temp_directory_path() /
        ("fake-restore-" + std::to_string(::getpid()) + "-" + std::to_string(++restored));
    std::filesystem::create_directories(dir);
    struct Cleanup {
      std::filesystem::path dir;
      ~Cleanup() { std::filesystem::remove_all(dir); }
    } cleanup{dir};
    place(dir);
    std::ifstream in(dir / "state.img");
    std::stringstream text;
    text << in.rdbuf();
    const auto state = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (!state.is_object()) throw sandbox::SandboxError("not a fake image");
    auto sandbox = std::make_unique<FakeSandbox>("c" + std::to_string(++created), spec.image, live,
                                                 sandboxes_alive, waiting_for_cancel);
    sandbox->restoreFiles(state.get<std::map<std::string, std::string>>());
    sandbox->useCgroups(cgroups);
    return sandbox;
  }

  std::atomic<int> created{0};
  std::atomic<int> restored{0};
  std::atomic<bool> checkpoints{false};    // checkpointUnsupported() says nothing stops them
  std::atomic<bool> fail_restores{false};  // restore() fails as an engine in trouble would
  std::shared_ptr<std::atomic<int>> checkpoint_attempts = std::make_shared<std::atomic<int>>(0);
  // Store true to make every sandbox's checkpoint fail (as with a host socket connected).
  std::shared_ptr<std::atomic<bool>> fail_checkpoints = std::make_shared<std::atomic<bool>>(false);
  std::string checkpoint_format = "fake 1";
  std::atomic<int> live{0};
  std::atomic<bool> fail_creates{false};
  std::shared_ptr<FakeCgroups> cgroups = std::make_shared<FakeCgroups>();
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
