// A small streaming JSON writer for the agent's machine-readable output (`--json`,
// report and journal files). Writes compact JSON; the caller nests Begin/End correctly.
//
//   JsonWriter w;
//   w.BeginObject();
//   w.Key("cpus"); w.IntArray({0, 1});
//   w.Key("gomaxprocs"); w.Int(2);
//   w.EndObject();
//   std::string s = w.str();   // {"cpus":[0,1],"gomaxprocs":2}
#ifndef BOOSTER_SIDECAR_JSON_WRITER_H_
#define BOOSTER_SIDECAR_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace booster::agent {

class JsonWriter {
 public:
  void BeginObject() {
    Sep();
    out_ += '{';
    first_.push_back(true);
  }
  void EndObject() {
    out_ += '}';
    first_.pop_back();
  }
  void BeginArray() {
    Sep();
    out_ += '[';
    first_.push_back(true);
  }
  void EndArray() {
    out_ += ']';
    first_.pop_back();
  }
  void Key(absl::string_view k);
  void String(absl::string_view s);
  void Int(int64_t v);
  void Uint(uint64_t v);
  void Double(double v);  // non-finite values become null
  void Bool(bool v);
  void Null();
  void IntArray(const std::vector<int>& v);
  void StringArray(const std::vector<std::string>& v);
  const std::string& str() const { return out_; }

 private:
  void Sep();
  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

// Quotes and escapes a string as a JSON string literal.
std::string JsonQuote(absl::string_view s);

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_JSON_WRITER_H_
