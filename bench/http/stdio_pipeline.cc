// stdio_pipeline: measures pipelined messages/s of an MCP stdio server. Spawns COMMAND with
// pipes, initializes, then writes --count requests (--method, default ping) without waiting and
// reads every answer; prints messages/s and a RESULT line.
//   stdio_pipeline [--count 200000] [--method ping] -- COMMAND [ARGS...]
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

bool WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Reads lines from `fd` until `want` lines arrived; returns how many did.
long ReadLines(int fd, long want, std::string* first) {
  std::vector<char> buf(1 << 16);
  long lines = 0;
  std::string head;
  while (lines < want) {
    ssize_t n = read(fd, buf.data(), buf.size());
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (first && lines == 0 && head.size() < 4096) head.push_back(buf[i]);
      if (buf[i] == '\n') ++lines;
    }
  }
  if (first) *first = head;
  return lines;
}

}  // namespace

int main(int argc, char** argv) {
  long count = 200000;
  std::string method = "ping";
  int cmd = -1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      cmd = i + 1;
      break;
    }
    if (std::strcmp(argv[i], "--count") == 0 && i + 1 < argc)
      count = std::atol(argv[++i]);
    else if (std::strcmp(argv[i], "--method") == 0 && i + 1 < argc)
      method = argv[++i];
  }
  if (cmd < 0 || cmd >= argc) {
    std::fprintf(stderr, "usage: stdio_pipeline [--count N] [--method M] -- COMMAND [ARGS]\n");
    return 2;
  }
  int to_child[2], from_child[2];
  if (pipe(to_child) != 0 || pipe(from_child) != 0) return 1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(to_child[0], 0);
    dup2(from_child[1], 1);
    close(to_child[1]);
    close(from_child[0]);
    execvp(argv[cmd], argv + cmd);
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  WriteAll(
      to_child[1],
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"stdio_pipeline","version":"1"}}})"
      "\n");
  std::string first;
  if (ReadLines(from_child[0], 1, &first) != 1) {
    std::fprintf(stderr, "no initialize answer\n");
    return 1;
  }
  WriteAll(to_child[1], R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
                        "\n");
  const auto start = std::chrono::steady_clock::now();
  std::thread writer([&] {
    std::string batch;
    for (long i = 1; i <= count; ++i) {
      batch += R"({"jsonrpc":"2.0","id":)" + std::to_string(i) + R"(,"method":")" + method +
               R"("})"
               "\n";
      if (batch.size() > (1 << 16)) {
        WriteAll(to_child[1], batch);
        batch.clear();
      }
    }
    WriteAll(to_child[1], batch);
  });
  long got = ReadLines(from_child[0], count, nullptr);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  writer.join();
  close(to_child[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  std::printf("stdio: %ld/%ld answers in %.3f s: %.0f messages/s, exit code %d\n", got, count, secs,
              got / secs, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  std::printf("RESULT label=stdio msgs_per_s=%.0f answered=%ld exit=%d\n", got / secs, got,
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return got == count ? 0 : 3;
}
