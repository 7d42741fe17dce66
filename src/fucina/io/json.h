/// @file
/// A small JSON reader for the files fucina reads (safetensors headers, Hugging Face config.json):
/// the whole grammar, nesting bounded so that a hostile document cannot overflow the stack, every
/// failure an InvalidArgument prefixed with what was being read ("safetensors: ...").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fucina::io::json {

struct Member;
struct Value {
  /// kCount: a non-negative integer literal (no sign, fraction or exponent) that fits int64,
  /// in `count` (and `real`); kReal: any other number, in `real`.
  enum Kind { kString, kCount, kReal, kBool, kNull, kArray, kObject } kind = kNull;
  std::string text;  ///< kString
  int64_t count = 0;
  double real = 0;
  bool boolean = false;
  std::vector<Value> items;
  std::vector<Member> members;  // not std::pair<std::string, Value>: clang will not build that
                                // pair while Value is incomplete
  bool isNumber() const { return kind == kCount || kind == kReal; }
  /// The member named key, or null (the first one when a key repeats).
  const Value* find(std::string_view key) const;
};
struct Member {
  std::string key;
  Value value;
};

/// Parses a whole document; `what` prefixes every error message ("safetensors", "config.json").
Value parse(std::string_view text, std::string_view what);
/// s as a JSON string literal, quotes included.
std::string quote(std::string_view s);

}  // namespace fucina::io::json
