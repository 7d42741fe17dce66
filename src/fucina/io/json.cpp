#include "fucina/io/json.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "fucina/core/error.h"

namespace fucina::io::json {

namespace {

Value of(Value::Kind kind, std::string text = {}) {
  Value v;
  v.kind = kind;
  v.text = std::move(text);
  return v;
}

// Real files nest 2-4 levels; the bound keeps a hostile one from overflowing the parser's stack.
constexpr int kMaxDepth = 64;

class Parser {
 public:
  Parser(std::string_view s, std::string_view what) : s_(s), what_(what) {}
  Value document() {
    Value v = value();
    space();
    if (i_ != s_.size()) bad("trailing characters after the JSON");
    return v;
  }

 private:
  [[noreturn]] void bad(const std::string& message) const {
    fail(ErrorCode::InvalidArgument, std::string(what_) + ": " + message);
  }
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }
  char peek() {
    space();
    if (i_ >= s_.size()) bad("the JSON ends early");
    return s_[i_];
  }
  void expect(char c) {
    if (peek() != c) bad(std::string("malformed JSON: expected '") + c + "' at byte " + std::to_string(i_));
    ++i_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }
  Value value() {
    const char c = peek();
    if (c == '{' || c == '[') {
      if (++depth_ > kMaxDepth) bad("the JSON nests deeper than " + std::to_string(kMaxDepth) + " levels");
      Value v = c == '{' ? object() : array();
      --depth_;
      return v;
    }
    if (c == '"') return of(Value::kString, string());
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    Value v;
    if (literal("true")) v.kind = Value::kBool, v.boolean = true;
    else if (literal("false")) v.kind = Value::kBool;
    else if (!literal("null")) bad("unsupported JSON value at byte " + std::to_string(i_));
    return v;
  }
  Value number() {
    const size_t start = i_;
    auto digits = [&] {
      const size_t from = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      if (i_ == from) bad("malformed number at byte " + std::to_string(from));
    };
    const bool negative = s_[i_] == '-';
    if (negative) ++i_;
    digits();
    bool integral = !negative;
    if (i_ < s_.size() && s_[i_] == '.') ++i_, digits(), integral = false;
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_, integral = false;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      digits();
    }
    const std::string text(s_.substr(start, i_ - start));
    Value v = of(Value::kReal);
    v.real = std::strtod(text.c_str(), nullptr);
    if (integral) {
      v.kind = Value::kCount;
      for (char d : text) {
        if (v.count > (INT64_MAX - 9) / 10) bad("a number is too large: " + text);
        v.count = v.count * 10 + (d - '0');
      }
    }
    return v;
  }
  unsigned hex4() {
    if (i_ + 4 > s_.size()) bad("short \\u escape");
    unsigned code = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = s_[i_++];
      const int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
      if (d < 0) bad("bad \\u escape at byte " + std::to_string(i_ - 1));
      code = code * 16 + static_cast<unsigned>(d);
    }
    return code;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (i_ >= s_.size()) bad("unterminated string");
      const char c = s_[i_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) bad("unterminated escape");
      const char e = s_[i_++];
      if (e == 'u') {
        const unsigned code = hex4();
        if (code < 0x80) out += static_cast<char>(code);  // names are ASCII in practice
        else if (code < 0x800) out += static_cast<char>(0xC0 | (code >> 6)), out += static_cast<char>(0x80 | (code & 0x3F));
        else out += static_cast<char>(0xE0 | (code >> 12)), out += static_cast<char>(0x80 | ((code >> 6) & 0x3F)),
             out += static_cast<char>(0x80 | (code & 0x3F));
      } else {
        const char* from = "\"\\/bfnrt";
        const char* to = "\"\\/\b\f\n\r\t";
        const char* at = e == '\0' ? nullptr : std::strchr(from, e);
        if (!at) bad("bad escape");
        out += to[at - from];
      }
    }
  }
  Value array() {
    Value v = of(Value::kArray);
    expect('[');
    if (peek() == ']') return ++i_, v;
    while (true) {
      v.items.push_back(value());
      if (peek() == ']') return ++i_, v;
      expect(',');
    }
  }
  Value object() {
    Value v = of(Value::kObject);
    expect('{');
    if (peek() == '}') return ++i_, v;
    while (true) {
      std::string key = string();
      expect(':');
      v.members.push_back({std::move(key), value()});
      if (peek() == '}') return ++i_, v;
      expect(',');
    }
  }
  std::string_view s_, what_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

const Value* Value::find(std::string_view key) const {
  for (const Member& m : members)
    if (m.key == key) return &m.value;
  return nullptr;
}

Value parse(std::string_view text, std::string_view what) { return Parser(text, what).document(); }

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else out += c;
  }
  return out + "\"";
}

}  // namespace fucina::io::json
