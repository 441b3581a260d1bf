#include "sidecar/apply/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/base/file_util.h"

namespace booster::agent {
namespace {

std::string TempDir() {
  char tmpl[] = "/tmp/booster-journal-XXXXXX";
  return mkdtemp(tmpl);
}

TEST(JournalTest, EncodingRoundTripsAwkwardValues) {
  JournalEntry e{
      "sysctl",
      {"net", "4026531840", "net.ipv4.tcp_rmem", "4096\t131072 6291456", "", "100%", "a b\nc"}};
  std::string line = EncodeJournalEntry(e);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.find('\t'), std::string::npos);
  absl::StatusOr<JournalEntry> back = DecodeJournalEntry(line);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, e);
  EXPECT_FALSE(DecodeJournalEntry("x %4").ok());
  EXPECT_FALSE(DecodeJournalEntry("x %ZZ").ok());
}

TEST(JournalTest, SurvivesReopenAndClears) {
  std::string dir = TempDir();
  std::string path = dir + "/agent.journal";
  {
    absl::StatusOr<Journal> j = Journal::Open(path);
    ASSERT_TRUE(j.ok());
    EXPECT_TRUE(j->empty());
    ASSERT_TRUE(j->Append({{"a", {"1"}}, {"b", {"2", "3"}}}).ok());
    ASSERT_TRUE(j->Append({{"c", {}}}).ok());
  }
  absl::StatusOr<Journal> j = Journal::Open(path);
  ASSERT_TRUE(j.ok());
  ASSERT_EQ(j->entries().size(), 3u);
  EXPECT_EQ(j->entries()[1], (JournalEntry{"b", {"2", "3"}}));
  ASSERT_TRUE(j->Clear().ok());
  EXPECT_TRUE(Journal::Open(path)->empty());
  std::system(("rm -rf " + dir).c_str());
}

TEST(JournalTest, TornLastLineIsIgnored) {
  std::string dir = TempDir();
  std::string path = dir + "/agent.journal";
  ASSERT_TRUE(WriteFileAtomically(path, "a 1\nb 2\nc 3 par").ok());
  absl::StatusOr<Journal> j = Journal::Open(path);
  ASSERT_TRUE(j.ok());
  ASSERT_EQ(j->entries().size(), 2u);
  EXPECT_EQ(j->entries()[1].kind, "b");
  std::system(("rm -rf " + dir).c_str());
}

TEST(JournalTest, CorruptLineIsDataLoss) {
  std::string dir = TempDir();
  std::string path = dir + "/agent.journal";
  ASSERT_TRUE(WriteFileAtomically(path, "a %G1\n").ok());
  EXPECT_EQ(Journal::Open(path).status().code(), absl::StatusCode::kDataLoss);
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace booster::agent
