#include "sidecar/feedback/client/report_buffer.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "sidecar/feedback/client/feedback_types.h"

namespace booster::agent {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

// Window i: [t0 + 30i, t0 + 30(i+1)), so a test can tell windows apart after a drop.
FeedbackWindow Window(int i) {
  FeedbackWindow w;
  w.start = kT0 + absl::Seconds(30 * i);
  w.end = w.start + absl::Seconds(30);
  w.metrics["latencyP99"] = {.value = 0.001 * i, .samples = 100};
  return w;
}

// Writes everything Next() yields on the current stream; returns the sequences.
std::vector<uint64_t> SendAll(ReportBuffer& b) {
  std::vector<uint64_t> sent;
  while (const ReportBuffer::Entry* e = b.Next()) {
    sent.push_back(e->sequence);
    b.MarkSent(e->sequence);
  }
  return sent;
}

using Seqs = std::vector<uint64_t>;

// Like SendAll, with whether each was a replay (written on some stream before).
std::pair<Seqs, std::vector<bool>> SendAllNotingReplays(ReportBuffer& b) {
  std::pair<Seqs, std::vector<bool>> out;
  while (const ReportBuffer::Entry* e = b.Next()) {
    out.first.push_back(e->sequence);
    out.second.push_back(e->sent_before);
    b.MarkSent(e->sequence);
  }
  return out;
}

TEST(ReportBufferTest, SequencesStartAtOneAndGrowByOne) {
  ReportBuffer b(10);
  EXPECT_EQ(b.last_sequence(), 0u);
  EXPECT_EQ(b.Add(Window(0)), 1u);
  EXPECT_EQ(b.Add(Window(1)), 2u);
  EXPECT_EQ(b.Add(Window(2)), 3u);
  EXPECT_EQ(b.size(), 3u);
  b.NewStream();
  EXPECT_EQ(SendAll(b), (Seqs{1, 2, 3}));
  EXPECT_EQ(b.Ack(3), 3u);
  EXPECT_EQ(b.Add(Window(3)), 4u) << "acknowledging does not reuse sequences";
}

TEST(ReportBufferTest, OneStreamSendsEachReportOnceInOrderThenNewOnes) {
  ReportBuffer b(10);
  b.Add(Window(0));
  b.Add(Window(1));
  b.NewStream();
  EXPECT_EQ(SendAll(b), (Seqs{1, 2}));
  EXPECT_EQ(b.Next(), nullptr) << "nothing is written twice on one stream";
  b.Add(Window(2));
  const ReportBuffer::Entry* e = b.Next();
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->sequence, 3u);
  EXPECT_EQ(e->window.start, Window(2).start);
  EXPECT_FALSE(e->sent_before);
  b.MarkSent(3);
  EXPECT_EQ(b.Next(), nullptr);
  EXPECT_EQ(b.size(), 3u) << "kept until acknowledged";
}

TEST(ReportBufferTest, AckDropsEverythingUpToTheSequence) {
  ReportBuffer b(10);
  for (int i = 0; i < 5; ++i) b.Add(Window(i));
  b.NewStream();
  SendAll(b);
  EXPECT_EQ(b.Ack(2), 2u);
  EXPECT_EQ(b.size(), 3u);
  EXPECT_EQ(b.Ack(2), 0u) << "a repeated Ack drops nothing more";
  EXPECT_EQ(b.Ack(1), 0u) << "an older Ack drops nothing more";
  EXPECT_EQ(b.Ack(0), 0u);
  EXPECT_EQ(b.Ack(5), 3u);
  EXPECT_EQ(b.size(), 0u);
}

TEST(ReportBufferTest, NewStreamReplaysTheUnacknowledgedOnlyInOrder) {
  ReportBuffer b(10);
  for (int i = 0; i < 4; ++i) b.Add(Window(i));
  b.NewStream();
  EXPECT_EQ(SendAll(b), (Seqs{1, 2, 3, 4}));
  b.Ack(2);  // 3 and 4 were written but the stream died before their Acks
  b.Add(Window(4));
  b.NewStream();
  const auto [sent, replayed] = SendAllNotingReplays(b);
  EXPECT_EQ(sent, (Seqs{3, 4, 5})) << "acknowledged 1 and 2 are never resent";
  EXPECT_EQ(replayed, (std::vector<bool>{true, true, false}));
  // A third stream before any Ack: the same three once more, each once.
  b.NewStream();
  EXPECT_EQ(SendAll(b), (Seqs{3, 4, 5}));
}

// A new operator leader never saw what the old one acknowledged: with a history, the next
// stream sends the newest acknowledged entries again, oldest first, before the
// unacknowledged ones; the stream that acknowledged them does not.
TEST(ReportBufferTest, NewStreamReplaysTheHistoryThenTheUnacknowledged) {
  ReportBuffer b(10, /*history=*/3);
  for (int i = 0; i < 6; ++i) b.Add(Window(i));
  b.NewStream();
  EXPECT_EQ(SendAll(b), (Seqs{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(b.Ack(5), 5u);
  EXPECT_EQ(b.size(), 1u) << "unacknowledged";
  EXPECT_EQ(b.history_size(), 3u) << "the newest three acknowledged";
  EXPECT_EQ(b.Next(), nullptr) << "nothing again on the stream that acknowledged them";
  b.Add(Window(6));
  EXPECT_EQ(SendAll(b), (Seqs{7}));
  b.NewStream();
  const auto [sent, replayed] = SendAllNotingReplays(b);
  EXPECT_EQ(sent, (Seqs{3, 4, 5, 6, 7}));
  EXPECT_EQ(replayed, (std::vector<bool>(5, true)));
  EXPECT_EQ(b.Ack(7), 2u);
  EXPECT_EQ(b.history_size(), 3u);
  EXPECT_EQ(b.dropped(), 0u) << "history forgotten is not a dropped report";
  b.NewStream();
  EXPECT_EQ(SendAll(b), (Seqs{5, 6, 7}));
}

TEST(ReportBufferTest, WithoutHistoryAnAcknowledgedEntryIsGone) {
  ReportBuffer b(10);
  for (int i = 0; i < 3; ++i) b.Add(Window(i));
  b.NewStream();
  SendAll(b);
  b.Ack(3);
  EXPECT_EQ(b.history_size(), 0u);
  b.NewStream();
  EXPECT_EQ(b.Next(), nullptr);
}

TEST(ReportBufferTest, StreamThatDiesMidReplayResumesFromTheOldestUnacknowledged) {
  ReportBuffer b(10);
  for (int i = 0; i < 3; ++i) b.Add(Window(i));
  b.NewStream();
  const ReportBuffer::Entry* e = b.Next();
  ASSERT_NE(e, nullptr);
  b.MarkSent(e->sequence);  // 1 written, then the stream dies
  b.NewStream();
  EXPECT_EQ(SendAll(b), (Seqs{1, 2, 3}));
}

TEST(ReportBufferTest, FullBufferDropsTheOldestAndCountsIt) {
  ReportBuffer b(3);
  for (int i = 0; i < 5; ++i) b.Add(Window(i));
  EXPECT_EQ(b.size(), 3u);
  EXPECT_EQ(b.dropped(), 2u);
  EXPECT_EQ(b.last_sequence(), 5u);
  b.NewStream();
  const ReportBuffer::Entry* first = b.Next();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->sequence, 3u);
  EXPECT_EQ(first->window.start, Window(2).start) << "the newest windows are kept";
  EXPECT_EQ(SendAll(b), (Seqs{3, 4, 5}));

  // A written but unacknowledged report is dropped like any other when the buffer fills.
  b.Add(Window(5));
  EXPECT_EQ(b.dropped(), 3u);
  b.NewStream();
  EXPECT_EQ(SendAll(b), (Seqs{4, 5, 6}));
}

TEST(ReportBufferTest, AckBeyondWhatWasSentCoversOnlyWhatWasSent) {
  ReportBuffer b(10);
  for (int i = 0; i < 3; ++i) b.Add(Window(i));
  b.NewStream();
  const ReportBuffer::Entry* e = b.Next();
  ASSERT_NE(e, nullptr);
  b.MarkSent(e->sequence);
  EXPECT_EQ(b.Ack(99), 1u) << "2 and 3 were never sent: an Ack cannot cover them";
  EXPECT_EQ(SendAll(b), (Seqs{2, 3}));
  ReportBuffer unsent(10);
  unsent.Add(Window(0));
  EXPECT_EQ(unsent.Ack(1), 0u);
  EXPECT_EQ(unsent.size(), 1u);
}

TEST(ReportBufferTest, CapacityIsAtLeastOne) {
  ReportBuffer b(0);
  EXPECT_EQ(b.capacity(), 1u);
  b.Add(Window(0));
  b.Add(Window(1));
  EXPECT_EQ(b.size(), 1u);
  EXPECT_EQ(b.dropped(), 1u);
}

TEST(ValidateFeedbackWindowTest, AcceptsAWellFormedWindow) {
  EXPECT_TRUE(ValidateFeedbackWindow(Window(0)).ok());
  FeedbackWindow no_metrics = Window(0);
  no_metrics.metrics.clear();
  EXPECT_TRUE(ValidateFeedbackWindow(no_metrics).ok()) << "nothing measured is still a window";
  FeedbackWindow go = Window(0);
  go.go_version = "go1.25rc2 X:nocoverageredesign";
  go.app_cpus = 4;
  go.go_default_godebug = "containermaxprocs=0,updatemaxprocs=0";
  EXPECT_TRUE(ValidateFeedbackWindow(go).ok());
}

TEST(ValidateFeedbackWindowTest, RefusesWhatTheOperatorWouldRefuse) {
  struct Case {
    const char* name;
    FeedbackWindow window;
    const char* message;
  };
  std::vector<Case> cases;
  FeedbackWindow w = Window(0);
  w.end = w.start;
  cases.push_back({"empty", w, "at or before its start"});
  w = Window(0);
  w.end = w.start - absl::Seconds(1);
  cases.push_back({"backwards", w, "at or before its start"});
  w = Window(0);
  w.start = absl::InfinitePast();
  cases.push_back({"infinite start", w, "not a representable time range"});
  w = Window(0);
  w.end = absl::FromUnixSeconds(std::numeric_limits<int64_t>::max() / 2);
  cases.push_back({"beyond 2262", w, "not a representable time range"});
  w = Window(0);
  w.metrics["throughput"] = {.value = std::nan(""), .samples = 1};
  cases.push_back({"NaN", w, "throughput is not finite"});
  w = Window(0);
  w.metrics["errorRate"] = {.value = std::numeric_limits<double>::infinity()};
  cases.push_back({"infinite value", w, "errorRate is not finite"});
  w = Window(0);
  w.metrics["latencyP50"] = {.value = 1, .samples = -1};
  cases.push_back({"negative samples", w, "negative sample count"});
  w = Window(0);
  w.metrics[""] = {.value = 1};
  cases.push_back({"unnamed", w, "empty name"});
  w = Window(0);
  w.go_version = "go1.26\xff";  // not UTF-8: the operator could not parse the message
  cases.push_back({"binary Go version", w, "printable ASCII"});
  w = Window(0);
  w.go_version = "go1." + std::string(200, '9');
  cases.push_back({"long Go version", w, "at most 128"});
  w = Window(0);
  w.app_cpus = -1;
  cases.push_back({"negative CPUs", w, "app_cpus is negative"});
  w = Window(0);
  w.go_default_godebug = "a=1\n";
  cases.push_back({"GODEBUG with a newline", w, "default GODEBUG is not"});
  for (const Case& c : cases) {
    absl::Status s = ValidateFeedbackWindow(c.window);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << c.name << ": " << s;
    EXPECT_TRUE(absl::StrContains(s.message(), c.message)) << c.name << ": " << s;
  }
}

}  // namespace
}  // namespace booster::agent
