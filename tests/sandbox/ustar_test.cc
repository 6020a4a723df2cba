#include "sandbox/docker/ustar.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

using sandbox::docker::UstarWriter;

unsigned long octal(const std::string& archive, std::size_t offset, std::size_t width) {
  return std::strtoul(archive.substr(offset, width).c_str(), nullptr, 8);
}

TEST(UstarWriter, WritesAHeaderWithAValidChecksumAndPaddedBody) {
  UstarWriter writer;
  writer.addFile("Dockerfile", "FROM scratch\n", 0644, 1700000000);
  const std::string archive = writer.finish();
  ASSERT_EQ(archive.size(), 512U + 512U + 1024U);  // header, one data block, two end blocks
  EXPECT_EQ(archive.substr(0, 10), "Dockerfile");
  EXPECT_EQ(archive.substr(257, 6), std::string("ustar\0", 6));
  EXPECT_EQ(archive[156], '0');
  EXPECT_EQ(octal(archive, 124, 12), 13U);
  EXPECT_EQ(octal(archive, 100, 8), 0644U);
  EXPECT_EQ(octal(archive, 136, 12), 1700000000U);
  unsigned long sum = 0;
  for (std::size_t i = 0; i < 512; ++i) {
    sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(archive[i]);
  }
  EXPECT_EQ(octal(archive, 148, 8), sum);
  EXPECT_EQ(archive.substr(512, 13), "FROM scratch\n");
  EXPECT_EQ(archive.find_first_not_of('\0', 512 + 13), std::string::npos);
}

TEST(UstarWriter, ProducesArchivesThatSystemTarReads) {
  UstarWriter writer;
  writer.addFile("Dockerfile", "FROM sandbox-mcp/python:latest\nRUN echo hi > /x\n");
  writer.addFile("exactly-512", std::string(512, 'a'));
  writer.addFile("empty", "");
  const std::string path = ::testing::TempDir() + "ustar_test.tar";
  std::ofstream(path, std::ios::binary) << writer.finish();

  FILE* pipe = ::popen(("tar -xOf " + path + " Dockerfile 2>&1").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string extracted;
  char buffer[256];
  while (const auto n = std::fread(buffer, 1, sizeof buffer, pipe)) extracted.append(buffer, n);
  EXPECT_EQ(::pclose(pipe), 0) << extracted;
  EXPECT_EQ(extracted, "FROM sandbox-mcp/python:latest\nRUN echo hi > /x\n");

  pipe = ::popen(("tar -tvf " + path + " 2>&1").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string listing;
  while (const auto n = std::fread(buffer, 1, sizeof buffer, pipe)) listing.append(buffer, n);
  EXPECT_EQ(::pclose(pipe), 0) << listing;
  EXPECT_NE(listing.find(" 512 "), std::string::npos) << listing;
  EXPECT_NE(listing.find("empty"), std::string::npos) << listing;
}

TEST(UstarWriter, RejectsNamesTarCannotHold) {
  UstarWriter writer;
  EXPECT_THROW(writer.addFile("", "x"), std::invalid_argument);
  EXPECT_THROW(writer.addFile(std::string(101, 'n'), "x"), std::invalid_argument);
}

}  // namespace
