#include "operator/kube/watch_decoder.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "operator/kube/api_status.h"

namespace booster::kube {
namespace {

const char kAdded[] =
    R"({"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"10"}}})";
const char kModified[] =
    R"({"type":"MODIFIED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"11"}}})";
const char kDeleted[] =
    R"({"type":"DELETED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"12"}}})";
const char kBookmark[] =
    R"({"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"13"}}})";
const char kGone[] =
    R"json({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}})json";

std::string Stream() {
  return std::string(kAdded) + "\n" + kModified + "\n" + kDeleted + "\n" + kBookmark + "\n";
}

void ExpectFourEvents(const std::vector<WatchEvent>& ev) {
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].type, WatchEventType::kAdded);
  EXPECT_EQ(ev[1].type, WatchEventType::kModified);
  EXPECT_EQ(ev[2].type, WatchEventType::kDeleted);
  EXPECT_EQ(ev[3].type, WatchEventType::kBookmark);
  EXPECT_EQ(JsonString(ev[0].object, "/metadata/resourceVersion"), "10");
  EXPECT_EQ(JsonString(ev[3].object, "/metadata/resourceVersion"), "13");
}

TEST(WatchDecoderTest, WholeStreamInOneChunk) {
  WatchDecoder d;
  std::vector<WatchEvent> ev;
  ASSERT_TRUE(d.Feed(Stream(), &ev).ok());
  ExpectFourEvents(ev);
  EXPECT_EQ(d.buffered(), 0u);
}

TEST(WatchDecoderTest, EverySplitPointGivesTheSameEvents) {
  const std::string s = Stream();
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    WatchDecoder d;
    std::vector<WatchEvent> ev;
    ASSERT_TRUE(d.Feed(s.substr(0, cut), &ev).ok()) << cut;
    ASSERT_TRUE(d.Feed(s.substr(cut), &ev).ok()) << cut;
    ExpectFourEvents(ev);
  }
}

TEST(WatchDecoderTest, OneByteAtATime) {
  const std::string s = Stream();
  WatchDecoder d;
  std::vector<WatchEvent> ev;
  for (char c : s) ASSERT_TRUE(d.Feed(absl::string_view(&c, 1), &ev).ok());
  ExpectFourEvents(ev);
}

TEST(WatchDecoderTest, PartialLineIsHeldUntilNewline) {
  WatchDecoder d;
  std::vector<WatchEvent> ev;
  ASSERT_TRUE(d.Feed(kAdded, &ev).ok());
  EXPECT_TRUE(ev.empty());
  EXPECT_EQ(d.buffered(), sizeof(kAdded) - 1);
  ASSERT_TRUE(d.Feed("\n", &ev).ok());
  EXPECT_EQ(ev.size(), 1u);
}

TEST(WatchDecoderTest, BlankLinesAndCrlfAreIgnored) {
  WatchDecoder d;
  std::vector<WatchEvent> ev;
  ASSERT_TRUE(d.Feed(std::string("\n\r\n") + kAdded + "\r\n\n", &ev).ok());
  EXPECT_EQ(ev.size(), 1u);
}

TEST(WatchDecoderTest, ErrorEventCarries410AsExpired) {
  WatchDecoder d;
  std::vector<WatchEvent> ev;
  ASSERT_TRUE(d.Feed(std::string(kGone) + "\n", &ev).ok());
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, WatchEventType::kError);
  EXPECT_TRUE(IsExpired(ev[0].error)) << ev[0].error;
  EXPECT_NE(ev[0].error.message().find("too old resource version"), std::string::npos);
}

TEST(WatchDecoderTest, ErrorEventWithoutCodeIsStillAnError) {
  WatchDecoder d;
  std::vector<WatchEvent> ev;
  ASSERT_TRUE(d.Feed(R"({"type":"ERROR","object":{"kind":"Status","message":"boom"}})"
                     "\n",
                     &ev)
                  .ok());
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_FALSE(ev[0].error.ok());
  EXPECT_TRUE(absl::IsUnavailable(ev[0].error));
}

TEST(WatchDecoderTest, ErrorCodesOutsideHttpsRangeAreServerErrors) {
  for (const char* code : {"4294967706", "-1", "200", "1e300", "\"410\""}) {
    WatchDecoder d;
    std::vector<WatchEvent> ev;
    ASSERT_TRUE(d.Feed(absl::StrCat(R"({"type":"ERROR","object":{"kind":"Status","code":)", code,
                                    "}}\n"),
                       &ev)
                    .ok())
        << code;
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_FALSE(IsExpired(ev[0].error)) << code << ": " << ev[0].error;
    EXPECT_TRUE(absl::IsUnavailable(ev[0].error)) << code << ": " << ev[0].error;
  }
}

TEST(WatchDecoderTest, MalformedLinesAreErrors) {
  for (const char* bad : {"{not json}\n", "[1,2]\n", R"({"object":{}})"
                                                     "\n",
                          R"({"type":"ADDED"})"
                          "\n",
                          R"({"type":"ADDED","object":"x"})"
                          "\n",
                          R"({"type":"RENAMED","object":{}})"
                          "\n",
                          R"({"type":7,"object":{}})"
                          "\n"}) {
    WatchDecoder d;
    std::vector<WatchEvent> ev;
    absl::Status s = d.Feed(bad, &ev);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << bad << " -> " << s;
    EXPECT_TRUE(ev.empty()) << bad;
  }
}

TEST(WatchDecoderTest, EventsBeforeAMalformedLineAreKept) {
  WatchDecoder d;
  std::vector<WatchEvent> ev;
  absl::Status s = d.Feed(std::string(kAdded) + "\n{oops\n", &ev);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(ev.size(), 1u);
}

TEST(WatchDecoderTest, OverlongLineIsRejected) {
  WatchDecoder d(/*max_line=*/16);
  std::vector<WatchEvent> ev;
  EXPECT_TRUE(d.Feed("0123456789", &ev).ok());
  EXPECT_TRUE(absl::IsResourceExhausted(d.Feed("0123456789", &ev)));
  WatchDecoder d2(16);
  EXPECT_TRUE(absl::IsResourceExhausted(d2.Feed("01234567890123456789\n", &ev)))
      << "a long line inside one chunk is rejected as well";
}

TEST(WatchDecoderTest, EventTypeNames) {
  EXPECT_STREQ(WatchEventTypeName(WatchEventType::kAdded), "ADDED");
  EXPECT_STREQ(WatchEventTypeName(WatchEventType::kBookmark), "BOOKMARK");
  EXPECT_STREQ(WatchEventTypeName(WatchEventType::kError), "ERROR");
}

}  // namespace
}  // namespace booster::kube
