#include "tokens/lazy_encoding.h"

#include <cstdio>
#include <cstdlib>

namespace contextd::tokens {

absl::StatusOr<std::unique_ptr<LazyEncoding>> LazyEncoding::Create(std::string_view name) {
  absl::StatusOr<EncodingSpec> spec = BuiltinEncodingSpec(name);
  if (!spec.ok()) return spec.status();
  return std::unique_ptr<LazyEncoding>(new LazyEncoding(std::string(name)));
}

const BpeTokenizer& LazyEncoding::Get() const {
  const BpeTokenizer* t = loaded_.load(std::memory_order_acquire);
  if (t != nullptr) return *t;
  absl::StatusOr<const BpeTokenizer*> got = GetEncoding(name_);
  if (!got.ok()) {
    std::fprintf(stderr,
                 "contextd: the embedded %s vocabulary cannot be loaded (%s): the binary is "
                 "corrupt; rebuild it\n",
                 name_.c_str(), std::string(got.status().message()).c_str());
    std::abort();
  }
  loaded_.store(*got, std::memory_order_release);
  return **got;
}

size_t LazyEncoding::Count(std::string_view text) const { return Get().Count(text); }

}  // namespace contextd::tokens
