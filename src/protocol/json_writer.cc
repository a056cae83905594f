#include "protocol/json_writer.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <string_view>

namespace contextd::protocol {
namespace {

// What a byte of a string needs: copied as is, escaped, or (a byte of a multi-byte sequence)
// checked as UTF-8.
enum ByteClass : uint8_t { kPlain = 0, kEscape = 1, kNonAscii = 2 };

constexpr std::array<uint8_t, 256> kClasses = [] {
  std::array<uint8_t, 256> c{};
  for (int b = 0; b < 0x20; ++b) c[b] = kEscape;
  c['"'] = kEscape;
  c['\\'] = kEscape;
  for (int b = 0x80; b < 0x100; ++b) c[b] = kNonAscii;
  return c;
}();

// Length of the well-formed UTF-8 sequence (Unicode table 3-7, the sequences nlohmann's decoder
// accepts) that starts at s[i], a byte >= 0x80; 0 if there is none.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto at = [&](size_t k) -> unsigned { return static_cast<unsigned char>(s[k]); };
  auto cont = [&](size_t k, unsigned lo, unsigned hi) {
    return k < s.size() && at(k) >= lo && at(k) <= hi;
  };
  const unsigned b = at(i);
  if (b >= 0xC2 && b <= 0xDF) return cont(i + 1, 0x80, 0xBF) ? 2 : 0;
  if (b >= 0xE0 && b <= 0xEF) {
    const unsigned lo = b == 0xE0 ? 0xA0 : 0x80;
    const unsigned hi = b == 0xED ? 0x9F : 0xBF;
    return cont(i + 1, lo, hi) && cont(i + 2, 0x80, 0xBF) ? 3 : 0;
  }
  if (b >= 0xF0 && b <= 0xF4) {
    const unsigned lo = b == 0xF0 ? 0x90 : 0x80;
    const unsigned hi = b == 0xF4 ? 0x8F : 0xBF;
    return cont(i + 1, lo, hi) && cont(i + 2, 0x80, 0xBF) && cont(i + 3, 0x80, 0xBF) ? 4 : 0;
  }
  return 0;
}

void AppendEscapedByte(std::string& out, unsigned char b) {
  switch (b) {
    case '"':
      out += "\\\"";
      return;
    case '\\':
      out += "\\\\";
      return;
    case '\b':
      out += "\\b";
      return;
    case '\f':
      out += "\\f";
      return;
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    default: {
      static constexpr char kHex[] = "0123456789abcdef";
      const char u[] = {'\\', 'u', '0', '0', kHex[b >> 4], kHex[b & 0xF]};
      out.append(u, sizeof(u));
    }
  }
}

// Appends `s` quoted and escaped. False, with `out` as it was, if `s` is not valid UTF-8.
bool AppendString(std::string& out, std::string_view s) {
  const size_t mark = out.size();
  out += '"';
  size_t run = 0;  // start of the bytes not yet appended
  size_t i = 0;
  while (i < s.size()) {
    const uint8_t cls = kClasses[static_cast<unsigned char>(s[i])];
    if (cls == kPlain) {
      ++i;
    } else if (cls == kNonAscii) {
      const size_t n = Utf8SequenceLength(s, i);
      if (n == 0) {
        out.resize(mark);
        return false;
      }
      i += n;
    } else {
      out.append(s.data() + run, i - run);
      AppendEscapedByte(out, static_cast<unsigned char>(s[i]));
      run = ++i;
    }
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
  return true;
}

void AppendWithNlohmann(std::string& out, const Json& value) {
  out += value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

template <typename Int>
void AppendInteger(std::string& out, Int v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  (void)ec;  // 24 bytes hold any 64-bit integer
  out.append(buf, end);
}

void Append(std::string& out, const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      out += "null";
      return;
    case Json::value_t::boolean:
      out += value.get_ref<const Json::boolean_t&>() ? "true" : "false";
      return;
    case Json::value_t::number_integer:
      AppendInteger(out, value.get_ref<const Json::number_integer_t&>());
      return;
    case Json::value_t::number_unsigned:
      AppendInteger(out, value.get_ref<const Json::number_unsigned_t&>());
      return;
    case Json::value_t::string:
      if (!AppendString(out, value.get_ref<const Json::string_t&>())) {
        AppendWithNlohmann(out, value);
      }
      return;
    case Json::value_t::array: {
      out += '[';
      bool first = true;
      for (const Json& item : value.get_ref<const Json::array_t&>()) {
        if (!first) out += ',';
        first = false;
        Append(out, item);
      }
      out += ']';
      return;
    }
    case Json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : value.get_ref<const Json::object_t&>()) {
        if (!first) out += ',';
        first = false;
        if (!AppendString(out, key)) AppendWithNlohmann(out, Json(key));
        out += ':';
        Append(out, item);
      }
      out += '}';
      return;
    }
    case Json::value_t::number_float:  // nlohmann's shortest round-trip format, and null for
    case Json::value_t::binary:        // NaN and infinities
    case Json::value_t::discarded:
      AppendWithNlohmann(out, value);
      return;
  }
  AppendWithNlohmann(out, value);
}

}  // namespace

void AppendCompactJson(std::string& out, const Json& value) { Append(out, value); }

}  // namespace contextd::protocol
