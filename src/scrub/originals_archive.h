// Encrypted archive of unredacted originals (off by default). The key is 32 bytes read from a file
// that must be mode 0600; originals are sealed with libsodium XChaCha20-Poly1305 (IETF AEAD) and
// handed to an OriginalsArchive, an interface whose storage lives elsewhere (store/ may implement
// it over SQLite; FileOriginalsArchive is a simple directory). Nothing here returns an original
// except RevealOriginal, which needs the key (`contextd archive reveal`).
// Thread-safety: the free functions are thread-safe; FileOriginalsArchive is thread-safe;
// ArchivingScrubber is thread-safe if its archive is.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "scrub/rule_scrubber.h"
#include "scrub/scrubber.h"

namespace contextd::scrub {

// A 32-byte secret key. Copyable value; wipe-on-destroy is not attempted.
struct ArchiveKey {
  std::array<uint8_t, 32> bytes{};
};

// Reads a key file: 32 raw bytes, or 64 hex characters (optionally followed by a newline).
// FailedPrecondition when the file's mode is not exactly 0600 (the message says how to fix it),
// NotFound when it does not exist, InvalidArgument when the content is not a key.
absl::StatusOr<ArchiveKey> LoadArchiveKey(const std::string& path);

// Creates a new random key file (64 hex chars + newline) with mode 0600. AlreadyExists when the
// file exists; Internal on I/O failure.
absl::Status CreateArchiveKeyFile(const std::string& path);

// Encrypts `plaintext`: returns nonce (24 bytes) || ciphertext+tag. `associated` (e.g. the
// archive id) is authenticated but not stored.
std::string SealOriginal(const ArchiveKey& key, std::string_view plaintext,
                         std::string_view associated);

// Decrypts what SealOriginal returned. DataLoss when the key is wrong or the data was altered.
absl::StatusOr<std::string> OpenOriginal(const ArchiveKey& key, std::string_view sealed,
                                         std::string_view associated);

// The id an original is archived under: hex of a keyed BLAKE2b-128 of the original (equal
// originals share one entry; without the key the id reveals nothing).
std::string ArchiveIdFor(const ArchiveKey& key, std::string_view original);

// Where sealed originals go. Implementations must be thread-safe.
class OriginalsArchive {
 public:
  virtual ~OriginalsArchive() = default;
  // Stores `sealed` under `id` (replacing any previous value). Errors are the store's.
  virtual absl::Status Put(const std::string& id, std::string_view sealed) = 0;
  // Returns the sealed bytes stored under `id`; NotFound when absent.
  virtual absl::StatusOr<std::string> Get(const std::string& id) const = 0;
  // Ids currently stored, sorted.
  virtual absl::StatusOr<std::vector<std::string>> List() const = 0;
};

// OriginalsArchive as one file per id (mode 0600) in a directory (created 0700 if missing).
class FileOriginalsArchive : public OriginalsArchive {
 public:
  // Opens (creating) `dir`. Internal when it cannot be created.
  static absl::StatusOr<std::unique_ptr<FileOriginalsArchive>> Open(const std::string& dir);
  absl::Status Put(const std::string& id, std::string_view sealed) override;
  absl::StatusOr<std::string> Get(const std::string& id) const override;
  absl::StatusOr<std::vector<std::string>> List() const override;

 private:
  explicit FileOriginalsArchive(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

// A Scrubber that, whenever it redacts something, seals the original into `archive`. Private
// spans (scrub/private_spans.h) are never archived: the original is sealed with them withheld,
// and not at all when every secret found lay inside one.
class ArchivingScrubber : public Scrubber {
 public:
  ArchivingScrubber(std::shared_ptr<const RuleScrubber> inner, ArchiveKey key,
                    std::shared_ptr<OriginalsArchive> archive);

  // As RuleScrubber::Scrub; archive failures are swallowed (the redacted text is still returned)
  // and counted in archive_failures().
  std::string Scrub(std::string_view text) const override;

  // Scrubs and archives; returns the redacted text and the archive id ("" when nothing was
  // redacted, or only inside private spans). Errors from the archive are returned.
  struct Result {
    std::string text;
    std::string archive_id;
  };
  absl::StatusOr<Result> ScrubAndArchive(std::string_view text) const;

  // Number of Scrub() calls whose archive write failed.
  uint64_t archive_failures() const;

 private:
  // What of `text` (which holds a secret) may be archived: `text` itself, or with its private
  // spans withheld; nullopt when no secret is left outside them.
  std::optional<std::string> Archivable(std::string_view text) const;

  std::shared_ptr<const RuleScrubber> inner_;
  ArchiveKey key_;
  std::shared_ptr<OriginalsArchive> archive_;
  mutable std::atomic<uint64_t> failures_{0};
};

// `contextd archive reveal`: loads the key from `key_file` (mode 0600) and decrypts the original
// archived under `id`. Errors from LoadArchiveKey, the archive, or OpenOriginal.
absl::StatusOr<std::string> RevealOriginal(const OriginalsArchive& archive,
                                           const std::string& key_file, const std::string& id);

}  // namespace contextd::scrub
