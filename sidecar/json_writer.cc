#include "sidecar/json_writer.h"

#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"

namespace booster::agent {

std::string JsonQuote(absl::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
  return out;
}

void JsonWriter::Sep() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
}

void JsonWriter::Key(absl::string_view k) {
  Sep();
  out_ += JsonQuote(k);
  out_ += ':';
  after_key_ = true;
}

void JsonWriter::String(absl::string_view s) {
  Sep();
  out_ += JsonQuote(s);
}
void JsonWriter::Int(int64_t v) {
  Sep();
  absl::StrAppend(&out_, v);
}
void JsonWriter::Uint(uint64_t v) {
  Sep();
  absl::StrAppend(&out_, v);
}
void JsonWriter::Bool(bool v) {
  Sep();
  out_ += v ? "true" : "false";
}
void JsonWriter::Null() {
  Sep();
  out_ += "null";
}

void JsonWriter::Double(double v) {
  Sep();
  if (!std::isfinite(v)) {
    out_ += "null";
    return;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  out_ += buf;
}

void JsonWriter::IntArray(const std::vector<int>& v) {
  BeginArray();
  for (int x : v) Int(x);
  EndArray();
}

void JsonWriter::StringArray(const std::vector<std::string>& v) {
  BeginArray();
  for (const std::string& x : v) String(x);
  EndArray();
}

}  // namespace booster::agent
