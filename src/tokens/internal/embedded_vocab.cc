// Embeds the rank files with the assembler's .incbin (GNU as and clang's integrated assembler).
// CMake passes their absolute paths and makes this object depend on them.
#include "tokens/internal/embedded_vocab.h"

#ifndef CONTEXTD_O200K_PATH
#error "CONTEXTD_O200K_PATH must name data/o200k_base.tiktoken"
#endif
#ifndef CONTEXTD_CL100K_PATH
#error "CONTEXTD_CL100K_PATH must name data/cl100k_base.tiktoken"
#endif

#define CONTEXTD_EMBED(sym, path)            \
  __asm__(                                   \
      ".pushsection .rodata\n"               \
      ".balign 16\n"                         \
      ".globl " #sym                         \
      "_begin\n"                             \
      ".hidden " #sym                        \
      "_begin\n"                             \
      ".type " #sym "_begin, @object\n" #sym \
      "_begin:\n"                            \
      ".incbin \"" path                      \
      "\"\n"                                 \
      ".globl " #sym                         \
      "_end\n"                               \
      ".hidden " #sym "_end\n" #sym          \
      "_end:\n"                              \
      ".byte 0\n"                            \
      ".popsection\n")

CONTEXTD_EMBED(contextd_tokens_o200k, CONTEXTD_O200K_PATH);
CONTEXTD_EMBED(contextd_tokens_cl100k, CONTEXTD_CL100K_PATH);

extern "C" {
__attribute__((visibility("hidden"))) extern const char contextd_tokens_o200k_begin[];
__attribute__((visibility("hidden"))) extern const char contextd_tokens_o200k_end[];
__attribute__((visibility("hidden"))) extern const char contextd_tokens_cl100k_begin[];
__attribute__((visibility("hidden"))) extern const char contextd_tokens_cl100k_end[];
}

namespace contextd::tokens::internal {

std::string_view EmbeddedO200kBase() {
  return std::string_view(contextd_tokens_o200k_begin,
                          contextd_tokens_o200k_end - contextd_tokens_o200k_begin);
}

std::string_view EmbeddedCl100kBase() {
  return std::string_view(contextd_tokens_cl100k_begin,
                          contextd_tokens_cl100k_end - contextd_tokens_cl100k_begin);
}

}  // namespace contextd::tokens::internal
