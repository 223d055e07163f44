#pragma once

namespace rawtool::detail {

/// The name of a VFS that wraps the process's default one and opens the
/// files that outlast a connection (the database, its rollback journal, its
/// -wal, a super-journal) only if they already exist: SQLite asks to create
/// them, the wrapper drops the request, so a missing file is SQLITE_CANTOPEN
/// instead of a new file. A -wal opens only when the database's -shm exists
/// too, since the shared-memory methods that open the -shm next would create
/// it. Temporary files (sorters, temp tables, statement journals) are created
/// as usual; SQLite deletes them on close. Registered on first use, never as
/// the default; thread-safe. Null when the process has no default VFS.
const char* no_create_vfs_name() noexcept;

}  // namespace rawtool::detail
