#include "server/session.h"

namespace server {

namespace {
double nowUnix() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}
}  // namespace

Session::Session(std::string id, std::string owner, SessionOptions options,
                 std::unique_ptr<sandbox::Sandbox> sandbox, std::unique_ptr<McpGateway> gateway)
    : id_(std::move(id)),
      owner_(std::move(owner)),
      options_(std::move(options)),
      gateway_(std::move(gateway)),
      sandbox_(std::move(sandbox)),
      pausable_(dynamic_cast<sandbox::PausableSandbox*>(sandbox_.get())),
      created_at_unix_(nowUnix()),
      created_(Clock::now()),
      last_used_ns_(created_.time_since_epoch().count()) {}

bool Session::pause() { return pausable_ != nullptr && !inUse() && pausable_->pause(); }

sandbox::SnapshotRecord Session::snapshot(const std::string& name, const char* kind) {
  if (pausable_ == nullptr) throw sandbox::SandboxError("this session cannot be snapshotted");
  return pausable_->snapshot(name, kind);
}

bool Session::persist() { return pausable_ != nullptr && pausable_->persist(); }

void Session::rollBack(const std::string& snapshot_id) {
  if (pausable_ == nullptr) throw sandbox::SandboxError("this session cannot be rolled back");
  pausable_->rollBack(snapshot_id);
}

void Session::resume() {
  if (pausable_ != nullptr) pausable_->resume();
}

bool Session::freeze() { return options_.freeze && !inUse() && sandbox_->freeze(); }

std::string_view Session::state() const noexcept {
  if (pausable_ != nullptr && pausable_->state() != sandbox::PausableSandbox::State::kRunning) {
    return sandbox::toString(pausable_->state());
  }
  return sandbox_->frozen() ? "frozen" : "running";
}

bool Session::resident() const noexcept {
  return pausable_ == nullptr || pausable_->state() == sandbox::PausableSandbox::State::kRunning;
}

bool Session::pausable() const noexcept { return pausable_ != nullptr && pausable_->pausable(); }

bool Session::paused() const noexcept {
  return pausable_ != nullptr && pausable_->state() == sandbox::PausableSandbox::State::kPaused;
}

std::uint64_t Session::snapshotBytes() const noexcept {
  return pausable_ != nullptr ? pausable_->snapshotBytes() : 0;
}

Session::~Session() {
  if (events_ && !recentResources().empty()) events_->listChanged(owner_);
  sandbox_.reset();  // the sandbox goes first, then the relay it was using
  gateway_.reset();
}

double Session::uptimeSeconds() const noexcept {
  return std::chrono::duration<double>(Clock::now() - created_).count();
}

double Session::idleSeconds() const noexcept {
  if (inUse()) return 0;
  const Clock::time_point last{Clock::duration{last_used_ns_.load()}};
  return std::chrono::duration<double>(Clock::now() - last).count();
}

void Session::beginUse() noexcept {
  users_.fetch_add(1);
  touch();
}

void Session::endUse() noexcept {
  touch();
  users_.fetch_sub(1);
}

void Session::rememberResource(nlohmann::json resource) {
  const std::string uri = resource.value("uri", "");
  bool known = false;
  {
    std::lock_guard lock(resources_mutex_);
    known = std::erase_if(recent_resources_, [&uri](const nlohmann::json& r) {
              return r.value("uri", "") == uri;
            }) > 0;
    recent_resources_.push_front(std::move(resource));
    if (recent_resources_.size() > kMaxRecentResources) recent_resources_.pop_back();
  }
  // A rewritten file is announced by whoever watches files (mcp/sandbox_file_watch.h).
  if (events_ && !known) events_->listChanged(owner_);
}

std::vector<nlohmann::json> Session::recentResources() const {
  std::lock_guard lock(resources_mutex_);
  return {recent_resources_.begin(), recent_resources_.end()};
}

}  // namespace server
