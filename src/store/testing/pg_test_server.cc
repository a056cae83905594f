#include "store/testing/pg_test_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace contextd::store::testing {
namespace {

namespace fs = std::filesystem;

// The directory holding initdb and postgres: $CONTEXTD_PG_BIN, else the newest
// /usr/lib/postgresql/<N>/bin.
std::string FindBinDir() {
  if (const char* env = std::getenv("CONTEXTD_PG_BIN"); env != nullptr && *env != '\0') {
    return env;
  }
  std::string best;
  int best_version = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    int v = std::atoi(entry.path().filename().c_str());
    if (v > best_version && fs::exists(entry.path() / "bin" / "postgres")) {
      best_version = v;
      best = (entry.path() / "bin").string();
    }
  }
  return best;
}

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

// Who the server runs as: ourselves, or `nobody` when we are root.
struct RunAs {
  bool switch_user = false;
  uid_t uid = 0;
  gid_t gid = 0;
};

absl::StatusOr<RunAs> PickUser() {
  RunAs r;
  if (geteuid() != 0) return r;
  passwd* pw = getpwnam("nobody");
  if (pw == nullptr) return absl::UnavailableError("running as root and there is no user 'nobody'");
  r.switch_user = true;
  r.uid = pw->pw_uid;
  r.gid = pw->pw_gid;
  return r;
}

// Forks and execs `argv` as `as`, stdout and stderr appended to `log`. The child gets SIGQUIT
// (postgres: immediate shutdown) if this thread dies, so a crashed test leaves no server behind.
pid_t Spawn(const std::vector<std::string>& argv, const RunAs& as, const std::string& log) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid != 0) return pid;
  int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (fd >= 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
  }
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, 0);
  if (as.switch_user &&
      (setgroups(0, nullptr) != 0 || setgid(as.gid) != 0 || setuid(as.uid) != 0)) {
    _exit(126);
  }
  prctl(PR_SET_PDEATHSIG, SIGQUIT);
  if (getppid() == 1) _exit(125);
  setenv("LC_ALL", "C", 1);
  execv(args[0], args.data());
  _exit(127);
}

std::string Tail(const std::string& path, size_t max_bytes = 1500) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  if (s.size() > max_bytes) s = "..." + s.substr(s.size() - max_bytes);
  return s;
}

std::mutex g_shared_mu;
std::unique_ptr<PgTestServer> g_shared;
std::string g_shared_error;
bool g_shared_tried = false;

}  // namespace

absl::StatusOr<std::unique_ptr<PgTestServer>> PgTestServer::Start() {
  std::unique_ptr<PgTestServer> s(new PgTestServer());
  s->bin_dir_ = FindBinDir();
  if (s->bin_dir_.empty() || !fs::exists(s->bin_dir_ + "/initdb")) {
    return absl::UnavailableError(
        "no PostgreSQL server binaries (install the Debian package `postgresql`, or set "
        "CONTEXTD_PG_BIN to the directory holding initdb and postgres)");
  }
  absl::Status st = s->Run();
  if (!st.ok()) return st;
  return s;
}

absl::Status PgTestServer::Run() {
  auto as = PickUser();
  if (!as.ok()) return as.status();
  std::string tmpl = (fs::temp_directory_path() / "contextd_pg_XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) return absl::UnavailableError("mkdtemp failed");
  dir_ = tmpl;
  if (as->switch_user && chown(dir_.c_str(), as->uid, as->gid) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot chown ", dir_, " to nobody"));
  }
  std::string log = dir_ + "/server.log";
  std::string data = dir_ + "/data";
  pid_t init = Spawn({bin_dir_ + "/initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E",
                      "UTF8", "--locale=C", "--no-sync", "--no-instructions"},
                     *as, log);
  int wstatus = 0;
  if (init < 0 || waitpid(init, &wstatus, 0) != init || !WIFEXITED(wstatus) ||
      WEXITSTATUS(wstatus) != 0) {
    return absl::UnavailableError(absl::StrCat("initdb failed (", bin_dir_, "): ", Tail(log)));
  }
  // A free port can be taken between FreePort and postgres' bind: try a few.
  for (int attempt = 0; attempt < 3; ++attempt) {
    port_ = FreePort();
    pid_ = Spawn({bin_dir_ + "/postgres",
                  "-D",
                  data,
                  "-p",
                  std::to_string(port_),
                  "-k",
                  dir_,
                  "-c",
                  "listen_addresses=127.0.0.1",
                  "-c",
                  "fsync=off",
                  "-c",
                  "synchronous_commit=off",
                  "-c",
                  "full_page_writes=off",
                  "-c",
                  "max_connections=100",
                  "-c",
                  "shared_buffers=32MB",
                  "-c",
                  "log_min_messages=warning"},
                 *as, log);
    if (pid_ < 0) return absl::UnavailableError("fork failed");
    std::string ping = Conninfo("postgres") + " connect_timeout=2";
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      if (PQping(ping.c_str()) == PQPING_OK) return absl::OkStatus();
      if (waitpid(pid_, &wstatus, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      // Polling a starting process: there is nothing to wait on but its socket.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  return absl::UnavailableError(absl::StrCat("postgres did not start: ", Tail(log)));
}

PgTestServer::~PgTestServer() {
  if (pid_ > 0) {
    kill(pid_, SIGINT);  // fast shutdown
    bool gone = false;
    for (int i = 0; i < 1000 && !gone; ++i) {
      gone = waitpid(pid_, nullptr, WNOHANG) == pid_;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!gone) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

PgTestServer* PgTestServer::Shared() {
  std::lock_guard<std::mutex> lock(g_shared_mu);
  if (!g_shared_tried) {
    g_shared_tried = true;
    auto s = Start();
    if (s.ok()) {
      g_shared = std::move(*s);
      std::atexit([] { g_shared.reset(); });
    } else {
      g_shared_error = std::string(s.status().message());
    }
  }
  return g_shared.get();
}

const std::string& PgTestServer::SharedError() { return g_shared_error; }

std::string PgTestServer::Conninfo(const std::string& dbname) const {
  return absl::StrCat("host=", dir_, " port=", port_, " user=postgres dbname=", dbname);
}

std::string PgTestServer::Url(const std::string& dbname) const {
  return absl::StrCat("postgresql://postgres@127.0.0.1:", port_, "/", dbname);
}

absl::Status PgTestServer::Admin(const std::string& sql) {
  PGconn* conn = PQconnectdb(Conninfo("postgres").c_str());
  absl::Status st;
  if (PQstatus(conn) != CONNECTION_OK) {
    st = absl::UnavailableError(PQerrorMessage(conn));
  } else {
    PGresult* r = PQexec(conn, sql.c_str());
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
      st = absl::InternalError(absl::StrCat(sql, ": ", PQresultErrorMessage(r)));
    }
    PQclear(r);
  }
  PQfinish(conn);
  return st;
}

absl::StatusOr<std::string> PgTestServer::CreateDatabase() {
  std::string name;
  {
    static std::mutex mu;
    std::lock_guard<std::mutex> lock(mu);
    name = absl::StrCat("t_", getpid(), "_", next_db_++);
  }
  absl::Status st = Admin(absl::StrCat("CREATE DATABASE ", name, " TEMPLATE template0"));
  if (!st.ok()) return st;
  return name;
}

absl::Status PgTestServer::TerminateBackends(const std::string& dbname) {
  return Admin(
      absl::StrCat("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '",
                   dbname, "' AND pid <> pg_backend_pid()"));
}

}  // namespace contextd::store::testing
