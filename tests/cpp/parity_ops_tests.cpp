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
  int64_t integer(std::string_view k) const { return field(v, k).count; }
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

Encoded decode(const json::Value& v) {
  Encoded e;
  for (const json::Value& t : field(v, "tags").items) e.tags.emplace_back(t.text);
  for (const json::Value& s : field(v, "shape").items) e.shape.push_back(s.count);
  for (const json::Value& x : field(v, "values").items) e.values.push_back(x.kind == json::Value::kCount ? double(x.count) : x.real);
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
Result sorted(const fucina::SortResult& r) { return {r.values, {{"indices", r.indices}}}; }
fucina::UnfoldOptions unfoldOptions(const Args& a) {
  return {.stride_h = a.integer("stride_h"), .stride_w = a.integer("stride_w"), .pad_h = a.integer("pad_h"),
          .pad_w = a.integer("pad_w"), .dilation_h = a.integer("dilation_h"), .dilation_w = a.integer("dilation_w")};
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
                                       .dilation_w = a.integer("dilation_w"), .groups = a.integer("groups")};
         const Tensor& x = in.at("x");
         return just(in.count("bias") ? x.conv2dRelu(c, in.at("weight"), in.at("bias"), o) : x.conv2dRelu(c, in.at("weight"), o));
       }},
      {"unfold", [](C c, I in, A a) { return just(in.at("x").unfold(c, a.integer("kernel_h"), a.integer("kernel_w"), unfoldOptions(a))); }},
      {"fold",
       [](C c, I in, A a) {
         return just(in.at("x").fold(c, a.integer("out_h"), a.integer("out_w"), a.integer("kernel_h"), a.integer("kernel_w"), unfoldOptions(a)));
       }},
      {"channelAffine", [](C c, I in, A a) { return just(in.at("x").channelAffine(c, in.at("scale"), in.at("shift"), a.tag("channel"))); }},
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

size_t replayFamily(const std::string& family) {
  const std::filesystem::path path = std::filesystem::path(FUCINA_SOURCE_DIR) / "tests/fixtures/parity" / (family + ".json");
  const json::Value doc = json::parse(readFile(path), family + ".json");
  size_t n = 0;
  for (const json::Value& c : field(doc, "cases").items) {
    const std::string name = field(c, "name").text, op = field(c, "op").text;
    DYNAMIC_SECTION(name) {
      const auto it = ops().find(op);
      if (it == ops().end()) FAIL("op " << op << " has no entry in parity_ops_tests.cpp's table");
      ExecContext ctx(fucina::ExecOptions{.threads = 1});
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
TEST_CASE("PyTorch parity: reductions and statistics") { CHECK(replayFamily("reduce") > 0); }
TEST_CASE("PyTorch parity: norms") { CHECK(replayFamily("norm") > 0); }
TEST_CASE("PyTorch parity: convolutions") { CHECK(replayFamily("conv") > 0); }

TEST_CASE("PyTorch parity: every fixture family has a test and every op an entry") {
  std::set<std::string> families;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(FUCINA_SOURCE_DIR) / "tests/fixtures/parity"))
    if (e.path().extension() == ".json") families.insert(e.path().stem().string());
  CHECK(families == std::set<std::string>{"conv", "gated", "norm", "pointwise", "reduce"});
  for (const std::string& f : families) {
    const json::Value doc = json::parse(readFile(std::filesystem::path(FUCINA_SOURCE_DIR) / "tests/fixtures/parity" / (f + ".json")), f);
    for (const json::Value& c : field(doc, "cases").items) {
      INFO(f << ": " << field(c, "name").text);
      CHECK(ops().count(field(c, "op").text) == 1);
    }
  }
}
