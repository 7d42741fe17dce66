// PyTorch parity: every case of tests/fixtures/parity/<family>.json (written by
// tests/fixtures/parity/generate.py with python3-torch, run by hand) is replayed here: the op's
// output and every input gradient for the fixture's upstream gradient must be within
// 1e-5 + 1e-4·|want| of PyTorch's float64 values, and constant extras (topK's indices) equal.
// tests/js/ops_parity.test.mjs replays the same files through the wasm build.
#include "test_helpers.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <set>

#include "fucina/io/json.h"

using fucina::DType;
using fucina::ExecContext;
using fucina::Tag;
using fucina::Tags;
using fucina::Tensor;
namespace json = fucina::io::json;

namespace {

const json::Value& field(const json::Value& v, std::string_view key) {
  const json::Value* f = v.find(key);
  if (f == nullptr) FAIL("fixture: missing field '" << std::string(key) << "'");
  return *f;
}

// The case's arguments, read by name.
struct Args {
  const json::Value& v;
  Tag tag(std::string_view k) const { return Tag(field(v, k).text); }
  Tags tags(std::string_view k) const {
    Tags t;
    for (const json::Value& x : field(v, k).items) t.emplace_back(x.text);
    return t;
  }
  double number(std::string_view k) const {
    const json::Value& x = field(v, k);
    if (x.kind == json::Value::kString && x.text == "inf") return std::numeric_limits<double>::infinity();
    return x.real;
  }
  int64_t integer(std::string_view k) const {  // negative integers parse as kReal
    const json::Value& x = field(v, k);
    return x.kind == json::Value::kCount ? x.count : static_cast<int64_t>(x.real);
  }
  bool has(std::string_view k) const { return v.find(k) != nullptr; }
  fucina::Extents extents(std::string_view k) const {
    fucina::Extents out;
    for (const json::Value& x : field(v, k).items) out.push_back(x.count);
    return out;
  }
  fucina::Reduction reduction() const {
    const std::string r = text("reduction");
    if (r == "mean") return fucina::Reduction::mean;
    if (r == "sum") return fucina::Reduction::sum;
    if (r == "none") return fucina::Reduction::none;
    FAIL("fixture: unknown reduction " << r);
    return fucina::Reduction::mean;
  }
  bool flag(std::string_view k) const { return field(v, k).boolean; }
  std::string text(std::string_view k) const { return field(v, k).text; }
  std::vector<float> floats(std::string_view k) const {
    std::vector<float> out;
    for (const json::Value& x : field(v, k).items) out.push_back(static_cast<float>(x.real));
    return out;
  }
};

struct Encoded {
  Tags tags;
  fucina::Extents shape;
  std::vector<double> values;
  std::string dtype;
};

// A fixture number: JSON has no NaN or infinity, so the generator writes them as strings.
double numberOf(const json::Value& x) {
  if (x.kind == json::Value::kString)
    return x.text == "nan" ? std::numeric_limits<double>::quiet_NaN()
                           : (x.text == "-inf" ? -1 : 1) * std::numeric_limits<double>::infinity();
  return x.kind == json::Value::kCount ? double(x.count) : x.real;
}

Encoded decode(const json::Value& v) {
  Encoded e;
  for (const json::Value& t : field(v, "tags").items) e.tags.emplace_back(t.text);
  for (const json::Value& s : field(v, "shape").items) e.shape.push_back(s.count);
  for (const json::Value& x : field(v, "values").items) e.values.push_back(numberOf(x));
  e.dtype = field(v, "dtype").text;
  return e;
}

// An input as the case describes it: a variable or a constant, and for strided inputs a leaf laid
// out in reversed axis order, permuted back (so the op sees a non-contiguous view).
struct Input {
  Tensor leaf, view;
};

Input makeInput(ExecContext& ctx, const json::Value& v) {
  const Encoded e = decode(v);
  if (e.dtype != "f64") {
    std::vector<int64_t> ints(e.values.begin(), e.values.end());
    const Tensor t = Tensor::fromInts(ctx, e.tags, e.shape, ints, e.dtype == "i32" ? DType::i32 : DType::i64);
    return {t, t};
  }
  const bool grad = field(v, "requires_grad").boolean, strided = field(v, "strided").boolean;
  std::vector<float> values(e.values.begin(), e.values.end());
  Tags tags = e.tags;
  fucina::Extents shape = e.shape;
  if (strided && e.tags.size() > 1) {
    const Tensor plain = Tensor::fromSlice(ctx, e.tags, e.shape, values);
    tags.assign(e.tags.rbegin(), e.tags.rend());
    shape.assign(e.shape.rbegin(), e.shape.rend());
    values = plain.permuteTo(ctx, tags).contiguous(ctx).toVector();
  }
  const Tensor leaf = grad ? Tensor::variableFromSlice(ctx, tags, shape, values) : Tensor::fromSlice(ctx, tags, shape, values);
  return {leaf, leaf.permuteTo(ctx, e.tags)};
}

struct Result {
  Tensor out;
  std::map<std::string, Tensor> extras;
};
using Inputs = std::map<std::string, Tensor>;
using Op = std::function<Result(ExecContext&, const Inputs&, const Args&)>;

Result just(Tensor t) { return {std::move(t), {}}; }


// crossEntropyExt's and linearCrossEntropyExt's options; the class weight is the input "weight".
fucina::CrossEntropyExtOptions ceOptions(const Inputs& in, const Args& a) {
  return {.reduction = a.reduction(), .label_smoothing = a.number("label_smoothing"),
          .ignore_index = static_cast<int64_t>(a.number("ignore_index")),
          .weight = in.count("weight") ? &in.at("weight") : nullptr, .z_loss = a.number("z_loss"),
          .chunk_rows = a.integer("chunk_rows")};
}
Result sorted(const fucina::SortResult& r) { return {r.values, {{"indices", r.indices}}}; }
fucina::UnfoldOptions unfoldOptions(const Args& a) {
  return {.stride_h = a.integer("stride_h"), .stride_w = a.integer("stride_w"), .pad_h = a.integer("pad_h"),
          .pad_w = a.integer("pad_w"), .dilation_h = a.integer("dilation_h"), .dilation_w = a.integer("dilation_w")};
}

// The inputs t0, t1, ... of concat and stack, in order.
std::vector<Tensor> numbered(const Inputs& in) {
  std::vector<Tensor> out;
  for (size_t k = 0;; ++k) {
    const auto it = in.find(std::string(1, 't').append(std::to_string(k)));
    if (it == in.end()) return out;
    out.push_back(it->second);
  }
}

// Every op with parity cases: how the fixture's arguments map onto the C++ call.
const std::map<std::string, Op>& ops() {
  using A = const Args&;
  using I = const Inputs&;
  using C = ExecContext&;
  static const std::map<std::string, Op> table = {
      {"floor", [](C c, I in, A) { return just(in.at("x").floor(c)); }},
      {"ceil", [](C c, I in, A) { return just(in.at("x").ceil(c)); }},
      {"round", [](C c, I in, A) { return just(in.at("x").round(c)); }},
      {"sign", [](C c, I in, A) { return just(in.at("x").sign(c)); }},
      {"fastTanh", [](C c, I in, A) { return just(in.at("x").fastTanh(c)); }},
      {"softcap30", [](C c, I in, A) { return just(in.at("x").softcap30(c)); }},
      {"softcap15", [](C c, I in, A) { return just(in.at("x").softcap15(c)); }},
      {"unary", [](C c, I in, A a) { return just(in.at("x").unary(c, a.text("name"))); }},
      {"biasAdd", [](C c, I in, A a) { return just(in.at("x").biasAdd(c, a.tag("axis"), a.floats("bias"))); }},
      {"snake", [](C c, I in, A) { return just(in.at("x").snake(c, in.at("alpha"))); }},
      {"prelu", [](C c, I in, A) { return just(in.at("x").prelu(c, in.at("weight"))); }},
      {"glu", [](C c, I in, A a) { return just(in.at("x").glu(c, a.tag("axis"))); }},
      {"gated", [](C c, I in, A a) { return just(in.at("x").gated(c, in.at("gate"), a.text("act"))); }},
      {"splitGated", [](C c, I in, A a) { return just(in.at("x").splitGated(c, a.tag("axis"), a.text("act"))); }},
      {"situ", [](C c, I in, A a) { return just(in.at("x").situ(c, in.at("gate"), a.number("c"))); }},
      {"sumMany", [](C c, I in, A a) { return just(in.at("x").sumMany(c, a.tags("axes"))); }},
      {"cumprod", [](C c, I in, A a) { return just(in.at("x").cumprod(c, a.tag("axis"))); }},
      {"standardizeAxis", [](C c, I in, A a) { return just(in.at("x").standardizeAxis(c, a.tag("axis"), a.number("eps"))); }},
      {"normAll", [](C c, I in, A a) { return just(in.at("x").normAll(c, a.number("p"))); }},
      {"linearRecurrence",
       [](C c, I in, A a) { return just(in.at("x").linearRecurrence(c, in.at("decay"), in.at("h0"), a.tag("time"))); }},
      {"topK", [](C c, I in, A a) { return sorted(in.at("x").topK(c, a.tag("axis"), a.integer("k"), a.flag("largest"))); }},
      {"sort", [](C c, I in, A a) { return sorted(in.at("x").sort(c, a.tag("axis"), a.flag("descending"))); }},
      {"rmsNormMulAdd",
       [](C c, I in, A a) { return just(in.at("x").rmsNormMulAdd(c, a.tag("axis"), in.at("weight"), in.at("bias"), a.number("eps"))); }},
      {"groupNorm",
       [](C c, I in, A a) {
         const fucina::GroupNormOptions o{.batch = a.tags("batch"), .eps = a.number("eps")};
         const Tensor& x = in.at("x");
         if (in.count("weight")) return just(x.groupNorm(c, a.integer("groups"), a.tag("channel"), in.at("weight"), in.at("bias"), o));
         return just(x.groupNorm(c, a.integer("groups"), a.tag("channel"), o));
       }},
      {"cosineSimilarity", [](C c, I in, A a) { return just(in.at("x").cosineSimilarity(c, in.at("y"), a.tag("axis"), a.number("eps"))); }},
      {"rmsNormMulRopeHalfPrepared",
       [](C c, I in, A a) {
         const fucina::RmsNormRopeOptions o{.position = a.tag("position"), .offset = a.integer("offset"), .eps = a.number("eps")};
         return just(in.at("x").rmsNormMulRopeHalfPrepared(c, in.at("weight"), in.at("cos"), in.at("sin"), a.tag("axis"), o));
       }},
      {"crossEntropyExt", [](C c, I in, A a) { return just(in.at("x").crossEntropyExt(c, in.at("target"), a.tag("class"), ceOptions(in, a))); }},
      {"linearCrossEntropyExt",
       [](C c, I in, A a) {
         return just(in.at("x").linearCrossEntropyExt(c, in.at("w"), in.at("target"), a.tag("axis"), a.tag("class"), ceOptions(in, a)));
       }},
      {"linearDistillExt",
       [](C c, I in, A a) {
         const fucina::DistillOptions o{.temperature = a.number("temperature"), .alpha = a.number("alpha"),
                                        .labels = in.count("target") ? &in.at("target") : nullptr,
                                        .teacher_probs = a.flag("teacher_probs"), .reduction = a.reduction(),
                                        .ignore_index = static_cast<int64_t>(a.number("ignore_index")),
                                        .chunk_rows = a.integer("chunk_rows")};
         return just(in.at("x").linearDistillExt(c, in.at("w"), in.at("teacher"), a.tag("axis"), a.tag("class"), o));
       }},
      {"einsumMany",
       [](C c, I in, A a) {
         std::vector<Tensor> operands;  // the inputs named by "operands", in that order
         for (const Tag t : a.tags("operands")) operands.push_back(in.at(std::string(t.name())));
         return just(Tensor::einsumMany(c, operands, a.tags("out")));
       }},
      // intentionally no-grad (nograd.json)
      {"isnan", [](C c, I in, A) { return just(in.at("x").isnan(c)); }},
      {"isinf", [](C c, I in, A) { return just(in.at("x").isinf(c)); }},
      {"isfinite", [](C c, I in, A) { return just(in.at("x").isfinite(c)); }},
      {"logicalNot", [](C c, I in, A) { return just(in.at("x").logicalNot(c)); }},
      {"logicalAnd", [](C c, I in, A) { return just(in.at("x").logicalAnd(c, in.at("y"))); }},
      {"logicalOr", [](C c, I in, A) { return just(in.at("x").logicalOr(c, in.at("y"))); }},
      {"logicalXor", [](C c, I in, A) { return just(in.at("x").logicalXor(c, in.at("y"))); }},
      {"any", [](C c, I in, A a) { return just(in.at("x").any(c, a.tag("axis"))); }},
      {"all", [](C c, I in, A a) { return just(in.at("x").all(c, a.tag("axis"))); }},
      {"anyAll", [](C c, I in, A) { return just(in.at("x").anyAll(c)); }},
      {"allAll", [](C c, I in, A) { return just(in.at("x").allAll(c)); }},
      {"argmax", [](C c, I in, A a) { return just(in.at("x").argmax(c, a.tag("axis"))); }},
      {"argmin", [](C c, I in, A a) { return just(in.at("x").argmin(c, a.tag("axis"))); }},
      {"argsort", [](C c, I in, A a) { return just(in.at("x").argsort(c, a.tag("axis"), a.flag("descending"))); }},
      {"bandMask",
       [](C c, I, A a) {
         return just(Tensor::bandMask(c, a.tag("row"), a.tag("col"), a.integer("rows"), a.integer("cols"), a.integer("lower"),
                                      a.integer("upper")));
       }},
      {"dotTernarySte", [](C c, I in, A a) { return just(in.at("x").dotTernarySte(c, in.at("w"), a.tag("axis"))); }},

      // in-place and storage-consuming helpers (inplace.json): values only; the in-place ones write
      // into an own copy of x (an input shares its buffer with its leaf, which they refuse)
      {"addAxisVectorInPlace", [](C c, I in, A a) { return just(in.at("x").to(c, DType::f32).addAxisVectorInPlace(c, a.tag("axis"), in.at("v"))); }},
      {"addAxisVectorUnaryInPlace",
       [](C c, I in, A a) { return just(in.at("x").to(c, DType::f32).addAxisVectorUnaryInPlace(c, a.tag("axis"), in.at("v"), a.text("act"))); }},
      {"addScaledInPlace", [](C c, I in, A a) { return just(in.at("x").to(c, DType::f32).addScaledInPlace(c, in.at("y"), a.number("alpha"))); }},
      {"takeAddNoGrad", [](C c, I in, A) { return just(in.at("x").takeAddNoGrad(c, in.at("y"))); }},
      {"takeScaleNoGrad", [](C c, I in, A a) { return just(in.at("x").takeScaleNoGrad(c, a.number("factor"))); }},
      {"routerTopK", [](C c, I in, A a) { return sorted(in.at("x").routerTopK(c, a.tag("axis"), a.integer("k"))); }},

      // elementwise (elementwise.json)
      {"add", [](C c, I in, A) { return just(in.at("x").add(c, in.at("y"))); }},
      {"sub", [](C c, I in, A) { return just(in.at("x").sub(c, in.at("y"))); }},
      {"mul", [](C c, I in, A) { return just(in.at("x").mul(c, in.at("y"))); }},
      {"div", [](C c, I in, A) { return just(in.at("x").div(c, in.at("y"))); }},
      {"maximum", [](C c, I in, A) { return just(in.at("x").maximum(c, in.at("y"))); }},
      {"minimum", [](C c, I in, A) { return just(in.at("x").minimum(c, in.at("y"))); }},
      {"pow", [](C c, I in, A) { return just(in.at("x").pow(c, in.at("y"))); }},
      {"scale", [](C c, I in, A a) { return just(in.at("x").scale(c, a.number("factor"))); }},
      {"addScalar", [](C c, I in, A a) { return just(in.at("x").addScalar(c, a.number("value"))); }},
      {"subScalar", [](C c, I in, A a) { return just(in.at("x").subScalar(c, a.number("value"))); }},
      {"divScalar", [](C c, I in, A a) { return just(in.at("x").divScalar(c, a.number("value"))); }},
      {"powScalar", [](C c, I in, A a) { return just(in.at("x").powScalar(c, a.number("exponent"))); }},
      {"neg", [](C c, I in, A) { return just(in.at("x").neg(c)); }},
      {"abs", [](C c, I in, A) { return just(in.at("x").abs(c)); }},
      {"exp", [](C c, I in, A) { return just(in.at("x").exp(c)); }},
      {"log", [](C c, I in, A) { return just(in.at("x").log(c)); }},
      {"sqrt", [](C c, I in, A) { return just(in.at("x").sqrt(c)); }},
      {"tanh", [](C c, I in, A) { return just(in.at("x").tanh(c)); }},
      {"sigmoid", [](C c, I in, A) { return just(in.at("x").sigmoid(c)); }},
      {"relu", [](C c, I in, A) { return just(in.at("x").relu(c)); }},
      {"leakyRelu", [](C c, I in, A a) { return just(in.at("x").leakyRelu(c, a.number("slope"))); }},
      {"gelu", [](C c, I in, A) { return just(in.at("x").gelu(c)); }},
      {"geluErf", [](C c, I in, A) { return just(in.at("x").geluErf(c)); }},
      {"quickGelu", [](C c, I in, A) { return just(in.at("x").quickGelu(c)); }},
      {"silu", [](C c, I in, A) { return just(in.at("x").silu(c)); }},
      {"elu", [](C c, I in, A a) { return just(in.at("x").elu(c, a.number("alpha"))); }},
      {"log1p", [](C c, I in, A) { return just(in.at("x").log1p(c)); }},
      {"rsqrt", [](C c, I in, A) { return just(in.at("x").rsqrt(c)); }},
      {"reciprocal", [](C c, I in, A) { return just(in.at("x").reciprocal(c)); }},
      {"sin", [](C c, I in, A) { return just(in.at("x").sin(c)); }},
      {"cos", [](C c, I in, A) { return just(in.at("x").cos(c)); }},
      {"clamp", [](C c, I in, A a) { return just(in.at("x").clamp(c, a.number("lo"), a.number("hi"))); }},
      {"where", [](C c, I in, A) { return just(Tensor::where(c, in.at("cond"), in.at("a"), in.at("b"))); }},
      {"maskedFill", [](C c, I in, A a) { return just(in.at("x").maskedFill(c, in.at("mask"), a.number("value"))); }},
      // reductions (reductions.json)
      {"sumAll", [](C c, I in, A) { return just(in.at("x").sumAll(c)); }},
      {"meanAll", [](C c, I in, A) { return just(in.at("x").meanAll(c)); }},
      {"sum", [](C c, I in, A a) { return just(in.at("x").sum(c, a.tag("axis"))); }},
      {"mean", [](C c, I in, A a) { return just(in.at("x").mean(c, a.tag("axis"))); }},
      {"variance", [](C c, I in, A a) { return just(in.at("x").variance(c, a.tag("axis"), a.integer("correction"))); }},
      {"max", [](C c, I in, A a) { return just(in.at("x").max(c, a.tag("axis"))); }},
      {"min", [](C c, I in, A a) { return just(in.at("x").min(c, a.tag("axis"))); }},
      {"logsumexp", [](C c, I in, A a) { return just(in.at("x").logsumexp(c, a.tag("axis"))); }},
      {"cumsum", [](C c, I in, A a) { return just(in.at("x").cumsum(c, a.tag("axis"))); }},
      {"prod", [](C c, I in, A a) { return just(in.at("x").prod(c, a.tag("axis"))); }},
      {"norm", [](C c, I in, A a) { return just(in.at("x").norm(c, a.tag("axis"))); }},
      {"softmax", [](C c, I in, A a) { return just(in.at("x").softmax(c, a.tag("axis"))); }},
      {"logSoftmax", [](C c, I in, A a) { return just(in.at("x").logSoftmax(c, a.tag("axis"))); }},
      // structure (structure.json)
      {"broadcastTo", [](C c, I in, A a) { return just(in.at("x").broadcastTo(c, a.tags("tags"), a.extents("shape"))); }},
      {"permuteTo", [](C c, I in, A a) { return just(in.at("x").permuteTo(c, a.tags("order"))); }},
      {"withTags", [](C c, I in, A a) { return just(in.at("x").withTags(c, a.tags("tags"))); }},
      {"narrow", [](C c, I in, A a) { return just(in.at("x").narrow(c, a.tag("axis"), a.integer("start"), a.integer("length"))); }},
      {"contiguous", [](C c, I in, A) { return just(in.at("x").contiguous(c)); }},
      {"transpose", [](C c, I in, A a) { return just(in.at("x").transpose(c, a.tag("a"), a.tag("b"))); }},
      {"insertAxis",
       [](C c, I in, A a) { return just(in.at("x").insertAxis(c, a.tag("name"), static_cast<size_t>(a.integer("position")))); }},
      {"squeeze", [](C c, I in, A a) { return just(in.at("x").squeeze(c, a.tag("axis"))); }},
      {"merge", [](C c, I in, A a) { return just(in.at("x").merge(c, a.tags("axes"), a.tag("into"))); }},
      {"split", [](C c, I in, A a) { return just(in.at("x").split(c, a.tag("axis"), a.tags("into"), a.extents("extents"))); }},
      {"flatten", [](C c, I in, A a) { return just(in.at("x").flatten(c, a.tag("into"))); }},
      {"reshape", [](C c, I in, A a) { return just(in.at("x").reshape(c, a.tags("tags"), a.extents("shape"))); }},
      {"select", [](C c, I in, A a) { return just(in.at("x").select(c, a.tag("axis"), a.integer("index"))); }},
      {"slice",
       [](C c, I in, A a) { return just(in.at("x").slice(c, a.tag("axis"), a.integer("start"), a.integer("end"), a.integer("step"))); }},
      {"concat", [](C c, I in, A a) { return just(Tensor::concat(c, numbered(in), a.tag("axis"))); }},
      {"stack", [](C c, I in, A a) { return just(Tensor::stack(c, numbered(in), a.tag("axis"))); }},
      {"pad",
       [](C c, I in, A a) { return just(in.at("x").pad(c, a.tag("axis"), a.integer("before"), a.integer("after"), a.number("value"))); }},
      {"tril", [](C c, I in, A a) { return just(in.at("x").tril(c, a.tag("row"), a.tag("col"), a.integer("diagonal"))); }},
      {"triu", [](C c, I in, A a) { return just(in.at("x").triu(c, a.tag("row"), a.tag("col"), a.integer("diagonal"))); }},
      {"bandPart",
       [](C c, I in, A a) { return just(in.at("x").bandPart(c, a.tag("row"), a.tag("col"), a.integer("lower"), a.integer("upper"))); }},
      {"indexSelect", [](C c, I in, A a) { return just(in.at("x").indexSelect(c, a.tag("axis"), in.at("indices"))); }},
      {"gather", [](C c, I in, A a) { return just(in.at("x").gather(c, a.tag("axis"), in.at("indices"))); }},
      {"takeAlongAxis", [](C c, I in, A a) { return just(in.at("x").takeAlongAxis(c, a.tag("axis"), in.at("indices"))); }},
      {"scatterAdd", [](C c, I in, A a) { return just(in.at("x").scatterAdd(c, a.tag("axis"), in.at("indices"), in.at("src"))); }},
      // losses (losses.json)
      {"crossEntropy",
       [](C c, I in, A a) {
         const fucina::CrossEntropyOptions o{.reduction = a.reduction(), .label_smoothing = a.number("label_smoothing")};
         return just(in.at("x").crossEntropy(c, in.at("labels"), a.tag("axis"), o));
       }},
      {"nllLoss", [](C c, I in, A a) { return just(in.at("x").nllLoss(c, in.at("labels"), a.tag("axis"), a.reduction())); }},
      {"mseLoss", [](C c, I in, A a) { return just(in.at("x").mseLoss(c, in.at("target"), a.reduction())); }},
      {"huberLoss", [](C c, I in, A a) { return just(in.at("x").huberLoss(c, in.at("target"), a.number("delta"), a.reduction())); }},
      {"bceLoss", [](C c, I in, A a) { return just(in.at("x").bceLoss(c, in.at("target"), a.reduction())); }},
      {"bceWithLogitsLoss", [](C c, I in, A a) { return just(in.at("x").bceWithLogitsLoss(c, in.at("target"), a.reduction())); }},
      {"klDivLoss",
       [](C c, I in, A a) { return just(in.at("x").klDivLoss(c, in.at("target"), a.reduction(), a.flag("log_target"))); }},
      // layers (layers.json)
      {"layerNorm",
       [](C c, I in, A a) {
         if (in.count("weight")) return just(in.at("x").layerNorm(c, a.tag("axis"), in.at("weight"), in.at("bias"), a.number("eps")));
         return just(in.at("x").layerNorm(c, a.tag("axis"), a.number("eps")));
       }},
      {"rmsNorm", [](C c, I in, A a) { return just(in.at("x").rmsNorm(c, a.tag("axis"), a.number("eps"))); }},
      {"rmsNormMul", [](C c, I in, A a) { return just(in.at("x").rmsNormMul(c, a.tag("axis"), in.at("weight"), a.number("eps"))); }},
      {"l2Normalize", [](C c, I in, A a) { return just(in.at("x").l2Normalize(c, a.tag("axis"), a.number("eps"))); }},
      {"dot", [](C c, I in, A a) { return just(in.at("x").dot(c, in.at("y"), a.tag("axis"))); }},
      {"addDot", [](C c, I in, A a) { return just(in.at("x").addDot(c, in.at("y"), a.tag("axis"), in.at("bias"))); }},
      {"matmul", [](C c, I in, A a) { return just(in.at("x").matmul(c, in.at("y"), a.flag("transpose_y"))); }},
      {"einsum", [](C c, I in, A a) { return just(Tensor::einsum(c, in.at("a"), in.at("b"), a.tags("out"))); }},
      {"conv2d",
       [](C c, I in, A a) {
         const fucina::Extents s = a.extents("stride"), p = a.extents("padding"), d = a.extents("dilation");
         const fucina::Conv2dOptions o{.stride_h = s[0], .stride_w = s[1], .pad_h = p[0], .pad_w = p[1],
                                       .dilation_h = d[0], .dilation_w = d[1], .groups = a.integer("groups")};
         if (in.count("bias")) return just(in.at("x").conv2d(c, in.at("weight"), in.at("bias"), o));
         return just(in.at("x").conv2d(c, in.at("weight"), o));
       }},
      {"maxPool2d",
       [](C c, I in, A a) {
         const fucina::Extents k = a.extents("kernel"), s = a.extents("stride");
         return just(in.at("x").maxPool2d(c, k[0], k[1], s[0], s[1], a.integer("padding")));
       }},
      {"avgPool2d",
       [](C c, I in, A a) {
         const fucina::Extents k = a.extents("kernel"), s = a.extents("stride");
         return just(in.at("x").avgPool2d(c, k[0], k[1], s[0], s[1], a.integer("padding")));
       }},
      {"upsample2xNearest", [](C c, I in, A) { return just(in.at("x").upsample2xNearest(c)); }},
      {"rope",
       [](C c, I in, A a) {
         const fucina::RopeOptions o{.base = a.number("base"), .offset = a.integer("offset"),
                                     .mode = a.text("mode") == "half" ? fucina::RopeOptions::Mode::half
                                                                      : fucina::RopeOptions::Mode::interleaved};
         if (in.count("cos")) return just(in.at("x").rope(c, in.at("cos"), in.at("sin"), o));
         return just(in.at("x").rope(c, o));
       }},
      {"groupedAttention",
       [](C c, I in, A a) {
         fucina::AttentionOptions o{.causal = a.flag("causal")};
         if (a.has("scale")) o.scale = a.number("scale");
         return just(Tensor::groupedAttention(c, in.at("q"), in.at("k"), in.at("v"), o));
       }},
      {"swiglu", [](C c, I in, A a) { return just(in.at("x").swiglu(c, a.tag("axis"))); }},
      {"geglu", [](C c, I in, A a) { return just(in.at("x").geglu(c, a.tag("axis"))); }},
      // casts, quantization, comparison (casts.json)
      {"to", [](C c, I in, A a) { return just(in.at("x").to(c, a.text("dtype") == "f16" ? DType::f16 : DType::bf16)); }},
      {"quantize", [](C c, I in, A a) { return just(in.at("x").quantize(c, DType::q8_0, a.tag("axis")).to(c, DType::f32)); }},
      {"compare",
       [](C c, I in, A a) {
         static const std::map<std::string, fucina::CompareOp> by_name = {
             {"eq", fucina::CompareOp::eq}, {"ne", fucina::CompareOp::ne}, {"lt", fucina::CompareOp::lt},
             {"le", fucina::CompareOp::le}, {"gt", fucina::CompareOp::gt}, {"ge", fucina::CompareOp::ge}};
         return just(in.at("x").compare(c, in.at("y"), by_name.at(a.text("op"))));
       }},
      {"conv1d",
       [](C c, I in, A a) {
         const fucina::Conv1dOptions o{.stride = a.integer("stride"), .padding = a.integer("padding"),
                                       .dilation = a.integer("dilation"), .groups = a.integer("groups")};
         const Tensor& x = in.at("x");
         return just(in.count("bias") ? x.conv1d(c, in.at("weight"), in.at("bias"), o) : x.conv1d(c, in.at("weight"), o));
       }},
      {"convTranspose1d",
       [](C c, I in, A a) {
         const fucina::ConvTranspose1dOptions o{.stride = a.integer("stride"), .padding = a.integer("padding"),
                                                .output_padding = a.integer("output_padding"),
                                                .dilation = a.integer("dilation"), .groups = a.integer("groups")};
         const Tensor& x = in.at("x");
         return just(in.count("bias") ? x.convTranspose1d(c, in.at("weight"), in.at("bias"), o) : x.convTranspose1d(c, in.at("weight"), o));
       }},
      {"causalConv1d",
       [](C c, I in, A a) {
         const Tensor& x = in.at("x");
         const int64_t d = a.integer("dilation");
         return just(in.count("bias") ? x.causalConv1d(c, in.at("weight"), in.at("bias"), d) : x.causalConv1d(c, in.at("weight"), d));
       }},
      {"groupedCausalConv1d",
       [](C c, I in, A a) {
         const Tensor& x = in.at("x");
         const int64_t g = a.integer("groups"), d = a.integer("dilation");
         return just(in.count("bias") ? x.groupedCausalConv1d(c, in.at("weight"), in.at("bias"), g, d)
                                      : x.groupedCausalConv1d(c, in.at("weight"), g, d));
       }},
      {"causalDepthwiseConv1d",
       [](C c, I in, A) {
         const Tensor& x = in.at("x");
         return just(in.count("bias") ? x.causalDepthwiseConv1d(c, in.at("weight"), in.at("bias")) : x.causalDepthwiseConv1d(c, in.at("weight")));
       }},
      {"conv2dRelu",
       [](C c, I in, A a) {
         const fucina::Conv2dOptions o{.stride_h = a.integer("stride_h"), .stride_w = a.integer("stride_w"), .pad_h = a.integer("pad_h"),
                                       .pad_w = a.integer("pad_w"), .dilation_h = a.integer("dilation_h"),
                                       .dilation_w = a.integer("dilation_w"), .groups = a.integer("groups"),
                                       .max_pool = a.has("max_pool") ? a.integer("max_pool") : 1};
         const Tensor& x = in.at("x");
         return just(in.count("bias") ? x.conv2dRelu(c, in.at("weight"), in.at("bias"), o) : x.conv2dRelu(c, in.at("weight"), o));
       }},
      {"unfold", [](C c, I in, A a) { return just(in.at("x").unfold(c, a.integer("kernel_h"), a.integer("kernel_w"), unfoldOptions(a))); }},
      {"fold",
       [](C c, I in, A a) {
         return just(in.at("x").fold(c, a.integer("out_h"), a.integer("out_w"), a.integer("kernel_h"), a.integer("kernel_w"), unfoldOptions(a)));
       }},
      {"channelAffine", [](C c, I in, A a) { return just(in.at("x").channelAffine(c, in.at("scale"), in.at("shift"), a.tag("channel"))); }},
      // views, flips and shifts (views.json)
      {"alignTo", [](C c, I in, A a) { return just(in.at("x").alignTo(c, a.tags("tags"))); }},
      {"viewWithStrides",
       [](C c, I in, A a) {
         return just(in.at("x").viewWithStrides(c, a.tags("tags"), a.extents("shape"), a.extents("strides"), a.integer("offset")));
       }},
      {"materialize", [](C c, I in, A) { return just(in.at("x").materialize(c)); }},
      {"sliceStep",
       [](C c, I in, A a) { return just(in.at("x").sliceStep(c, a.tag("axis"), a.integer("start"), a.integer("end"), a.integer("step"))); }},
      {"zeroPad2d",
       [](C c, I in, A a) {
         return just(in.at("x").zeroPad2d(c, a.tag("h"), a.tag("w"), {a.integer("left"), a.integer("right"), a.integer("top"), a.integer("bottom")}));
       }},
      {"constantPad2d",
       [](C c, I in, A a) {
         return just(in.at("x").constantPad2d(c, a.tag("h"), a.tag("w"),
                                              {a.integer("left"), a.integer("right"), a.integer("top"), a.integer("bottom")}, a.number("value")));
       }},
      {"unbindInto", [](C c, I in, A a) { return just(Tensor::stack(c, in.at("x").unbindInto(c, a.tag("axis")), a.tag("into"))); }},
      {"repeatAxis", [](C c, I in, A a) { return just(in.at("x").repeatAxis(c, a.tag("axis"), a.integer("times"), a.flag("interleave"))); }},
      {"flip", [](C c, I in, A a) { return just(in.at("x").flip(c, a.tag("axis"))); }},
      {"roll", [](C c, I in, A a) { return just(in.at("x").roll(c, a.tag("axis"), a.integer("shift"))); }},
      {"rollBy", [](C c, I in, A a) { return just(in.at("x").rollBy(c, a.tag("axis"), a.tag("by"), in.at("shifts"))); }},
      {"shiftBy", [](C c, I in, A a) { return just(in.at("x").shiftBy(c, a.tag("axis"), a.tag("by"), in.at("shifts"))); }},
      {"relposShift", [](C c, I in, A a) { return just(in.at("x").relposShift(c, a.tag("query"), a.tag("key"))); }},
      // diagonals, masked selection and indexed updates (indexing.json)
      {"diagonal", [](C c, I in, A a) { return just(in.at("x").diagonal(c, a.tag("a"), a.tag("b"), a.integer("offset"), a.tag("into"))); }},
      {"trace", [](C c, I in, A a) { return just(in.at("x").trace(c, a.tag("a"), a.tag("b"))); }},
      {"diag",
       [](C c, I in, A a) {
         const Tensor& x = in.at("x");
         if (a.has("axis")) return just(x.diag(c, a.tag("axis"), a.tag("into_a"), a.tag("into_b"), a.integer("offset")));
         return just(x.diag(c, a.tag("a"), a.tag("b"), a.integer("offset"), a.tag("into")));
       }},
      {"diagEmbed",
       [](C c, I in, A a) { return just(in.at("x").diagEmbed(c, a.tag("axis"), a.tag("into_a"), a.tag("into_b"), a.integer("offset"))); }},
      {"indexAdd", [](C c, I in, A a) { return just(in.at("x").indexAdd(c, a.tag("axis"), in.at("indices"), in.at("source"))); }},
      {"scatter", [](C c, I in, A a) { return just(in.at("x").scatter(c, a.tag("axis"), in.at("indices"), in.at("src"))); }},
      {"maskedSelect", [](C c, I in, A a) { return just(in.at("x").maskedSelect(c, in.at("mask"), a.tag("into"))); }},
      {"maskedScatter", [](C c, I in, A) { return just(in.at("x").maskedScatter(c, in.at("mask"), in.at("source"))); }},
      {"setSlice", [](C c, I in, A a) { return just(in.at("x").setSlice(c, a.tag("axis"), a.integer("start"), in.at("source"))); }},
      {"setRows", [](C c, I in, A a) { return just(in.at("x").setRows(c, a.tag("axis"), in.at("indices"), in.at("source"))); }},
      {"zeroSlice", [](C c, I in, A a) { return just(in.at("x").zeroSlice(c, a.tag("axis"), a.integer("start"), a.integer("end"))); }},
      {"zeroRows", [](C c, I in, A a) { return just(in.at("x").zeroRows(c, a.tag("axis"), in.at("indices"))); }},
  };
  return table;
}

void requireClose(ExecContext& ctx, const std::string& what, const Tensor& got_t, const Encoded& want) {
  INFO(what);
  REQUIRE(got_t.tags().size() == want.tags.size());
  const std::vector<float> got = got_t.permuteTo(ctx, want.tags).toVector();
  REQUIRE(got_t.shape().size() == want.shape.size());
  REQUIRE(got.size() == want.values.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    const double w = want.values[i];
    if (std::isnan(w)) {
      CHECK(std::isnan(got[i]));
      continue;
    }
    CHECK(std::fabs(double(got[i]) - w) <= 1e-5 + 1e-4 * std::fabs(w));
  }
}

std::string readFile(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  REQUIRE(f.good());
  return std::string(std::istreambuf_iterator<char>(f), {});
}

size_t replayFamily(const std::string& family, fucina::Backend backend = fucina::Backend::cpu) {
  const std::filesystem::path path = std::filesystem::path(FUCINA_SOURCE_DIR) / "tests/fixtures/parity" / (family + ".json");
  const json::Value doc = json::parse(readFile(path), family + ".json");
  size_t n = 0;
  for (const json::Value& c : field(doc, "cases").items) {
    const std::string name = field(c, "name").text, op = field(c, "op").text;
    DYNAMIC_SECTION(name) {
      const auto it = ops().find(op);
      if (it == ops().end()) FAIL("op " << op << " has no entry in parity_ops_tests.cpp's table");
      ExecContext ctx(fucina::ExecOptions{.threads = 1, .backend = backend});
      std::map<std::string, Input> made;
      Inputs views;
      for (const json::Member& m : field(c, "inputs").members) {
        made[m.key] = makeInput(ctx, m.value);
        views[m.key] = made[m.key].view;
      }
      const Result r = it->second(ctx, views, Args{field(c, "args")});
      requireClose(ctx, name + ": output", r.out, decode(field(c, "output")));
      for (const json::Member& m : field(c, "extras").members) {
        const Encoded want = decode(m.value);
        const std::vector<float> got = r.extras.at(m.key).permuteTo(ctx, want.tags).toVector();
        CHECK(got == std::vector<float>(want.values.begin(), want.values.end()));
      }
      const Encoded gy = decode(field(c, "grad_output"));
      if (!field(c, "grads").members.empty()) {
        r.out.backwardWithGrad(ctx, Tensor::fromSlice(ctx, gy.tags, gy.shape, std::vector<float>(gy.values.begin(), gy.values.end())));
        for (const json::Member& m : field(c, "grads").members) {
          const auto g = made.at(m.key).leaf.grad(ctx);
          REQUIRE(g.has_value());
          requireClose(ctx, name + ": gradient of " + m.key, *g, decode(m.value));
        }
      }
    }
    ++n;
  }
  return n;
}

}  // namespace

// One test per fixture family, so ctest lists them; each case is a section.
TEST_CASE("PyTorch parity: pointwise and unary") { CHECK(replayFamily("pointwise") > 0); }
TEST_CASE("PyTorch parity: gated units") { CHECK(replayFamily("gated") > 0); }
TEST_CASE("PyTorch parity: scans, orderings and p-norms") { CHECK(replayFamily("statistics") > 0); }
TEST_CASE("PyTorch parity: norms") { CHECK(replayFamily("norm") > 0); }
TEST_CASE("PyTorch parity: extended cross-entropy and distillation") { CHECK(replayFamily("losses_ext") > 0); }
TEST_CASE("PyTorch parity: contractions") { CHECK(replayFamily("contract") > 0); }
TEST_CASE("PyTorch parity: elementwise") { CHECK(replayFamily("elementwise") > 0); }
TEST_CASE("PyTorch parity: reductions and softmax") { CHECK(replayFamily("reductions") > 0); }
TEST_CASE("PyTorch parity: views, structure and indexing") { CHECK(replayFamily("structure") > 0); }
TEST_CASE("PyTorch parity: losses") { CHECK(replayFamily("losses") > 0); }
TEST_CASE("PyTorch parity: layers") { CHECK(replayFamily("layers") > 0); }
TEST_CASE("PyTorch parity: casts, quantization and comparison") { CHECK(replayFamily("casts") > 0); }
TEST_CASE("PyTorch parity: convolutions") { CHECK(replayFamily("conv") > 0); }
TEST_CASE("PyTorch parity: intentionally no-grad ops") { CHECK(replayFamily("nograd") > 0); }
TEST_CASE("PyTorch parity: in-place and storage-consuming helpers") { CHECK(replayFamily("inplace") > 0); }
TEST_CASE("PyTorch parity: views, flips and shifts") { CHECK(replayFamily("views") > 0); }
TEST_CASE("PyTorch parity: diagonals, masked selection and indexed updates") { CHECK(replayFamily("indexing") > 0); }

TEST_CASE("PyTorch parity: every fixture family has a test and every op an entry") {
  std::set<std::string> families;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(FUCINA_SOURCE_DIR) / "tests/fixtures/parity"))
    if (e.path().extension() == ".json") families.insert(e.path().stem().string());
  CHECK(families == std::set<std::string>{"casts", "contract", "conv", "elementwise", "gated", "indexing", "inplace", "layers",
                                           "losses", "losses_ext", "nograd", "norm", "pointwise", "reductions", "statistics",
                                           "structure", "views"});
  for (const std::string& f : families) {
    const json::Value doc = json::parse(readFile(std::filesystem::path(FUCINA_SOURCE_DIR) / "tests/fixtures/parity" / (f + ".json")), f);
    for (const json::Value& c : field(doc, "cases").items) {
      INFO(f << ": " << field(c, "name").text);
      CHECK(ops().count(field(c, "op").text) == 1);
    }
  }
}

// The same fixtures on the reference backend (Note [Backends]): its scalar kernels reach torch's
// values and gradients too, wherever an op computes through them.
#define FUCINA_REFERENCE_PARITY(family) \
  TEST_CASE("PyTorch parity on the reference backend: " family) { CHECK(replayFamily(family, fucina::Backend::reference) > 0); }
FUCINA_REFERENCE_PARITY("pointwise")
FUCINA_REFERENCE_PARITY("gated")
FUCINA_REFERENCE_PARITY("statistics")
FUCINA_REFERENCE_PARITY("norm")
FUCINA_REFERENCE_PARITY("losses_ext")
FUCINA_REFERENCE_PARITY("contract")
FUCINA_REFERENCE_PARITY("elementwise")
FUCINA_REFERENCE_PARITY("reductions")
FUCINA_REFERENCE_PARITY("structure")
FUCINA_REFERENCE_PARITY("losses")
FUCINA_REFERENCE_PARITY("layers")
FUCINA_REFERENCE_PARITY("casts")
FUCINA_REFERENCE_PARITY("conv")
FUCINA_REFERENCE_PARITY("nograd")
