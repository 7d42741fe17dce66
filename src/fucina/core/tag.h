/// @file
/// Tag: an interned axis name. Tensors name their axes ("batch", "in"); ops align, broadcast and
/// contract by these names, never by position.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace fucina {

class Tag {
 public:
  Tag(const char* name);  // NOLINT(google-explicit-constructor): "batch" reads as a tag
  Tag(std::string_view name);  // NOLINT(google-explicit-constructor)
  Tag(const std::string& name) : Tag(std::string_view(name)) {}  // NOLINT

  std::string_view name() const;
  uint32_t id() const { return id_; }
  friend bool operator==(Tag a, Tag b) { return a.id_ == b.id_; }

 private:
  uint32_t id_;
};

}  // namespace fucina

template <>
struct std::hash<fucina::Tag> {
  size_t operator()(fucina::Tag tag) const noexcept { return tag.id(); }
};
