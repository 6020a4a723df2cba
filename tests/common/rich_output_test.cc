// common::parseRichOutput reads images and table summaries that sandbox code produced: what it
// keeps, and what it refuses, for hostile input as much as for honest input.
#include "common/rich_output.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using nlohmann::json;

// The smallest byte string pngSize accepts: signature, IHDR length and type, width, height.
std::string pngHeader(std::uint32_t width, std::uint32_t height) {
  std::string png("\x89PNG\r\n\x1a\n", 8);
  png += std::string("\0\0\0\x0d", 4) + "IHDR";
  for (const std::uint32_t value : {width, height}) {
    for (int shift = 24; shift >= 0; shift -= 8) {
      png.push_back(static_cast<char>((value >> static_cast<unsigned>(shift)) & 0xFFU));
    }
  }
  png += std::string(17, '\0');  // bit depth ... CRC: not read
  return png;
}

json imageEntry(const std::string& png, json extra = json::object()) {
  json entry{{"data_b64", common::base64Encode(png)}};
  entry.update(extra);
  return entry;
}

TEST(RichOutput, PngSizeReadsTheHeaderAndRejectsAnythingElse) {
  EXPECT_EQ(common::pngSize(pngHeader(640, 480)),
            std::make_pair(std::int64_t{640}, std::int64_t{480}));
  EXPECT_FALSE(common::pngSize("GIF89a............................"));
  EXPECT_FALSE(common::pngSize(pngHeader(640, 480).substr(0, 23)));
  EXPECT_FALSE(common::pngSize(pngHeader(0, 480)));
}

TEST(RichOutput, KeepsAnImageWithItsSizeReadFromThePngNotFromClaims) {
  const json reply{{"images",
                    {imageEntry(pngHeader(300, 200), {{"path", "/tmp/f/figure-1-1.png"},
                                                      {"width", 3000},
                                                      {"height", 2000},
                                                      {"bytes", 123456}})}}};
  const auto rich = common::parseRichOutput(reply, {});
  ASSERT_EQ(rich.images.size(), 1U);
  const auto& image = rich.images[0];
  EXPECT_EQ(image.data_width, 300);
  EXPECT_EQ(image.data_height, 200);
  EXPECT_EQ(image.data_bytes, pngHeader(300, 200).size());
  EXPECT_EQ(image.path, "/tmp/f/figure-1-1.png");
  EXPECT_EQ(image.width, 3000);  // the full-size file's, as reported
  EXPECT_EQ(image.bytes, 123456U);
  EXPECT_TRUE(rich.dropped.empty());
}

TEST(RichOutput, RefusesWhatBreaksTheLimitsAndSaysWhy) {
  common::ImageLimits limits;
  limits.max_count = 2;
  limits.max_px = 1000;
  limits.max_bytes = 4096;
  struct Case {
    const char* name;
    json entry;
    const char* reason;
  };
  const Case cases[] = {
      {"not a PNG", imageEntry(std::string(64, 'x')), "not a PNG"},
      {"not base64", json{{"data_b64", "%%%%"}}, "or not base64"},
      {"no data", json{{"path", "/tmp/a.png"}}, "has no PNG data"},
      {"data not a string", json{{"data_b64", 5}}, "has no PNG data"},
      {"too wide", imageEntry(pngHeader(1001, 10)), "larger than 1000 px"},
      {"too tall", imageEntry(pngHeader(10, 5000)), "larger than 1000 px"},
      {"too many bytes", imageEntry(pngHeader(10, 10) + std::string(5000, '\0')),
       "larger than 4096 bytes"},
  };
  for (const auto& c : cases) {
    const auto rich = common::parseRichOutput(json{{"images", {c.entry}}}, limits);
    EXPECT_TRUE(rich.images.empty()) << c.name;
    ASSERT_EQ(rich.dropped.size(), 1U) << c.name;
    EXPECT_NE(rich.dropped[0].find(c.reason), std::string::npos)
        << c.name << ": " << rich.dropped[0];
  }
  json many = json::array();
  for (int i = 0; i < 100; ++i) many.push_back(imageEntry(pngHeader(10, 10)));
  const auto rich = common::parseRichOutput(json{{"images", many}}, limits);
  EXPECT_EQ(rich.images.size(), 2U);
  ASSERT_EQ(rich.dropped.size(), 1U);
  EXPECT_NE(rich.dropped[0].find("images.max_per_call"), std::string::npos);
}

TEST(RichOutput, AFloodOfBadEntriesIsLookedAtOnlyUpToTheBoundAndCostsAFewLines) {
  json flood = json::array();
  for (int i = 0; i < 100000; ++i) flood.push_back(json{{"data_b64", 5}});
  const json reply{{"images", std::move(flood)}};
  const auto rich = common::parseRichOutput(reply, {});
  EXPECT_TRUE(rich.images.empty());
  ASSERT_EQ(rich.dropped.size(), common::kMaxDroppedNotes + 1);
  // Entries past kMaxImageEntries are not even looked at: the count proves where it stopped.
  EXPECT_EQ(rich.dropped.back(),
            std::to_string(common::kMaxImageEntries + 1 - common::kMaxDroppedNotes) +
                " more image(s) were refused");
}

TEST(RichOutput, TheBoundIsOnDecodedBytesAndWhatIsSentOnIsCanonicalBase64) {
  common::ImageLimits limits;
  limits.max_bytes = 100;
  const std::string exact = pngHeader(5, 5) + std::string(100 - 41, 'p');
  const std::string over = exact + "p";
  std::string wrapped = common::base64Encode(exact);
  wrapped.insert(8, "\n");  // accepted by the decoder, never passed on as sent
  const auto rich = common::parseRichOutput(
      json{{"images", {json{{"data_b64", wrapped}}, imageEntry(over)}}}, limits);
  ASSERT_EQ(rich.images.size(), 1U);
  EXPECT_EQ(rich.images[0].data_b64, common::base64Encode(exact));
  EXPECT_EQ(rich.images[0].data_bytes, 100U);
  ASSERT_EQ(rich.dropped.size(), 1U);
  EXPECT_NE(rich.dropped[0].find("image 2 is larger than 100 bytes"), std::string::npos);
}

TEST(RichOutput, AllImagesOfOneExecutionShareOneByteBudget) {
  common::ImageLimits limits;
  limits.max_count = 32;
  limits.max_bytes = common::kMaxImageBytesLimit;
  const std::string big = pngHeader(10, 10) + std::string(3 * 1024 * 1024, 'p');
  json images = json::array();
  for (int i = 0; i < 4; ++i) images.push_back(imageEntry(big));
  const auto rich = common::parseRichOutput(json{{"images", images}}, limits);
  EXPECT_EQ(rich.images.size(), 2U) << "8 MiB in all: two of 3 MiB fit, a third does not";
  ASSERT_EQ(rich.dropped.size(), 2U);
  EXPECT_NE(rich.dropped[0].find("may hold 8388608 bytes in all"), std::string::npos);
}

TEST(RichOutput, TableFieldsOfTheWrongTypeAreDroppedNotThrown) {
  for (const json& cut : {json("yes"), json(1), json::array(), json(nullptr)}) {
    const json reply{{"table", {{"kind", "Series"}, {"shape", {3}}, {"dtypes_cut", cut}}}};
    common::RichOutput rich;
    EXPECT_NO_THROW(rich = common::parseRichOutput(reply, {})) << cut;
    ASSERT_TRUE(rich.table);
    EXPECT_FALSE(rich.table->dtypes_cut) << cut;
  }
  // A long name is cut on a character boundary: 200 two-byte characters, cut at 256 bytes.
  std::string name;
  for (int i = 0; i < 200; ++i) name += "\xc3\xa9";
  const json reply{
      {"table", {{"kind", "Series"}, {"dtypes", json::array({json::array({name, "float64"})})}}}};
  const auto rich = common::parseRichOutput(reply, {});
  ASSERT_EQ(rich.table->dtypes.size(), 1U);
  EXPECT_EQ(rich.table->dtypes[0].first.size(), 256U);
  EXPECT_TRUE(common::isValidUtf8(rich.table->dtypes[0].first));
}

TEST(RichOutput, IgnoresShapesItDoesNotKnow) {
  for (const json& reply :
       {json{{"images", "x"}}, json{{"images", {1, "two", nullptr}}}, json{{"table", 7}},
        json{{"table", {{"kind", "Matrix"}, {"shape", {2, 2}}}}}, json::object()}) {
    const auto rich = common::parseRichOutput(reply, {});
    EXPECT_TRUE(rich.images.empty()) << reply;
    EXPECT_FALSE(rich.table) << reply;
  }
}

TEST(RichOutput, PathsMustBeAbsoluteAndShortElseTheImageStandsAlone) {
  for (const json& path : {json("figure.png"), json(""), json(std::string(5000, '/')), json(42)}) {
    const auto rich = common::parseRichOutput(
        json{{"images", {imageEntry(pngHeader(8, 6), {{"path", path}, {"width", 99}})}}}, {});
    ASSERT_EQ(rich.images.size(), 1U);
    EXPECT_TRUE(rich.images[0].path.empty());
    EXPECT_EQ(rich.images[0].width, 8) << "without a file, the sizes are the inline image's";
  }
}

TEST(RichOutput, TableSummaryIsCappedAndRoundTrips) {
  json dtypes = json::array();
  for (int i = 0; i < 500; ++i) dtypes.push_back({"c" + std::to_string(i), "int64"});
  dtypes.push_back({std::string(10000, 'n'), "object"});
  const json reply{{"table", {{"kind", "DataFrame"}, {"shape", {1000, 501}}, {"dtypes", dtypes}}},
                   {"images", {imageEntry(pngHeader(4, 4), {{"path", "/tmp/x.png"}})}}};
  const auto rich = common::parseRichOutput(reply, {});
  ASSERT_TRUE(rich.table);
  EXPECT_EQ(rich.table->kind, "DataFrame");
  EXPECT_EQ(rich.table->shape, (std::vector<std::int64_t>{1000, 501}));
  EXPECT_EQ(rich.table->dtypes.size(), common::kMaxTableColumns);
  EXPECT_TRUE(rich.table->dtypes_cut);

  json written = json::object();
  common::writeRichOutput(written, rich);
  const auto again = common::parseRichOutput(written, {});
  ASSERT_TRUE(again.table);
  EXPECT_EQ(again.table->dtypes, rich.table->dtypes);
  EXPECT_TRUE(again.table->dtypes_cut);
  ASSERT_EQ(again.images.size(), 1U);
  EXPECT_EQ(again.images[0].data_b64, rich.images[0].data_b64);
  EXPECT_EQ(again.images[0].path, "/tmp/x.png");
}

}  // namespace
