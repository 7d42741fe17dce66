// The region trace's recorder (exec/trace.h). Builds without FUCINA_TRACE compile it here, so
// the recorder is tested in every build; bench/trace.mjs's summary is tested in tests/js.
#ifndef FUCINA_TRACE
#define FUCINA_TRACE 1
#include "../../src/fucina/exec/trace.cpp"
#endif

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include "fucina/exec/trace.h"

namespace {

// The trace's lines whose `a` is `marker` (a trace build's other tests record events too).
std::vector<std::vector<std::string>> linesMarked(const std::string& path, const std::string& marker) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    size_t start = 0;
    for (size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1)
      fields.push_back(line.substr(start, tab - start));
    fields.push_back(line.substr(start));
    if (fields.size() == 6 && fields[3] == marker) out.push_back(fields);
  }
  return out;
}

}  // namespace

TEST_CASE("the region trace records each thread's events, with readable labels") {
  using fucina::trace::Kind;
  const int64_t marker = 987654321;
  fucina::trace::record(Kind::kRegion, marker, 16, typeid(std::vector<int>).name());
  std::thread([&] {
    fucina::trace::record(Kind::kChunk, marker, 1);
    fucina::trace::recordText(Kind::kGemm, marker, 2, "k=12345678901234567890123456789 ta=0");
  }).join();
  fucina::trace::record(Kind::kRegionEnd, marker);
  const auto path = (std::filesystem::temp_directory_path() / "fucina-trace-test.tsv").string();
  REQUIRE(fucina::trace::writeTo(path.c_str()));
  auto lines = linesMarked(path, std::to_string(marker));  // written thread by thread
  std::filesystem::remove(path);
  std::stable_sort(lines.begin(), lines.end(), [](const auto& x, const auto& y) { return std::stoll(x[0]) < std::stoll(y[0]); });
  REQUIRE(lines.size() == 4);
  CHECK(lines[0][2] == "1");
  CHECK(lines[0][4] == "16");
  CHECK(lines[0][5] == "std::vector<int, std::allocator<int> >");  // demangled
  CHECK(lines[1][2] == "3");
  CHECK(lines[2][2] == "7");
  CHECK(lines[2][5] == "k=123456789012345678901");  // copied, cut to the slot's 23 characters
  CHECK(lines[3][2] == "2");
  CHECK(lines[1][1] == lines[2][1]);  // one thread number per thread
  CHECK(lines[0][1] == lines[3][1]);
  CHECK(lines[0][1] != lines[1][1]);
  CHECK_FALSE(fucina::trace::writeTo("/nonexistent-dir/trace.tsv"));
}
