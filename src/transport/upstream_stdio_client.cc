#include "transport/upstream_stdio_client.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>

#include "base/internal_errors.h"
#include "base/logging.h"
#include "base/str_cat.h"
#include "transport/ndjson_framer.h"

extern char** environ;

namespace contextd::transport {
namespace {

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::string DescribeExit(int status) {
  if (WIFEXITED(status)) return base::StrCat("exited with status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return base::StrCat("killed by signal ", WTERMSIG(status));
  return "ended";
}

// Writes all of `data`; false on error.
bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<UpstreamStdioChannel>> UpstreamStdioChannel::Start(
    const UpstreamStdioOptions& options, UpstreamStdioCallbacks callbacks) {
  if (options.command.empty()) return absl::InvalidArgumentError("upstream command is empty");
  std::signal(SIGPIPE, SIG_IGN);

  // Everything the child needs is prepared before fork: after it only async-signal-safe calls.
  std::vector<std::string> argv_storage;
  argv_storage.push_back(options.command);
  for (const auto& a : options.args) argv_storage.push_back(a);
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::map<std::string, std::string> env_map;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env_map[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
  }
  for (const auto& [k, v] : options.env) env_map[k] = v;
  std::vector<std::string> env_storage;
  for (const auto& [k, v] : env_map) env_storage.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);

  int in_pipe[2], out_pipe[2], err_pipe[2], exec_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) return absl::UnavailableError("pipe failed");
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    ::close(in_pipe[0]);
    ::close(in_pipe[1]);
    return absl::UnavailableError("pipe failed");
  }
  if (::pipe2(err_pipe, O_CLOEXEC) != 0 || ::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1]}) ::close(fd);
    return absl::UnavailableError("pipe failed");
  }
  const char* cwd = options.cwd.empty() ? nullptr : options.cwd.c_str();
  pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1],
                   exec_pipe[0], exec_pipe[1]}) {
      ::close(fd);
    }
    return absl::UnavailableError(base::StrCat("fork failed: ", strerror(errno)));
  }
  if (pid == 0) {
    // Child. Its own process group, so that Close can kill whatever it spawns (npx -> node).
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);  // the server blocks SIGTERM in its threads
    ::signal(SIGPIPE, SIG_DFL);
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    // Nothing else of contextd's (listening sockets, the database) leaks into the upstream;
    // only the exec-status pipe stays open, and it closes on exec.
    unsigned keep = static_cast<unsigned>(exec_pipe[1]);
    if (keep > 3) ::close_range(3, keep - 1, 0);
    ::close_range(keep + 1, ~0U, 0);
    int err = 0;
    if (cwd != nullptr && ::chdir(cwd) != 0) {
      err = errno;
    } else {
      ::execvpe(argv[0], argv.data(), envp.data());
      err = errno;
    }
    ssize_t ignored = ::write(exec_pipe[1], &err, sizeof err);
    (void)ignored;
    ::_exit(127);
  }
  for (int fd : {in_pipe[0], out_pipe[1], err_pipe[1], exec_pipe[1]}) ::close(fd);
  // exec succeeded iff the close-on-exec pipe reaches EOF without an errno.
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(exec_pipe[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  ::close(exec_pipe[0]);
  if (n == sizeof child_errno) {
    for (int fd : {in_pipe[1], out_pipe[0], err_pipe[0]}) ::close(fd);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return absl::NotFoundError(
        base::StrCat("cannot start '", options.command, "': ", strerror(child_errno)));
  }

  std::unique_ptr<UpstreamStdioChannel> channel(new UpstreamStdioChannel());
  channel->options_ = options;
  channel->callbacks_ = std::move(callbacks);
  channel->pid_ = pid;
  channel->stdin_fd_ = in_pipe[1];
  channel->stdout_fd_ = out_pipe[0];
  channel->stderr_fd_ = err_pipe[0];
  UpstreamStdioChannel* self = channel.get();
  channel->stdout_thread_ =
      std::thread([self] { base::RunLoopCatching("upstream", [&] { self->ReadStdout(); }); });
  channel->stderr_thread_ =
      std::thread([self] { base::RunLoopCatching("upstream", [&] { self->ReadStderr(); }); });
  return channel;
}

UpstreamStdioChannel::~UpstreamStdioChannel() { Close(); }

absl::Status UpstreamStdioChannel::Send(std::string_view line) {
  std::lock_guard<std::mutex> lock(write_mu_);
  if (stdin_fd_ < 0) return absl::UnavailableError("upstream stdin is closed");
  std::string framed;
  framed.reserve(line.size() + 1);
  framed.append(line);
  framed.push_back('\n');
  if (!WriteAll(stdin_fd_, framed.data(), framed.size())) {
    return absl::UnavailableError(base::StrCat("write to upstream failed: ", strerror(errno)));
  }
  return absl::OkStatus();
}

void UpstreamStdioChannel::ReadStdout() {
  NdjsonFramer framer(options_.max_line_bytes);
  char buf[65536];
  auto handle = [this](const NdjsonFramer::Event& e) {
    if (e.kind == NdjsonFramer::Event::Kind::kTooLong) {
      base::LogWarn(base::StrCat("upstream ", options_.log_name, ": dropped a ", e.size,
                                 "+ byte line (limit ", options_.max_line_bytes, ")"));
      return;
    }
    if (callbacks_.on_line) callbacks_.on_line(std::string(e.line));
  };
  while (true) {
    ssize_t n = ::read(stdout_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    framer.Feed(std::string_view(buf, static_cast<size_t>(n)), handle);
  }
  framer.Finish(handle);
  std::string reason = Reap(false);
  if (callbacks_.on_closed) callbacks_.on_closed(std::move(reason));
}

void UpstreamStdioChannel::ReadStderr() {
  NdjsonFramer framer(16 << 10);
  char buf[8192];
  auto handle = [this](const NdjsonFramer::Event& e) {
    if (e.kind == NdjsonFramer::Event::Kind::kLine) {
      base::LogInfo(base::StrCat("upstream ", options_.log_name, " stderr: ", e.line));
    }
  };
  while (true) {
    ssize_t n = ::read(stderr_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    framer.Feed(std::string_view(buf, static_cast<size_t>(n)), handle);
  }
  framer.Finish(handle);
}

std::string UpstreamStdioChannel::Reap(bool block) {
  // After stdout EOF the child is usually gone or about to be: poll briefly, never forever.
  for (int i = 0; i < (block ? 1 : 50); ++i) {
    {
      std::lock_guard<std::mutex> lock(reap_mu_);
      if (reaped_) return exit_reason_;
      int status = 0;
      pid_t r = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
      if (r == pid_) {
        reaped_ = true;
        exit_reason_ = DescribeExit(status);
        return exit_reason_;
      }
      if (r < 0 && errno != EINTR) {
        reaped_ = true;
        exit_reason_ = "ended";
        return exit_reason_;
      }
    }
    if (!block) std::this_thread::sleep_for(std::chrono::milliseconds(4));
  }
  return "closed its stdout";
}

void UpstreamStdioChannel::Close(int grace_ms) {
  if (closed_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(write_mu_);
    CloseFd(stdin_fd_);
  }
  auto exited_within = [this](int ms) {
    for (int waited = 0; waited <= ms; waited += 5) {
      {
        std::lock_guard<std::mutex> lock(reap_mu_);
        if (reaped_) return true;
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
          reaped_ = true;
          exit_reason_ = DescribeExit(status);
          return true;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  };
  if (pid_ > 0 && !exited_within(grace_ms)) {
    ::kill(-pid_, SIGTERM);
    ::kill(pid_, SIGTERM);
    if (!exited_within(grace_ms)) {
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
      Reap(true);
    }
  }
  // Grandchildren (npx -> node) may still hold the pipes: end the whole group.
  if (pid_ > 0) ::kill(-pid_, SIGKILL);
  if (stdout_thread_.joinable()) stdout_thread_.join();
  if (stderr_thread_.joinable()) stderr_thread_.join();
  CloseFd(stdout_fd_);
  CloseFd(stderr_fd_);
}

}  // namespace contextd::transport
