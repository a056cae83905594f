#include "cli/tokens_cli.h"

#include <iterator>
#include <string>

#include "absl/status/status.h"
#include "tokens/bpe_tokenizer.h"

namespace contextd::cli {

int RunTokensCommand(std::string_view encoding, bool ids, bool allow_special, std::istream& in,
                     std::ostream& out, std::ostream& err) {
  absl::StatusOr<const tokens::BpeTokenizer*> tokenizer = tokens::GetEncoding(encoding);
  if (!tokenizer.ok()) {
    err << "contextd tokens: " << tokenizer.status().message() << "\n";
    return tokenizer.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  std::string bytes;
  char buf[1 << 16];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    bytes.append(buf, static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) {
    err << "contextd tokens: cannot read input\n";
    return 1;
  }
  if (!ids) {
    out << (*tokenizer)->Count(bytes, allow_special) << "\n";
  } else {
    std::vector<uint32_t> encoded = (*tokenizer)->Encode(bytes, allow_special);
    std::string line;
    line.reserve(encoded.size() * 7 + 1);
    for (size_t i = 0; i < encoded.size(); ++i) {
      if (i > 0) line.push_back(' ');
      line += std::to_string(encoded[i]);
    }
    line.push_back('\n');
    out << line;
  }
  out.flush();
  if (!out) {
    err << "contextd tokens: cannot write output\n";
    return 1;
  }
  return 0;
}

}  // namespace contextd::cli
