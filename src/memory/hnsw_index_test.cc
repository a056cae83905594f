// HnswIndex: recall against brute force on seeded random vectors, cosine distances, replacement,
// growth past the initial capacity, the errors of Add and Nearest, concurrent readers with a
// writer, and the memory estimate's shape.
#include "memory/hnsw_index.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

// hnswlib's lock order trips TSan's deadlock detector (see hnsw_index.cc); this binary only
// runs without it. Data races are still reported.
#if defined(__SANITIZE_THREAD__)
extern "C" const char* __tsan_default_options() { return "detect_deadlocks=0"; }
#endif

namespace contextd::memory {
namespace {

std::vector<std::vector<float>> RandomVectors(size_t n, size_t dim, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::vector<float>> out(n, std::vector<float>(dim));
  for (auto& v : out) {
    for (float& x : v) x = normal(rng);
  }
  return out;
}

double Cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += static_cast<double>(a[i]) * b[i];
    na += static_cast<double>(a[i]) * a[i];
    nb += static_cast<double>(b[i]) * b[i];
  }
  return dot / std::sqrt(na * nb);
}

std::string Id(size_t i) { return "mem_" + std::to_string(i); }

TEST(HnswIndexTest, RecallAtTenAgainstBruteForceOnTwoThousandRandomVectors) {
  constexpr size_t kN = 2000, kDim = 64, kQueries = 200, kK = 10;
  const auto data = RandomVectors(kN, kDim, 7);
  const auto queries = RandomVectors(kQueries, kDim, 8);
  HnswIndex index;
  for (size_t i = 0; i < kN; ++i) ASSERT_TRUE(index.Add(Id(i), data[i]).ok());
  ASSERT_EQ(index.size(), kN);
  EXPECT_GE(index.capacity(), kN);  // grew from 1024

  size_t found = 0;
  for (const auto& q : queries) {
    std::vector<std::pair<double, size_t>> exact;
    for (size_t i = 0; i < kN; ++i) exact.emplace_back(1.0 - Cosine(q, data[i]), i);
    std::partial_sort(exact.begin(), exact.begin() + kK, exact.end());
    auto hits = index.Nearest(q, kK);
    ASSERT_TRUE(hits.ok()) << hits.status();
    ASSERT_EQ(hits->size(), kK);
    for (size_t j = 1; j < kK; ++j) EXPECT_LE((*hits)[j - 1].distance, (*hits)[j].distance);
    for (size_t j = 0; j < kK; ++j) {
      const std::string want = Id(exact[j].second);
      found +=
          std::any_of(hits->begin(), hits->end(), [&](const Neighbour& n) { return n.id == want; });
    }
    // The reported distance is the cosine distance.
    EXPECT_NEAR((*hits)[0].distance, 1.0 - Cosine(q, data[std::stoul((*hits)[0].id.substr(4))]),
                1e-4);
  }
  const double recall = static_cast<double>(found) / (kQueries * kK);
  std::printf("recall@10 = %.4f over %zu queries (n=%zu, dim=%zu)\n", recall, kQueries, kN, kDim);
  EXPECT_GE(recall, 0.95);
}

TEST(HnswIndexTest, CosineIgnoresLengthAndFindsItself) {
  HnswIndex index;
  ASSERT_TRUE(index.Add("a", {1, 0, 0}).ok());
  ASSERT_TRUE(index.Add("b", {0, 1, 0}).ok());
  ASSERT_TRUE(index.Add("c", {-1, 0, 0}).ok());
  auto hits = index.Nearest({5, 0.1f, 0}, 3);
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 3u);
  EXPECT_EQ((*hits)[0].id, "a");
  EXPECT_NEAR((*hits)[0].distance, 1.0 - Cosine({5, 0.1f, 0}, {1, 0, 0}), 1e-6);
  EXPECT_EQ((*hits)[1].id, "b");
  EXPECT_EQ((*hits)[2].id, "c");
  EXPECT_NEAR((*hits)[2].distance, 2.0 - 0.0002, 1e-3);  // opposite direction
  hits = index.Nearest({0, 3, 0}, 1);
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ((*hits)[0].id, "b");
  EXPECT_GE((*hits)[0].distance, 0.0f);
  EXPECT_LT((*hits)[0].distance, 1e-6);
  // k above the size: every item.
  hits = index.Nearest({0, 0, 1}, 50);
  ASSERT_TRUE(hits.ok());
  EXPECT_EQ(hits->size(), 3u);
}

TEST(HnswIndexTest, AddingAnIdAgainReplacesItsVector) {
  HnswIndex index;
  const auto data = RandomVectors(300, 16, 3);
  for (size_t i = 0; i < data.size(); ++i) ASSERT_TRUE(index.Add(Id(i), data[i]).ok());
  const size_t bytes = index.memory_bytes();
  // Move item 5 onto item 200's direction (scaled: length does not matter).
  std::vector<float> moved = data[200];
  for (float& x : moved) x *= 3;
  ASSERT_TRUE(index.Add(Id(5), moved).ok());
  EXPECT_EQ(index.size(), data.size());
  EXPECT_EQ(index.memory_bytes(), bytes);
  auto hits = index.Nearest(data[200], 2);
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 2u);
  std::vector<std::string> ids = {(*hits)[0].id, (*hits)[1].id};
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<std::string>{Id(200), Id(5)}));
  EXPECT_LT((*hits)[1].distance, 1e-5);
  // Its old direction no longer finds it first.
  hits = index.Nearest(data[5], 1);
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_NE((*hits)[0].id, Id(5));

  // Replacing the only element of an index works too.
  HnswIndex one;
  ASSERT_TRUE(one.Add("x", {1, 0}).ok());
  ASSERT_TRUE(one.Add("x", {0, 1}).ok());
  hits = one.Nearest({0, 1}, 1);
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_LT((*hits)[0].distance, 1e-6);
}

TEST(HnswIndexTest, DimensionMismatchAndBadVectorsAreInvalidArgument) {
  HnswIndex index;
  auto empty = index.Nearest({1, 2, 3}, 5);
  ASSERT_TRUE(empty.ok());  // an empty index has no dimension yet
  EXPECT_TRUE(empty->empty());
  EXPECT_EQ(index.dimension(), 0u);
  // A rejected first vector does not fix the dimension.
  EXPECT_EQ(index.Add("z", {0, 0}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(index.dimension(), 0u);

  ASSERT_TRUE(index.Add("a", {1, 2, 3}).ok());
  EXPECT_EQ(index.dimension(), 3u);
  absl::Status s = index.Add("b", {1, 2});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("dimension 2"), absl::string_view::npos) << s;
  EXPECT_EQ(index.Nearest({1, 2, 3, 4}, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(index.Add("", {1, 2, 3}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(index.Add("b", {}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(index.Add("b", {0, 0, 0}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(index.Add("b", {NAN, 1, 1}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(index.Add("b", {INFINITY, 1, 1}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(index.Nearest({0, 0, 0}, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(index.Nearest({1, 1, 1}, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(index.size(), 1u);
}

TEST(HnswIndexTest, GrowsPastItsCapacityAndMemoryFollows) {
  HnswOptions o;
  o.initial_capacity = 16;
  HnswIndex index(o);
  EXPECT_EQ(index.capacity(), 0u);
  const auto data = RandomVectors(100, 8, 11);
  ASSERT_TRUE(index.Add(Id(0), data[0]).ok());
  EXPECT_EQ(index.capacity(), 16u);
  const size_t small = index.memory_bytes();
  for (size_t i = 1; i < data.size(); ++i) ASSERT_TRUE(index.Add(Id(i), data[i]).ok());
  EXPECT_EQ(index.capacity(), 128u);
  EXPECT_GT(index.memory_bytes(), small);
  // Every element is still found as its own nearest neighbour.
  for (size_t i = 0; i < data.size(); ++i) {
    auto hits = index.Nearest(data[i], 1);
    ASSERT_TRUE(hits.ok());
    ASSERT_EQ(hits->size(), 1u);
    EXPECT_EQ((*hits)[0].id, Id(i));
  }
}

TEST(HnswIndexTest, MemoryBytesCountsTheVectorsOfTheCapacity) {
  HnswOptions o;
  o.initial_capacity = 1000;
  HnswIndex index(o);
  const auto data = RandomVectors(1000, 128, 5);
  for (size_t i = 0; i < data.size(); ++i) ASSERT_TRUE(index.Add(Id(i), data[i]).ok());
  const size_t bytes = index.memory_bytes();
  // At least the raw floats and the bottom layer's links (2 x M of 4 bytes each per element).
  EXPECT_GT(bytes, 1000u * (128 * 4 + 32 * 4));
  // And not wildly more: the fixed lock table (65536 mutexes) plus twice the per-element data.
  EXPECT_LT(bytes, 65536u * 40 + 2 * 1000u * (128 * 4 + 32 * 4 + 200));
}

TEST(HnswIndexTest, ConcurrentReadersAndAWriter) {
  HnswIndex index;
  const auto data = RandomVectors(600, 32, 21);
  for (size_t i = 0; i < 300; ++i) ASSERT_TRUE(index.Add(Id(i), data[i]).ok());
  std::vector<std::thread> readers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&, t] {
      for (size_t i = 0; i < 200; ++i) {
        auto hits = index.Nearest(data[(i * 7 + t) % 300], 5);
        if (!hits.ok() || hits->empty()) ++failures;
        (void)index.memory_bytes();
      }
    });
  }
  for (size_t i = 300; i < data.size(); ++i) ASSERT_TRUE(index.Add(Id(i), data[i]).ok());
  for (auto& r : readers) r.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(index.size(), data.size());
}

}  // namespace
}  // namespace contextd::memory
