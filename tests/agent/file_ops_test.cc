#include "agent/file_ops.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "agent/file_requests.h"
#include "agent/request_error.h"

namespace {

namespace fs = std::filesystem;
using agent::files::FileOpError;
using nlohmann::json;

// A fresh directory under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "agent-files-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

template <typename F>
std::string errorOf(F&& operation) {
  try {
    operation();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(Unit, PathsResolveAgainstTheWorkingDirectory) {
  using agent::files::resolvePath;
  EXPECT_EQ(resolvePath("a/b.txt", "/workspace"), fs::path("/workspace/a/b.txt"));
  EXPECT_EQ(resolvePath("/etc/hosts", "/workspace"), fs::path("/etc/hosts"));
  EXPECT_EQ(resolvePath("../tmp/./x", "/workspace/sub"), fs::path("/workspace/tmp/x"));
  EXPECT_EQ(resolvePath(".", "/workspace"), fs::path("/workspace"));
  EXPECT_EQ(resolvePath("dir/", "/workspace"), fs::path("/workspace/dir"));
  EXPECT_EQ(resolvePath("/", "/workspace"), fs::path("/"));
  EXPECT_THROW((void)resolvePath("", "/workspace"), FileOpError);
  EXPECT_THROW((void)resolvePath(std::string_view("a\0b", 3), "/workspace"), FileOpError);
}

TEST(Unit, WriteCreatesParentsSetsModeAndLeavesNoTempFile) {
  TempDir dir;
  const fs::path target = dir.path() / "a" / "b" / "data.bin";
  const std::string data("\x00\x01\xFFzz", 5);
  EXPECT_EQ(agent::files::writeFile(target, data, 0640), 5U);
  EXPECT_EQ(agent::files::readFile(target, 100), data);
  struct stat st {};
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640U);
  EXPECT_EQ(std::distance(fs::directory_iterator(target.parent_path()), fs::directory_iterator()),
            1);
}

TEST(Unit, WriteReplacesAnExistingFile) {
  TempDir dir;
  const fs::path target = dir.path() / "f.txt";
  (void)agent::files::writeFile(target, "first version", 0644);
  (void)agent::files::writeFile(target, "2nd", 0644);
  EXPECT_EQ(agent::files::readFile(target, 100), "2nd");
}

TEST(Unit, WriteOntoADirectoryFailsAndCleansUp) {
  TempDir dir;
  fs::create_directory(dir.path() / "d");
  const std::string error =
      errorOf([&] { (void)agent::files::writeFile(dir.path() / "d", "x", 0644); });
  EXPECT_NE(error.find("Is a directory"), std::string::npos) << error;
  EXPECT_NE(error.find((dir.path() / "d").string()), std::string::npos) << error;
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
}

TEST(Unit, ReadRefusesDirectoriesLargeFilesAndMissingPaths) {
  TempDir dir;
  const fs::path file = dir.path() / "big.txt";
  (void)agent::files::writeFile(file, std::string(100, 'x'), 0644);

  std::string error = errorOf([&] { (void)agent::files::readFile(dir.path(), 10); });
  EXPECT_NE(error.find("Is a directory"), std::string::npos) << error;
  EXPECT_NE(error.find("list_files"), std::string::npos) << error;

  error = errorOf([&] { (void)agent::files::readFile(file, 99); });
  EXPECT_NE(error.find("100 bytes"), std::string::npos) << error;
  EXPECT_NE(error.find("99"), std::string::npos) << error;

  error = errorOf([&] { (void)agent::files::readFile(dir.path() / "nope" / "x", 10); });
  EXPECT_EQ(error, "No such file or directory: " + (dir.path() / "nope" / "x").string() +
                       " \u2014 create the directory first or check the path (list_files shows "
                       "what exists)");
}

TEST(Unit, ReadRefusesAFifoWithoutBlocking) {
  TempDir dir;
  const fs::path fifo = dir.path() / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string error = errorOf([&] { (void)agent::files::readFile(fifo, 10); });
  EXPECT_NE(error.find("Not a regular file"), std::string::npos) << error;
}

TEST(Unit, ListIsSortedTypedAndDoesNotFollowSymlinks) {
  TempDir dir;
  (void)agent::files::writeFile(dir.path() / "b.txt", "12345", 0644);
  fs::create_directory(dir.path() / "a_dir");
  fs::create_symlink("/nonexistent/target", dir.path() / "c_link");
  const auto listing = agent::files::listDirectory(dir.path());
  ASSERT_EQ(listing.entries.size(), 3U);
  EXPECT_FALSE(listing.truncated);
  EXPECT_EQ(listing.entries[0].name, "a_dir");
  EXPECT_EQ(listing.entries[0].type, protocol::FileType::kDir);
  EXPECT_EQ(listing.entries[1].name, "b.txt");
  EXPECT_EQ(listing.entries[1].type, protocol::FileType::kFile);
  EXPECT_EQ(listing.entries[1].size, 5U);
  EXPECT_GT(listing.entries[1].mtime, 1'600'000'000);
  EXPECT_EQ(listing.entries[2].name, "c_link");
  EXPECT_EQ(listing.entries[2].type, protocol::FileType::kSymlink);
}

TEST(Unit, ListOfAFileOrMissingDirectoryExplains) {
  TempDir dir;
  (void)agent::files::writeFile(dir.path() / "f", "x", 0644);
  std::string error = errorOf([&] { (void)agent::files::listDirectory(dir.path() / "f"); });
  EXPECT_NE(error.find("Not a directory"), std::string::npos) << error;
  error = errorOf([&] { (void)agent::files::listDirectory(dir.path() / "missing"); });
  EXPECT_NE(error.find("No such file or directory"), std::string::npos) << error;
}

TEST(Unit, ModesParseFromIntegersAndOctalStrings) {
  EXPECT_EQ(agent::files::parseMode(420), 0644U);
  EXPECT_EQ(agent::files::parseMode("0755"), 0755U);
  EXPECT_EQ(agent::files::parseMode("600"), 0600U);
  EXPECT_THROW((void)agent::files::parseMode(010000), FileOpError);
  EXPECT_THROW((void)agent::files::parseMode("0x1ff"), FileOpError);
  EXPECT_THROW((void)agent::files::parseMode("9"), FileOpError);
}

TEST(Unit, FileRequestsRoundTripBase64AndResolveRelativePaths) {
  TempDir dir;
  std::string unused_data;
  const json written = agent::writeFileRequest(
      json{{"path", "sub/x.bin"}, {"data_b64", "AAH/"}, {"mode", 384}}, dir.path());
  EXPECT_EQ(written["bytes"], 3);
  EXPECT_EQ(written["path"], (dir.path() / "sub" / "x.bin").string());
  const json read = agent::readFileRequest(json{{"path", "sub/x.bin"}, {"max_bytes", 10}},
                                           dir.path(), unused_data);
  EXPECT_EQ(read["data_b64"], "AAH/");
  EXPECT_EQ(read["size"], 3);
  const json listed = agent::listFilesRequest(json{{"path", "sub"}}, dir.path());
  ASSERT_EQ(listed["entries"].size(), 1U);
  EXPECT_EQ(listed["entries"][0]["name"], "x.bin");
  EXPECT_EQ(listed["path"], (dir.path() / "sub").string());
}

TEST(Unit, FileRequestsRejectBadFields) {
  TempDir dir;
  std::string unused_data;
  std::string error = errorOf([&] {
    (void)agent::writeFileRequest(json{{"path", "x"}, {"data_b64", "@@@@"}}, dir.path());
  });
  EXPECT_NE(error.find("data_b64"), std::string::npos) << error;
  error = errorOf([&] {
    (void)agent::readFileRequest(json{{"max_bytes", 1}}, dir.path(), unused_data);
  });
  EXPECT_NE(error.find("\"path\""), std::string::npos) << error;
  error = errorOf([&] {
    (void)agent::writeFileRequest(json{{"path", "x"}, {"data_b64", ""}, {"mode", true}},
                                  dir.path());
  });
  EXPECT_NE(error.find("mode"), std::string::npos) << error;
}

}  // namespace

namespace {

TEST(Unit, ReadFileRangeReadsAnyPartOfAFileOfAnySize) {
  TempDir dir;
  { std::ofstream(dir.path() / "f.txt") << "0123456789"; }
  const auto middle = agent::files::readFileRange(dir.path() / "f.txt", 3, 4);
  EXPECT_EQ(middle.data, "3456");
  EXPECT_EQ(middle.file_size, 10U);
  EXPECT_EQ(agent::files::readFileRange(dir.path() / "f.txt", 8, 100).data, "89");
  EXPECT_EQ(agent::files::readFileRange(dir.path() / "f.txt", 10, 5).data, "");  // at the end
  const std::string past =
      errorOf([&] { (void)agent::files::readFileRange(dir.path() / "f.txt", 11, 1); });
  EXPECT_NE(past.find("Offset past the end"), std::string::npos) << past;
  EXPECT_NE(
      errorOf([&] { (void)agent::files::readFileRange(dir.path(), 0, 1); }).find("Is a directory"),
      std::string::npos);
}

TEST(Unit, ReadFileRequestTakesARange) {
  TempDir dir;
  std::string unused_data;
  { std::ofstream(dir.path() / "f.txt") << "abcdef"; }
  const json read = agent::readFileRequest(json{{"path", "f.txt"}, {"offset", 2}, {"length", 3}},
                                           dir.path(), unused_data);
  EXPECT_EQ(read["data_b64"], "Y2Rl");  // "cde"
  EXPECT_EQ(read["size"], 3);
  EXPECT_EQ(read["offset"], 2);
  EXPECT_EQ(read["file_size"], 6);
  const std::string error = errorOf([&] {
    (void)agent::readFileRequest(json{{"path", "f.txt"}, {"offset", -1}}, dir.path(), unused_data);
  });
  EXPECT_NE(error.find("\"offset\" must be a non-negative integer"), std::string::npos) << error;
}

TEST(Unit, FileRequestsMoveRawBytesAsDataFrames) {
  TempDir dir;
  const std::string bytes("\0\xff raw \x01", 8);
  const json written =
      agent::writeFileRequest(json{{"path", "raw.bin"}, {"data_frame", true}}, dir.path(), &bytes);
  EXPECT_EQ(written["bytes"], 8);
  std::string data;
  const json read =
      agent::readFileRequest(json{{"path", "raw.bin"}, {"data_frame", true}}, dir.path(), data);
  EXPECT_EQ(data, bytes);
  EXPECT_EQ(read["data_frame"], true);
  EXPECT_FALSE(read.contains("data_b64")) << "the content travels once, in the data frame";
  EXPECT_EQ(read["size"], 8);
  data.clear();
  const json range = agent::readFileRequest(
      json{{"path", "raw.bin"}, {"offset", 1}, {"length", 2}, {"data_frame", true}}, dir.path(),
      data);
  EXPECT_EQ(data, bytes.substr(1, 2));
  EXPECT_EQ(range["file_size"], 8);
}

}  // namespace
