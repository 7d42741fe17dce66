#include "fucina/core/shape.h"

#include <algorithm>
#include <limits>

#include "fucina/core/error.h"

namespace fucina {

int64_t numelOf(const Extents& extents) {
  // Note [Extent products fit] bounds the product of the non-zero extents of a validated shape, not
  // of a view that splits an empty axis (repeatAxis's copies): an empty shape is 0 before any product.
  if (std::find(extents.begin(), extents.end(), 0) != extents.end()) return 0;
  int64_t n = 1;
  for (int64_t e : extents) n *= e;
  return n;
}

int64_t numelOf(const Extents& extents, size_t from, size_t to) {
  return numelOf(Extents(extents.begin() + static_cast<std::ptrdiff_t>(from), extents.begin() + static_cast<std::ptrdiff_t>(to)));
}

int64_t numelExcept(const Extents& extents, size_t skip) {
  int64_t n = 1;
  for (size_t i = 0; i < extents.size(); ++i)
    if (i != skip) {
      if (extents[i] == 0) return 0;  // as numelOf: an empty shape is 0 before any product
      n *= extents[i];
    }
  return n;
}

std::optional<size_t> findTag(const Tags& tags, Tag tag) {
  for (size_t i = 0; i < tags.size(); ++i)
    if (tags[i] == tag) return i;
  return std::nullopt;
}

bool hasTag(const Tags& tags, Tag tag) { return findTag(tags, tag).has_value(); }

std::string describe(const Tags& tags, const Extents& extents) {
  std::string s = "{";
  for (size_t i = 0; i < tags.size(); ++i) {
    if (i) s += ", ";
    s += tags[i].name();
    if (i < extents.size()) s += "=" + std::to_string(extents[i]);
  }
  return s + "}";
}

std::string describe(const Tags& tags) { return describe(tags, {}); }

std::string quoted(Tag tag) { return "'" + std::string(tag.name()) + "'"; }

void validateShape(const Tags& tags, const Extents& extents, std::string_view what) {
  if (tags.size() != extents.size())
    fail(ErrorCode::ShapeMismatch, std::string(what) + ": " + std::to_string(tags.size()) +
                                       " tags " + describe(tags) + " but " +
                                       std::to_string(extents.size()) + " extents");
  for (size_t i = 0; i < tags.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (tags[i] == tags[j])
        fail(ErrorCode::ShapeMismatch, std::string(what) + ": axis tag '" +
                                           std::string(tags[i].name()) + "' appears twice in " +
                                           describe(tags));
  }
  // Note [Extent products fit]: zeros count as 1, since strides multiply the other extents of an
  // empty tensor too; the factor 16 leaves room for a dtype's byte size.
  int64_t n = 1;
  for (size_t i = 0; i < extents.size(); ++i) {
    if (extents[i] < 0)
      fail(ErrorCode::InvalidArgument, std::string(what) + ": negative extent in " +
                                           describe(tags, extents));
    const int64_t e = std::max<int64_t>(extents[i], 1);
    if (n > std::numeric_limits<int64_t>::max() / 16 / e)
      fail(ErrorCode::InvalidArgument, std::string(what) + ": shape " + describe(tags, extents) +
                                           " has too many elements");
    n *= e;
  }
}

int64_t checkedAdd(int64_t a, int64_t b, std::string_view what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    fail(ErrorCode::InvalidArgument, std::string(what) + ": " + std::to_string(a) + " + " +
                                         std::to_string(b) + " overflows int64");
  return r;
}

int64_t checkedMul(int64_t a, int64_t b, std::string_view what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    fail(ErrorCode::InvalidArgument, std::string(what) + ": " + std::to_string(a) + " * " +
                                         std::to_string(b) + " overflows int64");
  return r;
}

Tags joinTags(std::initializer_list<Tags> parts) {
  Tags out;
  for (const Tags& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::vector<int64_t> contiguousStrides(const Extents& extents) {
  std::vector<int64_t> strides(extents.size());
  int64_t s = 1;
  for (size_t i = extents.size(); i-- > 0;) {
    strides[i] = s;
    s *= extents[i] > 0 ? extents[i] : 1;
  }
  return strides;
}

}  // namespace fucina
