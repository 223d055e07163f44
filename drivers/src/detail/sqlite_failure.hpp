#pragma once

#include <rawtool/outcome.hpp>

#include <sqlite3.h>

namespace rawtool::detail {

/// The complaint SQLite holds for `db`'s last failed call, copied out at once
/// into owned memory: the message, the extended result code and the error
/// offset. Call it before anything else touches the connection.
Failure sqlite_failure(sqlite3* db);

}  // namespace rawtool::detail
