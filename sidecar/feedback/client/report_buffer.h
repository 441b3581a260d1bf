// ReportBuffer: the pure core of the agent's reporting — sequence numbers, the bounded
// buffer of unacknowledged windows, and what to (re)send on a stream. No I/O, no clock,
// not thread-safe (the FeedbackClient guards it with its mutex).
//
// In: windows (Add), "a stream started" (NewStream), "this one was written" (MarkSent),
// Acks (Ack). Out: the next report to write (Next) and counts. Invariants:
//   - sequences start at 1 and grow by 1 per Add; an entry is kept until an Ack covers it
//     or it is pushed out as the oldest when the buffer is full (counted in dropped());
//   - an acknowledged entry moves to the history: the newest `history` acknowledged
//     entries are kept (older ones forgotten, not counted as dropped);
//   - on one stream, Next() yields every held entry once, in sequence order: after
//     NewStream() the history and the unacknowledged ones first (a replay), then new ones
//     as they arrive. The history is what a new operator leader never saw: the old leader
//     acknowledged it and died with it (the server counts the same window once, so a
//     replay to the same leader is harmless);
//   - on the stream that acknowledged it, an entry is never yielded again; an Ack beyond
//     what was ever sent covers only what was sent.
//
//   ReportBuffer buffer(/*capacity=*/1000, /*history=*/720);
//   buffer.Add(window);                            // -> sequence 1
//   buffer.NewStream();                            // a new stream: replay from the oldest
//   while (const ReportBuffer::Entry* e = buffer.Next()) {
//     buffer.MarkSent(e->sequence);
//     Write(*e);
//   }
//   buffer.Ack(1);                                 // from the operator's Ack
#ifndef BOOSTER_SIDECAR_FEEDBACK_CLIENT_REPORT_BUFFER_H_
#define BOOSTER_SIDECAR_FEEDBACK_CLIENT_REPORT_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <deque>

#include "sidecar/feedback/client/feedback_types.h"

namespace booster::agent {

class ReportBuffer {
 public:
  struct Entry {
    uint64_t sequence = 0;
    FeedbackWindow window;
    bool sent_before = false;  // written on some stream already: sending it again replays it
  };

  // `capacity` (unacknowledged entries) is at least 1; `history` acknowledged entries are
  // kept for the next stream.
  explicit ReportBuffer(size_t capacity, size_t history = 0);

  // Holds `window` under the next sequence number and returns it. When the buffer is
  // full the oldest entry is dropped first (sent or not) and counted.
  uint64_t Add(FeedbackWindow window);

  // A new stream: every held entry is to be written on it again, oldest first.
  void NewStream();

  // The next entry to write on the current stream, or nullptr when all are written.
  // Valid until the next call of a non-const method.
  const Entry* Next() const;

  // `sequence` (the one Next() returned) is being written on the current stream. Call it
  // before the write: the operator's Ack may arrive before the write returns, and an Ack
  // covers only what was marked. (If the write fails, the stream is over: NewStream().)
  void MarkSent(uint64_t sequence);

  // Moves every entry up to `sequence` to the history, but not beyond the highest sequence
  // ever sent. Returns how many were acknowledged.
  size_t Ack(uint64_t sequence);

  size_t size() const { return entries_.size(); }  // unacknowledged
  size_t history_size() const { return history_.size(); }
  size_t capacity() const { return capacity_; }
  uint64_t dropped() const { return dropped_; }  // pushed out when full
  uint64_t last_sequence() const { return last_sequence_; }

 private:
  const size_t capacity_;
  const size_t history_capacity_;
  std::deque<Entry> history_;  // acknowledged, ascending sequence, all before entries_
  std::deque<Entry> entries_;  // unacknowledged, ascending sequence
  uint64_t last_sequence_ = 0;
  uint64_t sent_through_ = 0;  // on the current stream
  uint64_t highest_sent_ = 0;  // on any stream
  uint64_t dropped_ = 0;
};

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_FEEDBACK_CLIENT_REPORT_BUFFER_H_
