#pragma once

// What `rawtool mcp` checks as it starts, on either transport: that it can
// use every configured database. A database it cannot use is logged as a
// warning, with the cause, and the server starts anyway: a database that is
// down now may be up by the first call, and the other databases still serve.

#include <rawtool/tool.hpp>

#include <thread>
#include <vector>

namespace rawtool::mcp::detail {

/// Logs a warning (event database_unusable) for each database `checks` found
/// it could not connect to: its label, the cause's name and words, and the
/// driver's complaint (which names hosts, users and paths: for the operator).
void warn_of_unusable(const OperatorLog& log, const std::vector<DatabaseCheck>& checks);

/// Checks every database once, off the thread that serves, so that neither
/// transport answers later for a database that does not answer. Nothing is
/// checked when the log would drop the warnings. The destructor ends a check
/// still under way (a connection being made ends within 100 ms) and waits for
/// it; a check ended so logs nothing.
class StartupCheck {
public:
  explicit StartupCheck(Tool& tool);
  /// The databases were checked already (Tool::inspect_databases): logs now.
  StartupCheck(const Tool& tool, const std::vector<DatabaseCheck>& checks);
  ~StartupCheck();
  StartupCheck(const StartupCheck&) = delete;
  StartupCheck& operator=(const StartupCheck&) = delete;

private:
  Cancellation cancellation_;
  std::thread thread_;
};

}  // namespace rawtool::mcp::detail
