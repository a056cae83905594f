#include "memory/memory_item.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "memory/internal/sv.h"

namespace contextd::memory {
namespace {

using internal::Sv;

template <typename E, size_t N>
absl::StatusOr<E> ParseName(std::string_view what, std::string_view name,
                            const char* const (&names)[N], const E (&values)[N]) {
  for (size_t i = 0; i < N; ++i) {
    if (name == names[i]) return values[i];
  }
  std::string accepted;
  for (size_t i = 0; i < N; ++i) absl::StrAppend(&accepted, i ? ", " : "", names[i]);
  return absl::InvalidArgumentError(
      absl::StrCat(Sv(what), " must be one of ", accepted, "; got \"", Sv(name), "\""));
}

absl::Status CheckText(std::string_view field, std::string_view text, size_t max_chars) {
  size_t n = Utf8Chars(text);
  if (n < 1 || n > max_chars || absl::StripAsciiWhitespace(Sv(text)).empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Sv(field), " must be 1-", max_chars, " characters and not blank, got ", n));
  }
  return absl::OkStatus();
}

}  // namespace

const char* OutcomeName(Outcome o) { return o == Outcome::kSuccess ? "success" : "failure"; }

const char* ScopeName(Scope s) {
  switch (s) {
    case Scope::kProject:
      return "project";
    case Scope::kTeam:
      return "team";
    case Scope::kOrg:
      return "org";
  }
  return "project";
}

const char* StatusName(Status s) {
  switch (s) {
    case Status::kPending:
      return "pending";
    case Status::kActive:
      return "active";
    case Status::kRetired:
      return "retired";
  }
  return "pending";
}

absl::StatusOr<Outcome> ParseOutcome(std::string_view name) {
  static const char* const kNames[] = {"success", "failure"};
  static const Outcome kValues[] = {Outcome::kSuccess, Outcome::kFailure};
  return ParseName("outcome", name, kNames, kValues);
}

absl::StatusOr<Scope> ParseScope(std::string_view name) {
  static const char* const kNames[] = {"project", "team", "org"};
  static const Scope kValues[] = {Scope::kProject, Scope::kTeam, Scope::kOrg};
  return ParseName("scope", name, kNames, kValues);
}

absl::StatusOr<Status> ParseStatus(std::string_view name) {
  static const char* const kNames[] = {"pending", "active", "retired"};
  static const Status kValues[] = {Status::kPending, Status::kActive, Status::kRetired};
  return ParseName("status", name, kNames, kValues);
}

double MemoryItem::Confidence() const {
  const double a = kPriorHelpful + static_cast<double>(helpful_count + success_count);
  const double b = kPriorUnhelpful + static_cast<double>(unhelpful_count + failure_count);
  return a / (a + b);
}

absl::Status ValidateFields(const MemoryItem& item) {
  if (absl::Status s = CheckText("title", item.title, kMaxTitleChars); !s.ok()) return s;
  if (absl::Status s = CheckText("description", item.description, kMaxDescriptionChars); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckText("content", item.content, kMaxContentChars); !s.ok()) return s;
  if (item.tags.size() > kMaxTags) {
    return absl::InvalidArgumentError(
        absl::StrCat("tags: at most ", kMaxTags, " tags, got ", item.tags.size()));
  }
  for (const std::string& tag : item.tags) {
    size_t n = Utf8Chars(tag);
    if (n < 1 || n > kMaxTagChars) {
      return absl::InvalidArgumentError(
          absl::StrCat("tags: each tag must be 1-", kMaxTagChars, " characters, got ", n));
    }
  }
  return absl::OkStatus();
}

std::string InjectionText(const MemoryItem& item) {
  return absl::StrCat(item.outcome == Outcome::kSuccess ? "[worked] " : "[avoid] ", item.title,
                      ": ", item.content);
}

size_t Utf8Chars(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string_view Utf8Head(std::string_view text, size_t max_chars) {
  size_t chars = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      if (chars == max_chars) return text.substr(0, i);
      ++chars;
    }
  }
  return text;
}

}  // namespace contextd::memory
