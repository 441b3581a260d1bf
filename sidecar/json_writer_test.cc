#include "sidecar/json_writer.h"

#include <limits>

#include "gtest/gtest.h"

namespace booster::agent {
namespace {

TEST(JsonWriterTest, NestsWithCommas) {
  JsonWriter w;
  w.BeginObject();
  w.Key("cpus");
  w.IntArray({0, 1});
  w.Key("o");
  w.BeginObject();
  w.Key("a");
  w.Bool(true);
  w.Key("b");
  w.Null();
  w.EndObject();
  w.Key("d");
  w.Double(0.5);
  w.Key("u");
  w.Uint(18446744073709551615u);
  w.EndObject();
  EXPECT_EQ(w.str(), R"({"cpus":[0,1],"o":{"a":true,"b":null},"d":0.5,"u":18446744073709551615})");
}

TEST(JsonWriterTest, EscapesStrings) {
  EXPECT_EQ(JsonQuote("a\"b\\c\nd\x01"), R"("a\"b\\c\nd\u0001")");
}

TEST(JsonWriterTest, NonFiniteBecomesNull) {
  JsonWriter w;
  w.BeginArray();
  w.Double(std::numeric_limits<double>::infinity());
  w.Double(std::numeric_limits<double>::quiet_NaN());
  w.EndArray();
  EXPECT_EQ(w.str(), "[null,null]");
}

}  // namespace
}  // namespace booster::agent
