// The checkpoints in tests/fixtures/<dir> (Hugging Face layout, written by the generators there
// with python3-torch) and their reference.json: readers, and the closeness check the model tests
// share.
#pragma once

#include "test_helpers.h"

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fucina/io/json.h"

namespace test {

inline std::string readFixtureText(const std::string& dir, const std::string& name) {
  std::ifstream f(FUCINA_SOURCE_DIR "/tests/fixtures/" + dir + "/" + name, std::ios::binary);
  REQUIRE(f.good());
  return std::string(std::istreambuf_iterator<char>(f), {});
}
inline std::vector<uint8_t> readFixtureBytes(const std::string& dir, const std::string& name) {
  const std::string s = readFixtureText(dir, name);
  return std::vector<uint8_t>(s.begin(), s.end());
}

struct HfFixture {
  std::string dir;
  std::vector<uint8_t> model = readFixtureBytes(dir, "model.safetensors");
  std::string config = readFixtureText(dir, "config.json");
  fucina::io::json::Value ref = fucina::io::json::parse(readFixtureText(dir, "reference.json"), "reference.json");

  const fucina::io::json::Value& at(std::initializer_list<std::string_view> path) const {
    const fucina::io::json::Value* v = &ref;
    for (std::string_view k : path) {
      v = v->find(k);
      REQUIRE(v != nullptr);
    }
    return *v;
  }
  std::vector<double> numbers(std::initializer_list<std::string_view> path) const {
    std::vector<double> out;
    for (const fucina::io::json::Value& x : at(path).items) out.push_back(x.real);
    return out;
  }
  fucina::Tensor tokens(fucina::ExecContext& ctx) const {
    std::vector<int64_t> ids;
    const fucina::io::json::Value& rows = at({"tokens"});
    for (const fucina::io::json::Value& row : rows.items)
      for (const fucina::io::json::Value& x : row.items) ids.push_back(x.count);
    return fucina::Tensor::fromInts(ctx, {"batch", "t"}, {static_cast<int64_t>(rows.items.size()),
                                                          static_cast<int64_t>(rows.items[0].items.size())},
                                    ids, fucina::DType::i32);
  }
  fucina::nn::LoraOptions lora() const {
    fucina::nn::LoraOptions o;
    o.rank = at({"lora", "options", "rank"}).count;
    o.alpha = at({"lora", "options", "alpha"}).real;
    o.targets.clear();
    for (const fucina::io::json::Value& t : at({"lora", "options", "targets"}).items) o.targets.push_back(t.text);
    return o;
  }
};

// |got - want| <= atol + rtol·|want| elementwise; returns the largest |got - want|.
inline double requireClose(const std::vector<float>& got, const std::vector<double>& want, double atol, double rtol) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::abs(got[i] - want[i]);
    worst = std::max(worst, d);
    if (d > atol + rtol * std::abs(want[i]) && bad++ < 5) UNSCOPED_INFO("index " << i << ": " << got[i] << " vs " << want[i]);
  }
  CHECK(bad == 0);
  return worst;
}

// Overwrites a leaf's values in place (as an optimizer does): gives B non-zero values.
inline void overwrite(const fucina::Tensor& leaf, const fucina::Tensor& values) {
  const std::vector<float> v = values.toVector();
  REQUIRE(static_cast<int64_t>(v.size()) == leaf.numel());
  std::copy(v.begin(), v.end(), leaf.value().f32());
}

// The A (b false) or B adapter of a model's layer.
inline fucina::Tensor adapterOf(fucina::nn::Model& m, const std::string& layer, bool b) {
  for (auto& [n, l] : m.layers())
    if (n == layer) return b ? l->b : l->a;
  FAIL("no layer " << layer);
  return {};
}

}  // namespace test
