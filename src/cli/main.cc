// contextd: the production binary (src/cli/contextd_main.h has the command line).
#include "cli/contextd_main.h"

int main(int argc, char** argv) { return contextd::cli::RunContextd(argc, argv); }
