#include "tokens/bpe_tokenizer.h"

#include <openssl/evp.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <sstream>

#include "absl/status/status.h"
#include "base/status_macros.h"
#include "tokens/internal/byte_pair.h"
#include "tokens/internal/embedded_vocab.h"
#include "tokens/internal/piece_cache.h"
#include "tokens/internal/utf8.h"

namespace contextd::tokens {
namespace {

using internal::RankTable;

// Debian's abseil has its own string_view, which absl::StrCat does not take std::string_view as.
template <typename... Args>
std::string Cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr) != 1) return "";
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0xF]);
  }
  return hex;
}

// Collects token ids.
struct IdSink {
  std::vector<uint32_t>* out;
  void Add(uint32_t id) { out->push_back(id); }
  void Add(const uint32_t* ids, size_t n) { out->insert(out->end(), ids, ids + n); }
  void AddLong(const RankTable& t, const uint8_t* p, size_t n) {
    internal::BytePairEncodeAny(t, p, n, out);
  }
};

// Counts tokens without materialising them.
struct CountSink {
  size_t count = 0;
  std::vector<uint32_t> scratch;
  void Add(uint32_t) { ++count; }
  void Add(const uint32_t*, size_t n) { count += n; }
  void AddLong(const RankTable& t, const uint8_t* p, size_t n) {
    scratch.clear();
    internal::BytePairEncodeAny(t, p, n, &scratch);
    count += scratch.size();
  }
};

std::atomic<uint32_t> next_tokenizer_id{1};

}  // namespace

absl::StatusOr<std::unique_ptr<BpeTokenizer>> BpeTokenizer::Create(EncodingSpec spec) {
  std::string digest = Sha256Hex(spec.rank_file);
  if (digest != spec.rank_file_sha256) {
    return absl::DataLossError(Cat("rank file of ", spec.name, " has sha256 ", digest,
                                   ", expected ", spec.rank_file_sha256));
  }
  ASSIGN_OR_RETURN(RankTable ranks, RankTable::Parse(spec.rank_file));
  for (const SpecialToken& sp : spec.specials) {
    if (sp.text.empty() || !ranks.Bytes(sp.id).empty()) {
      return absl::InvalidArgumentError(
          Cat("special token ", sp.text, " (", sp.id, ") is empty or collides"));
    }
  }
  return std::unique_ptr<BpeTokenizer>(
      new BpeTokenizer(std::move(spec), std::move(ranks), next_tokenizer_id.fetch_add(1)));
}

template <typename Sink>
void BpeTokenizer::EncodePiece(const uint8_t* p, size_t n, Sink& sink) const {
  if (n > internal::kShortPieceMax) {
    sink.AddLong(ranks_, p, n);
    return;
  }
  if (n > internal::PieceCache::kMaxLen) {
    uint32_t ids[internal::kShortPieceMax];
    sink.Add(ids, internal::BytePairEncodeShort(ranks_, p, n, ids));
    return;
  }
  internal::PieceCache& cache = internal::ThreadPieceCache();
  size_t count;
  if (const uint32_t* hit = cache.Find(id_, p, n, &count)) {
    sink.Add(hit, count);
    return;
  }
  uint32_t ids[internal::PieceCache::kMaxLen];
  count = internal::BytePairEncodeShort(ranks_, p, n, ids);
  cache.Put(id_, p, n, ids, count);
  sink.Add(ids, count);
}

template <typename Sink>
void BpeTokenizer::EncodeOrdinary(std::string_view text, Sink& sink) const {
  internal::Pretokenizer splitter(spec_.pattern, text);
  const auto* base = reinterpret_cast<const uint8_t*>(text.data());
  size_t pos = 0, n = text.size();
  while (pos < n) {
    size_t end = splitter.NextEnd(pos);
    uint32_t r = ranks_.Find(base + pos, end - pos);
    if (r != RankTable::kNoRank) {
      sink.Add(r);
    } else {
      EncodePiece(base + pos, end - pos, sink);
    }
    pos = end;
  }
}

template <typename Sink>
void BpeTokenizer::EncodeValid(std::string_view text, bool allow_special, Sink& sink) const {
  if (!allow_special || spec_.specials.empty()) {
    EncodeOrdinary(text, sink);
    return;
  }
  // Next occurrence of each special token at or after `start` (npos: none left).
  std::vector<size_t> next(spec_.specials.size());
  for (size_t k = 0; k < next.size(); ++k) next[k] = text.find(spec_.specials[k].text);
  size_t start = 0;
  for (;;) {
    size_t best = std::string_view::npos, which = 0;
    for (size_t k = 0; k < next.size(); ++k) {
      if (next[k] != std::string_view::npos && next[k] < start) {
        next[k] = text.find(spec_.specials[k].text, start);
      }
      if (next[k] < best) {
        best = next[k];
        which = k;
      }
    }
    if (best == std::string_view::npos) break;
    EncodeOrdinary(text.substr(start, best - start), sink);
    sink.Add(spec_.specials[which].id);
    start = best + spec_.specials[which].text.size();
  }
  EncodeOrdinary(text.substr(start), sink);
}

template <typename Sink>
void BpeTokenizer::EncodeAny(std::string_view text, bool allow_special, Sink& sink) const {
  if (internal::IsValidUtf8(text)) {
    EncodeValid(text, allow_special, sink);
  } else {
    std::string fixed = internal::ReplaceInvalidUtf8(text);
    EncodeValid(fixed, allow_special, sink);
  }
}

size_t BpeTokenizer::Count(std::string_view text) const { return Count(text, false); }

size_t BpeTokenizer::Count(std::string_view text, bool allow_special) const {
  CountSink sink;
  EncodeAny(text, allow_special, sink);
  return sink.count;
}

std::vector<uint32_t> BpeTokenizer::Encode(std::string_view text, bool allow_special) const {
  std::vector<uint32_t> ids;
  ids.reserve(text.size() / 4 + 1);
  IdSink sink{&ids};
  EncodeAny(text, allow_special, sink);
  return ids;
}

absl::StatusOr<std::string> BpeTokenizer::Decode(std::span<const uint32_t> ids) const {
  std::string out;
  for (uint32_t id : ids) {
    std::string_view bytes = ranks_.Bytes(id);
    if (bytes.empty()) {
      for (const SpecialToken& sp : spec_.specials) {
        if (sp.id == id) bytes = sp.text;
      }
    }
    if (bytes.empty()) {
      return absl::InvalidArgumentError(Cat("unknown token id ", id, " for ", name()));
    }
    out.append(bytes);
  }
  return out;
}

absl::StatusOr<EncodingSpec> BuiltinEncodingSpec(std::string_view name) {
  if (name == "o200k_base") {
    return EncodingSpec{"o200k_base",
                        internal::SplitPattern::kO200k,
                        internal::EmbeddedO200kBase(),
                        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
                        {{"<|endoftext|>", 199999}, {"<|endofprompt|>", 200018}}};
  }
  if (name == "cl100k_base") {
    return EncodingSpec{"cl100k_base",
                        internal::SplitPattern::kCl100k,
                        internal::EmbeddedCl100kBase(),
                        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
                        {{"<|endoftext|>", 100257},
                         {"<|fim_prefix|>", 100258},
                         {"<|fim_middle|>", 100259},
                         {"<|fim_suffix|>", 100260},
                         {"<|endofprompt|>", 100276}}};
  }
  return absl::InvalidArgumentError(
      Cat("unknown encoding \"", name, "\" (known: o200k_base, cl100k_base)"));
}

absl::StatusOr<std::unique_ptr<BpeTokenizer>> LoadEncoding(std::string_view name) {
  ASSIGN_OR_RETURN(EncodingSpec spec, BuiltinEncodingSpec(name));
  return BpeTokenizer::Create(std::move(spec));
}

absl::StatusOr<const BpeTokenizer*> GetEncoding(std::string_view name) {
  struct Slot {
    std::once_flag once;
    absl::StatusOr<std::unique_ptr<BpeTokenizer>> loaded = absl::UnknownError("not loaded");
  };
  static Slot* const o200k = new Slot;
  static Slot* const cl100k = new Slot;
  Slot* slot = name == "o200k_base" ? o200k : name == "cl100k_base" ? cl100k : nullptr;
  if (slot == nullptr) return BuiltinEncodingSpec(name).status();
  std::call_once(slot->once, [&] { slot->loaded = LoadEncoding(name); });
  if (!slot->loaded.ok()) return slot->loaded.status();
  return static_cast<const BpeTokenizer*>(slot->loaded->get());
}

}  // namespace contextd::tokens
