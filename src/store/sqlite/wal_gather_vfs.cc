#include "store/sqlite/wal_gather_vfs.h"

#include <sqlite3.h>

#include <atomic>
#include <new>
#include <string>

namespace contextd::store {
namespace {

// WAL file format (https://www.sqlite.org/fileformat.html#the_write_ahead_log): a 32-byte
// header, then frames of a 24-byte header and a page. A frame header's bytes 4-7 (big-endian)
// hold the database size after the commit for a commit frame, and 0 for any other frame.
constexpr int kWalHeaderBytes = 32;
constexpr int kFrameHeaderBytes = 24;
// The unix VFS stores at most 128 KiB - 1 per write call (it masks the length): gather less. One
// append is at most a 64 KiB page.
constexpr size_t kMaxGatheredBytes = 96 * 1024;

std::atomic<int64_t> g_appends{0};
std::atomic<int64_t> g_writes{0};

sqlite3_vfs* g_base = nullptr;
sqlite3_vfs g_vfs;

// A WAL file: this header, then the wrapped VFS's file. Other files are the wrapped VFS's file
// alone (placed at the start of the same allocation), with its own methods.
struct WalFile {
  sqlite3_file base;
  sqlite3_file* real;
  std::string* gathered;  // Bytes not yet written, starting at gathered_at.
  sqlite3_int64 gathered_at;
  sqlite3_int64 stream_end;  // Where the last write through this file ended.
  bool commit_header;  // The last write was a commit frame's header: its page ends the commit.
};

constexpr size_t kRealOffset = (sizeof(WalFile) + 15) / 16 * 16;

WalFile* Wal(sqlite3_file* f) { return reinterpret_cast<WalFile*>(f); }
sqlite3_file* Real(sqlite3_file* f) { return Wal(f)->real; }

// On failure the bytes stay gathered and the error goes to the caller: SQLite ignores the result
// of a few calls (a size hint), and must not go on believing bytes it was told were written are
// in the file; the next flush tries again, before any later write, so order is kept.
int Flush(WalFile* w) {
  if (w->gathered->empty()) return SQLITE_OK;
  g_writes.fetch_add(1, std::memory_order_relaxed);
  int rc = w->real->pMethods->xWrite(w->real, w->gathered->data(),
                                     static_cast<int>(w->gathered->size()), w->gathered_at);
  if (rc == SQLITE_OK) w->gathered->clear();
  return rc;
}

int WalClose(sqlite3_file* f) {
  WalFile* w = Wal(f);
  int rc = Flush(w);
  int rc_close = w->real->pMethods->xClose(w->real);
  delete w->gathered;
  w->gathered = nullptr;
  return rc != SQLITE_OK ? rc : rc_close;
}

int WalRead(sqlite3_file* f, void* out, int amount, sqlite3_int64 offset) {
  int rc = Flush(Wal(f));
  if (rc != SQLITE_OK) return rc;
  return Real(f)->pMethods->xRead(Real(f), out, amount, offset);
}

int WalWrite(sqlite3_file* f, const void* data, int amount, sqlite3_int64 offset) {
  WalFile* w = Wal(f);
  std::string& g = *w->gathered;
  // Which write ends a commit: the page after a commit frame's header, however either was
  // written.
  bool ends_commit = false;
  if (amount == kFrameHeaderBytes && offset >= kWalHeaderBytes) {
    const auto* h = static_cast<const unsigned char*>(data);
    w->commit_header = (h[4] | h[5] | h[6] | h[7]) != 0;
  } else {
    ends_commit = w->commit_header;
    w->commit_header = false;
  }
  // Gathered: the WAL header (a restart) and every write that continues where the last one
  // ended. Anything else writes over frames already written (SQLite overwriting a page of the
  // current transaction, or rewriting frame checksums after the commit frame), or starts a
  // transaction after such a write: it goes through at once, after what was gathered before it,
  // which may hold the frame being overwritten.
  bool continues = g.empty() ? (offset == w->stream_end || offset == 0)
                             : offset == w->gathered_at + static_cast<sqlite3_int64>(g.size());
  // Larger than the buffer (SQLite's writes are at most a 64 KiB page): through at once.
  if (static_cast<size_t>(amount) > kMaxGatheredBytes) continues = false;
  if (!g.empty() && (!continues || g.size() + static_cast<size_t>(amount) > kMaxGatheredBytes)) {
    int rc = Flush(w);
    if (rc != SQLITE_OK) return rc;
  }
  w->stream_end = offset + amount;
  if (!continues) {
    g_writes.fetch_add(1, std::memory_order_relaxed);
    return w->real->pMethods->xWrite(w->real, data, amount, offset);
  }
  if (g.empty()) w->gathered_at = offset;
  g.append(static_cast<const char*>(data), static_cast<size_t>(amount));
  if (amount == kFrameHeaderBytes && offset >= kWalHeaderBytes) {
    g_appends.fetch_add(1, std::memory_order_relaxed);
  }
  return ends_commit ? Flush(w) : SQLITE_OK;
}

int WalTruncate(sqlite3_file* f, sqlite3_int64 size) {
  int rc = Flush(Wal(f));
  if (rc != SQLITE_OK) return rc;
  return Real(f)->pMethods->xTruncate(Real(f), size);
}

int WalSync(sqlite3_file* f, int flags) {
  int rc = Flush(Wal(f));
  if (rc != SQLITE_OK) return rc;
  return Real(f)->pMethods->xSync(Real(f), flags);
}

int WalFileSize(sqlite3_file* f, sqlite3_int64* size) {
  int rc = Flush(Wal(f));
  if (rc != SQLITE_OK) return rc;
  return Real(f)->pMethods->xFileSize(Real(f), size);
}

int WalLock(sqlite3_file* f, int level) { return Real(f)->pMethods->xLock(Real(f), level); }
int WalUnlock(sqlite3_file* f, int level) { return Real(f)->pMethods->xUnlock(Real(f), level); }
int WalCheckReservedLock(sqlite3_file* f, int* out) {
  return Real(f)->pMethods->xCheckReservedLock(Real(f), out);
}
int WalFileControl(sqlite3_file* f, int op, void* arg) {
  int rc = Flush(Wal(f));
  if (rc != SQLITE_OK) return rc;
  return Real(f)->pMethods->xFileControl(Real(f), op, arg);
}
int WalSectorSize(sqlite3_file* f) { return Real(f)->pMethods->xSectorSize(Real(f)); }
int WalDeviceCharacteristics(sqlite3_file* f) {
  return Real(f)->pMethods->xDeviceCharacteristics(Real(f));
}
int WalShmMap(sqlite3_file* f, int region, int size, int extend, void volatile** out) {
  return Real(f)->pMethods->xShmMap(Real(f), region, size, extend, out);
}
int WalShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return Real(f)->pMethods->xShmLock(Real(f), offset, n, flags);
}
void WalShmBarrier(sqlite3_file* f) { Real(f)->pMethods->xShmBarrier(Real(f)); }
int WalShmUnmap(sqlite3_file* f, int delete_flag) {
  return Real(f)->pMethods->xShmUnmap(Real(f), delete_flag);
}
int WalFetch(sqlite3_file* f, sqlite3_int64 offset, int amount, void** out) {
  // Memory-mapped reads bypass xRead: write out first, as for a read.
  int rc = Flush(Wal(f));
  if (rc != SQLITE_OK) return rc;
  return Real(f)->pMethods->xFetch(Real(f), offset, amount, out);
}
int WalUnfetch(sqlite3_file* f, sqlite3_int64 offset, void* p) {
  return Real(f)->pMethods->xUnfetch(Real(f), offset, p);
}

// Version 3 methods; Open uses them only when the wrapped file's methods are version 3 too.
const sqlite3_io_methods kWalMethods = {
    3,
    WalClose,
    WalRead,
    WalWrite,
    WalTruncate,
    WalSync,
    WalFileSize,
    WalLock,
    WalUnlock,
    WalCheckReservedLock,
    WalFileControl,
    WalSectorSize,
    WalDeviceCharacteristics,
    WalShmMap,
    WalShmLock,
    WalShmBarrier,
    WalShmUnmap,
    WalFetch,
    WalUnfetch,
};

int Open(sqlite3_vfs* /*vfs*/, sqlite3_filename name, sqlite3_file* file, int flags,
         int* out_flags) {
  if ((flags & SQLITE_OPEN_WAL) == 0) return g_base->xOpen(g_base, name, file, flags, out_flags);
  WalFile* w = Wal(file);
  w->base.pMethods = nullptr;  // SQLite closes only files whose pMethods is set.
  w->gathered = nullptr;
  w->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(file) + kRealOffset);
  int rc = g_base->xOpen(g_base, name, w->real, flags, out_flags);
  if (rc != SQLITE_OK) return rc;
  if (w->real->pMethods == nullptr || w->real->pMethods->iVersion < 3) {
    // A base VFS whose files this one does not know how to wrap: hand SQLite a plain file.
    if (w->real->pMethods != nullptr) w->real->pMethods->xClose(w->real);
    return g_base->xOpen(g_base, name, file, flags, out_flags);
  }
  // Reserved once: an append never exceeds kMaxGatheredBytes, so WalWrite never allocates (no
  // exception may cross SQLite's C frames).
  try {
    w->gathered = new std::string();
    w->gathered->reserve(kMaxGatheredBytes);
  } catch (const std::bad_alloc&) {
    delete w->gathered;
    w->gathered = nullptr;
    w->real->pMethods->xClose(w->real);
    return SQLITE_NOMEM;
  }
  w->gathered_at = 0;
  w->stream_end = -1;
  w->commit_header = false;
  w->base.pMethods = &kWalMethods;
  return rc;
}

const char* Register() {
  g_base = sqlite3_vfs_find(nullptr);
  if (g_base == nullptr) return nullptr;
  // The default VFS's functions keep their state in pAppData and read mxPathname, both copied:
  // only the name, the file size and xOpen differ.
  g_vfs = *g_base;
  g_vfs.pNext = nullptr;
  g_vfs.zName = "contextd-wal-gather";
  g_vfs.szOsFile = static_cast<int>(kRealOffset) + g_base->szOsFile;
  g_vfs.xOpen = Open;
  if (sqlite3_vfs_register(&g_vfs, 0) != SQLITE_OK) return nullptr;
  return g_vfs.zName;
}

}  // namespace

const char* WalGatherVfsName() {
  static const char* name = Register();
  return name;
}

WalGatherStats GetWalGatherStats() {
  return {g_appends.load(std::memory_order_relaxed), g_writes.load(std::memory_order_relaxed)};
}

}  // namespace contextd::store
