// transport_echo_server: the contextd transports in front of the test-only echo engine, to
// measure the transports alone (the full binary is build/*/src/cli/contextd). Modes:
//   transport_echo_server --http [--port 0] [--io-threads 2] [--sync]   (prints the URL on stderr)
//   transport_echo_server --stdio [--sync]
// --sync answers inside Session::Receive instead of on a separate engine thread.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "transport/http_server.h"
#include "transport/stdio_transport.h"
#include "transport/testing/echo_session.h"

int main(int argc, char** argv) {
  bool http = false, stdio = false, sync = false;
  contextd::transport::HttpServerOptions opts;
  opts.port = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--http") {
      http = true;
    } else if (a == "--stdio") {
      stdio = true;
    } else if (a == "--sync") {
      sync = true;
    } else if (a == "--port" && i + 1 < argc) {
      opts.port = static_cast<uint16_t>(std::atoi(argv[++i]));
    } else if (a == "--io-threads" && i + 1 < argc) {
      opts.io_threads = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s --http [--port P] [--io-threads N] [--sync] | --stdio\n",
                   argv[0]);
      return 2;
    }
  }
  auto factory = std::make_shared<contextd::transport::testing::EchoSessionFactory>(!sync);
  if (stdio) {
    auto st = contextd::transport::ServeStdio(*factory, 0, 1);
    return st.ok() ? 0 : 1;
  }
  if (!http) return 2;
  auto server = contextd::transport::HttpServer::Start(opts, factory);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "listening on %s\n", (*server)->listen_url().c_str());
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  int sig = 0;
  sigwait(&set, &sig);
  (*server)->Stop();
  return 0;
}
