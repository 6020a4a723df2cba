// The process-mode relay inherits neither the server's descriptors nor its environment (the
// bearer token), and the run-time directory is refused when someone else could control it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "sandbox/backend.h"
#include "sandbox/process_sidecar.h"
#include "sandbox/runtime_dir.h"

namespace {

using namespace sandbox;
namespace fs = std::filesystem;

std::string tempDir() {
  std::string pattern = (fs::temp_directory_path() / "sidecar-iso-XXXXXX").string();
  return mkdtemp(pattern.data());
}

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Restores an environment variable when the test ends.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(ProcessSidecarIsolation, TheRelayGetsNoInheritedFdsAndNoServerEnvironment) {
  const std::string dir = tempDir();
  fs::create_directories(dir + "/sock");
  std::ofstream(dir + "/policy.json") << R"(["http://mcp.example.com/mcp"])";
  const ScopedEnv token("SANDBOX_MCP_TOKEN", "secret-bearer-token-4711");
  // A descriptor the server forgot to mark close-on-exec (a library's, a client connection).
  const common::UniqueFd leaked(::open("/dev/null", O_RDONLY));  // NOLINT: no O_CLOEXEC on purpose
  ASSERT_TRUE(leaked);
  const common::UniqueFd high(::fcntl(leaked.get(), F_DUPFD, 200));  // no FD_CLOEXEC either
  ASSERT_TRUE(high);

  SidecarSpec spec;
  spec.session_id = "iso";
  spec.directory = dir;
  spec.socket_dir = dir + "/sock";
  spec.policy_file = dir + "/policy.json";
  spec.audit_log_file = dir + "/audit.jsonl";
  ProcessSidecarLauncher launcher(SANDBOX_SIDECAR_PATH, 10000);
  {
    auto relay = launcher.launch(spec);
    const std::string pid = relay->describe().substr(std::string("process ").size());
    const std::string environment = readAll("/proc/" + pid + "/environ");
    EXPECT_EQ(environment.find("SANDBOX_MCP_TOKEN"), std::string::npos);
    EXPECT_EQ(environment.find("secret-bearer-token-4711"), std::string::npos);
    EXPECT_NE(environment.find("PATH="), std::string::npos);

    // Descriptors the relay holds that point at /dev/null: only what it opened itself may remain;
    // the leaked ones (fd `leaked`, fd `high`) must be gone.
    for (const auto& entry : fs::directory_iterator("/proc/" + pid + "/fd")) {
      const int fd = std::stoi(entry.path().filename().string());
      if (fd <= 2) continue;
      std::error_code ec;
      const auto target = fs::read_symlink(entry.path(), ec).string();
      EXPECT_NE(fd, high.get()) << "fd " << fd << " -> " << target << " was inherited";
      EXPECT_NE(target, "/dev/null") << "fd " << fd << " -> /dev/null was inherited";
    }
  }
  fs::remove_all(dir);
}

TEST(ProcessSidecarIsolation, EnvironmentIsAFixedListWithoutSecrets) {
  const ScopedEnv token("SANDBOX_MCP_TOKEN", "t0ken");
  const ScopedEnv aws("AWS_SECRET_ACCESS_KEY", "k3y");
  for (const std::string& variable : sidecarEnvironment()) {
    const std::string name = variable.substr(0, variable.find('='));
    EXPECT_TRUE(name == "PATH" || name == "LC_ALL" || name.find("SAN_OPTIONS") != std::string::npos)
        << variable;
  }
}

std::string expectRefused(const std::string& root) {
  try {
    RuntimeDir dir(root, "inst", {});
    ADD_FAILURE() << "the run-time directory " << root << " was accepted";
  } catch (const SandboxError& e) {
    return e.what();
  }
  return {};
}

TEST(RuntimeDirOwnership, ANewRootIsCreatedPrivate) {
  const std::string base = tempDir();
  const std::string root = base + "/sandbox-mcp-test";
  {
    RuntimeDir dir(root, "inst", {});
    struct stat info {};
    ASSERT_EQ(::lstat(root.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 07777, 0700U);
    EXPECT_EQ(info.st_uid, ::geteuid());
  }
  fs::remove_all(base);
}

TEST(RuntimeDirOwnership, ASymlinkedRootIsRefusedAndItsTargetUntouched) {
  const std::string base = tempDir();
  const std::string target = base + "/attacker";
  fs::create_directories(target + "/old-instance");  // would look stale to removeStale
  fs::permissions(target, fs::perms::owner_all);
  const std::string root = base + "/sandbox-mcp-0";
  fs::create_directory_symlink(target, root);
  const std::string error = expectRefused(root);
  EXPECT_NE(error.find("symbolic link"), std::string::npos) << error;
  EXPECT_NE(error.find("mcp.runtime_dir"), std::string::npos) << error;
  EXPECT_EQ(RuntimeDir::removeStale(root, "me", docker::ProcessIdentity::current()), 0);
  EXPECT_TRUE(fs::exists(target + "/old-instance"));
  EXPECT_FALSE(fs::exists(target + "/inst"));
  fs::remove_all(base);
}

TEST(RuntimeDirOwnership, AWorldWritableRootIsRefused) {
  const std::string base = tempDir();
  const std::string root = base + "/sandbox-mcp-0";
  ASSERT_EQ(::mkdir(root.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(root.c_str(), 0777), 0);
  const std::string error = expectRefused(root);
  EXPECT_NE(error.find("mode 0777"), std::string::npos) << error;
  EXPECT_NE(error.find("chmod 700"), std::string::npos) << error;
  ASSERT_EQ(::chmod(root.c_str(), 0770), 0);  // group-writable is as bad
  EXPECT_NE(expectRefused(root).find("mode 0770"), std::string::npos);
  fs::remove_all(base);
}

TEST(RuntimeDirOwnership, ARootOwnedBySomeoneElseIsRefused) {
  const std::string base = tempDir();
  const std::string root = base + "/sandbox-mcp-0";
  ASSERT_EQ(::mkdir(root.c_str(), 0700), 0);
  const uid_t other = ::geteuid() == 0 ? 65534 : 0;
  if (::chown(root.c_str(), other, static_cast<gid_t>(-1)) != 0) {
    // Only root can give a directory away; as another user, a root-owned path stands in.
    fs::remove_all(base);
    const std::string error = expectRefused("/");
    EXPECT_NE(error.find("owned by uid 0"), std::string::npos) << error;
    return;
  }
  const std::string error = expectRefused(root);
  EXPECT_NE(error.find("owned by uid " + std::to_string(other)), std::string::npos) << error;
  fs::remove_all(base);
}

TEST(RuntimeDirOwnership, AFileInItsPlaceIsRefused) {
  const std::string base = tempDir();
  const std::string root = base + "/sandbox-mcp-0";
  std::ofstream(root) << "not a directory";
  EXPECT_NE(expectRefused(root).find("not a directory"), std::string::npos);
  fs::remove_all(base);
}

}  // namespace
