// Test helpers for the store's tests (test-only; not thread-safe): a fresh temporary directory,
// files at an older schema version, and a child process that acknowledges through a pipe.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>

#include "store/sqlite/migrations.h"

namespace contextd::store {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "contextd_store_XXXXXX").string();
    char* made = mkdtemp(tmpl.data());
    path_ = made != nullptr ? made : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// SQL that makes a new file what a contextd with migrations 1 to `version` left: the schema and
// its schema_version rows.
inline std::string SchemaUpTo(int version) {
  std::string sql =
      "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
      "applied_at_ms INTEGER NOT NULL);";
  for (const Migration& m : Migrations()) {
    if (m.version > version) break;
    sql += m.sql;
    sql += "INSERT INTO schema_version VALUES (" + std::to_string(m.version) + ", '" + m.name +
           "', 0);";
  }
  return sql;
}

// Runs `sql` on a plain connection to `path` (default VFS, no migrations); fails the test on
// error.
inline void RawExec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  std::string message = err != nullptr ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

// What a child process run by RunInChild wrote to its acknowledgement pipe, and how it ended.
struct ChildRun {
  std::string acks;
  int wstatus = 0;
  bool ran = false;  // false: fork or pipe failed
};

// Forks; the child runs `body` with the write end of a pipe (it acknowledges what it did by
// writing to it, and usually ends with raise(SIGKILL) or _exit), then _exit(0). The parent
// reads everything written until the child is gone and waits for it.
inline ChildRun RunInChild(const std::function<void(int ack_fd)>& body) {
  ChildRun run;
  int fds[2];
  if (pipe(fds) != 0) return run;
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return run;
  }
  if (pid == 0) {
    close(fds[0]);
    body(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  char buf[256];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) run.acks.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  run.ran = waitpid(pid, &run.wstatus, 0) == pid;
  return run;
}

// Success if the child ran and ended killed by SIGKILL (ASSERT_TRUE(KilledBySigkill(child))).
inline ::testing::AssertionResult KilledBySigkill(const ChildRun& run) {
  if (!run.ran) return ::testing::AssertionFailure() << "fork or pipe failed";
  if (WIFEXITED(run.wstatus)) {
    return ::testing::AssertionFailure() << "the child exited with " << WEXITSTATUS(run.wstatus);
  }
  if (!WIFSIGNALED(run.wstatus) || WTERMSIG(run.wstatus) != SIGKILL) {
    return ::testing::AssertionFailure() << "the child ended with status " << run.wstatus;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace contextd::store
