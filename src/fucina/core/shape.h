/// @file
/// Shapes of named axes: a tag list and an extent list of the same length.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fucina/core/tag.h"

namespace fucina {

using Tags = std::vector<Tag>;
using Extents = std::vector<int64_t>;

int64_t numelOf(const Extents& extents);
/// The product of extents[from, to): a block of axes (the outer or inner rows around one axis).
int64_t numelOf(const Extents& extents, size_t from, size_t to);
/// The product of the extents but the one at `skip` (the rows of a matrix seen along one axis).
int64_t numelExcept(const Extents& extents, size_t skip);
/// Position of tag in tags, or nullopt.
std::optional<size_t> findTag(const Tags& tags, Tag tag);
bool hasTag(const Tags& tags, Tag tag);
/// "{batch=2, in=3}" — how shapes appear in error messages.
std::string describe(const Tags& tags, const Extents& extents);
std::string describe(const Tags& tags);
/// "'batch'" — how one axis appears in error messages.
std::string quoted(Tag tag);
/// Throws ShapeMismatch/InvalidArgument unless tags are distinct, lengths agree, extents >= 0 and
/// their product, zeros counted as 1, is below 2^63 / 16 (Note [Extent products fit]).
void validateShape(const Tags& tags, const Extents& extents, std::string_view what);
/// a + b and a * b of user-controlled extents, pads, strides, dilations or positions; InvalidArgument
/// naming `what` when the result would overflow int64 (Note [Extent products fit]).
int64_t checkedAdd(int64_t a, int64_t b, std::string_view what);
int64_t checkedMul(int64_t a, int64_t b, std::string_view what);
/// The tag lists one after another (no de-duplication).
Tags joinTags(std::initializer_list<Tags> parts);
/// Row-major strides (in elements) for extents.
std::vector<int64_t> contiguousStrides(const Extents& extents);

}  // namespace fucina
