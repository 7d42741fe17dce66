// One harness for every backend (ggml's test-backend-ops is the model; Note [Backends]): each case
// runs an op's forward and VJP on a context of every backend and compares it with the cpu
// backend, on the same values at four layouts (size 1, odd with a broadcast operand, empty, and a
// permuted and narrowed view). The coverage matrix it prints says, for every op of ops.list,
// whether the harness runs it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <fucina/fucina.h>
#include "fucina/backend/kernels.h"
#include "test_helpers.h"

using fucina::Backend;
using fucina::DType;
using fucina::ErrorCode;
using fucina::ExecContext;
using fucina::ExecOptions;
using fucina::Tensor;

namespace {

using Apply = std::function<Tensor(ExecContext&, const std::vector<Tensor>&)>;

struct Case {
  std::string op;
  int arity;  // operands made by the harness (the first over {i, j}, the second over {i, j} or {j})
  Apply apply;
  float lo = -2, hi = 2;  // the operands' values
  double tol = 1e-5;      // relative, with the same absolute floor
};

std::vector<float> randoms(size_t n, float lo, float hi, uint32_t seed);

std::vector<Case> cases() {
  using V = const std::vector<Tensor>&;
  using C = ExecContext&;
  std::vector<Case> c;
  auto unary = [&](const std::string& op, std::function<Tensor(C, const Tensor&)> f, float lo = -2, float hi = 2) {
    c.push_back({op, 1, [f](C ctx, V t) { return f(ctx, t[0]); }, lo, hi});
  };
  auto binary = [&](const std::string& op, std::function<Tensor(C, const Tensor&, const Tensor&)> f, float lo = -2,
                    float hi = 2) { c.push_back({op, 2, [f](C ctx, V t) { return f(ctx, t[0], t[1]); }, lo, hi}); };
  // Every row of backend/elementwise_table.h, through the ops that use it.
  unary("neg", [](C x, const Tensor& a) { return a.neg(x); });
  unary("abs", [](C x, const Tensor& a) { return a.abs(x); });
  unary("exp", [](C x, const Tensor& a) { return a.exp(x); });
  unary("log", [](C x, const Tensor& a) { return a.log(x); }, 0.5f, 3);
  unary("sqrt", [](C x, const Tensor& a) { return a.sqrt(x); }, 0.5f, 3);
  unary("tanh", [](C x, const Tensor& a) { return a.tanh(x); });
  unary("sigmoid", [](C x, const Tensor& a) { return a.sigmoid(x); });
  unary("relu", [](C x, const Tensor& a) { return a.relu(x); });
  unary("leakyRelu", [](C x, const Tensor& a) { return a.leakyRelu(x, 0.1); });
  unary("gelu", [](C x, const Tensor& a) { return a.gelu(x); });
  unary("geluErf", [](C x, const Tensor& a) { return a.geluErf(x); });
  unary("quickGelu", [](C x, const Tensor& a) { return a.quickGelu(x); });
  unary("silu", [](C x, const Tensor& a) { return a.silu(x); });
  unary("elu", [](C x, const Tensor& a) { return a.elu(x, 1.3); });
  unary("log1p", [](C x, const Tensor& a) { return a.log1p(x); }, -0.5f, 2);
  unary("rsqrt", [](C x, const Tensor& a) { return a.rsqrt(x); }, 0.5f, 3);
  unary("reciprocal", [](C x, const Tensor& a) { return a.reciprocal(x); }, 0.5f, 3);
  unary("sin", [](C x, const Tensor& a) { return a.sin(x); });
  unary("cos", [](C x, const Tensor& a) { return a.cos(x); });
  unary("clamp", [](C x, const Tensor& a) { return a.clamp(x, -0.5, 0.7); });
  unary("floor", [](C x, const Tensor& a) { return a.floor(x); });
  unary("ceil", [](C x, const Tensor& a) { return a.ceil(x); });
  unary("round", [](C x, const Tensor& a) { return a.round(x); });
  unary("sign", [](C x, const Tensor& a) { return a.sign(x); });
  unary("fastTanh", [](C x, const Tensor& a) { return a.fastTanh(x); });
  unary("softcap30", [](C x, const Tensor& a) { return a.scale(x, 20).softcap30(x); });
  unary("softcap15", [](C x, const Tensor& a) { return a.scale(x, 10).softcap15(x); });
  unary("scale", [](C x, const Tensor& a) { return a.scale(x, 1.7); });
  unary("addScalar", [](C x, const Tensor& a) { return a.addScalar(x, 0.3); });
  unary("subScalar", [](C x, const Tensor& a) { return a.subScalar(x, 0.3); });
  unary("divScalar", [](C x, const Tensor& a) { return a.divScalar(x, 1.9); });
  unary("powScalar", [](C x, const Tensor& a) { return a.powScalar(x, 2.5); }, 0.5f, 2);
  unary("unary", [](C x, const Tensor& a) { return a.unary(x, "silu"); });
  binary("add", [](C x, const Tensor& a, const Tensor& b) { return a.add(x, b); });
  binary("sub", [](C x, const Tensor& a, const Tensor& b) { return a.sub(x, b); });
  binary("mul", [](C x, const Tensor& a, const Tensor& b) { return a.mul(x, b); });
  binary("div", [](C x, const Tensor& a, const Tensor& b) { return a.div(x, b); }, 0.5f, 2);
  binary("maximum", [](C x, const Tensor& a, const Tensor& b) { return a.maximum(x, b); });
  binary("minimum", [](C x, const Tensor& a, const Tensor& b) { return a.minimum(x, b); });
  binary("pow", [](C x, const Tensor& a, const Tensor& b) { return a.pow(x, b); }, 0.5f, 2);
  binary("snake", [](C x, const Tensor& a, const Tensor& b) { return a.snake(x, b); }, 0.5f, 2);
  binary("prelu", [](C x, const Tensor& a, const Tensor& b) { return a.prelu(x, b); });
  // Reductions (sumAxes, and sumTo in every broadcasting VJP above).
  unary("sum", [](C x, const Tensor& a) { return a.sum(x, "i"); });
  unary("mean", [](C x, const Tensor& a) { return a.mean(x, "j"); });
  unary("sumAll", [](C x, const Tensor& a) { return a.sumAll(x); });
  unary("meanAll", [](C x, const Tensor& a) { return a.meanAll(x); });
  // Contractions (contract): a {i, j} times b over j; b {j} gives a matrix-vector product.
  c.push_back({"dot", 2, [](C x, V t) { return t[0].dot(x, t[1], "j"); }, -2, 2, 1e-4});
  c.push_back({"addDot", 2, [](C x, V t) {
                 return t[0].addDot(x, t[1], "j", Tensor::full(x, {"i"}, {t[0].extent("i")}, 0.25));
               }, -2, 2, 1e-4});
  binary("dot", [](C x, const Tensor& a, const Tensor& b) {  // the f64 path (contractF64)
    return a.detach(x).to(x, DType::f64).dot(x, b.detach(x).to(x, DType::f64), "j");
  });
  // Scans (cumprodRows, linearRecurrenceRows).
  unary("cumprod", [](C x, const Tensor& a) { return a.cumprod(x, "j"); }, 0.5f, 1.5f);
  binary("linearRecurrence", [](C x, const Tensor& a, const Tensor& d) {
    return a.linearRecurrence(x, d.broadcastTo(x, a.tags(), a.shape()), "j");
  }, -1, 1);
  // Indexing families (gather, masks, sort, logical, dropout, sampling).
  // Index and mask tensors are made from the operand's extents: along j (at least 1 on every
  // layout), with repeated indices so that the scatters accumulate or overwrite in order.
  auto ints = [](C x, fucina::Tags tags, fucina::Extents shape, std::function<int64_t(int64_t)> f) {
    std::vector<float> v(static_cast<size_t>(fucina::numelOf(shape)));
    for (size_t q = 0; q < v.size(); ++q) v[q] = static_cast<float>(f(static_cast<int64_t>(q)));
    return Tensor::fromSlice(x, tags, shape, v).to(x, DType::i64);
  };
  auto along = [ints](C x, const Tensor& a, int64_t k) {  // 1-D, on axis "k": J-1, 0, J-1, ...
    const int64_t n = a.extent("j");
    return ints(x, {"k"}, {k}, [n](int64_t q) { return q % 2 == 0 ? n - 1 : (q / 2) % n; });
  };
  auto sameAxes = [ints](C x, const Tensor& a, int64_t k) {  // {i, j} with k along j
    const int64_t n = a.extent("j");
    return ints(x, {"i", "j"}, {a.extent("i"), k}, [n, k](int64_t q) { return (q / k + 2 * (q % k)) % n; });
  };
  auto checker = [](C x, const Tensor& a) {  // u8 {i, j}: 1 on a checkerboard
    const int64_t n = a.extent("j");
    std::vector<float> v(static_cast<size_t>(a.numel()));
    for (size_t q = 0; q < v.size(); ++q) v[q] = static_cast<float>((q / n + q % n) % 2);
    return Tensor::fromSlice(x, {"i", "j"}, a.shape(), v).to(x, DType::u8);
  };
  unary("indexSelect", [along](C x, const Tensor& a) { return a.indexSelect(x, "j", along(x, a, 3)); });
  unary("gather", [sameAxes](C x, const Tensor& a) { return a.gather(x, "j", sameAxes(x, a, 3)); });
  unary("takeAlongAxis", [ints](C x, const Tensor& a) {
    const int64_t n = a.extent("j");
    return a.takeAlongAxis(x, "j", ints(x, {"j"}, {4}, [n](int64_t q) { return (3 * q + 1) % n; }));
  });
  unary("scatterAdd", [sameAxes](C x, const Tensor& a) {
    const int64_t k = std::min<int64_t>(a.extent("j"), 3);
    return a.scatterAdd(x, "j", sameAxes(x, a, k), a.narrow(x, "j", 0, k).scale(x, 2));
  });
  unary("scatter", [sameAxes](C x, const Tensor& a) {
    const int64_t k = std::min<int64_t>(a.extent("j"), 3);
    return a.scatter(x, "j", sameAxes(x, a, k), a.narrow(x, "j", 0, k).scale(x, 2));
  });
  unary("indexAdd", [along](C x, const Tensor& a) {
    const int64_t k = std::min<int64_t>(a.extent("j"), 3);
    return a.indexAdd(x, "j", along(x, a, k), a.narrow(x, "j", 0, k).scale(x, 2));
  });
  unary("setRows", [along](C x, const Tensor& a) {
    const int64_t k = std::min<int64_t>(a.extent("j"), 3);
    return a.setRows(x, "j", along(x, a, k), a.narrow(x, "j", 0, k).scale(x, 2));
  });
  unary("zeroRows", [along](C x, const Tensor& a) { return a.zeroRows(x, "j", along(x, a, 2)); });
  unary("maskedSelect", [checker](C x, const Tensor& a) { return a.maskedSelect(x, checker(x, a), "m"); });
  unary("maskedScatter", [checker](C x, const Tensor& a) { return a.maskedScatter(x, checker(x, a), a.scale(x, -3)); });
  unary("sort", [](C x, const Tensor& a) { return a.sort(x, "j", true).values; });
  unary("topK", [](C x, const Tensor& a) { return a.topK(x, "j", std::min<int64_t>(a.extent("j"), 2), false).values; });
  unary("argsort", [](C x, const Tensor& a) { return a.argsort(x, "j", false); });
  unary("argmax", [](C x, const Tensor& a) { return a.argmax(x, "j"); });
  unary("argmin", [](C x, const Tensor& a) { return a.argmin(x, "i"); });  // refused over the empty i
  unary("isnan", [](C x, const Tensor& a) { return a.log(x).isnan(x); });
  unary("isinf", [](C x, const Tensor& a) { return a.floor(x).log(x).isinf(x); });
  unary("isfinite", [](C x, const Tensor& a) { return a.floor(x).log(x).isfinite(x); });
  unary("logicalNot", [](C x, const Tensor& a) { return a.floor(x).logicalNot(x); });
  binary("logicalAnd", [](C x, const Tensor& a, const Tensor& b) { return a.floor(x).logicalAnd(x, b.floor(x)); });
  binary("logicalOr", [](C x, const Tensor& a, const Tensor& b) { return a.floor(x).logicalOr(x, b.floor(x)); });
  binary("logicalXor", [](C x, const Tensor& a, const Tensor& b) { return a.floor(x).logicalXor(x, b.floor(x)); });
  unary("any", [](C x, const Tensor& a) { return a.floor(x).any(x, "j"); }, -0.5f, 1.5f);
  unary("all", [](C x, const Tensor& a) { return a.floor(x).all(x, "i"); }, -0.5f, 1.5f);
  unary("anyAll", [](C x, const Tensor& a) { return a.floor(x).anyAll(x); }, 0, 1);
  unary("allAll", [](C x, const Tensor& a) { return a.floor(x).allAll(x); }, -0.5f, 1.5f);
  unary("bandMask", [](C x, const Tensor& a) { return Tensor::bandMask(x, "i", "j", a.extent("i"), a.extent("j"), 1, 2); });
  unary("dropout", [](C x, const Tensor& a) { return a.dropout(x, 0.3, 42); });
  unary("multinomial", [](C x, const Tensor& a) { return a.abs(x).multinomial(x, "j", 4, 7, true); });
  // Convolution and pooling families. Their operands are built from the harness's a {i, j} and b
  // ({i, j} or {j}), so the four layouts reach them: images {n: 2, c: 2, i, j} (or signals {c: 2,
  // i, j} with i a batch axis) mix a and b so that images and channels differ; a kernel row {k}
  // is b's first (up to) 3 elements along j, summed over i, times fixed factors per weight
  // channel, so the weight gradient reaches b.
  auto spatial = [&](const std::string& op, std::function<Tensor(C, const Tensor&, const Tensor&)> f, double tol) {
    c.push_back({op, 2, [f](C x, V t) { return f(x, t[0], t[1]); }, -2, 2, tol});
  };
  auto over = [](C x, const Tensor& a, const Tensor& b) { return b.broadcastTo(x, a.tags(), a.shape()); };
  auto signals = [over](C x, const Tensor& a, const Tensor& b) {
    return Tensor::stack(x, std::vector<Tensor>{a, over(x, a, b).mul(x, a)}, "c");
  };
  auto images = [over](C x, const Tensor& a, const Tensor& b) {
    const Tensor bb = over(x, a, b);
    const Tensor n0 = Tensor::stack(x, std::vector<Tensor>{a, bb}, "c");
    const Tensor n1 = Tensor::stack(x, std::vector<Tensor>{bb.mul(x, a), a.neg(x)}, "c");
    return Tensor::stack(x, std::vector<Tensor>{n0, n1}, "n");
  };
  auto taps = [](C x, const Tensor& b, fucina::Tag k) {
    const Tensor row = b.tags().size() == 2 ? b.sum(x, "i") : b;
    return row.narrow(x, "j", 0, std::min<int64_t>(3, row.extent("j"))).withTags(x, {k});
  };
  // w {first, second, k...}: the kernel times 1 + 0.5·f - 0.3·s for f < first, s < second.
  auto weight = [](C x, const Tensor& kernel, fucina::Tag first, int64_t nf, fucina::Tag second, int64_t ns) {
    std::vector<Tensor> outer;
    for (int64_t f = 0; f < nf; ++f) {
      std::vector<Tensor> inner;
      for (int64_t s = 0; s < ns; ++s) inner.push_back(kernel.scale(x, 1 + 0.5 * f - 0.3 * s));
      outer.push_back(Tensor::stack(x, inner, second));
    }
    return Tensor::stack(x, outer, first);
  };
  // A 2-D kernel {kh: 2, kw: k}: b's row times a fixed column.
  auto kernel2d = [taps](C x, const Tensor& b) {
    return taps(x, b, "kw").mul(x, Tensor::fromSlice(x, {"kh"}, {2}, {1.0f, -0.7f}));
  };
  const fucina::Conv2dOptions padded{.channels = "c", .height = "i", .width = "j", .pad_h = 1, .pad_w = 1};
  spatial("conv2d", [=](C x, const Tensor& a, const Tensor& b) {
    const Tensor bias = Tensor::fromSlice(x, {"out"}, {3}, {0.1f, -0.2f, 0.3f});
    return images(x, a, b).conv2d(x, weight(x, kernel2d(x, b), "out", 3, "c", 2), bias, padded);
  }, 1e-4);
  spatial("conv2d", [=](C x, const Tensor& a, const Tensor& b) {
    const fucina::Conv2dOptions o{.channels = "c", .height = "i", .width = "j", .stride_h = 2, .stride_w = 2,
                                  .pad_h = 1, .pad_w = 1, .dilation_h = 2, .dilation_w = 2, .groups = 2};
    return images(x, a, b).conv2d(x, weight(x, kernel2d(x, b), "out", 2, "c", 1), o);
  }, 1e-4);
  spatial("conv2dRelu", [=](C x, const Tensor& a, const Tensor& b) {
    return images(x, a, b).conv2dRelu(x, weight(x, kernel2d(x, b), "out", 3, "c", 2), padded);
  }, 1e-4);
  // Channels last (Note [Channels last]): the images as {n, i, j, c}, the weight {out, kh, kw, c}.
  auto last = [images](C x, const Tensor& a, const Tensor& b) { return images(x, a, b).permuteTo(x, {"n", "i", "j", "c"}); };
  spatial("conv2d", [=](C x, const Tensor& a, const Tensor& b) {
    const Tensor bias = Tensor::fromSlice(x, {"out"}, {3}, {0.1f, -0.2f, 0.3f});
    return last(x, a, b).conv2d(x, weight(x, kernel2d(x, b), "out", 3, "c", 2), bias, padded);
  }, 1e-4);
  spatial("conv2d", [=](C x, const Tensor& a, const Tensor& b) {
    const fucina::Conv2dOptions o{.channels = "c", .height = "i", .width = "j", .stride_h = 2, .stride_w = 1,
                                  .pad_h = 1, .pad_w = 2, .dilation_h = 1, .dilation_w = 2, .groups = 2};
    return last(x, a, b).conv2d(x, weight(x, kernel2d(x, b), "out", 4, "c", 1).permuteTo(x, {"out", "kh", "kw", "c"}), o);
  }, 1e-4);
  spatial("conv2dRelu", [=](C x, const Tensor& a, const Tensor& b) {
    return last(x, a, b).conv2dRelu(x, weight(x, kernel2d(x, b), "out", 3, "c", 2), padded);
  }, 1e-4);
  spatial("conv1d", [=](C x, const Tensor& a, const Tensor& b) {
    const fucina::Conv1dOptions o{.length = "j", .stride = 2, .padding = 1, .dilation = 2, .groups = 2};
    return signals(x, a, b).conv1d(x, weight(x, taps(x, b, "k"), "out", 2, "c", 1), o);
  }, 1e-4);
  spatial("convTranspose1d", [=](C x, const Tensor& a, const Tensor& b) {
    const fucina::ConvTranspose1dOptions o{.length = "j", .stride = 2, .output_padding = 1, .groups = 2};
    return signals(x, a, b).convTranspose1d(x, weight(x, taps(x, b, "k"), "c", 2, "out", 2), o);
  }, 1e-4);
  const fucina::Conv1dAxes along_j{.length = "j"};
  spatial("causalConv1d", [=](C x, const Tensor& a, const Tensor& b) {
    return signals(x, a, b).causalConv1d(x, weight(x, taps(x, b, "k"), "out", 3, "c", 2), 2, along_j);
  }, 1e-4);
  spatial("groupedCausalConv1d", [=](C x, const Tensor& a, const Tensor& b) {
    return signals(x, a, b).groupedCausalConv1d(x, weight(x, taps(x, b, "k"), "out", 2, "c", 1), 2, 1, along_j);
  }, 1e-4);
  spatial("causalDepthwiseConv1d", [=](C x, const Tensor& a, const Tensor& b) {
    return signals(x, a, b).causalDepthwiseConv1d(x, weight(x, taps(x, b, "k"), "out", 2, "c", 1), along_j);
  }, 1e-4);
  const fucina::UnfoldOptions cols{.channels = "c", .height = "i", .width = "j", .stride_w = 2, .pad_h = 1, .pad_w = 1};
  spatial("unfold", [=](C x, const Tensor& a, const Tensor& b) { return images(x, a, b).unfold(x, 2, 2, cols); }, 1e-4);
  spatial("fold", [=](C x, const Tensor& a, const Tensor& b) {
    return images(x, a, b).unfold(x, 2, 2, cols).fold(x, a.extent("i"), a.extent("j"), 2, 2, cols);
  }, 1e-4);
  // Pooling over a stacked axis h and j (i a batch axis), padded (the scalar loops) and not (the
  // cpu backend's SIMD max).
  auto planes = [over](C x, const Tensor& a, const Tensor& b) {
    const Tensor bb = over(x, a, b);
    return Tensor::stack(x, std::vector<Tensor>{a, bb, bb.mul(x, a)}, "h");
  };
  spatial("maxPool2d", [=](C x, const Tensor& a, const Tensor& b) {
    return planes(x, a, b).maxPool2d(x, 2, 3, 1, 2, 1, "h", "j");
  }, 1e-5);
  spatial("maxPool2d", [=](C x, const Tensor& a, const Tensor& b) {
    return planes(x, a, b).maxPool2d(x, 2, 1, 1, 1, 0, "h", "j");
  }, 1e-5);
  spatial("avgPool2d", [=](C x, const Tensor& a, const Tensor& b) {
    return planes(x, a, b).avgPool2d(x, 2, 3, 1, 2, 1, "h", "j");
  }, 1e-5);
  // Channels last: i after both pooled axes.
  spatial("maxPool2d", [=](C x, const Tensor& a, const Tensor& b) {
    return planes(x, a, b).permuteTo(x, {"h", "j", "i"}).maxPool2d(x, 2, 3, 1, 2, 1, "h", "j");
  }, 1e-5);
  spatial("maxPool2d", [=](C x, const Tensor& a, const Tensor& b) {
    return planes(x, a, b).permuteTo(x, {"h", "j", "i"}).maxPool2d(x, 2, 1, 1, 1, 0, "h", "j");
  }, 1e-5);
  spatial("avgPool2d", [=](C x, const Tensor& a, const Tensor& b) {
    return planes(x, a, b).permuteTo(x, {"h", "j", "i"}).avgPool2d(x, 2, 3, 1, 2, 1, "h", "j");
  }, 1e-5);
  spatial("upsample2xNearest", [=](C x, const Tensor& a, const Tensor& b) {
    return planes(x, a, b).upsample2xNearest(x, "h", "j");
  }, 1e-5);
  spatial("channelAffine", [](C x, const Tensor& a, const Tensor& b) {
    const Tensor row = b.tags().size() == 2 ? b.sum(x, "i") : b;
    return a.channelAffine(x, row, row.scale(x, 0.5).addScalar(x, 0.1), "j");
  }, 1e-5);
  // Row-wise families (softmax, norms, rope, gated units).
  // A parameter over `tags` with distinct values; `even` (a {i, j} tensor with an even j) is a next
  // to a half-scaled copy of itself, for the ops that take pairs or halves of j.
  auto param = [](C x, const fucina::Tags& tags, const fucina::Extents& shape, uint32_t seed) {
    return Tensor::fromSlice(x, tags, shape, randoms(static_cast<size_t>(fucina::numelOf(shape)), 0.5f, 1.5f, seed));
  };
  auto even = [](C x, const Tensor& a) {
    const Tensor halves[] = {a, a.scale(x, 0.5)};
    return Tensor::concat(x, halves, "j");
  };
  auto jOf = [](const Tensor& a) { return a.extent("j"); };
  unary("softmax", [](C x, const Tensor& a) { return a.softmax(x, "j"); });
  unary("logSoftmax", [](C x, const Tensor& a) { return a.logSoftmax(x, "j"); });
  unary("layerNorm", [](C x, const Tensor& a) { return a.layerNorm(x, "j"); });
  unary("layerNorm", [=](C x, const Tensor& a) {
    return a.layerNorm(x, "j", param(x, {"j"}, {jOf(a)}, 11), param(x, {"j"}, {jOf(a)}, 12));
  });
  unary("rmsNorm", [](C x, const Tensor& a) { return a.rmsNorm(x, "j"); });
  unary("rmsNormMul", [=](C x, const Tensor& a) { return a.rmsNormMul(x, "j", param(x, {"j"}, {jOf(a)}, 11)); });
  unary("rmsNormMulAdd", [=](C x, const Tensor& a) {
    return a.rmsNormMulAdd(x, "j", param(x, {"j"}, {jOf(a)}, 11), param(x, {"j"}, {jOf(a)}, 12));
  });
  unary("l2Normalize", [](C x, const Tensor& a) { return a.l2Normalize(x, "j"); });
  unary("standardizeAxis", [](C x, const Tensor& a) { return a.standardizeAxis(x, "j"); });
  unary("groupNorm", [=](C x, const Tensor& a) {
    return a.groupNorm(x, 1, "j", param(x, {"j"}, {jOf(a)}, 11), param(x, {"j"}, {jOf(a)}, 12), {.batch = {"i"}});
  });
  binary("cosineSimilarity", [](C x, const Tensor& a, const Tensor& b) { return a.cosineSimilarity(x, b, "j"); });
  // rope over {position: i, dim: j}: computed tables in both pairings, then given tables.
  unary("rope", [=](C x, const Tensor& a) { return even(x, a).rope(x, {.position = "i", .dim = "j", .offset = 3}); });
  unary("rope", [=](C x, const Tensor& a) {
    return even(x, a).rope(x, {.position = "i", .dim = "j", .mode = fucina::RopeOptions::Mode::interleaved});
  });
  unary("rope", [=](C x, const Tensor& a) {
    const fucina::Extents table{a.extent("i") + 1, jOf(a)};
    return even(x, a).rope(x, param(x, {"i", "j"}, table, 13), param(x, {"i", "j"}, table, 14),
                           {.position = "i", .dim = "j", .offset = 1});
  });
  unary("rmsNormMulRopeHalfPrepared", [=](C x, const Tensor& a) {
    const Tensor e = even(x, a);
    const fucina::Extents table{a.extent("i"), jOf(a)};
    return e.rmsNormMulRopeHalfPrepared(x, param(x, {"j"}, {jOf(e)}, 11), param(x, {"i", "j"}, table, 13),
                                        param(x, {"i", "j"}, table, 14), "j", {.position = "i"});
  });
  unary("swiglu", [=](C x, const Tensor& a) { return even(x, a).swiglu(x, "j"); });
  unary("geglu", [=](C x, const Tensor& a) { return even(x, a).geglu(x, "j"); });
  unary("glu", [=](C x, const Tensor& a) { return even(x, a).glu(x, "j"); });
  for (const char* act : {"silu", "gelu", "geluErf", "sigmoid", "relu", "quickGelu"})
    unary("splitGated", [=](C x, const Tensor& a) { return even(x, a).splitGated(x, "j", act); });
  binary("gated", [](C x, const Tensor& a, const Tensor& b) {
    return a.gated(x, b.broadcastTo(x, a.tags(), a.shape()), "quickGelu");
  });
  binary("situ", [](C x, const Tensor& a, const Tensor& b) {
    return a.situ(x, b.broadcastTo(x, a.tags(), a.shape()), 1.5);
  });
  // Views and copies (the backend's copy and fill: narrowing and slicing VJPs, pads, slice
  // updates, diagonals) and ops composed of primitives (einsum and transpose on contract).
  unary("narrow", [](C x, const Tensor& a) { return a.narrow(x, "j", 0, 1).exp(x); });
  unary("select", [](C x, const Tensor& a) { return a.select(x, "j", 0).exp(x); });
  unary("slice", [](C x, const Tensor& a) { return a.slice(x, "j", 0, a.extent("j"), 2).exp(x); });
  unary("sliceStep", [](C x, const Tensor& a) { return a.sliceStep(x, "j", 0, a.extent("j"), 2).exp(x); });
  unary("zeroPad2d", [](C x, const Tensor& a) { return a.zeroPad2d(x, "i", "j", {1, 0, 2, 1}).exp(x); });
  unary("constantPad2d", [](C x, const Tensor& a) { return a.constantPad2d(x, "i", "j", {0, 2, 1, 0}, 0.5).exp(x); });
  unary("setSlice", [](C x, const Tensor& a) { return a.setSlice(x, "j", 0, a.narrow(x, "j", 0, 1).exp(x)); });
  unary("zeroSlice", [](C x, const Tensor& a) { return a.zeroSlice(x, "j", 0, 1).exp(x); });
  unary("diagonal", [](C x, const Tensor& a) { return a.diagonal(x, "i", "j", 0, "d").exp(x); });
  unary("trace", [](C x, const Tensor& a) { return a.trace(x, "i", "j"); });
  unary("diag", [](C x, const Tensor& a) { return a.sum(x, "i").diag(x, "j", "p", "q", 1).exp(x); });
  unary("diagEmbed", [](C x, const Tensor& a) { return a.diagEmbed(x, "j", "p", "q", -1).exp(x); });
  unary("transpose", [](C x, const Tensor& a) { return a.transpose(x, "i", "j").contiguous(x).exp(x); });
  binary("einsum", [](C x, const Tensor& a, const Tensor& b) { return Tensor::einsum(x, a, b, {"i"}); });
  // Losses. Labels over i are made from the operand's extents: (3q + 1) mod J along the class axis j.
  auto labels = [ints](C x, const Tensor& a) {
    const int64_t n = a.extent("j");
    return ints(x, {"i"}, {a.extent("i")}, [n](int64_t q) { return (3 * q + 1) % n; });
  };
  using fucina::Reduction;
  for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
    unary("crossEntropy", [=](C x, const Tensor& a) { return a.crossEntropy(x, labels(x, a), "j", {.reduction = r}); });
    unary("nllLoss", [=](C x, const Tensor& a) { return a.nllLoss(x, labels(x, a), "j", r); });
    binary("mseLoss", [=](C x, const Tensor& a, const Tensor& b) { return a.mseLoss(x, b.broadcastTo(x, a.tags(), a.shape()), r); });
  }
  unary("crossEntropy", [=](C x, const Tensor& a) {
    return a.crossEntropy(x, labels(x, a), "j", {.reduction = Reduction::none, .label_smoothing = 0.1});
  });
  unary("crossEntropy", [=](C x, const Tensor& a) { return a.crossEntropy(x, labels(x, a), "j", {.label_smoothing = 0.2}); });
  // Pointwise losses (their rows), and where, maskedFill and compare (select, logic).
  for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
    binary("huberLoss", [=](C x, const Tensor& a, const Tensor& b) {
      return a.huberLoss(x, b.broadcastTo(x, a.tags(), a.shape()), 0.8, r);
    });
    binary("bceWithLogitsLoss", [=](C x, const Tensor& a, const Tensor& b) {
      return a.bceWithLogitsLoss(x, b.broadcastTo(x, a.tags(), a.shape()).sigmoid(x), r);
    });
  }
  binary("bceLoss", [](C x, const Tensor& a, const Tensor& b) {
    return a.bceLoss(x, b.broadcastTo(x, a.tags(), a.shape()), Reduction::mean);
  }, 0.05f, 0.95f);
  for (bool log_target : {false, true})
    binary("klDivLoss", [=](C x, const Tensor& a, const Tensor& b) {
      const Tensor t = b.broadcastTo(x, a.tags(), a.shape());
      return a.klDivLoss(x, log_target ? t.log(x) : t.subScalar(x, 0.5).relu(x), Reduction::sum, log_target);
    }, 0.1f, 1.5f);
  binary("where", [checker](C x, const Tensor& a, const Tensor& b) { return Tensor::where(x, checker(x, a), a, b); });
  unary("maskedFill", [checker](C x, const Tensor& a) { return a.maskedFill(x, checker(x, a), 0.25); });
  binary("compare", [](C x, const Tensor& a, const Tensor& b) { return a.compare(x, b, fucina::CompareOp::lt); });
  binary("compare", [](C x, const Tensor& a, const Tensor& b) {
    return a.detach(x).floor(x).to(x, DType::i64).compare(x, b.detach(x).floor(x).to(x, DType::i64), fucina::CompareOp::ge);
  });
  // In-place updates (updateInto): on a fresh copy, no gradient.
  binary("addScaledInPlace", [](C x, const Tensor& a, const Tensor& b) {
    return a.detach(x).scale(x, 1.0).addScaledInPlace(x, b.detach(x), 0.7);
  });
  unary("takeScaleNoGrad", [](C x, const Tensor& a) { return a.detach(x).scale(x, 1.0).takeScaleNoGrad(x, 1.3); });
  // crossEntropyExt's rows (crossEntropyRows, labelWeightSum): class weights, smoothing, z-loss and
  // an ignored class; soft targets from the second operand, which takes a gradient.
  auto classWeights = [](C x, int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t q = 0; q < v.size(); ++q) v[q] = 0.5f + 0.25f * static_cast<float>(q % 3);
    return Tensor::fromSlice(x, {"j"}, {n}, v);
  };
  for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
    unary("crossEntropyExt", [=](C x, const Tensor& a) { return a.crossEntropyExt(x, labels(x, a), "j", {.reduction = r}); });
    unary("crossEntropyExt", [=](C x, const Tensor& a) {
      const Tensor w = classWeights(x, a.extent("j"));
      return a.crossEntropyExt(x, labels(x, a), "j",
                               {.reduction = r, .label_smoothing = 0.1, .ignore_index = 1, .weight = &w, .z_loss = 0.01});
    });
    binary("crossEntropyExt", [=](C x, const Tensor& a, const Tensor& b) {
      const Tensor w = classWeights(x, a.extent("j"));
      const Tensor t = b.broadcastTo(x, a.tags(), a.shape()).softmax(x, "j");
      return a.crossEntropyExt(x, t, "j", {.reduction = r, .label_smoothing = 0.2, .weight = &w, .z_loss = 0.05});
    });
  }
  // The linear heads (contract per chunk of 2 rows, crossEntropyRows in place and its VJP from the
  // logits, distillRows and temperatureSoftmaxRows): a over {i, j} is x with axis j; the weight
  // {c: 3, j} is made from the second operand; labels (q + 1) mod 3 along i.
  auto head = [](C x, const Tensor& a, const Tensor& b) {
    const Tensor bj = b.broadcastTo(x, a.tags(), a.shape()).sum(x, "i");
    const Tensor rows[] = {bj, bj.scale(x, -0.7), bj.mul(x, bj).addScalar(x, 0.1)};
    return Tensor::stack(x, rows, "c");
  };
  auto headLabels = [ints](C x, const Tensor& a) {
    return ints(x, {"i"}, {a.extent("i")}, [](int64_t q) { return (q + 1) % 3; });
  };
  auto teacher = [](C x, const Tensor& a) {
    const int64_t n = a.extent("i");
    return Tensor::fromSlice(x, {"c", "i"}, {3, n}, randoms(static_cast<size_t>(3 * n), -2, 2, 5));
  };
  for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
    binary("linearCrossEntropyExt", [=](C x, const Tensor& a, const Tensor& b) {
      return a.linearCrossEntropyExt(x, head(x, a, b), headLabels(x, a), "j", "c", {.reduction = r, .chunk_rows = 2});
    });
    binary("linearCrossEntropyExt", [=](C x, const Tensor& a, const Tensor& b) {
      const Tensor w = Tensor::fromSlice(x, {"c"}, {3}, std::vector<float>{0.5f, 1.5f, 1.0f});
      return a.linearCrossEntropyExt(x, head(x, a, b), headLabels(x, a), "j", "c",
                                     {.reduction = r, .label_smoothing = 0.1, .ignore_index = 2, .weight = &w,
                                      .z_loss = 0.02, .chunk_rows = 2});
    });
    binary("linearDistillExt", [=](C x, const Tensor& a, const Tensor& b) {
      const Tensor l = headLabels(x, a);
      return a.linearDistillExt(x, head(x, a, b), teacher(x, a), "j", "c",
                                {.temperature = 2, .alpha = 0.3, .labels = &l, .reduction = r, .ignore_index = 2,
                                 .chunk_rows = 2});
    });
    binary("linearDistillExt", [=](C x, const Tensor& a, const Tensor& b) {
      return a.linearDistillExt(x, head(x, a, b), teacher(x, a).softmax(x, "c"), "j", "c",
                                {.temperature = 0.5, .teacher_probs = true, .reduction = r, .chunk_rows = 3});
    });
  }
  // Attention, reductions along an axis, packed and quantized products.
  // Reductions along an axis (reduceAlong), their f64 path and normAll (reduceF64, pNormVjp).
  unary("max", [](C x, const Tensor& a) { return a.max(x, "j"); });
  unary("min", [](C x, const Tensor& a) { return a.min(x, "i"); });
  unary("prod", [](C x, const Tensor& a) { return a.prod(x, "j"); }, 0.5f, 1.5f);
  unary("cumsum", [](C x, const Tensor& a) { return a.cumsum(x, "j"); });
  unary("cumsum", [](C x, const Tensor& a) { return a.cumsum(x, "i"); });
  unary("logsumexp", [](C x, const Tensor& a) { return a.logsumexp(x, "j"); });
  unary("logsumexp", [ints](C x, const Tensor& a) {  // a first line of −∞ only: its gradient is 0
    const Tensor first = ints(x, {"i"}, {a.extent("i")}, [](int64_t q) { return q == 0 ? 1 : 0; }).to(x, DType::u8);
    return a.maskedFill(x, first, -std::numeric_limits<double>::infinity()).logsumexp(x, "j");
  });
  unary("variance", [](C x, const Tensor& a) { return a.variance(x, "j", 1); });
  unary("norm", [](C x, const Tensor& a) { return a.norm(x, "j"); });
  for (double p : {1.0, 2.0, 3.0, std::numeric_limits<double>::infinity()})
    unary("normAll", [p](C x, const Tensor& a) { return a.normAll(x, p); });
  unary("variance", [](C x, const Tensor& a) { return a.detach(x).to(x, fucina::DType::f64).variance(x, "j", 0); });
  unary("max", [](C x, const Tensor& a) { return a.detach(x).to(x, fucina::DType::f64).max(x, "j"); });
  unary("cumsum", [](C x, const Tensor& a) { return a.detach(x).to(x, fucina::DType::f64).cumsum(x, "i"); });
  unary("logsumexp", [](C x, const Tensor& a) { return a.detach(x).to(x, fucina::DType::f64).logsumexp(x, "j"); });
  unary("normAll", [](C x, const Tensor& a) { return a.detach(x).to(x, fucina::DType::f64).normAll(x, 3); });
  // Attention over {time: i, dim: j}: q stacks two heads of a, k and v one head made from b (so
  // two query heads share it); then a batch axis n in all three, as many heads, no mask.
  binary("groupedAttention", [](C x, const Tensor& a, const Tensor& b) {
    const Tensor bb = b.broadcastTo(x, a.tags(), a.shape());
    const Tensor qs[] = {a, a.scale(x, 0.7)}, ks[] = {bb}, vs[] = {bb.scale(x, 0.5).add(x, a)};
    return Tensor::groupedAttention(x, Tensor::stack(x, qs, "h"), Tensor::stack(x, ks, "h"), Tensor::stack(x, vs, "h"),
                                    {.heads = "h", .time = "i", .dim = "j"});
  });
  binary("groupedAttention", [](C x, const Tensor& a, const Tensor& b) {
    const Tensor bb = b.broadcastTo(x, a.tags(), a.shape());
    auto batched = [&](const Tensor& t) {
      const Tensor heads[] = {t, t.scale(x, -0.6)};
      const Tensor h = Tensor::stack(x, heads, "h");
      const Tensor batch[] = {h, h.scale(x, 0.4)};
      return Tensor::stack(x, batch, "n");
    };
    return Tensor::groupedAttention(x, batched(a), batched(bb), batched(bb.mul(x, a)),
                                    {.heads = "h", .time = "i", .dim = "j", .causal = false, .scale = 0.5});
  });
  // Packed products (packRhs, packedProduct): inference-only, so on detached operands (the
  // harness then compares the forward alone); b renamed {o, j} is the weight, or {j} alone.
  auto packedWeight = [](C x, const Tensor& b) {
    const Tensor w = b.detach(x);
    return w.rank() == 1 ? w : w.withTags(x, {"o", "j"});
  };
  c.push_back({"dotPacked", 2, [packedWeight](C x, V t) {
                 return t[0].detach(x).dotPacked(x, fucina::packRhs(x, packedWeight(x, t[1]), "j"));
               }, -2, 2, 1e-4});
  c.push_back({"dotPacked", 2, [packedWeight](C x, V t) {
                 const Tensor w = packedWeight(x, t[1]);
                 const Tensor bias = w.rank() == 1 ? Tensor::scalar(x, 0.5f) : w.sum(x, "j").scale(x, 0.3);
                 return t[0].detach(x).dotPacked(x, fucina::packRhs(x, w.to(x, DType::f16), "j"), bias);
               }, -2, 2, 1e-3});
  c.push_back({"rmsNormMulDotPacked", 2, [packedWeight, jOf](C x, V t) {
                 const Tensor a = t[0].detach(x);
                 return a.rmsNormMulDotPacked(x, Tensor::full(x, {"j"}, {jOf(a)}, 1.5), fucina::packRhs(x, packedWeight(x, t[1]), "j"));
               }, -2, 2, 1e-4});
  // Quantization: q8_0 blocks along j (32 copies of each element) or along i, read back as f32.
  unary("quantize", [](C x, const Tensor& a) {
    return a.repeatAxis(x, "j", 32).quantize(x, DType::q8_0, "j").to(x, DType::f32);
  });
  unary("quantize", [](C x, const Tensor& a) {
    return a.to(x, DType::bf16).repeatAxis(x, "i", 32, true).quantize(x, DType::q8_0, "i").to(x, DType::f32);
  });
  c.push_back({"dotTernarySte", 2, [](C x, V t) { return t[0].dotTernarySte(x, t[1], "j"); }, -2, 2, 1e-4});
  // Views with arbitrary strides: the VJP scatter-adds through overlapping elements.
  unary("viewWithStrides", [](C x, const Tensor& a) {
    const int64_t n = a.numel();
    return a.viewWithStrides(x, {"p", "q"}, {std::max<int64_t>(n - 1, 0), 2}, {1, 1}, 0).exp(x);
  });
  unary("viewWithStrides", [](C x, const Tensor& a) {
    return a.viewWithStrides(x, {"p", "q"}, {a.numel(), 3}, {1, 0}, 0).exp(x);
  });
  // Moves along an axis (the backend's copy and fill; moveSlices for the per-slice shifts).
  auto shifts = [ints](C x, const Tensor& a) {
    return ints(x, {"i"}, {a.extent("i")}, [](int64_t q) { return 2 * q - 3; });
  };
  unary("flip", [](C x, const Tensor& a) { return a.flip(x, "j").exp(x); });
  unary("roll", [](C x, const Tensor& a) { return a.roll(x, "j", 2).exp(x); });
  unary("rollBy", [shifts](C x, const Tensor& a) { return a.rollBy(x, "j", "i", shifts(x, a)).exp(x); });
  unary("shiftBy", [shifts](C x, const Tensor& a) { return a.shiftBy(x, "j", "i", shifts(x, a)).exp(x); });
  unary("relposShift", [](C x, const Tensor& a) { return a.relposShift(x, "i", "j").exp(x); });
  unary("repeatAxis", [](C x, const Tensor& a) { return a.repeatAxis(x, "j", 3).exp(x); });
  unary("repeatAxis", [](C x, const Tensor& a) { return a.repeatAxis(x, "i", 2, true).exp(x); });
  // Structure: concatenations, pads and the band masks.
  binary("concat", [](C x, const Tensor& a, const Tensor& b) {
    const Tensor parts[] = {a, b.broadcastTo(x, a.tags(), a.shape()).scale(x, 2)};
    return Tensor::concat(x, parts, "j");
  });
  binary("stack", [](C x, const Tensor& a, const Tensor& b) {
    const Tensor parts[] = {a, b.broadcastTo(x, a.tags(), a.shape())};
    return Tensor::stack(x, parts, "s");
  });
  unary("pad", [](C x, const Tensor& a) { return a.pad(x, "j", 2, 1, 0.5).exp(x); });
  unary("tril", [](C x, const Tensor& a) { return a.tril(x, "i", "j", 1); });
  unary("tril", [](C x, const Tensor& a) { return a.tril(x, "j", "i", -1); });
  unary("triu", [](C x, const Tensor& a) { return a.triu(x, "i", "j", 2); });
  unary("bandPart", [](C x, const Tensor& a) { return a.bandPart(x, "i", "j", 1, -1); });
  unary("bandPart", [](C x, const Tensor& a) { return a.bandPart(x, "i", "j", 0, 2); });
  // Views and reshapes (copies through the backend where the strides do not allow a view).
  unary("broadcastTo", [](C x, const Tensor& a) { return a.broadcastTo(x, {"k", "i", "j"}, {2, a.extent("i"), a.extent("j")}).exp(x); });
  unary("permuteTo", [](C x, const Tensor& a) { return a.permuteTo(x, {"j", "i"}).exp(x); });
  unary("withTags", [](C x, const Tensor& a) { return a.withTags(x, {"p", "q"}).exp(x); });
  unary("contiguous", [](C x, const Tensor& a) { return a.contiguous(x).exp(x); });
  unary("materialize", [](C x, const Tensor& a) { return a.materialize(x).exp(x); });
  unary("to", [](C x, const Tensor& a) { return a.to(x, DType::f16).to(x, DType::f32).exp(x); });
  unary("insertAxis", [](C x, const Tensor& a) { return a.insertAxis(x, "k", 1).exp(x); });
  unary("squeeze", [](C x, const Tensor& a) { return a.insertAxis(x, "k", 0).squeeze(x, "k").exp(x); });
  unary("merge", [](C x, const Tensor& a) { return a.merge(x, {"j", "i"}, "m").exp(x); });
  unary("split", [](C x, const Tensor& a) { return a.merge(x, {"i", "j"}, "m").split(x, "m", {"p", "q"}, {a.extent("i"), a.extent("j")}).exp(x); });
  unary("flatten", [](C x, const Tensor& a) { return a.flatten(x, "m").exp(x); });
  unary("reshape", [](C x, const Tensor& a) { return a.reshape(x, {"m", "k"}, {a.extent("j"), a.extent("i")}).exp(x); });
  unary("alignTo", [](C x, const Tensor& a) { return a.alignTo(x, {"j", "k", "i"}).exp(x); });
  unary("unbindInto", [](C x, const Tensor& a) {
    const std::vector<Tensor> rows = a.unbindInto(x, "i");
    return rows.empty() ? a.sum(x, "i") : rows.back().mul(x, rows.front());
  });
  unary("sumMany", [](C x, const Tensor& a) { return a.sumMany(x, {"i", "j"}); });
  unary("biasAdd", [](C x, const Tensor& a) {
    std::vector<float> bias(static_cast<size_t>(a.extent("j")));
    for (size_t q = 0; q < bias.size(); ++q) bias[q] = 0.1f * static_cast<float>(q) - 0.2f;
    return a.biasAdd(x, "j", bias);
  });
  binary("matmul", [](C x, const Tensor& a, const Tensor& b) {
    return a.matmul(x, b.broadcastTo(x, a.tags(), a.shape()).withTags(x, {"k", "j"}), true);
  });
  binary("einsumMany", [](C x, const Tensor& a, const Tensor& b) {
    const Tensor ops[] = {a, b, a.scale(x, 0.5)};
    return Tensor::einsumMany(x, ops, {"i"});
  });
  // In-place and consuming updates, and the router: constants, compared by value.
  binary("addAxisVectorInPlace", [](C x, const Tensor& a, const Tensor& b) {
    const Tensor v = (b.rank() == 1 ? b : b.sum(x, "i")).detach(x);
    return a.detach(x).scale(x, 1.0).addAxisVectorInPlace(x, "j", v);
  });
  binary("addAxisVectorUnaryInPlace", [](C x, const Tensor& a, const Tensor& b) {
    const Tensor v = (b.rank() == 1 ? b : b.sum(x, "i")).detach(x);
    return a.detach(x).scale(x, 1.0).addAxisVectorUnaryInPlace(x, "j", v, "gelu");
  });
  binary("takeAddNoGrad", [](C x, const Tensor& a, const Tensor& b) {
    return a.detach(x).scale(x, 1.0).takeAddNoGrad(x, b.detach(x));
  });
  unary("routerTopK", [](C x, const Tensor& a) {
    return a.detach(x).routerTopK(x, "j", std::min<int64_t>(a.extent("j"), 2)).values;
  });
  // The packed products of gated units: [gate | up] along j, twice the packed depth.
  c.push_back({"splitSwiGluDotPacked", 2, [packedWeight, even](C x, V t) {
                 return even(x, t[0].detach(x)).splitSwiGluDotPacked(x, fucina::packRhs(x, packedWeight(x, t[1]), "j"));
               }, -2, 2, 1e-4});
  c.push_back({"gegluQuantDotPacked", 2, [packedWeight, even](C x, V t) {
                 const Tensor w = packedWeight(x, t[1]).repeatAxis(x, "j", 32);
                 const Tensor a = even(x, t[0].detach(x).repeatAxis(x, "j", 32));
                 return a.gegluQuantDotPacked(x, fucina::packRhs(x, w.quantize(x, DType::q8_0, "j"), "j"));
               }, -2, 2, 1e-3});
  c.push_back({"packRhs", 2, [packedWeight](C x, V t) {
                 const fucina::PackedRhs p = fucina::packRhs(x, packedWeight(x, t[1]), "j");
                 return t[0].detach(x).dotPacked(x, p).add(x, t[0].detach(x).dotPacked(x, p));
               }, -2, 2, 1e-4});
  // The prepared convolution (GEMM path: 2 channels): images of a and b, as conv2d's cases.
  spatial("prepareConv2dWeights", [=](C x, const Tensor& a, const Tensor& b) {
    const fucina::PreparedConv2d p = fucina::prepareConv2dWeights(x, weight(x, kernel2d(x, b), "out", 3, "c", 2).detach(x), padded);
    return images(x, a, b).detach(x).conv2dPrepared(x, p);
  }, 1e-4);
  spatial("conv2dPrepared", [=](C x, const Tensor& a, const Tensor& b) {
    const Tensor bias = Tensor::fromSlice(x, {"out"}, {3}, {0.1f, -0.2f, 0.3f});
    const fucina::PreparedConv2d p =
        fucina::prepareConv2dWeights(x, weight(x, kernel2d(x, b), "out", 3, "c", 2).detach(x), bias, padded);
    return images(x, a, b).detach(x).conv2dPrepared(x, p);
  }, 1e-4);
  spatial("conv2dPreparedRelu", [=](C x, const Tensor& a, const Tensor& b) {
    const fucina::PreparedConv2d p = fucina::prepareConv2dWeights(x, weight(x, kernel2d(x, b), "out", 3, "c", 2).detach(x), padded);
    return images(x, a, b).detach(x).conv2dPreparedRelu(x, p);
  }, 1e-4);
  return c;
}

struct Layout {
  const char* name;
  fucina::Extents a;      // extents of {i, j}
  bool broadcast_second;  // the second operand over {j} alone
  bool strided;           // operands made {j, i}, permuted to {i, j} and narrowed along j
};
const Layout kLayouts[] = {
    {"size 1", {1, 1}, false, false},
    {"odd", {3, 5}, true, false},
    {"empty", {0, 5}, false, false},
    {"non-contiguous", {4, 7}, false, true},
};

std::vector<float> randoms(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

struct Run {
  std::vector<float> out;
  std::vector<std::vector<float>> grads;
  std::optional<ErrorCode> error;  // the op's error, where it refuses the layout (meanAll of nothing)
};

// The case on a fresh context of `backend`: leaves, the views the op sees, y, and the gradients
// of sum(y·w) with a fixed w.
Run runCase(Backend backend, const Case& c, const Layout& l) {
  ExecContext ctx(ExecOptions{.threads = 2, .backend = backend});
  std::vector<Tensor> leaves, views;
  for (int k = 0; k < c.arity; ++k) {
    const bool vector = k == 1 && l.broadcast_second;
    fucina::Tags tags = vector ? fucina::Tags{"j"} : fucina::Tags{"i", "j"};
    fucina::Extents shape = vector ? fucina::Extents{l.a[1]} : l.a;
    if (l.strided) shape = {l.a[1] + 2, l.a[0]}, tags = {"j", "i"};
    const size_t n = static_cast<size_t>(fucina::numelOf(shape));
    leaves.push_back(Tensor::variableFromSlice(ctx, tags, shape, randoms(n, c.lo, c.hi, 7 + k)));
    Tensor v = leaves.back();
    if (l.strided) v = v.permuteTo(ctx, {"i", "j"}).narrow(ctx, "j", 1, l.a[1]);
    views.push_back(v);
  }
  Tensor y;
  try {
    y = c.apply(ctx, views);
  } catch (const fucina::Error& e) {
    return Run{{}, {}, e.code()};
  }
  Run r{y.toVector(), {}, std::nullopt};
  if (!y.requiresGrad()) return r;  // an integer or truth-valued result: no gradient to compare
  const Tensor w = Tensor::fromSlice(ctx, y.tags(), y.shape(), randoms(static_cast<size_t>(y.numel()), -1, 1, 99));
  y.mul(ctx, w).sumAll(ctx).backward(ctx);
  for (const Tensor& leaf : leaves) {
    const auto g = leaf.grad(ctx);
    r.grads.push_back(g ? g->toVector() : std::vector<float>(static_cast<size_t>(leaf.numel()), 0.0f));
  }
  return r;
}

void requireClose(const std::string& what, const std::vector<float>& got, const std::vector<float>& want, double tol) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": " << got[i] << " vs " << want[i]);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(got[i]));
      continue;
    }
    if (got[i] == want[i]) continue;  // infinities too
    CHECK(std::fabs(got[i] - want[i]) <= tol * (1 + std::fabs(want[i])));
  }
}

std::vector<std::string> publicOps() {
  std::ifstream f(FUCINA_SOURCE_DIR "/src/fucina/ops/ops.list");
  std::vector<std::string> ops;
  for (std::string line; std::getline(f, line);) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string op;
    if (words >> op) ops.push_back(op);
  }
  return ops;
}

}  // namespace

TEST_CASE("backend harness: every case agrees with the cpu backend on every layout") {
  for (const Case& c : cases()) {
    int computed = 0;  // layouts the op accepts: a case refused on all four would compare nothing
    for (const Layout& l : kLayouts) {
      const std::string where = c.op + " (" + l.name + ")";
      const Run want = runCase(Backend::cpu, c, l);
      const Run got = runCase(Backend::reference, c, l);
      INFO(where);
      REQUIRE(got.error == want.error);
      computed += !want.error;
      requireClose(where + ": value", got.out, want.out, c.tol);
      for (size_t k = 0; k < want.grads.size(); ++k)
        requireClose(where + ": gradient of operand " + std::to_string(k), got.grads[k], want.grads[k], c.tol);
    }
    INFO(c.op << " computes on no layout");
    CHECK(computed > 0);
  }
}

TEST_CASE("backend harness: coverage matrix") {
  std::set<std::string> covered;
  for (const Case& c : cases()) covered.insert(c.op);
  const auto ops = publicOps();
  REQUIRE(ops.size() > 120);
  size_t on_seam = 0;
  std::printf("backend coverage (%zu ops): forward and VJP against cpu on | reference\n", ops.size());
  for (const std::string& op : ops) {
    const bool in = covered.count(op) > 0;
    on_seam += in;
    std::printf("  %-28s %s\n", op.c_str(), in ? "yes" : "- (not run by the harness yet)");
  }
  std::printf("%zu of %zu ops run by the harness on every backend\n", on_seam, ops.size());
  // Every case names a public op, so the matrix cannot list a case that no user can call.
  for (const std::string& op : covered) {
    INFO(op);
    CHECK(std::find(ops.begin(), ops.end(), op) != ops.end());
  }
}

TEST_CASE("backend harness: the f64 and integer forwards agree with the cpu backend") {
  for (Backend b : {Backend::cpu, Backend::reference}) {
    ExecContext ctx(ExecOptions{.backend = b});
    const Tensor i = Tensor::fromSlice(ctx, {"d"}, {3}, {100, -7, 2}).to(ctx, DType::i32);
    const Tensor j = Tensor::fromSlice(ctx, {"d"}, {3}, {2147483647.0f, 3, -5}).to(ctx, DType::i64);
    CHECK(i.add(ctx, i).toVector() == std::vector<float>{200, -14, 4});
    CHECK(i.neg(ctx).toVector() == std::vector<float>{-100, 7, -2});
    CHECK(j.mul(ctx, j).toVector() == std::vector<float>{4611686014132420609.0f, 9, 25});
    const Tensor u = Tensor::fromSlice(ctx, {"d"}, {2}, {250, 3}).to(ctx, DType::u8);
    CHECK(u.add(ctx, u).toVector() == std::vector<float>{244, 6});  // wraps mod 256, as torch's uint8
    const Tensor f = Tensor::fromSlice(ctx, {"d"}, {2}, {0.5f, 2.0f}).to(ctx, DType::f64);
    const Tensor e = f.exp(ctx);
    CHECK(e.dtype() == DType::f64);
    CHECK(e.toVector() == std::vector<float>{static_cast<float>(std::exp(0.5)), static_cast<float>(std::exp(2.0))});
  }
}

TEST_CASE("backend harness: the prepared convolution agrees with the cpu backend on both of its paths") {
  // Inference only, so no case of cases(): the Winograd path (a 3x3 kernel over at least
  // kWinogradMinChannels channels a group) and the GEMM path, with a bias, with and without relu,
  // odd sizes so that the last tiles hang over the edge.
  auto run = [](Backend backend, int64_t k, bool relu) {
    ExecContext ctx(ExecOptions{.threads = 2, .backend = backend});
    constexpr int64_t groups = 2, C = 128, OC = 4, H = 5, W = 7;
    const fucina::Conv2dOptions o{.pad_h = 1, .pad_w = 1, .groups = groups};
    const Tensor x = Tensor::fromSlice(ctx, {"n", "c", "h", "w"}, {2, C, H, W}, randoms(2 * C * H * W, -1, 1, 11));
    const Tensor w = Tensor::fromSlice(ctx, {"out", "c", "kh", "kw"}, {OC, C / groups, k, k},
                                       randoms(static_cast<size_t>(OC * C / groups * k * k), -0.2f, 0.2f, 12));
    const Tensor b = Tensor::fromSlice(ctx, {"out"}, {OC}, {0.1f, -0.2f, 0.05f, 0.3f});
    const fucina::PreparedConv2d p = fucina::prepareConv2dWeights(ctx, w, b, o);
    CHECK(p.winograd() == (k == 3));
    return (relu ? x.conv2dPreparedRelu(ctx, p) : x.conv2dPrepared(ctx, p)).toVector();
  };
  for (int64_t k : {3, 2})
    for (bool relu : {false, true}) {
      const std::string where = "kernel " + std::to_string(k) + (relu ? ", relu" : "");
      requireClose(where, run(Backend::reference, k, relu), run(Backend::cpu, k, relu), 1e-4);
    }
}

TEST_CASE("backend harness: packed products agree with the cpu backend for every weight kind") {
  // Inference only, so no case of cases(): dense weights in each dtype (f32 panels on cpu), a
  // q8_0 weight blocked along the depth (3 rows take the cpu's q8_0 rows kernel, 20 its GEMM) and
  // one blocked along the columns (dequantized and packed dense), with and without a bias; then
  // the fused entries.
  constexpr int64_t K = 64;
  auto run = [](Backend backend, int64_t m, DType dtype, const char* block, bool with_bias) {
    ExecContext ctx(ExecOptions{.threads = 2, .backend = backend});
    const int64_t n = std::string(block) == "out" ? 64 : 37;
    const Tensor x = Tensor::fromSlice(ctx, {"r", "in"}, {m, K}, randoms(static_cast<size_t>(m * K), -1, 1, 21));
    Tensor w = Tensor::fromSlice(ctx, {"out", "in"}, {n, K}, randoms(static_cast<size_t>(n * K), -1, 1, 22));
    w = dtype == DType::q8_0 ? w.quantize(ctx, dtype, block) : w.to(ctx, dtype);
    const fucina::PackedRhs p = fucina::packRhs(ctx, w, "in");
    CHECK(p.dtype() == (dtype == DType::q8_0 && std::string(block) == "in" ? DType::q8_0 : DType::f32));
    const Tensor bias = Tensor::fromSlice(ctx, {"out"}, {n}, randoms(static_cast<size_t>(n), -1, 1, 23));
    return (with_bias ? x.dotPacked(ctx, p, bias) : x.dotPacked(ctx, p)).toVector();
  };
  for (int64_t m : {3, 20})
    for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::q8_0})
      for (const char* block : {"in", "out"}) {
        if (dtype != DType::q8_0 && std::string(block) == "out") continue;
        for (bool with_bias : {false, true}) {
          const std::string where = std::to_string(m) + " rows of " + std::string(fucina::name(dtype)) + " blocked along " +
                                    block + (with_bias ? " with a bias" : "");
          requireClose(where, run(Backend::reference, m, dtype, block, with_bias), run(Backend::cpu, m, dtype, block, with_bias),
                       1e-4);
        }
      }
  auto fused = [](Backend backend, int which) {
    ExecContext ctx(ExecOptions{.threads = 2, .backend = backend});
    const Tensor x = Tensor::fromSlice(ctx, {"r", "in"}, {5, 2 * K}, randoms(static_cast<size_t>(10 * K), -1, 1, 24));
    const Tensor w = Tensor::fromSlice(ctx, {"in", "out"}, {K, 40}, randoms(static_cast<size_t>(40 * K), -1, 1, 25));
    if (which == 0) return x.splitSwiGluDotPacked(ctx, fucina::packRhs(ctx, w, "in")).toVector();
    if (which == 1) return x.gegluQuantDotPacked(ctx, fucina::packRhs(ctx, w.quantize(ctx, DType::q8_0, "in"), "in")).toVector();
    const Tensor wide = Tensor::fromSlice(ctx, {"in", "out"}, {2 * K, 9}, randoms(static_cast<size_t>(18 * K), -1, 1, 26));
    return x.rmsNormMulDotPacked(ctx, Tensor::full(ctx, {"in"}, {2 * K}, 0.7), fucina::packRhs(ctx, wide, "in")).toVector();
  };
  for (int which : {0, 1, 2}) requireClose("fused entry " + std::to_string(which), fused(Backend::reference, which), fused(Backend::cpu, which), 1e-4);
}

TEST_CASE("a packed weight is refused under a backend other than the one that packed it") {
  for (DType dtype : {DType::f32, DType::q8_0})
    for (Backend from : {Backend::cpu, Backend::reference}) {
      const Backend to = from == Backend::cpu ? Backend::reference : Backend::cpu;
      ExecContext packing(ExecOptions{.backend = from}), using_it(ExecOptions{.backend = to});
      Tensor w = Tensor::fromSlice(packing, {"out", "in"}, {3, 32}, randoms(96, -1, 1, 31));
      if (dtype == DType::q8_0) w = w.quantize(packing, dtype, "in");
      const fucina::PackedRhs p = fucina::packRhs(packing, w, "in");
      const Tensor x = Tensor::fromSlice(using_it, {"r", "in"}, {2, 32}, randoms(64, -1, 1, 32));
      CHECK_FUCINA_ERROR(x.dotPacked(using_it, p), DeviceMismatch);
      const Tensor same = Tensor::fromSlice(packing, {"r", "in"}, {2, 32}, randoms(64, -1, 1, 32));
      CHECK(same.dotPacked(packing, p).numel() == 6);
    }
}

TEST_CASE("backend harness: bad inputs are the same errors on every backend") {
  for (Backend b : {Backend::cpu, Backend::reference}) {
    ExecContext ctx(ExecOptions{.backend = b});
    const Tensor a = Tensor::ones(ctx, {"i"}, {3}), c = Tensor::ones(ctx, {"i"}, {4});
    CHECK_FUCINA_ERROR(a.add(ctx, c), ShapeMismatch);
    CHECK_FUCINA_ERROR(a.dot(ctx, c, "i"), ShapeMismatch);
    CHECK_FUCINA_ERROR(a.sum(ctx, "nope"), ShapeMismatch);
    CHECK_FUCINA_ERROR(a.to(ctx, DType::i32).exp(ctx), DTypeMismatch);
    CHECK_FUCINA_ERROR(Tensor::fromSlice(ctx, {"i"}, {3}, {0.5f, 1.5f, 0.2f}).bceLoss(ctx, a.scale(ctx, 0.5)), InvalidArgument);
    CHECK_FUCINA_ERROR(Tensor::fromSlice(ctx, {"i"}, {3}, {0.5f, NAN, 0.2f}).bceLoss(ctx, a.scale(ctx, 0.5)), InvalidArgument);
    // firstValueOutside scans in row-major order of the view it is given.
    const Tensor p = Tensor::fromSlice(ctx, {"r", "c"}, {2, 2}, {0.5f, 2.0f, -1.0f, 0.5f});
    const auto fault = fucina::backend::kernelsFor(b).firstValueOutside(ctx, p.value().permuted({"c", "r"}), 0, 1);
    CHECK(fault.position == 1);
    CHECK(fault.value == -1.0);
    // Only the rows marked in_place are computed in place.
    const fucina::internal::RawTensor dst = fucina::internal::RawTensor::zeros(ctx, {"i"}, {3});
    CHECK_FUCINA_ERROR(fucina::backend::kernelsFor(b).updateInto(ctx, fucina::backend::ElemOp::Exp, dst, nullptr, {}),
                       InvalidArgument);
    // Nor are the forms a row turns off (a step's partials, its f64 forward).
    const std::array<const fucina::internal::RawTensor*, 4> four{&dst, &dst, &dst, &dst};
    CHECK_FUCINA_ERROR(fucina::backend::kernelsFor(b).map(ctx, fucina::backend::ElemOp::LogAdd, fucina::backend::Form::da,
                                                          dst.tags(), dst.shape(), four, {}),
                       InvalidArgument);
    CHECK_FUCINA_ERROR(fucina::backend::kernelsFor(b).mapAs(ctx, fucina::backend::ElemOp::FiniteOrZero, DType::f64,
                                                            dst.tags(), dst.shape(), std::span(four).first(1), {}),
                       DTypeMismatch);
    // A loss divisor held as a tensor (a device's labelWeightSum) is never read as a number here
    // (Note [Loss divisors]); a number divides as it always did.
    const fucina::backend::Kernels::Divisor on_device(fucina::internal::RawTensor::full(ctx, {}, {}, 2.0));
    CHECK_FUCINA_ERROR(fucina::backend::kernelsFor(b).reduceLoss(ctx, dst, on_device), DeviceMismatch);
    const fucina::internal::RawTensor two = fucina::internal::RawTensor::full(ctx, {"i"}, {2}, 3.0);
    CHECK(fucina::backend::kernelsFor(b).reduceLoss(ctx, two, 4.0).f32()[0] == 1.5f);
  }
  CHECK_FUCINA_ERROR(ExecContext(ExecOptions{.backend = static_cast<Backend>(7)}), InvalidArgument);
}

TEST_CASE("a context on the reference backend trains an MLP to the cpu backend's losses") {
  // x·W1 -> relu -> ·W2, mean squared error, SGD: the reference backend's scalar kernels against
  // the cpu backend's SIMD and threaded ones, step by step.
  auto train = [](Backend backend) {
    ExecContext ctx(ExecOptions{.threads = 2, .backend = backend});
    const Tensor x = Tensor::fromSlice(ctx, {"b", "in"}, {16, 5}, randoms(80, -1, 1, 1));
    const Tensor target = Tensor::fromSlice(ctx, {"b", "out"}, {16, 2}, randoms(32, -1, 1, 2));
    const Tensor w1 = Tensor::variableFromSlice(ctx, {"in", "h"}, {5, 8}, randoms(40, -0.5f, 0.5f, 3));
    const Tensor b1 = Tensor::variableFromSlice(ctx, {"h"}, {8}, randoms(8, -0.1f, 0.1f, 4));
    const Tensor w2 = Tensor::variableFromSlice(ctx, {"h", "out"}, {8, 2}, randoms(16, -0.5f, 0.5f, 5));
    const std::vector<Tensor> params{w1, b1, w2};
    fucina::optim::Sgd sgd(params, {.lr = 0.1});
    std::vector<float> losses;
    for (int step = 0; step < 30; ++step) {
      sgd.zeroGrad();
      const Tensor h = x.dot(ctx, w1, "in").add(ctx, b1).relu(ctx);
      const Tensor err = h.dot(ctx, w2, "h").sub(ctx, target);
      const Tensor loss = err.mul(ctx, err).meanAll(ctx);
      loss.backward(ctx);
      sgd.step(ctx);
      losses.push_back(loss.toVector()[0]);
    }
    return losses;
  };
  const std::vector<float> cpu = train(Backend::cpu), reference = train(Backend::reference);
  CHECK(reference.back() < 0.7f * reference.front());  // it learns
  requireClose("losses", reference, cpu, 1e-4);
}

TEST_CASE("ops and optimizers reach no host memory and start no threads") {
  // Note [Backends]: ops do shape logic, dtype rules and VJP records and compute only through the
  // kernel primitives, so src/fucina/ops/ holds no raw buffer access (.f32(), .data<T>(), the host
  // copies dataConst and toVector) and starts no threads (parallelFor): a backend whose buffers
  // are not host memory computes every op. So does src/fucina/optim/: the updates are primitives.
  const std::regex site(
      R"(\.(f32|data|mutableData)<?[a-z0-9_]*>?\(\)|\.(dataConst|toVector)\(|parallelFor\(|parallelChunks\()");
  size_t sites = 0;
  for (const char* dir : {"/src/fucina/ops", "/src/fucina/optim"}) {
    for (const auto& e : std::filesystem::directory_iterator(std::string(FUCINA_SOURCE_DIR) + dir)) {
      const std::string ext = e.path().extension().string();
      if (ext != ".cpp" && ext != ".h") continue;
      std::ifstream f(e.path());
      const std::string text((std::istreambuf_iterator<char>(f)), {});
      for (std::sregex_iterator m(text.begin(), text.end(), site), end; m != end; ++m) {
        INFO(e.path().filename().string() << ": " << m->str());
        CHECK(false);
        ++sites;
      }
    }
  }
  CHECK(sites == 0);
}

TEST_CASE("each layer includes only the layers below it and no backend's own headers") {
  // core < exec < backend < ag < ops: a tensor's memory, then the context that runs work, then the
  // kernels, then autograd, then the ops (design notes, "Backends"). The layers above (nn, optim,
  // io, data) may include any of these.
  const std::vector<std::string> layers{"core", "exec", "backend", "ag", "ops"};
  const std::regex include(R"re(#include "fucina/([a-z_]+)/)re");
  for (size_t l = 0; l < layers.size(); ++l)
    for (const auto& e : std::filesystem::recursive_directory_iterator(FUCINA_SOURCE_DIR "/src/fucina/" + layers[l])) {
      if (!e.is_regular_file()) continue;
      std::ifstream f(e.path());
      const std::string text((std::istreambuf_iterator<char>(f)), {});
      for (std::sregex_iterator m(text.begin(), text.end(), include), end; m != end; ++m) {
        const auto to = std::find(layers.begin(), layers.end(), (*m)[1].str());
        INFO(e.path().string() << " includes fucina/" << (*m)[1].str());
        CHECK((to != layers.end() && static_cast<size_t>(to - layers.begin()) <= l));
      }
    }
  // Above the backends, only their common headers (backend/*.h): no backend's own folder. The one
  // exception is a user's C++ lambda (elementalUnary, elementalBinary), which only the host's maps
  // can run (ops/elementwise_op.h).
  const std::regex backend_folder(R"re(#include "fucina/backend/(cpu|reference)/)re");
  for (const char* layer : {"ag", "ops", "nn", "io", "data", "optim"})
    for (const auto& e : std::filesystem::recursive_directory_iterator(FUCINA_SOURCE_DIR "/src/fucina/" + std::string(layer))) {
      if (!e.is_regular_file() || e.path().filename() == "elementwise_op.h") continue;
      std::ifstream f(e.path());
      const std::string text((std::istreambuf_iterator<char>(f)), {});
      INFO(e.path().string() << " includes a backend's own header");
      CHECK_FALSE(std::regex_search(text, backend_folder));
    }
}

TEST_CASE("tensors know their device and contexts know their backend") {
  for (Backend b : {Backend::cpu, Backend::reference}) {
    ExecContext ctx(ExecOptions{.threads = 2, .backend = b});
    CHECK(ctx.backend() == b);
    CHECK(ctx.device() == fucina::Device::cpu);
    CHECK(ctx.threads() == (b == Backend::cpu ? 2 : 1));  // the reference backend runs on the caller's thread
    const Tensor x = Tensor::variableFromSlice(ctx, {"i", "j"}, {2, 3}, {1, 2, 3, 4, 5, 6});
    CHECK(x.device() == fucina::Device::cpu);
    CHECK(x.permuteTo(ctx, {"j", "i"}).device() == fucina::Device::cpu);
    CHECK(x.exp(ctx).sumAll(ctx).device() == fucina::Device::cpu);
    CHECK(Tensor::zeros(ctx, {"e"}, {0}).device() == fucina::Device::cpu);
  }
  CHECK(fucina::name(fucina::Device::cpu) == "cpu");
  CHECK(fucina::name(fucina::Device::webgpu) == "webgpu");
  CHECK(fucina::name(Backend::reference) == "reference");
}
