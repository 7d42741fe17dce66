/// @file
/// Raw-tensor ops (the reference's ctx.mulRank, ctx.scale, ...): the building blocks for
/// customVjp specs, which compute on RawTensor. Each is the Tensor op of the same name run on
/// constants, so a spec's arithmetic is bit-for-bit that of the built-in ops.
#pragma once

#include "fucina/core/raw_tensor.h"

namespace fucina {
class ExecContext;
}

namespace fucina::raw {

using internal::RawTensor;

RawTensor add(ExecContext& ctx, const RawTensor& a, const RawTensor& b);
RawTensor sub(ExecContext& ctx, const RawTensor& a, const RawTensor& b);
RawTensor mul(ExecContext& ctx, const RawTensor& a, const RawTensor& b);
RawTensor div(ExecContext& ctx, const RawTensor& a, const RawTensor& b);
RawTensor scale(ExecContext& ctx, const RawTensor& a, double factor);
RawTensor addScalar(ExecContext& ctx, const RawTensor& a, double value);
RawTensor neg(ExecContext& ctx, const RawTensor& a);
RawTensor exp(ExecContext& ctx, const RawTensor& a);
RawTensor log(ExecContext& ctx, const RawTensor& a);
RawTensor tanh(ExecContext& ctx, const RawTensor& a);
RawTensor sumAll(ExecContext& ctx, const RawTensor& a);
RawTensor sum(ExecContext& ctx, const RawTensor& a, Tag axis);
RawTensor dot(ExecContext& ctx, const RawTensor& a, const RawTensor& b, Tag axis);
/// Sums a down to the axes (and order) of `like`: the VJP of a broadcast.
RawTensor sumTo(ExecContext& ctx, const RawTensor& a, const RawTensor& like);

}  // namespace fucina::raw
