// Contractions: dot over a named axis, its fused-bias form addDot, the positional matmul, the
// named-axis einsum, and transpose (a rename). Every product is one record built by contractOp,
// whose VJP is dot's: each operand's gradient is itself a contraction of gy with the other.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fucina/backend/kernels.h"
#include "fucina/ag/control.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace {

// The result axes of contract(a, b, contracted): a's other axes in a's order, then b's axes
// that a lacks (see kernels::contract).
Tags contractedTags(const RawTensor& a, const RawTensor& b, const Tags& contracted) {
  Tags out;
  for (Tag t : a.tags())
    if (!hasTag(contracted, t)) out.push_back(t);
  for (Tag t : b.tags())
    if (!hasTag(contracted, t) && !hasTag(a.tags(), t)) out.push_back(t);
  return out;
}

// The extent of result axis t: a's where a has it, else b's.
int64_t resultExtent(const RawTensor& a, const RawTensor& b, Tag t) {
  return hasTag(a.tags(), t) ? a.extent(t) : b.extent(t);
}

// Checks that bias's axes are among the result's (tags out_tags, extents read from a or b).
void checkBias(const RawTensor& bias, const RawTensor& a, const RawTensor& b, const Tags& out_tags) {
  for (Tag t : bias.tags()) {
    if (!hasTag(out_tags, t))
      fail(ErrorCode::ShapeMismatch, "addDot: bias axis " + quoted(t) + " of " + bias.describe() +
                                         " is not an axis of the result " + describe(out_tags));
    const int64_t e = resultExtent(a, b, t);
    if (bias.extent(t) != e)
      fail(ErrorCode::ShapeMismatch, "addDot: bias axis " + quoted(t) + " has extent " +
                                         std::to_string(bias.extent(t)) + " in " + bias.describe() +
                                         " but " + std::to_string(e) + " in the result");
  }
}

// contract(x, y, contracted) (+ bias, fused into the GEMM) as one differentiable op. The axes
// only one operand has are what the other's gradient contracts over; each gradient reads the
// other operand only, so an operand is saved only when the other needs its gradient. bias's
// gradient is gy summed down to bias's axes (the VJP of its broadcast). A `y_value` (y's tags and
// shape) is what the product and x's gradient use instead of y's value, while y's gradient stays
// the contraction of gy with x: the straight-through estimator of dotTernarySte.
Tensor contractOp(ExecContext& ctx, std::string_view name, const Tensor& x, const Tensor& y,
                  const Tags& contracted, const Tensor* bias = nullptr, const RawTensor* y_value = nullptr) {
  const RawTensor& a = x.value();
  const RawTensor& b = y_value ? *y_value : y.value();
  const RawTensor c = bias ? bias->value() : RawTensor();
  int64_t k = 1;
  for (Tag t : contracted) k *= a.extent(t);
  auto makeVjp = [&] {
    Tags a_free, b_free;
    for (Tag t : a.tags())
      if (!hasTag(b.tags(), t)) a_free.push_back(t);
    for (Tag t : b.tags())
      if (!hasTag(a.tags(), t)) b_free.push_back(t);
    Tags bias_tags;
    Extents bias_shape;
    if (bias) bias_tags = bias->tags(), bias_shape = bias->shape();
    return [sa = y.requiresGrad() ? a : RawTensor(), sb = x.requiresGrad() ? b : RawTensor(),
            a_free, b_free, bias_tags, bias_shape](ExecContext& c, const RawTensor& gy,
                                                   NeedsGrad needs, Grads g) {
      if (needs[0]) g[0] = backend::kernelsOf(c).contract(c, gy, sb, b_free, {});  // engine aligns the axis order
      if (needs[1]) g[1] = backend::kernelsOf(c).contract(c, gy, sa, a_free, {});
      if (needs.size() > 2 && needs[2]) g[2] = backend::sumTo(c, gy, bias_tags, bias_shape);
    };
  };
  if (internal::deferringValues()) {  // Note [Checkpoint tail]: the product waits for a reader
    const Tags tags = contractedTags(a, b, contracted);
    Extents shape;
    for (Tag t : tags) shape.push_back(resultExtent(a, b, t));
    const auto work = static_cast<size_t>(2 * numelOf(shape) * k);
    auto compute = [&ctx, a, b, c, contracted] { return backend::kernelsOf(ctx).contract(ctx, a, b, contracted, c); };
    if (bias) return ops::finishPending(ctx, name, tags, shape, compute, {&x, &y, bias}, makeVjp, work);
    return ops::finishPending(ctx, name, tags, shape, compute, {&x, &y}, makeVjp, work);
  }
  RawTensor out = backend::kernelsOf(ctx).contract(ctx, a, b, contracted, c);
  const auto work = static_cast<size_t>(2 * out.numel() * k);
  if (bias) return ops::finishOp(ctx, name, std::move(out), {&x, &y, bias}, makeVjp, work);
  return ops::finishOp(ctx, name, std::move(out), {&x, &y}, makeVjp, work);
}

// Note [Dtype rules], contractions: the right operand may be f16 or bf16 (a constant, or a leaf
// whose gradient is an f32 contraction) or q8_0 (always a constant); the GEMM converts it while
// packing. The left operand and a bias follow the general rule: 16-bit constants are converted
// to f32 (the result is then 16-bit only when both operands are constants of that one dtype).
// With an f64 operand the product is computed in double instead (f64Contraction).
bool typedRhs(DType d) { return d == DType::f16 || d == DType::bf16 || d == DType::q8_0; }

// The f64 path (Note [Dtype rules]): some operand is f64, so the product is computed in double
// (contractF64) and is a constant; a bias is added in f64 too.
bool f64Contraction(std::string_view op, const Tensor& x, const Tensor& y, const Tensor* bias) {
  return bias ? ops::promotesToF64(op, {&x, &y, bias}) : ops::promotesToF64(op, {&x, &y});
}
Tensor f64Product(ExecContext& ctx, const Tensor& x, const Tensor& y, const Tags& contracted,
                   const Tensor* bias = nullptr) {
  Tensor r = Tensor::fromRaw(ctx, backend::kernelsOf(ctx).contractF64(ctx, x.value(), y.value(), contracted));  // reads any dtype
  return bias ? r.add(ctx, *bias) : r;
}

template <class Body>
Tensor typedContraction(ExecContext& ctx, std::string_view op, const Tensor& x, const Tensor& y,
                        const Tensor* bias, Body body) {
  const bool rhs_ok = y.dtype() == DType::f32 || typedRhs(y.dtype());
  if (x.dtype() == DType::f32 && rhs_ok && (!bias || bias->dtype() == DType::f32)) return body(x, y, bias);
  if (!rhs_ok) ops::typedResult(op, {&x, &y});  // f64, integers: the general rule's errors
  Tensor lhs = x, b;
  if (x.dtype() != DType::f32) {
    ops::typedResult(op, {&x});  // a 16-bit constant, else its error
    lhs = x.to(ctx, DType::f32);
  }
  if (bias && bias->dtype() != DType::f32) {
    ops::typedResult(op, {bias});
    b = bias->to(ctx, DType::f32);
  }
  Tensor r = body(lhs, y, bias ? (b.defined() ? &b : bias) : nullptr);
  const bool same16 = x.dtype() == y.dtype() && x.dtype() != DType::f32 && x.dtype() != DType::q8_0 &&
                      (!bias || bias->dtype() == x.dtype());
  return same16 ? r.to(ctx, x.dtype()) : r;
}

void requireAxis(std::string_view op, const RawTensor& a, const RawTensor& b, Tag axis) {
  if (!hasTag(a.tags(), axis) || !hasTag(b.tags(), axis))
    fail(ErrorCode::ShapeMismatch, std::string(op) + " over " + quoted(axis) +
                                       ": both operands need that axis, got " + a.describe() +
                                       " and " + b.describe());
}

// A tag for an axis that exists only inside one op (matmul's contracted axis), distinct from
// every tag of the operands so that renaming onto it cannot collide.
Tag privateTag(const Tags& a, const Tags& b) {
  std::string name = "matmul.k";
  while (hasTag(a, Tag(name)) || hasTag(b, Tag(name))) name += "'";
  return Tag(name);
}

}  // namespace

Tensor Tensor::dot(ExecContext& ctx, const Tensor& y, Tag axis) const {
  requireAxis("dot", value(), y.value(), axis);
  if (f64Contraction("dot", *this, y, nullptr)) return f64Product(ctx, *this, y, {axis});
  return typedContraction(ctx, "dot", *this, y, nullptr, [&](const Tensor& a, const Tensor& b, const Tensor*) {
    return contractOp(ctx, "dot", a, b, {axis});
  });
}

Tensor Tensor::addDot(ExecContext& ctx, const Tensor& y, Tag axis, const Tensor& bias) const {
  requireAxis("addDot", value(), y.value(), axis);
  checkBias(bias.value(), value(), y.value(), contractedTags(value(), y.value(), {axis}));
  if (f64Contraction("addDot", *this, y, &bias)) return f64Product(ctx, *this, y, {axis}, &bias);
  return typedContraction(ctx, "addDot", *this, y, &bias, [&](const Tensor& a, const Tensor& b, const Tensor* c) {
    return contractOp(ctx, "addDot", a, b, {axis}, c);
  });
}

Tensor Tensor::matmul(ExecContext& ctx, const Tensor& y, bool transpose_y) const {
  const RawTensor& a = value();
  const RawTensor& b = y.value();
  if (a.rank() < 2 || b.rank() < 2)
    fail(ErrorCode::ShapeMismatch, "matmul needs operands of rank >= 2, got " + a.describe() +
                                       " and " + b.describe());
  const size_t ra = a.rank(), rb = b.rank();
  const Tag m = a.tags()[ra - 2], ka = a.tags()[ra - 1];
  const size_t kb_at = transpose_y ? rb - 1 : rb - 2;
  const Tag kb = b.tags()[kb_at];
  const Tag n = b.tags()[transpose_y ? rb - 2 : rb - 1];
  if (a.extent(ka) != b.extent(kb))
    fail(ErrorCode::ShapeMismatch, "matmul: " + a.describe() + " contracts its last axis " +
                                       quoted(ka) + " (extent " + std::to_string(a.extent(ka)) +
                                       ") with " + quoted(kb) + " of " + b.describe() +
                                       " (extent " + std::to_string(b.extent(kb)) + ")");
  // Leading axes are batch axes, matched by tag.
  const Tags a_batch(a.tags().begin(), a.tags().end() - 2);
  const Tags b_batch(b.tags().begin(), b.tags().end() - 2);
  bool same = a_batch.size() == b_batch.size();
  for (Tag t : a_batch) same = same && hasTag(b_batch, t) && a.extent(t) == b.extent(t);
  if (!same)
    fail(ErrorCode::ShapeMismatch, "matmul: the leading (batch) axes must be the same tags with "
                                   "the same extents, got " + a.describe() + " and " + b.describe());
  if (n == m)  // (n cannot be a batch tag: b's batch tags are a's)
    fail(ErrorCode::ShapeMismatch, "matmul: the result would have axis " + quoted(n) + " twice (" +
                                       a.describe() + " times " + b.describe() +
                                       "); rename one operand's axis with withTags");
  // Rename both contracted axes onto one private tag (a view each); then it is a dot.
  const Tag k = privateTag(a.tags(), b.tags());
  Tags a_tags = a.tags(), b_tags = b.tags();
  a_tags[ra - 1] = k;
  b_tags[kb_at] = k;
  if (f64Contraction("matmul", *this, y, nullptr))
    return f64Product(ctx, withTags(ctx, a_tags), y.withTags(ctx, b_tags), {k});
  return typedContraction(ctx, "matmul", *this, y, nullptr, [&](const Tensor& x, const Tensor& w, const Tensor*) {
    return contractOp(ctx, "matmul", x.withTags(ctx, a_tags), w.withTags(ctx, b_tags), {k});
  });
}

Tensor Tensor::einsum(ExecContext& ctx, const Tensor& a, const Tensor& b, const Tags& out) {
  const RawTensor& ra = a.value();
  const RawTensor& rb = b.value();
  for (size_t i = 0; i < out.size(); ++i) {
    if (!hasTag(ra.tags(), out[i]) && !hasTag(rb.tags(), out[i]))
      fail(ErrorCode::ShapeMismatch, "einsum: output axis " + quoted(out[i]) +
                                         " is in neither operand " + ra.describe() + " nor " +
                                         rb.describe());
    if (std::find(out.begin(), out.begin() + i, out[i]) != out.begin() + i)
      fail(ErrorCode::ShapeMismatch, "einsum: output axis " + quoted(out[i]) + " appears twice in " +
                                         describe(out));
  }
  Tags contracted;  // shared and not kept
  for (Tag t : ra.tags()) {
    if (!hasTag(rb.tags(), t)) continue;
    if (ra.extent(t) != rb.extent(t))
      fail(ErrorCode::ShapeMismatch, "einsum: axis " + quoted(t) + " has extent " +
                                         std::to_string(ra.extent(t)) + " in " + ra.describe() +
                                         " but " + std::to_string(rb.extent(t)) + " in " +
                                         rb.describe());
    if (!hasTag(out, t)) contracted.push_back(t);
  }
  // Axes only one operand has and the output drops are summed away first (their VJP broadcasts
  // the gradient back); what remains is one contraction, whose gradients are einsums again.
  // A typed right operand with axes to sum away is summed in f32 (the cast is differentiable).
  auto sumAway = [&](const Tensor& x, const RawTensor& other) {
    Tensor r = x;
    for (Tag t : x.tags())
      if (!hasTag(other.tags(), t) && !hasTag(out, t))
        r = (r.dtype() == DType::f32 || !typedRhs(r.dtype()) ? r : r.to(ctx, DType::f32)).sum(ctx, t);
    return r;
  };
  const Tensor c = f64Contraction("einsum", a, b, nullptr)
                       ? f64Product(ctx, sumAway(a, rb), sumAway(b, ra), contracted)
                       : typedContraction(ctx, "einsum", a, b, nullptr, [&](const Tensor& x, const Tensor& y, const Tensor*) {
                           return contractOp(ctx, "einsum", sumAway(x, rb), sumAway(y, ra), contracted);
                         });
  return c.tags() == out ? c : c.permuteTo(ctx, out);
}

// Greedy order (opt_einsum's greedy path, by intermediate size): join the pair whose result,
// holding the axes that `out` or another operand still needs, has the fewest elements.
Tensor Tensor::einsumMany(ExecContext& ctx, std::span<const Tensor> operands, const Tags& out) {
  if (operands.empty()) fail(ErrorCode::InvalidArgument, "einsumMany needs at least one operand");
  for (size_t i = 0; i < out.size(); ++i) {
    if (std::find(out.begin(), out.begin() + i, out[i]) != out.begin() + i)
      fail(ErrorCode::ShapeMismatch, "einsumMany: output axis " + quoted(out[i]) + " appears twice in " + describe(out));
    if (std::none_of(operands.begin(), operands.end(), [&](const Tensor& t) { return hasTag(t.tags(), out[i]); }))
      fail(ErrorCode::ShapeMismatch, "einsumMany: output axis " + quoted(out[i]) + " is in no operand");
  }
  std::vector<Tensor> live(operands.begin(), operands.end());
  // The axes of joining live[i] and live[j]: theirs that `out` or another live operand has, in
  // live[i]'s order then live[j]'s; and the product of their extents.
  auto joined = [&](size_t i, size_t j, double* size) {
    Tags keep;
    *size = 1;
    auto needed = [&](Tag t) {
      if (hasTag(out, t)) return true;
      for (size_t k = 0; k < live.size(); ++k)
        if (k != i && k != j && hasTag(live[k].tags(), t)) return true;
      return false;
    };
    for (const Tensor* x : {&live[i], &live[j]})
      for (size_t a = 0; a < x->rank(); ++a)
        if (!hasTag(keep, x->tags()[a]) && needed(x->tags()[a]))
          keep.push_back(x->tags()[a]), *size *= static_cast<double>(x->shape()[a]);
    return keep;
  };
  while (live.size() > 1) {
    size_t bi = 0, bj = 1;
    double best = 0;
    for (size_t i = 0; i < live.size(); ++i)
      for (size_t j = i + 1; j < live.size(); ++j) {
        double size;
        joined(i, j, &size);
        if ((i == 0 && j == 1) || size < best) best = size, bi = i, bj = j;
      }
    double size;
    Tensor r = einsum(ctx, live[bi], live[bj], joined(bi, bj, &size));
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(bj));
    live[bi] = std::move(r);
  }
  Tensor r = live[0];
  Tags extra;
  for (Tag t : r.tags())
    if (!hasTag(out, t)) extra.push_back(t);
  if (!extra.empty()) r = r.sumMany(ctx, extra);
  return r.tags() == out ? r : r.permuteTo(ctx, out);
}

// STE: contractOp with the quantized value standing in for w (see contractOp).
Tensor Tensor::dotTernarySte(ExecContext& ctx, const Tensor& w, Tag axis) const {
  requireAxis("dotTernarySte", value(), w.value(), axis);
  if (!ops::allF32({this, &w}))
    return ops::viaF32(ctx, "dotTernarySte", {this, &w}, [&](std::span<const Tensor> f) { return f[0].dotTernarySte(ctx, f[1], axis); });
  const RawTensor q = backend::kernelsOf(ctx).ternaryQuantize(ctx, w.value());
  return contractOp(ctx, "dotTernarySte", *this, w, {axis}, nullptr, &q);
}

Tensor Tensor::transpose(ExecContext& ctx, Tag a, Tag b) const {
  const Tags& tags = this->tags();
  if (a == b)
    fail(ErrorCode::InvalidArgument, "transpose swaps two different axes, got " + quoted(a) +
                                         " twice");
  auto ia = findTag(tags, a), ib = findTag(tags, b);
  if (!ia || !ib)
    fail(ErrorCode::ShapeMismatch, "transpose " + quoted(a) + " and " + quoted(b) + ": " +
                                       value().describe() + " lacks " + quoted(ia ? b : a));
  Tags swapped = tags;
  std::swap(swapped[*ia], swapped[*ib]);
  return withTags(ctx, swapped);  // a view; its VJP swaps the names back
}

}  // namespace fucina
