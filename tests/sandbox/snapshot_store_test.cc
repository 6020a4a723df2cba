// SnapshotStore: sealing a checkpoint directory, copying it back only when every byte matches,
// and refusing each way a sealed snapshot can be altered on disk before a restore.
#include "sandbox/snapshot_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/backend.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using sandbox::SandboxError;
using sandbox::SnapshotFacts;
using sandbox::SnapshotRecord;
using sandbox::SnapshotStore;
using sandbox::SnapshotTamperedError;
using TimePoint = std::chrono::system_clock::time_point;

// A temporary directory, removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "snapshot-store-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

std::string pattern(std::size_t size, unsigned seed) {
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 131U + seed) & 0xFFU);
  return bytes;
}

void writeFile(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  ASSERT_TRUE(out.good()) << path;
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// The files of a checkpoint as runsc writes them; checkpoint.img spans several copy buffers.
const std::map<std::string, std::string>& sampleImage() {
  static const std::map<std::string, std::string> image = {
      {"checkpoint.img", pattern((std::size_t{3} << 20U) + 17, 1)},
      {"pages.img", pattern(100'000, 2)},
      {"pages_meta.img", pattern(999, 3)},
  };
  return image;
}

std::uint64_t sampleBytes() {
  std::uint64_t total = 0;
  for (const auto& [name, bytes] : sampleImage()) total += bytes.size();
  return total;
}

SnapshotFacts factsOf(const std::string& owner) {
  return {owner,
          "session-1",
          "pause",
          "sha256:0123",
          "runsc 0.0~20240729.0",
          json{{"spec", {{"memory_mib", 512}, {"image", "python"}}}}};
}

SnapshotRecord sealSample(SnapshotStore& store, const std::string& owner = "alice") {
  auto draft = store.begin();
  for (const auto& [name, bytes] : sampleImage()) writeFile(draft.dir() / name, bytes);
  return store.seal(std::move(draft), factsOf(owner));
}

template <typename Call>
std::string tamperedMessage(const Call& call) {
  try {
    call();
  } catch (const SnapshotTamperedError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no SnapshotTamperedError";
  return "";
}

// The copy is refused with a message naming `subject`, and `dest` holds nothing of it.
void expectRefusedCopy(SnapshotStore& store, const std::string& id, const fs::path& dest,
                       const std::string& subject) {
  const std::string message = tamperedMessage([&] { store.copyVerified(id, dest); });
  EXPECT_NE(message.find(subject), std::string::npos) << message;
  EXPECT_NE(message.find("was refused"), std::string::npos) << message;
  EXPECT_TRUE(!fs::exists(dest) || fs::is_empty(dest)) << dest;
}

void editManifest(const fs::path& dir, const std::function<void(json&)>& edit) {
  json manifest = json::parse(readFile(dir / "manifest.json"));
  edit(manifest);
  writeFile(dir / "manifest.json", manifest.dump());
}

std::vector<std::string> idsOf(const std::vector<SnapshotRecord>& records) {
  std::vector<std::string> ids;
  ids.reserve(records.size());
  for (const auto& record : records) ids.push_back(record.id);
  return ids;
}

TEST(SnapshotStore, SealThenCopyVerifiedRoundTripsTheBytes) {
  const TempDir temp;
  SnapshotStore store(temp / "snapshots", "inst-1");
  const auto sealed = sealSample(store);
  EXPECT_EQ(sealed.id.size(), SnapshotStore::kIdHexChars);
  EXPECT_EQ(sealed.instance_id, "inst-1");
  EXPECT_EQ(sealed.bytes, sampleBytes());
  EXPECT_EQ(sealed.facts, factsOf("alice"));
  EXPECT_EQ(sealed.dir, temp / "snapshots" / "inst-1" / sealed.id);
  EXPECT_EQ(fs::status(sealed.dir).permissions(), fs::perms::owner_all);
  EXPECT_EQ(fs::status(sealed.dir / "manifest.json").permissions(),
            fs::perms::owner_read | fs::perms::owner_write);

  const fs::path dest = temp / "container" / "checkpoints" / "snap";
  const auto restored = store.copyVerified(sealed.id, dest);
  EXPECT_EQ(restored.facts, sealed.facts);
  EXPECT_EQ(restored.created_unix, sealed.created_unix);
  EXPECT_EQ(restored.bytes, sealed.bytes);
  for (const auto& [name, bytes] : sampleImage()) EXPECT_EQ(readFile(dest / name), bytes) << name;
  EXPECT_EQ(std::distance(fs::directory_iterator(dest), fs::directory_iterator()), 3);

  // Into a directory that exists already (the engine made it), and again from the same snapshot.
  fs::create_directories(temp / "second");
  store.copyVerified(sealed.id, temp / "second");
  EXPECT_EQ(readFile(temp / "second" / "pages.img"), sampleImage().at("pages.img"));
  const auto found = store.find(sealed.id);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->facts, sealed.facts);
}

TEST(SnapshotStore, AFlippedByteIsRefusedAndNothingIsKept) {
  const TempDir temp;
  SnapshotStore store(temp / "snapshots", "inst-1");
  const auto sealed = sealSample(store);
  // pages_meta.img is copied last: the two files before it were copied, and are removed again.
  std::string bytes = sampleImage().at("pages_meta.img");
  bytes[500] = static_cast<char>(bytes[500] ^ 0x01);
  writeFile(sealed.dir / "pages_meta.img", bytes);
  expectRefusedCopy(store, sealed.id, temp / "restore", "pages_meta.img does not match");
  EXPECT_FALSE(fs::exists(temp / "restore"));  // it made the directory, so it removed it

  // A byte past the first copy buffer, into a directory holding a file of someone else's.
  writeFile(sealed.dir / "pages_meta.img", sampleImage().at("pages_meta.img"));
  bytes = sampleImage().at("checkpoint.img");
  bytes[(std::size_t{2} << 20U) + 5] ^= 0x40;
  writeFile(sealed.dir / "checkpoint.img", bytes);
  fs::create_directories(temp / "existing");
  writeFile(temp / "existing" / "other", "kept");
  const std::string message =
      tamperedMessage([&] { store.copyVerified(sealed.id, temp / "existing"); });
  EXPECT_NE(message.find("checkpoint.img does not match"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(temp / "existing" / "checkpoint.img"));
  EXPECT_EQ(readFile(temp / "existing" / "other"), "kept");

  // A file of another length is refused before it is read.
  writeFile(sealed.dir / "checkpoint.img", "short");
  expectRefusedCopy(store, sealed.id, temp / "restore", "checkpoint.img holds 5 bytes");
}

TEST(SnapshotStore, AnEditedManifestIsRefused) {
  const TempDir temp;
  SnapshotStore store(temp / "snapshots", "inst-1");
  const auto sealed = sealSample(store);
  editManifest(sealed.dir, [](json& manifest) { manifest["facts"]["owner"] = "mallory"; });
  EXPECT_THROW((void)store.find(sealed.id), SnapshotTamperedError);
  expectRefusedCopy(store, sealed.id, temp / "restore", "manifest.json does not match its HMAC");

  editManifest(sealed.dir, [](json& manifest) { manifest.erase("hmac"); });
  expectRefusedCopy(store, sealed.id, temp / "restore", "manifest.json carries no HMAC");
  writeFile(sealed.dir / "manifest.json", "[[[[not json");
  expectRefusedCopy(store, sealed.id, temp / "restore", "manifest.json is not a JSON object");
}

TEST(SnapshotStore, AnAddedOrRemovedFileIsRefused) {
  const TempDir temp;
  SnapshotStore store(temp / "snapshots", "inst-1");
  const auto sealed = sealSample(store);
  writeFile(sealed.dir / "extra.img", "planted");
  expectRefusedCopy(store, sealed.id, temp / "restore", "'extra.img', which is not sealed");
  fs::remove(sealed.dir / "extra.img");
  fs::remove(sealed.dir / "pages.img");
  expectRefusedCopy(store, sealed.id, temp / "restore", "pages.img is missing");
}

TEST(SnapshotStore, ASymlinkInPlaceOfAFileIsRefused) {
  const TempDir temp;
  SnapshotStore store(temp / "snapshots", "inst-1");
  const auto sealed = sealSample(store);
  // The very bytes it was sealed with, but behind a link that could be pointed anywhere.
  fs::rename(sealed.dir / "pages.img", temp / "pages.img");
  fs::create_symlink(temp / "pages.img", sealed.dir / "pages.img");
  expectRefusedCopy(store, sealed.id, temp / "restore", "pages.img is a symbolic link");

  fs::remove(sealed.dir / "pages.img");
  fs::create_directory(sealed.dir / "pages.img");
  expectRefusedCopy(store, sealed.id, temp / "restore", "pages.img is not a regular file");
}

TEST(SnapshotStore, AManifestOfAnotherInstanceIsRefused) {
  const TempDir temp;
  SnapshotStore first(temp / "snapshots", "inst-a");
  SnapshotStore second(temp / "snapshots", "inst-b");  // the same key
  const auto sealed = sealSample(first);
  fs::create_directories(temp / "snapshots" / "inst-b");  // made by a first begin()
  fs::rename(sealed.dir, temp / "snapshots" / "inst-b" / sealed.id);
  EXPECT_THROW((void)second.find(sealed.id), SnapshotTamperedError);
  expectRefusedCopy(second, sealed.id, temp / "restore",
                    "belongs to server instance 'inst-a', not to 'inst-b'");
  EXPECT_TRUE(second.list().empty());
}

TEST(SnapshotStore, AManifestMovedToAnotherSnapshotIsRefused) {
  const TempDir temp;
  SnapshotStore store(temp / "snapshots", "inst-1");
  const auto sealed = sealSample(store, "bob");
  const std::string other_id(SnapshotStore::kIdHexChars, 'a');
  fs::rename(sealed.dir, temp / "snapshots" / "inst-1" / other_id);
  expectRefusedCopy(store, other_id, temp / "restore",
                    "describes snapshot '" + sealed.id + "', not this one");
}

// Even a manifest signed with the key (a bug elsewhere, or a key that leaked) names no path.
TEST(SnapshotStore, ASignedManifestNamingAPathIsRefused) {
  const TempDir temp;
  SnapshotStore store(temp / "snapshots", "inst-1");
  const auto sealed = sealSample(store);
  const std::string key = readFile(temp / "snapshots" / ".key");
  writeFile(temp / "snapshots" / "inst-1" / "escape", "outside");
  editManifest(sealed.dir, [&key](json& manifest) {
    manifest["files"][0]["name"] = "../escape";
    manifest.erase("hmac");
    const std::string text = manifest.dump();
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int length = 0;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data(), &length);
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string hex;
    for (unsigned int i = 0; i < length; ++i) {
      hex.push_back(kDigits[digest[i] >> 4U]);
      hex.push_back(kDigits[digest[i] & 0x0FU]);
    }
    manifest["hmac"] = hex;
  });
  expectRefusedCopy(store, sealed.id, temp / "restore", "lists '../escape'");
  EXPECT_EQ(readFile(temp / "snapshots" / "inst-1" / "escape"), "outside");
}

TEST(SnapshotStore, BadIdsNeverReachTheFilesystem) {
  const TempDir temp;
  SnapshotStore store(temp / "snapshots", "inst-1");
  fs::create_directories(temp / "snapshots" / "victim");
  writeFile(temp / "snapshots" / "victim" / "file", "keep");
  const std::vector<std::string> bad_ids = {"../victim",
                                            "",
                                            "x",
                                            "../../snapshots/victim",
                                            std::string(31, 'a'),
                                            std::string(32, 'A'),
                                            std::string(32, 'g'),
                                            std::string(30, 'a') + "/.",
                                            std::string(33, 'a')};
  for (const auto& id : bad_ids) {
    EXPECT_THROW(store.copyVerified(id, temp / "restore"), SandboxError) << id;
    EXPECT_FALSE(store.find(id).has_value()) << id;
    store.remove(id);
  }
  EXPECT_FALSE(fs::exists(temp / "restore"));
  EXPECT_EQ(readFile(temp / "snapshots" / "victim" / "file"), "keep");
  // A well-formed id of no snapshot: a plain error, not a tampering alarm.
  try {
    store.copyVerified(std::string(32, 'b'), temp / "restore");
    ADD_FAILURE() << "copied a snapshot that does not exist";
  } catch (const SnapshotTamperedError& e) {
    ADD_FAILURE() << e.what();
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("there is no snapshot"), std::string::npos) << e.what();
  }
}

TEST(SnapshotStore, TheKeyIsCreatedPrivateAndShared) {
  const TempDir temp;
  const fs::path root = temp / "var" / "snapshots";
  std::optional<SnapshotStore> first(std::in_place, root, "inst-1");
  const fs::path key = root / ".key";
  EXPECT_EQ(fs::status(root).permissions(), fs::perms::owner_all);
  EXPECT_EQ(fs::status(key).permissions(), fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(fs::file_size(key), 32U);
  const std::string bytes = readFile(key);
  const auto sealed = sealSample(*first);
  {
    SnapshotStore other(root, "inst-2");  // another server reads the same key
    EXPECT_EQ(readFile(key), bytes);
  }
  first.reset();  // a restart of the same instance reads it too
  first.emplace(root, "inst-1");
  EXPECT_EQ(readFile(key), bytes);
  EXPECT_EQ(first->copyVerified(sealed.id, temp / "restore").id, sealed.id);
  for (const auto& entry : fs::directory_iterator(root)) {
    EXPECT_EQ(entry.path().filename().string().find(".key."), std::string::npos)
        << "a temporary key file stayed: " << entry.path();
  }
}

// Servers starting at once on a fresh root: one key wins, and every store reads that one.
TEST(SnapshotStore, StoresStartingAtOnceAgreeOnOneKey) {
  const TempDir temp;
  const fs::path root = temp / "snapshots";
  std::vector<std::unique_ptr<SnapshotStore>> stores(4);
  std::vector<std::thread> threads;
  threads.reserve(stores.size());
  for (std::size_t i = 0; i < stores.size(); ++i) {
    threads.emplace_back([&stores, &root, i] {
      stores[i] = std::make_unique<SnapshotStore>(root, "i" + std::to_string(i));
    });
  }
  for (auto& thread : threads) thread.join();
  std::vector<std::string> sealed;
  sealed.reserve(stores.size());
  for (auto& store : stores) sealed.push_back(sealSample(*store).id);
  stores.clear();
  // A store made afterwards (with the key on disk) verifies what each of them sealed.
  for (std::size_t i = 0; i < sealed.size(); ++i) {
    SnapshotStore again(root, "i" + std::to_string(i));
    EXPECT_EQ(again.copyVerified(sealed[i], temp / ("restore-" + std::to_string(i))).id, sealed[i]);
  }
  std::size_t keys = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    keys += entry.path().filename().string().rfind(".key", 0) == 0;
  }
  EXPECT_EQ(keys, 1U) << "one key, and no temporary key file left";
}

TEST(SnapshotStore, RefusesAKeyOthersCouldReadOrForge) {
  const TempDir temp;
  const fs::path root = temp / "snapshots";
  const fs::path key = root / ".key";
  { const SnapshotStore made(root, "inst-1"); }
  const auto refusal = [&root] {
    try {
      const SnapshotStore store(root, "inst-1");
    } catch (const SandboxError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  fs::permissions(key, fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_read);
  EXPECT_NE(refusal().find("its mode 0604 lets other users read or change it"), std::string::npos)
      << refusal();
  EXPECT_NE(refusal().find("chmod 600"), std::string::npos);

  fs::permissions(key, fs::perms::owner_read | fs::perms::owner_write);
  fs::resize_file(key, 31);
  EXPECT_NE(refusal().find("it holds 31 bytes, not 32"), std::string::npos) << refusal();

  fs::remove(key);
  fs::create_directory(key);
  EXPECT_NE(refusal().find("not a regular file"), std::string::npos) << refusal();

  fs::remove(key);
  writeFile(temp / "elsewhere", std::string(32, 'k'));
  fs::permissions(temp / "elsewhere", fs::perms::owner_read | fs::perms::owner_write);
  fs::create_symlink(temp / "elsewhere", key);
  EXPECT_NE(refusal().find("it is a symbolic link"), std::string::npos) << refusal();
}

TEST(SnapshotStore, AnUnsealedDraftIsRemoved) {
  const TempDir temp;
  SnapshotStore store(temp / "snapshots", "inst-1");
  fs::path dir;
  {
    auto draft = store.begin();
    dir = draft.dir();
    EXPECT_TRUE(fs::is_empty(dir));
    EXPECT_EQ(fs::status(dir).permissions(), fs::perms::owner_all);
    writeFile(dir / "checkpoint.img", "partial");
    auto moved = std::move(draft);  // the moved-from draft removes nothing
    EXPECT_EQ(moved.dir(), dir);
  }
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_TRUE(store.list().empty());
}

TEST(SnapshotStore, SealRefusesWhatRunscWouldNotWrite) {
  const TempDir temp;
  SnapshotStore store(temp / "snapshots", "inst-1");
  const auto refusal = [&store](const std::function<void(const fs::path&)>& plant) {
    auto draft = store.begin();
    const fs::path dir = draft.dir();
    writeFile(dir / "checkpoint.img", "state");
    plant(dir);
    try {
      store.seal(std::move(draft), factsOf("alice"));
    } catch (const SandboxError& e) {
      EXPECT_FALSE(fs::exists(dir)) << "a refused draft is removed";
      return std::string(e.what());
    }
    return std::string("sealed");
  };
  EXPECT_NE(refusal([](const fs::path& dir) {
              fs::create_directory(dir / "sub");
            }).find("sub is not a regular file"),
            std::string::npos);
  EXPECT_NE(refusal([&temp](const fs::path& dir) {
              fs::create_symlink(temp / "x", dir / "link.img");
            }).find("link.img is a symbolic link"),
            std::string::npos);
  EXPECT_NE(refusal([](const fs::path& dir) {
              writeFile(dir / "manifest.json", "{}");
            }).find("manifest.json is not a plain file name"),
            std::string::npos);
  EXPECT_NE(refusal([](const fs::path& dir) {
              fs::remove(dir / "checkpoint.img");
            }).find("runsc wrote no files there"),
            std::string::npos);
  EXPECT_TRUE(fs::is_empty(temp / "snapshots" / "inst-1"));
}

TEST(SnapshotStore, RemoveOlderThanGoesBySealTime) {
  const TempDir temp;
  TimePoint now{std::chrono::seconds(1'000'000)};
  SnapshotStore store(temp / "snapshots", "inst-1", [&now] { return now; });
  const auto old = sealSample(store);
  now += std::chrono::hours(2);
  const auto fresh = sealSample(store);
  // A draft a crashed server left, and one still being written: both untouched for long.
  const fs::path abandoned = temp / "snapshots" / "inst-1" / std::string(32, 'c');
  fs::create_directory(abandoned);
  auto writing = store.begin();
  const timespec long_ago[2] = {{1'000'000, 0}, {1'000'000, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, abandoned.c_str(), long_ago, 0), 0);
  ASSERT_EQ(utimensat(AT_FDCWD, writing.dir().c_str(), long_ago, 0), 0);
  now += std::chrono::minutes(30);

  EXPECT_EQ(store.removeOlderThan(std::chrono::hours(1)), 2);
  EXPECT_FALSE(fs::exists(old.dir));
  EXPECT_FALSE(fs::exists(abandoned));
  EXPECT_TRUE(fs::exists(writing.dir()));
  EXPECT_EQ(idsOf(store.list()), std::vector<std::string>{fresh.id});
  EXPECT_EQ(store.removeOlderThan(std::chrono::hours(1)), 0);
}

TEST(SnapshotStore, RemoveDeletesOneSnapshot) {
  const TempDir temp;
  SnapshotStore store(temp / "snapshots", "inst-1");
  const auto gone = sealSample(store);
  const auto kept = sealSample(store);
  store.remove(gone.id);
  EXPECT_FALSE(fs::exists(gone.dir));
  EXPECT_FALSE(store.find(gone.id).has_value());
  EXPECT_THROW(store.copyVerified(gone.id, temp / "restore"), SandboxError);
  EXPECT_EQ(idsOf(store.list()), std::vector<std::string>{kept.id});
}

TEST(SnapshotStore, TotalBytesCountsOneOwner) {
  const TempDir temp;
  TimePoint now{std::chrono::seconds(1'000'000)};
  SnapshotStore store(temp / "snapshots", "inst-1", [&now] { return now; });
  std::vector<std::string> sealed;
  for (const char* owner : {"alice", "bob", "alice"}) {
    sealed.push_back(sealSample(store, owner).id);
    now += std::chrono::seconds(1);
  }
  EXPECT_EQ(store.totalBytes("alice"), 2 * sampleBytes());
  EXPECT_EQ(store.totalBytes("bob"), sampleBytes());
  EXPECT_EQ(store.totalBytes("carol"), 0U);
  EXPECT_EQ(idsOf(store.list()), sealed);  // oldest first
}

TEST(SnapshotStore, ListSkipsATamperedSnapshot) {
  const TempDir temp;
  SnapshotStore store(temp / "snapshots", "inst-1");
  const auto good = sealSample(store, "alice");
  const auto bad = sealSample(store, "alice");
  const auto draft = store.begin();  // unsealed: not a snapshot yet
  editManifest(bad.dir, [](json& manifest) { manifest["created_unix"] = 1; });
  EXPECT_EQ(idsOf(store.list()), std::vector<std::string>{good.id});
  EXPECT_EQ(store.totalBytes("alice"), sampleBytes());
}

TEST(SnapshotStore, DifferentSnapshotsAreSealedAndCopiedAtOnce) {
  const TempDir temp;
  SnapshotStore store(temp / "snapshots", "inst-1");
  std::vector<std::thread> threads;
  std::array<bool, 4> round_tripped{};
  for (std::size_t i = 0; i < round_tripped.size(); ++i) {
    threads.emplace_back([&, i] {
      const auto sealed = sealSample(store, "owner-" + std::to_string(i));
      const fs::path dest = temp / ("restore-" + std::to_string(i));
      const auto copied = store.copyVerified(sealed.id, dest);
      round_tripped[i] = copied.facts.owner == "owner-" + std::to_string(i) &&
                         readFile(dest / "checkpoint.img") == sampleImage().at("checkpoint.img");
    });
  }
  for (auto& thread : threads) thread.join();
  for (const bool ok : round_tripped) EXPECT_TRUE(ok);
  EXPECT_EQ(store.list().size(), 4U);
}

TEST(SnapshotStore, LeavesNoInstanceDirectoryWhenItHoldsNothing) {
  const TempDir temp;
  {
    SnapshotStore idle(temp / "snapshots", "never-paused");
    EXPECT_FALSE(fs::exists(temp / "snapshots" / "never-paused"));
  }
  {
    SnapshotStore used(temp / "snapshots", "paused-once");
    const auto sealed = sealSample(used);
    used.remove(sealed.id);
  }
  EXPECT_FALSE(fs::exists(temp / "snapshots" / "paused-once"))
      << "an empty instance directory stayed";
}

TEST(SnapshotStore, AbandonedInstancesAreRemovedAndLiveOnesKept) {
  const TempDir temp;
  SnapshotStore live(temp / "snapshots", "live");
  (void)sealSample(live);
  {
    SnapshotStore crashed(temp / "snapshots", "crashed");
    (void)sealSample(crashed);  // its snapshot stays: as after a crash, nobody removes it
  }
  EXPECT_TRUE(fs::exists(temp / "snapshots" / "crashed"));
  EXPECT_THROW(SnapshotStore(temp / "snapshots", "live"), SandboxError)
      << "a second store of a live instance";

  SnapshotStore sweeper(temp / "snapshots", "sweeper");
  EXPECT_EQ(sweeper.removeAbandoned(), 1);
  EXPECT_FALSE(fs::exists(temp / "snapshots" / "crashed"));
  EXPECT_TRUE(fs::exists(temp / "snapshots" / "live"));
  EXPECT_EQ(live.list().size(), 1U);
}

TEST(SnapshotStore, AnAbandonedInstanceMarkedForRestartIsLeftForItsServerWithinTheWindow) {
  const TempDir temp;
  {
    SnapshotStore stopped(temp / "snapshots", "stopped");
    stopped.keepForRestart(true);
    (void)sealSample(stopped);
    SnapshotStore crashed(temp / "snapshots", "crashed");
    (void)sealSample(crashed);
  }
  const auto later = std::chrono::system_clock::now() + std::chrono::hours(2);
  SnapshotStore sweeper(temp / "snapshots", "sweeper", [later] { return later; });
  EXPECT_EQ(sweeper.removeAbandoned(std::chrono::hours(3)), 1) << "only the unmarked one goes";
  EXPECT_FALSE(fs::exists(temp / "snapshots" / "crashed"));
  EXPECT_TRUE(fs::exists(temp / "snapshots" / "stopped"))
      << "snapshots within the window may still be brought back (sessions.persist)";
  EXPECT_EQ(sweeper.removeAbandoned(std::chrono::hours(1)), 1);
  EXPECT_FALSE(fs::exists(temp / "snapshots" / "stopped"));
  EXPECT_FALSE(fs::exists(temp / "snapshots" / ".stopped.persist"));
}

TEST(SnapshotStore, AServerMarkedForRestartThatSavedNothingLeavesNoMark) {
  const TempDir temp;
  {
    SnapshotStore empty(temp / "snapshots", "empty");
    empty.keepForRestart(true);
    EXPECT_TRUE(fs::exists(temp / "snapshots" / ".empty.persist"));
  }
  EXPECT_FALSE(fs::exists(temp / "snapshots" / ".empty.persist"));
  EXPECT_FALSE(fs::exists(temp / "snapshots" / ".empty.lock"));
  {
    SnapshotStore kept(temp / "snapshots", "kept");
    kept.keepForRestart(true);
    (void)sealSample(kept);
  }
  EXPECT_TRUE(fs::exists(temp / "snapshots" / ".kept.persist")) << "it has something to restore";
}

TEST(SnapshotStore, RemoveUnsealedTakesDraftsAndFailedManifestsAndKeepsSealedOnes) {
  const TempDir temp;
  SnapshotStore store(temp / "snapshots", "inst");
  const auto sealed = sealSample(store);
  const auto tampered = sealSample(store);
  {
    const auto manifest = tampered.dir / sandbox::kManifestFileName;
    std::ifstream in(manifest);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto at = text.find("alice");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 5, "mallo");  // another owner, without the key to sign it
    std::ofstream(manifest, std::ios::trunc) << text;
  }
  const auto draft_dir = temp / "snapshots" / "inst" / std::string(32, 'd');
  fs::create_directories(draft_dir);  // a checkpoint a crash cut short
  EXPECT_EQ(store.removeUnsealed(), 2);
  EXPECT_TRUE(store.find(sealed.id));
  EXPECT_FALSE(fs::exists(tampered.dir));
  EXPECT_FALSE(fs::exists(draft_dir));
}

}  // namespace
