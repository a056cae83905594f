// NatsServer (tests only): a real `nats-server` child process owned by the test, on a free
// loopback port, with JetStream storage in a temporary directory; stopped (SIGTERM, then
// SIGKILL) and its directory removed when destroyed. Not thread-safe.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace contextd::events::testing {

class NatsServer {
 public:
  // The nats-server binary ($CONTEXTD_NATS_SERVER, else /usr/sbin or /usr/bin), or "" if absent.
  static std::string Binary() {
    if (const char* env = std::getenv("CONTEXTD_NATS_SERVER"); env != nullptr && *env != '\0') {
      return env;
    }
    for (const char* p :
         {"/usr/bin/nats-server", "/usr/sbin/nats-server", "/usr/local/bin/nats-server"}) {
      if (::access(p, X_OK) == 0) return p;
    }
    return "";
  }

  // Starts the server (JetStream on when `jetstream`); nullptr if it does not accept
  // connections within 10 s.
  static std::unique_ptr<NatsServer> Start(bool jetstream) {
    auto s = std::unique_ptr<NatsServer>(new NatsServer(jetstream));
    s->port_ = FreePort();
    char tmpl[] = "/tmp/contextd-nats-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return nullptr;
    s->dir_ = tmpl;
    if (!s->Launch()) return nullptr;
    return s;
  }

  ~NatsServer() {
    Kill();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string url() const { return "nats://127.0.0.1:" + std::to_string(port_); }
  uint16_t port() const { return port_; }

  // Stops the server (the store directory stays), as an outage would.
  void Kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 500; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = 0;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = 0;
  }

  // Starts it again on the same port and store. False if it does not come up.
  bool Restart() { return Launch(); }

 private:
  explicit NatsServer(bool jetstream) : jetstream_(jetstream) {}

  static uint16_t FreePort() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ::close(fd);
    return ntohs(a.sin_port);
  }

  bool Accepting() const {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port_);
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return ok;
  }

  bool Launch() {
    std::vector<std::string> args = {
        Binary(), "-a", "127.0.0.1", "-p", std::to_string(port_), "-l", dir_ + "/nats.log"};
    if (jetstream_) {
      args.insert(args.end(), {"-js", "-sd", dir_ + "/js"});
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    for (int i = 0; i < 1000; ++i) {
      if (Accepting()) return true;
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = 0;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  bool jetstream_;
  uint16_t port_ = 0;
  std::string dir_;
  pid_t pid_ = 0;
};

}  // namespace contextd::events::testing
