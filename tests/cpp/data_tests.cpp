// IDX reading (plain and gzip), seeded shuffling and batching, on small files made here; the real
// Fashion-MNIST files are only opened when Debian's dataset-fashion-mnist is installed.
#include "test_helpers.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <zlib.h>

using fucina::ExecContext;
namespace data = fucina::data;

namespace {

std::vector<uint8_t> idxBytes(std::vector<uint32_t> dims, const std::vector<uint8_t>& values, uint8_t type = 0x08) {
  std::vector<uint8_t> b = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int shift : {24, 16, 8, 0}) b.push_back(static_cast<uint8_t>(d >> shift));
  b.insert(b.end(), values.begin(), values.end());
  return b;
}

std::string writeFile(const std::string& name, const std::vector<uint8_t>& bytes, bool gzip) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
  } else {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  return path;
}

std::vector<uint8_t> gzipBytes(const std::vector<uint8_t>& bytes) {
  const std::string path = writeFile("fucina-idx-mem.gz", bytes, true);
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("IDX files parse, plain and gzip-compressed") {
  const std::vector<uint8_t> pixels = {0, 255, 51, 102, 0, 0, 255, 255, 1, 2, 3, 4};
  const auto bytes = idxBytes({3, 2, 2}, pixels);
  for (bool gz : {false, true}) {
    INFO("gzip " << gz);
    const auto a = data::readIdxFile(writeFile(gz ? "fucina-idx.gz" : "fucina-idx", bytes, gz));
    CHECK(a.dims == fucina::Extents{3, 2, 2});
    CHECK(a.values == pixels);
  }
}

TEST_CASE("IDX: bad files are InvalidArgument naming the problem") {
  REQUIRE_FUCINA_ERROR(data::parseIdx(std::vector<uint8_t>{1, 2, 3}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(data::parseIdx(idxBytes({2}, {1, 2}, 0x0D)), InvalidArgument);  // float data
  REQUIRE_FUCINA_ERROR(data::parseIdx(idxBytes({3}, {1, 2})), InvalidArgument);         // truncated
  REQUIRE_FUCINA_ERROR(data::readIdxFile("/nonexistent/file.idx"), InvalidArgument);
}

// Hostile files: every failure is InvalidArgument, found before the values are stored.
TEST_CASE("IDX: dims whose product overflows, or that exceed the file, are InvalidArgument") {
  REQUIRE_FUCINA_ERROR(data::parseIdx(idxBytes({65536, 65536, 65536, 65536}, {})), InvalidArgument);  // 2^64 wraps to 0
  REQUIRE_FUCINA_ERROR(data::parseIdx(idxBytes({0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, {1})), InvalidArgument);
  REQUIRE_FUCINA_ERROR(data::parseIdx(idxBytes({3}, {1, 2, 3, 4})), InvalidArgument);  // values past the end
  CHECK(data::parseIdx(idxBytes({0, 0xFFFFFFFF}, {})).values.empty());
}

TEST_CASE("IDX: decodeIdx reads gzip from memory, truncated or huge-claiming streams are InvalidArgument") {
  const auto bytes = idxBytes({2, 2}, {1, 2, 3, 4});
  const auto gz = gzipBytes(bytes);
  CHECK(data::decodeIdx(gz).values == std::vector<uint8_t>{1, 2, 3, 4});
  CHECK(data::decodeIdx(bytes).dims == fucina::Extents{2, 2});
  for (size_t cut : {size_t{3}, size_t{12}, gz.size() / 2, gz.size() - 4}) {
    INFO("cut at " << cut);
    CHECK_FUCINA_ERROR(data::decodeIdx(std::span(gz).first(cut)), InvalidArgument);
  }
  auto corrupt = gz;
  corrupt[gz.size() / 2] ^= 0xFF;
  CHECK_FUCINA_ERROR(data::decodeIdx(corrupt), InvalidArgument);
  CHECK_FUCINA_ERROR(data::decodeIdx(gzipBytes(idxBytes({0x7FFFFFFF, 0x7FFFFFFF}, {1, 2}))), InvalidArgument);
  CHECK_FUCINA_ERROR(data::decodeIdx(gzipBytes(idxBytes({2}, {1, 2, 3}))), InvalidArgument);  // a value too many
  const std::string path = writeFile("fucina-idx-cut.gz", bytes, true);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 6);
  REQUIRE_FUCINA_ERROR(data::readIdxFile(path), InvalidArgument);
}

TEST_CASE("makeSplit scales pixels and batch gathers samples in the given order") {
  ExecContext ctx;
  const auto images = data::parseIdx(idxBytes({3, 1, 2}, {0, 255, 51, 102, 255, 0}));
  const auto labels = data::parseIdx(idxBytes({3}, {7, 1, 9}));
  const data::Split s = data::makeSplit(ctx, images, labels);
  CHECK(s.images.tags() == fucina::Tags{"sample", "h", "w"});
  CHECK(s.images.toVector() == std::vector<float>{0, 1, 0.2f, 0.4f, 1, 0});
  CHECK(s.labels.dtype() == fucina::DType::i32);
  const std::vector<int64_t> order = {2, 0, 1};
  const data::Split b = data::batch(ctx, s, order, 0, 2);
  CHECK(b.images.shape() == fucina::Extents{2, 1, 2});
  CHECK(b.images.toVector() == std::vector<float>{1, 0, 0, 1});
  CHECK(b.labels.toVector() == std::vector<float>{9, 7});
  CHECK(data::batch(ctx, s, order, 2, 5).labels.toVector() == std::vector<float>{1});  // clipped
  REQUIRE_FUCINA_ERROR(data::makeSplit(ctx, images, data::parseIdx(idxBytes({2}, {1, 2}))), InvalidArgument);
  // A split whose labels are fewer than its images is refused, naming both counts.
  const data::Split short_labels{s.images, s.labels.narrow(ctx, "sample", 0, 2)};
  REQUIRE_FUCINA_ERROR(data::batch(ctx, short_labels, order, 0, 1), InvalidArgument);
}

TEST_CASE("shuffledIndices is a seeded permutation, pinned for the JS reader") {
  const auto a = data::shuffledIndices(10, 7);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 10; ++i) CHECK(sorted[size_t(i)] == i);
  CHECK(data::shuffledIndices(10, 7) == a);
  CHECK(data::shuffledIndices(10, 8) != a);
  CHECK(a == std::vector<int64_t>{8, 1, 5, 9, 0, 4, 3, 2, 6, 7});  // tests/js/data.test.mjs asserts the same list
  CHECK(data::shuffledIndices(0, 1).empty());
}

TEST_CASE("Fashion-MNIST test split loads when the dataset is installed") {
  if (!std::filesystem::exists(std::string(data::kFashionMnistDir) + "/t10k-labels-idx1-ubyte.gz")) {
    WARN("dataset-fashion-mnist is not installed; skipped");
    return;
  }
  ExecContext ctx;
  const data::Split test = data::loadFashionMnist(ctx, data::kFashionMnistDir, /*train=*/false);
  CHECK(test.images.shape() == fucina::Extents{10000, 28, 28});
  CHECK(test.labels.shape() == fucina::Extents{10000});
  const auto ys = test.labels.toVector();
  std::vector<int> counts(10, 0);
  for (float y : ys) ++counts[size_t(y)];
  for (int c : counts) CHECK(c == 1000);  // the test split is balanced
}
