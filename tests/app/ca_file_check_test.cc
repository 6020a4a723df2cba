// The check of an operator's CA file (app/ca_file_check.h), run at start-up and by doctor.
#include "app/ca_file_check.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace {

// A self-signed test CA (EC P-256), made once with the openssl command line.
constexpr const char* kCertificate =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBlDCCATmgAwIBAgIUDE43oOZFZrbCrWck/D9wpj424DQwCgYIKoZIzj0EAwIw\n"
    "HjEcMBoGA1UEAwwTc2FuZGJveC1tY3AgdGVzdCBDQTAgFw0yNjExMjYxNjI0NDJa\n"
    "GA8yMTI2MTEwMjE2MjQ0MlowHjEcMBoGA1UEAwwTc2FuZGJveC1tY3AgdGVzdCBD\n"
    "QTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABIwD50vVzP+UL6NuJl1PXSPZO4nY\n"
    "ZE2PG5lLhiks2AtlacdZntJsvgA5OOrtoJOlWn8tZVZS3gRE5ZGxbuHs+8ejUzBR\n"
    "MB0GA1UdDgQWBBQV1iFdN7PFSVHN9gHJJv6zNlTbqDAfBgNVHSMEGDAWgBQV1iFd\n"
    "N7PFSVHN9gHJJv6zNlTbqDAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0kA\n"
    "MEYCIQD5BjVq3zYoxE4uAgFSW8HO6jETdI/oQ6GD8Bof1Io5dAIhAO9Z/1SJQ5lD\n"
    "c0+dIN2l4tMBc2tGGqoo4XsyK2QxuHwY\n"
    "-----END CERTIFICATE-----\n";

class CaFileCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("ca-file-check-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    auto path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(CaFileCheckTest, AFileOfPemCertificatesPassesAndCountsThem) {
  const auto path = write("two.pem", std::string("a comment line\n") + kCertificate + kCertificate);
  const auto check = app::caFileCheck("mcp.upstream_ca_file", path);
  EXPECT_TRUE(check.ok) << check.detail;
  EXPECT_EQ(check.name, "mcp.upstream_ca_file");
  EXPECT_EQ(check.detail, path + ": 2 certificates");
}

TEST_F(CaFileCheckTest, AFileWithoutACertificateFailsNamingTheSetting) {
  const auto path = write("bad.pem", "not a certificate\n");
  const auto check = app::caFileCheck("egress.upstream_ca_file", path);
  EXPECT_FALSE(check.ok);
  EXPECT_EQ(check.detail, path +
                              " holds no PEM certificate (-----BEGIN CERTIFICATE-----): fix the "
                              "file or unset egress.upstream_ca_file");
}

// The egress proxy refuses a file with a broken block, so a good certificate before it is no pass.
TEST_F(CaFileCheckTest, ABrokenBlockFailsEvenAfterAGoodCertificate) {
  const std::string whole = kCertificate;
  for (const auto& text : {whole.substr(0, whole.size() / 2), whole + whole.substr(0, 80)}) {
    const auto path = write("broken.pem", text);
    const auto check = app::caFileCheck("mcp.upstream_ca_file", path);
    EXPECT_FALSE(check.ok) << text;
    EXPECT_NE(check.detail.find(path + " holds a block that is not a whole PEM certificate"),
              std::string::npos)
        << check.detail;
    EXPECT_NE(check.detail.find("unset mcp.upstream_ca_file"), std::string::npos);
  }
}

TEST_F(CaFileCheckTest, AMissingFileOrADirectoryFailsSayingWhy) {
  const auto missing = (dir_ / "missing.pem").string();
  const auto check = app::caFileCheck("mcp.upstream_ca_file", missing);
  EXPECT_FALSE(check.ok);
  EXPECT_EQ(check.detail, missing +
                              " cannot be read (No such file or directory): fix the file or unset "
                              "mcp.upstream_ca_file");
  const auto directory = app::caFileCheck("mcp.upstream_ca_file", dir_.string());
  EXPECT_FALSE(directory.ok);
  EXPECT_EQ(directory.detail,
            dir_.string() + " is not a file: fix the file or unset mcp.upstream_ca_file");
}

}  // namespace
