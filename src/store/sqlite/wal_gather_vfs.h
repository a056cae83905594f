// An SQLite VFS that gathers a transaction's WAL appends into one write (decision 0011).
//
// SQLite appends each WAL frame with two writes, its 24-byte header and then its page, so a
// commit that dirtied 10 pages costs 20 pwrite calls; at a durable branch pair's rate those
// syscalls were a fifth of the engine executor's time. This VFS wraps the default one. Database
// and journal files are the default VFS's own, untouched. A WAL file gets a buffer: appends
// (each write that continues where the last one ended) are gathered there and written in one
// call when the transaction's commit frame has been appended, so the commit is in the file (the
// OS page cache, as with every write under synchronous=NORMAL) before SQLite publishes it to
// other connections or returns from COMMIT. A write over frames already written (SQLite
// rewriting a page or a checksum) goes through at once, after the buffer. Everything else (a
// read, sync, truncate, size query, file control, close, 96 KiB gathered) writes the buffer out
// first, so the file never looks different to SQLite than with plain writes. A failed gathered
// write fails the write call that triggered it: the commit fails as it would have.
#pragma once

#include <cstdint>

namespace contextd::store {

// Registers the VFS on first use (thread-safe) and returns its name for sqlite3_open_v2.
// nullptr if SQLite has no default VFS to wrap (then open with the default).
const char* WalGatherVfsName();

// Process-wide counts, for tests and benchmarks: frames appended through WAL buffers, and the
// write calls made to the wrapped VFS to store them.
struct WalGatherStats {
  int64_t appends = 0;
  int64_t writes = 0;
};
WalGatherStats GetWalGatherStats();

}  // namespace contextd::store
