#include "sandbox/docker/stream_demux.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using sandbox::docker::DemuxError;
using sandbox::docker::StreamDemux;

std::string record(char stream, const std::string& payload) {
  const auto n = static_cast<std::uint32_t>(payload.size());
  std::string out{stream,
                  0,
                  0,
                  0,
                  static_cast<char>((n >> 24U) & 0xFFU),
                  static_cast<char>((n >> 16U) & 0xFFU),
                  static_cast<char>((n >> 8U) & 0xFFU),
                  static_cast<char>(n & 0xFFU)};
  return out + payload;
}

TEST(StreamDemux, SplitsStdoutAndStderrRecords) {
  StreamDemux demux;
  std::string out, err;
  demux.feed(record(1, "hello ") + record(2, "warn\n") + record(1, "world"), out, err);
  EXPECT_EQ(out, "hello world");
  EXPECT_EQ(err, "warn\n");
  EXPECT_TRUE(demux.atBoundary());
}

TEST(StreamDemux, HandlesEverySplitPointOneByteAtATime) {
  const std::string wire = record(1, "abc") + record(2, "") + record(2, "E") +
                           record(1, std::string(70000, 'x')) + record(1, "z");
  for (const std::size_t chunk : {std::size_t{1}, std::size_t{3}, std::size_t{7}, std::size_t{8},
                                  std::size_t{9}, std::size_t{4096}}) {
    StreamDemux demux;
    std::string out, err;
    for (std::size_t i = 0; i < wire.size(); i += chunk) {
      demux.feed(std::string_view(wire).substr(i, chunk), out, err);
    }
    EXPECT_EQ(out, "abc" + std::string(70000, 'x') + "z") << "chunk " << chunk;
    EXPECT_EQ(err, "E") << "chunk " << chunk;
    EXPECT_TRUE(demux.atBoundary());
  }
}

TEST(StreamDemux, ReportsAPartialRecordAsNotAtBoundary) {
  StreamDemux demux;
  std::string out, err;
  const std::string wire = record(1, "abcdef");
  demux.feed(std::string_view(wire).substr(0, 5), out, err);
  EXPECT_FALSE(demux.atBoundary());
  demux.feed(std::string_view(wire).substr(5, 4), out, err);
  EXPECT_EQ(out, "a");
  EXPECT_FALSE(demux.atBoundary());
}

TEST(StreamDemux, DecodesSizesAbove255BigEndian) {
  StreamDemux demux;
  std::string out, err;
  demux.feed(record(2, std::string(0x0102, 'q')), out, err);
  EXPECT_EQ(err.size(), 0x0102U);
  EXPECT_TRUE(out.empty());
}

TEST(StreamDemux, RejectsUnknownStreamIds) {
  StreamDemux demux;
  std::string out, err;
  EXPECT_THROW(demux.feed(record(7, "x"), out, err), DemuxError);
}

}  // namespace
