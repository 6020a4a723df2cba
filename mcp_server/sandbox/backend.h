// The sandbox abstraction the tools use. A Backend creates Sandboxes; a Sandbox is one isolated
// environment with a live agent channel. Implementations are thread-safe: exec() and the file
// operations may be called from several threads (the agent serialises executions itself).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/cancel_token.h"
#include "common/rich_output.h"
#include "common/unique_fd.h"
#include "protocol/agent_protocol.h"
#include "sandbox/build_file.h"
#include "sandbox/image_policy.h"

namespace sandbox {

// Thrown for failures a caller can act on; what() says what happened and what to do next.
class SandboxError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct VolumeMount {
  std::string host_path;
  std::string container_path;
  bool read_only = true;

  friend bool operator==(const VolumeMount&, const VolumeMount&) = default;
};

struct Limits {
  std::int64_t memory_mib = 512;  // hard limit; swap is disabled (memory-swap == memory)
  double cpus = 1.0;
  std::int64_t pids = 256;              // under runsc this also counts the Sentry's own threads
  std::int64_t tmp_size_mib = 256;      // tmpfs /tmp
  std::int64_t workdir_size_mib = 256;  // tmpfs working directory

  friend bool operator==(const Limits&, const Limits&) = default;
};

struct SandboxSpec {
  std::string image;
  std::string runtime;  // "runsc" or "runc", already resolved against what the engine offers
  std::map<std::string, std::string> environment;
  std::vector<VolumeMount> volumes;
  Limits limits;
  std::string user;                    // "uid:gid"; empty keeps the image's user
  std::string workdir = "/workspace";  // a writable tmpfs
  bool read_only_root = true;
  std::map<std::string, std::string> labels;  // merged with the backend's ownership labels
  // Host directory of Python modules the server provides (sandbox_mcp), mounted read-only at
  // /.sandbox/python and put first on PYTHONPATH; empty: none.
  std::string python_helper_dir;
  // "PORT=SOCKET" for the agent's --egress-proxy: it forwards TCP connections to
  // 127.0.0.1:PORT inside the sandbox to the Unix socket SOCKET (the egress gateway's, mounted
  // into the sandbox); empty: none.
  std::string egress_proxy;
};

// The agent protocol's messages are the backend's vocabulary (one definition, one codec).
using protocol::ExecKind;
using protocol::ExecRequest;
using protocol::ExecResult;
using protocol::ExecStatus;
using protocol::SavedOutput;

// A part of a file: what readFileRange returns.
struct FileRange {
  std::string data;
  std::uint64_t offset = 0;
  std::uint64_t file_size = 0;  // the whole file's size
};

// Called from the channel's reader thread for each chunk of streamed output.
using OutputCallback = std::function<void(std::string_view stream, std::string_view data)>;

using protocol::FileEntry;
using protocol::FileListing;
using protocol::FileType;

class Sandbox {
 public:
  virtual ~Sandbox() = default;  // tears the environment down; never throws

  [[nodiscard]] virtual const std::string& id() const noexcept = 0;
  [[nodiscard]] virtual const std::string& runtime() const noexcept = 0;
  [[nodiscard]] virtual const std::string& image() const noexcept = 0;
  // Engine view of the environment: running, exited, dead, ... ("gone" when it no longer exists).
  [[nodiscard]] virtual std::string status() = 0;
  // False once the agent channel is closed (container died, OOM-killed, removed).
  [[nodiscard]] virtual bool alive() const noexcept = 0;
  // Once alive() is false: a sentence saying why, e.g. "the sandbox was killed because it
  // exceeded its memory limit of 512 MiB; ...". nullopt while alive. May wait briefly for the
  // engine to report the container's exit.
  [[nodiscard]] virtual std::optional<std::string> stopReason() { return std::nullopt; }

  // Throws SandboxError when the sandbox stops during the call (the message is stopReason()).
  virtual ExecResult exec(const ExecRequest& request, CancelToken& cancel,
                          const OutputCallback& on_output) = 0;
  virtual std::size_t writeFile(const std::string& path, std::string_view bytes,
                                int mode = 0644) = 0;
  virtual std::string readFile(const std::string& path, std::size_t max_bytes) = 0;
  // At most `length` bytes at `offset` of a file of any size; throws SandboxError (as readFile)
  // and when `offset` is past the end.
  virtual FileRange readFileRange(const std::string& path, std::uint64_t offset,
                                  std::size_t length) = 0;
  virtual FileListing listFiles(const std::string& path) = 0;
  // A stream connected to 127.0.0.1:`port` inside the sandbox (a preview connection): bytes
  // written to it reach whatever sandbox code listens there, and its answers come back. No network
  // interface is involved. Throws SandboxError saying what to do (nothing listens on the port,
  // too many connections, this backend cannot).
  virtual common::UniqueFd openPort(std::uint16_t /*port*/) {
    throw SandboxError("this sandbox cannot open its ports to the server (its backend has no way)");
  }

  // Saves the sandbox's whole state (its processes and their memory, the files in its tmpfs
  // mounts) into `dir`, an empty directory on the server's host, and goes on running. Throws
  // SandboxError, and runs on unchanged, when it cannot be saved now (an execution is running,
  // code holds a connection to a host socket) or ever (the backend has no checkpoints).
  virtual void checkpoint(const std::filesystem::path& /*dir*/) {
    throw SandboxError("this sandbox cannot be checkpointed (its backend has no checkpoints)");
  }

  // The frozen tier (sessions.freeze_after_idle_s): freeze() stops every process of the sandbox
  // where it is, keeping its memory, at no CPU cost. Anything that reaches it afterwards (a call,
  // a checkpoint, its removal) thaws it first, before a call's clock starts. False, and nothing
  // changes, when a call is running or this sandbox cannot be frozen (the backend cannot).
  virtual bool freeze() { return false; }
  [[nodiscard]] virtual bool frozen() const noexcept { return false; }
  // What the sandbox used: its CPU time so far, and its memory now.
  struct Usage {
    std::uint64_t cpu_ns = 0;
    std::uint64_t memory_bytes = 0;
  };
  // nullopt when the backend cannot tell (then it is never frozen either).
  [[nodiscard]] virtual std::optional<Usage> usage() { return std::nullopt; }
};

struct HealthCheck {
  std::string name;
  bool ok = false;
  std::string detail;  // what was found, or exactly what to run to fix it
};

// A Dockerfile build the session manager has already parsed and checked (its FROM is allowed).
struct BuildRequest {
  BuildPlan plan;
  std::string base_id;  // the FROM image's id, resolved when it was checked (no re-resolving)
  std::string runtime;  // every RUN step runs under it (gVisor without its root overlay)
  Limits limits;        // each RUN step's container
  std::chrono::seconds timeout{300};  // the whole build
  std::int64_t max_size_mib = 2048;   // bytes all RUN steps together may add to the image
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::unique_ptr<Sandbox> create(const SandboxSpec& spec) = 0;
  [[nodiscard]] virtual bool imageExists(const std::string& image) = 0;
  // What the engine reports about an image; nullopt when it is not on the engine.
  [[nodiscard]] virtual std::optional<ImageFacts> inspectImage(const std::string& image) = 0;
  // Builds the plan once per content (plan and base id); returns the image tag. Throws
  // SandboxError on a failed step, the deadline, a missing runtime, or promptly once `cancel`
  // fires (the running step is stopped and nothing of the build is kept).
  virtual std::string buildImage(const BuildRequest& request, const CancelToken& cancel) = 0;
  [[nodiscard]] virtual std::vector<std::string> runtimes() = 0;
  // Removes environments left by an earlier server instance; returns how many.
  virtual int removeOrphans() = 0;
  [[nodiscard]] virtual std::vector<HealthCheck> healthChecks() = 0;

  // Why this backend's sandboxes can never be frozen (Sandbox::freeze), or nullopt when they can.
  [[nodiscard]] virtual std::optional<std::string> freezeUnsupported() {
    return "this backend has no freezer";
  }
  // Why sandboxes of `runtime` cannot be checkpointed and restored here (a sentence an operator
  // can act on); nullopt when they can.
  [[nodiscard]] virtual std::optional<std::string> checkpointUnsupported(
      const std::string& /*runtime*/) {
    return "this backend has no checkpoints";
  }
  // The image format of checkpoints, e.g. "runsc version 0.0~20240729.0": a checkpoint restores
  // only where this is the same.
  [[nodiscard]] virtual std::string checkpointFormat(const std::string& /*runtime*/) { return {}; }
  // Writes a checkpoint's files into the directory it is given (the restore reads them there).
  using PlaceCheckpoint = std::function<void(const std::filesystem::path& dir)>;
  // A sandbox of `spec` that carries on from a checkpoint (Sandbox::checkpoint) of a sandbox
  // created with the same mounts: its processes, memory and tmpfs files. `place` puts the
  // checkpoint's files where the backend reads them. Throws SandboxError when it cannot; nothing
  // is left behind then.
  virtual std::unique_ptr<Sandbox> restore(const SandboxSpec& /*spec*/,
                                           const PlaceCheckpoint& /*place*/) {
    throw SandboxError("this backend cannot restore checkpoints");
  }
};

}  // namespace sandbox
