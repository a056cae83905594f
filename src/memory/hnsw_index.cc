#include "memory/hnsw_index.h"

// hnswlib 0.6.2's SSE code prefetches through a value read just past the end of an upper-layer
// link list (a heap over-read of up to 3 bytes, fixed upstream in 0.7): its hand-written
// vectorisation stays off, and UnitInnerProductSpace below brings the fast distance instead.
#define NO_MANUAL_VECTORIZATION
#include <hnswlib/hnswlib.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>

#include "base/str_cat.h"

// ThreadSanitizer and hnswlib: every graph holds 65,536 + capacity std::mutexes, taken in an
// order TSan's deadlock detector reports as lock-order-inversion (hnswlib is built for concurrent
// inserts), and past ~4,096 live mutexes the detector recycles its nodes and reports cycles
// without stacks, which no suppression can match. HnswIndex never lets two inserts overlap (mu_
// exclusive) and searches take none of those mutexes, so the order cannot deadlock. The tests that
// build graphs therefore run without TSan's deadlock detector: memory_test (its own
// __tsan_default_options in hnsw_index_test.cc) and e2e_memory_endpoints (TSAN_OPTIONS in
// tests/CMakeLists.txt); every other test keeps it, and data races are reported everywhere.

namespace contextd::memory {
namespace {

// Heap bytes of a std::string beyond the object itself (libstdc++ keeps up to 15 chars inline).
size_t StringHeapBytes(const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

// Typical node size of a std::unordered_map node holding `payload` bytes: the next pointer, the
// payload rounded to 8, the cached hash where the standard library keeps one, and malloc's own
// header (16 bytes on glibc for small blocks).
constexpr size_t NodeBytes(size_t payload, bool cached_hash) {
  return 8 + ((payload + 7) / 8) * 8 + (cached_hash ? 8 : 0) + 16;
}

// `v` scaled to unit length into `out`. InvalidArgument (naming `what`) for a NaN or infinite
// component or a zero vector.
absl::Status Normalise(std::string_view what, const std::vector<float>& v,
                       std::vector<float>& out) {
  double sum = 0;
  for (float x : v) {
    if (!std::isfinite(x)) {
      return absl::InvalidArgumentError(base::StrCat(what, " has a NaN or infinite component"));
    }
    sum += static_cast<double>(x) * x;
  }
  if (!(sum > 0) || !std::isfinite(sum)) {
    return absl::InvalidArgumentError(
        base::StrCat(what, " has no direction (zero length) or overflows"));
  }
  const double inv = 1.0 / std::sqrt(sum);
  out.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<float>(v[i] * inv);
  return absl::OkStatus();
}

// 1 - <a, b> over unit vectors: the cosine distance. Eight independent sums let the compiler
// keep them in vector registers without reassociating one float sum.
float UnitInnerProductDistance(const void* a, const void* b, const void* param) {
  const float* x = static_cast<const float*>(a);
  const float* y = static_cast<const float*>(b);
  const size_t n = *static_cast<const size_t*>(param);
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (size_t j = 0; j < 8; ++j) s[j] += x[i + j] * y[i + j];
  }
  float sum = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  for (; i < n; ++i) sum += x[i] * y[i];
  return 1.0f - sum;
}

class UnitInnerProductSpace final : public hnswlib::SpaceInterface<float> {
 public:
  explicit UnitInnerProductSpace(size_t dim) : dim_(dim) {}
  size_t get_data_size() override { return dim_ * sizeof(float); }
  hnswlib::DISTFUNC<float> get_dist_func() override { return &UnitInnerProductDistance; }
  void* get_dist_func_param() override { return &dim_; }

 private:
  size_t dim_;
};

}  // namespace

struct HnswIndex::Impl {
  Impl(size_t dim, const HnswOptions& o)
      : dimension(dim),
        space(dim),
        graph(&space, std::max<size_t>(o.initial_capacity, 1), std::max<size_t>(o.m, 2),
              std::max<size_t>(o.ef_construction, 1), o.seed) {
    graph.setEf(std::max<size_t>(o.ef_search, 1));
  }

  const size_t dimension;
  UnitInnerProductSpace space;  // before graph, which points to it
  hnswlib::HierarchicalNSW<float> graph;
  std::unordered_map<std::string, hnswlib::labeltype> labels;  // id -> label
  std::vector<std::string> ids;                                // label -> id
  size_t id_heap_bytes = 0;     // heap bytes of the id strings (held twice: map key and ids)
  size_t upper_link_bytes = 0;  // hnswlib's link lists of the layers above the bottom one
  // Searches running at once, and the most seen since the visited-list pool was last rebuilt:
  // hnswlib keeps one visited list (2 bytes per element of capacity) per concurrent search.
  mutable std::atomic<size_t> searching{0};
  mutable std::atomic<size_t> peak_searching{1};
};

HnswIndex::HnswIndex(HnswOptions options) : options_(options) {}

HnswIndex::~HnswIndex() = default;

absl::Status HnswIndex::Add(std::string_view id, const std::vector<float>& vector) {
  if (id.empty()) return absl::InvalidArgumentError("vector index: empty id");
  if (vector.empty()) {
    return absl::InvalidArgumentError(base::StrCat("vector index: empty vector for id '", id, "'"));
  }
  std::vector<float> unit;
  if (absl::Status s =
          Normalise(base::StrCat("vector index: the vector of id '", id, "'"), vector, unit);
      !s.ok()) {
    return s;
  }
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (impl_ != nullptr && vector.size() != impl_->dimension) {
    return absl::InvalidArgumentError(base::StrCat("vector index: the vector of id '", id,
                                                   "' has dimension ", vector.size(),
                                                   "; the index's is ", impl_->dimension));
  }
  try {
    // The first vector makes the graph; it is kept only if the vector goes in.
    std::unique_ptr<Impl> fresh;
    if (impl_ == nullptr) fresh = std::make_unique<Impl>(vector.size(), options_);
    Impl& impl = fresh != nullptr ? *fresh : *impl_;
    auto it = impl.labels.find(std::string(id));
    if (it != impl.labels.end()) {
      // hnswlib 0.6.2: adding an existing label updates its vector and repairs its links.
      impl.graph.addPoint(unit.data(), it->second);
      return absl::OkStatus();
    }
    if (impl.graph.cur_element_count >= impl.graph.max_elements_) {
      impl.graph.resizeIndex(impl.graph.max_elements_ * 2);
      impl.peak_searching.store(1);  // resizeIndex rebuilds the pool with one list
    }
    const hnswlib::labeltype label = impl.ids.size();
    impl.ids.emplace_back(id);
    try {
      impl.graph.addPoint(unit.data(), label);
    } catch (...) {
      impl.ids.pop_back();
      throw;
    }
    const std::string& stored = impl.ids.back();
    impl.labels.emplace(stored, label);
    impl.id_heap_bytes += 2 * StringHeapBytes(stored);
    const hnswlib::tableint internal = impl.graph.label_lookup_.at(label);
    const int level = impl.graph.element_levels_[internal];
    if (level > 0) impl.upper_link_bytes += impl.graph.size_links_per_element_ * level + 1;
    if (fresh != nullptr) impl_ = std::move(fresh);
    return absl::OkStatus();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        base::StrCat("vector index: out of memory adding id '", id, "'"));
  } catch (const std::exception& e) {
    return absl::InternalError(
        base::StrCat("vector index: hnswlib failed adding id '", id, "': ", e.what()));
  }
}

absl::StatusOr<std::vector<Neighbour>> HnswIndex::Nearest(const std::vector<float>& query,
                                                          int k) const {
  if (k < 1)
    return absl::InvalidArgumentError(base::StrCat("vector index: k must be >= 1, got ", k));
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::vector<Neighbour> out;
  if (impl_ == nullptr || impl_->ids.empty()) return out;
  const Impl& impl = *impl_;
  if (query.size() != impl.dimension) {
    return absl::InvalidArgumentError(base::StrCat("vector index: the query has dimension ",
                                                   query.size(), "; the index's is ",
                                                   impl.dimension));
  }
  std::vector<float> unit;
  if (absl::Status s = Normalise("vector index: the query", query, unit); !s.ok()) return s;
  const size_t running = impl.searching.fetch_add(1) + 1;
  size_t peak = impl.peak_searching.load();
  while (running > peak && !impl.peak_searching.compare_exchange_weak(peak, running)) {
  }
  try {
    auto heap = impl.graph.searchKnn(unit.data(), static_cast<size_t>(k));  // farthest on top
    impl.searching.fetch_sub(1);
    out.resize(heap.size());
    for (size_t i = out.size(); i-- > 0; heap.pop()) {
      const auto& [distance, label] = heap.top();
      // 1 - cos; rounding can make it a hair below zero for the vector itself.
      out[i] = Neighbour{impl.ids[label], std::max(0.0f, distance)};
    }
    return out;
  } catch (const std::bad_alloc&) {
    impl.searching.fetch_sub(1);
    return absl::ResourceExhaustedError("vector index: out of memory searching");
  } catch (const std::exception& e) {
    impl.searching.fetch_sub(1);
    return absl::InternalError(base::StrCat("vector index: hnswlib failed searching: ", e.what()));
  }
}

size_t HnswIndex::size() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return impl_ == nullptr ? 0 : impl_->ids.size();
}

size_t HnswIndex::dimension() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return impl_ == nullptr ? 0 : impl_->dimension;
}

size_t HnswIndex::capacity() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return impl_ == nullptr ? 0 : impl_->graph.max_elements_;
}

size_t HnswIndex::memory_bytes() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  size_t bytes = sizeof(*this);
  if (impl_ == nullptr) return bytes;
  const Impl& impl = *impl_;
  const auto& g = impl.graph;
  const size_t capacity = g.max_elements_;
  bytes += sizeof(Impl);
  // The bottom layer: links, vector and label of every element, allocated for the capacity.
  bytes += capacity * g.size_data_per_element_;
  // Upper layers: a pointer per element, and the link lists of elements above level 0.
  bytes += capacity * sizeof(void*) + impl.upper_link_bytes;
  // Per-element level and lock; the fixed table of update locks.
  bytes += capacity * (sizeof(int) + sizeof(std::mutex));
  bytes += hnswlib::HierarchicalNSW<float>::max_update_element_locks * sizeof(std::mutex);
  // Visited lists: one per concurrent search seen (at least one), 2 bytes per element.
  bytes += impl.peak_searching.load() *
           (sizeof(hnswlib::VisitedList) + capacity * sizeof(hnswlib::vl_type));
  // hnswlib's label -> internal id table.
  bytes += g.label_lookup_.size() *
               NodeBytes(sizeof(std::pair<const hnswlib::labeltype, hnswlib::tableint>), false) +
           g.label_lookup_.bucket_count() * sizeof(void*);
  // Our id -> label map and label -> id vector.
  bytes += impl.labels.size() * NodeBytes(sizeof(std::pair<const std::string, size_t>), true) +
           impl.labels.bucket_count() * sizeof(void*);
  bytes += impl.ids.capacity() * sizeof(std::string) + impl.id_heap_bytes;
  return bytes;
}

}  // namespace contextd::memory
