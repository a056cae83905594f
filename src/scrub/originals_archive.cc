#include "scrub/originals_archive.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "scrub/private_spans.h"

namespace contextd::scrub {
namespace {

bool SodiumReady() {
  static const bool ok = sodium_init() >= 0;
  return ok;
}

bool ValidId(std::string_view id) {
  return !id.empty() && id.size() <= 128 &&
         std::all_of(id.begin(), id.end(), [](char c) { return absl::ascii_isxdigit(c); });
}

absl::Status WriteFile0600(const std::string& path, std::string_view data, bool exclusive) {
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : O_TRUNC);
  int fd = ::open(path.c_str(), flags, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return absl::AlreadyExistsError(absl::StrCat(path, " already exists"));
    return absl::InternalError(absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  ::fchmod(fd, 0600);
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return absl::InternalError(absl::StrCat("cannot write ", path, ": ", std::strerror(err)));
    }
    off += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    return absl::InternalError(absl::StrCat("cannot close ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ArchiveKey> LoadArchiveKey(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("scrub key file ", path, ": ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("scrub key file ", path, " is not a file"));
  }
  if ((st.st_mode & 07777) != 0600) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return absl::FailedPreconditionError(absl::StrCat("scrub key file ", path, " has mode ", mode,
                                                      "; it must be 0600 (chmod 600 ", path, ")"));
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string data = ss.str();
  ArchiveKey key;
  if (data.size() == 32) {
    std::memcpy(key.bytes.data(), data.data(), 32);
    return key;
  }
  absl::string_view hex = absl::StripAsciiWhitespace(data);
  if (hex.size() == 64 &&
      std::all_of(hex.begin(), hex.end(), [](char c) { return absl::ascii_isxdigit(c); })) {
    std::string raw = absl::HexStringToBytes(hex);
    std::memcpy(key.bytes.data(), raw.data(), 32);
    return key;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("scrub key file ", path, " must hold 32 raw bytes or 64 hex characters"));
}

absl::Status CreateArchiveKeyFile(const std::string& path) {
  if (!SodiumReady()) return absl::InternalError("libsodium failed to initialise");
  ArchiveKey key;
  randombytes_buf(key.bytes.data(), key.bytes.size());
  std::string hex = absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(key.bytes.data()), key.bytes.size()));
  return WriteFile0600(path, hex + "\n", /*exclusive=*/true);
}

std::string SealOriginal(const ArchiveKey& key, std::string_view plaintext,
                         std::string_view associated) {
  SodiumReady();
  constexpr size_t kNonce = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
  std::string out(kNonce + plaintext.size() + crypto_aead_xchacha20poly1305_ietf_ABYTES, '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  randombytes_buf(o, kNonce);
  unsigned long long clen = 0;
  crypto_aead_xchacha20poly1305_ietf_encrypt(
      o + kNonce, &clen, reinterpret_cast<const unsigned char*>(plaintext.data()), plaintext.size(),
      reinterpret_cast<const unsigned char*>(associated.data()), associated.size(), nullptr, o,
      key.bytes.data());
  out.resize(kNonce + clen);
  return out;
}

absl::StatusOr<std::string> OpenOriginal(const ArchiveKey& key, std::string_view sealed,
                                         std::string_view associated) {
  SodiumReady();
  constexpr size_t kNonce = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
  if (sealed.size() < kNonce + crypto_aead_xchacha20poly1305_ietf_ABYTES) {
    return absl::DataLossError("archived original is truncated");
  }
  const auto* s = reinterpret_cast<const unsigned char*>(sealed.data());
  std::string out(sealed.size() - kNonce - crypto_aead_xchacha20poly1305_ietf_ABYTES, '\0');
  unsigned long long mlen = 0;
  if (crypto_aead_xchacha20poly1305_ietf_decrypt(
          reinterpret_cast<unsigned char*>(out.data()), &mlen, nullptr, s + kNonce,
          sealed.size() - kNonce, reinterpret_cast<const unsigned char*>(associated.data()),
          associated.size(), s, key.bytes.data()) != 0) {
    return absl::DataLossError("cannot decrypt archived original: wrong key or altered data");
  }
  out.resize(mlen);
  return out;
}

std::string ArchiveIdFor(const ArchiveKey& key, std::string_view original) {
  SodiumReady();
  unsigned char h[16];
  crypto_generichash(h, sizeof h, reinterpret_cast<const unsigned char*>(original.data()),
                     original.size(), key.bytes.data(), key.bytes.size());
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(h), sizeof h));
}

absl::StatusOr<std::unique_ptr<FileOriginalsArchive>> FileOriginalsArchive::Open(
    const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  ::chmod(dir.c_str(), 0700);
  return std::unique_ptr<FileOriginalsArchive>(new FileOriginalsArchive(dir));
}

absl::Status FileOriginalsArchive::Put(const std::string& id, std::string_view sealed) {
  if (!ValidId(id)) return absl::InvalidArgumentError(absl::StrCat("bad archive id '", id, "'"));
  // Write to a temp name then rename, so a reader never sees half a file.
  std::string tmp = absl::StrCat(dir_, "/.", id, ".tmp.", ::getpid());
  RETURN_IF_ERROR(WriteFile0600(tmp, sealed, /*exclusive=*/false));
  std::string final_path = absl::StrCat(dir_, "/", id);
  if (std::rename(tmp.c_str(), final_path.c_str()) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot rename into ", final_path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> FileOriginalsArchive::Get(const std::string& id) const {
  if (!ValidId(id)) return absl::InvalidArgumentError(absl::StrCat("bad archive id '", id, "'"));
  std::ifstream in(absl::StrCat(dir_, "/", id), std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("no archived original with id ", id));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::StatusOr<std::vector<std::string>> FileOriginalsArchive::List() const {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
    std::string name = e.path().filename().string();
    if (ValidId(name)) ids.push_back(name);
  }
  if (ec) return absl::InternalError(absl::StrCat("cannot list ", dir_, ": ", ec.message()));
  std::sort(ids.begin(), ids.end());
  return ids;
}

ArchivingScrubber::ArchivingScrubber(std::shared_ptr<const RuleScrubber> inner, ArchiveKey key,
                                     std::shared_ptr<OriginalsArchive> archive)
    : inner_(std::move(inner)), key_(key), archive_(std::move(archive)) {}

std::optional<std::string> ArchivingScrubber::Archivable(std::string_view text) const {
  if (!ContainsPrivate(text)) return std::string(text);
  // Private spans never reach the archive: the original is kept with them withheld, and only if
  // a secret remains outside them (one inside a span has no original to keep).
  std::string kept = WithholdPrivate(text);
  if (inner_->Scrub(kept) == kept) return std::nullopt;
  return kept;
}

absl::StatusOr<ArchivingScrubber::Result> ArchivingScrubber::ScrubAndArchive(
    std::string_view text) const {
  Result r;
  r.text = inner_->Scrub(text);
  if (r.text == text) return r;
  std::optional<std::string> original = Archivable(text);
  if (!original) return r;
  r.archive_id = ArchiveIdFor(key_, *original);
  RETURN_IF_ERROR(archive_->Put(r.archive_id, SealOriginal(key_, *original, r.archive_id)));
  return r;
}

std::string ArchivingScrubber::Scrub(std::string_view text) const {
  std::string redacted = inner_->Scrub(text);
  if (redacted != text) {
    if (std::optional<std::string> original = Archivable(text)) {
      std::string id = ArchiveIdFor(key_, *original);
      if (!archive_->Put(id, SealOriginal(key_, *original, id)).ok()) failures_.fetch_add(1);
    }
  }
  return redacted;
}

uint64_t ArchivingScrubber::archive_failures() const { return failures_.load(); }

absl::StatusOr<std::string> RevealOriginal(const OriginalsArchive& archive,
                                           const std::string& key_file, const std::string& id) {
  ASSIGN_OR_RETURN(ArchiveKey key, LoadArchiveKey(key_file));
  ASSIGN_OR_RETURN(std::string sealed, archive.Get(id));
  return OpenOriginal(key, sealed, id);
}

}  // namespace contextd::scrub
