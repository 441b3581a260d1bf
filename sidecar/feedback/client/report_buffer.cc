#include "sidecar/feedback/client/report_buffer.h"

#include <algorithm>
#include <utility>

namespace booster::agent {
namespace {

bool SequenceBefore(const ReportBuffer::Entry& e, uint64_t sequence) {
  return e.sequence < sequence;
}

}  // namespace

ReportBuffer::ReportBuffer(size_t capacity, size_t history)
    : capacity_(std::max<size_t>(capacity, 1)), history_capacity_(history) {}

uint64_t ReportBuffer::Add(FeedbackWindow window) {
  if (entries_.size() >= capacity_) {
    entries_.pop_front();
    ++dropped_;
  }
  Entry e;
  e.sequence = ++last_sequence_;
  e.window = std::move(window);
  entries_.push_back(std::move(e));
  return last_sequence_;
}

void ReportBuffer::NewStream() { sent_through_ = 0; }

const ReportBuffer::Entry* ReportBuffer::Next() const {
  auto h = std::lower_bound(history_.begin(), history_.end(), sent_through_ + 1, SequenceBefore);
  if (h != history_.end()) return &*h;
  auto it = std::lower_bound(entries_.begin(), entries_.end(), sent_through_ + 1, SequenceBefore);
  return it == entries_.end() ? nullptr : &*it;
}

void ReportBuffer::MarkSent(uint64_t sequence) {
  sent_through_ = std::max(sent_through_, sequence);
  highest_sent_ = std::max(highest_sent_, sequence);
  for (std::deque<Entry>* d : {&history_, &entries_}) {
    auto it = std::lower_bound(d->begin(), d->end(), sequence, SequenceBefore);
    if (it != d->end() && it->sequence == sequence) it->sent_before = true;
  }
}

size_t ReportBuffer::Ack(uint64_t sequence) {
  const uint64_t through = std::min(sequence, highest_sent_);
  size_t n = 0;
  while (!entries_.empty() && entries_.front().sequence <= through) {
    if (history_capacity_ > 0) {
      if (history_.size() >= history_capacity_) history_.pop_front();
      history_.push_back(std::move(entries_.front()));
    }
    entries_.pop_front();
    ++n;
  }
  return n;
}

}  // namespace booster::agent
