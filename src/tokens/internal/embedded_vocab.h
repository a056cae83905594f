// The OpenAI rank files embedded in the binary at build time (src/tokens/data/, see its
// README.md for provenance). Read-only static data; thread-safe.
#pragma once

#include <string_view>

namespace contextd::tokens::internal {

// Contents of data/o200k_base.tiktoken.
std::string_view EmbeddedO200kBase();
// Contents of data/cl100k_base.tiktoken.
std::string_view EmbeddedCl100kBase();

}  // namespace contextd::tokens::internal
