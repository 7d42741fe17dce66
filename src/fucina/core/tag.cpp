#include "fucina/core/tag.h"

#include <deque>
#include <mutex>
#include <unordered_map>

#include "fucina/core/error.h"

namespace fucina {
namespace {

// The intern table lives forever: names are few and tags are compared by id everywhere.
struct InternTable {
  std::mutex mutex;
  std::unordered_map<std::string_view, uint32_t> ids;
  std::deque<std::string> names;  // deque: references stay valid as it grows
};

InternTable& table() {
  static auto* t = new InternTable();  // never destroyed: tags may be used during static teardown
  return *t;
}

}  // namespace

Tag::Tag(const char* name) : Tag(std::string_view(name == nullptr ? "" : name)) {}

Tag::Tag(std::string_view name) {
  if (name.empty()) fail(ErrorCode::InvalidArgument, "an axis tag must be a non-empty name");
  InternTable& t = table();
  std::lock_guard lock(t.mutex);
  if (auto it = t.ids.find(name); it != t.ids.end()) {
    id_ = it->second;
    return;
  }
  const std::string& stored = t.names.emplace_back(name);
  id_ = static_cast<uint32_t>(t.names.size() - 1);
  t.ids.emplace(stored, id_);
}

std::string_view Tag::name() const {
  InternTable& t = table();
  std::lock_guard lock(t.mutex);
  return t.names[id_];
}

}  // namespace fucina
