// contextd-conformance: the test binary, contextd plus `serve --conformance-fixtures` (the tools,
// resources and prompts of the MCP conformance suite). Built only with the tests; never shipped.
#include "cli/contextd_main.h"
#include "tools/testing/conformance_fixtures.h"

int main(int argc, char** argv) {
  return contextd::cli::RunContextd(argc, argv,
                                    contextd::tools::testing::RegisterConformanceFixtures);
}
