#pragma once

// The statements load and soak runs send: good, failing and hostile ones on
// both engines, each carrying its call's canary where the reply must carry it
// back, and the checks a reply must pass. No test framework inside: the
// checks return problems as text, so worker threads can use them.

#include "replies.hpp"

#include <string>
#include <vector>

namespace rawtool::reliability {

enum class Engine { sqlite, postgresql };

enum class CallKind {
  good_rows,        ///< a literal comes back as a cell
  hostile_rows,     ///< a literal with line breaks, forged markers, controls and bidi comes back exactly
  failure,          ///< the engine's complaint quotes the canary
  hostile_failure,  ///< the complaint quotes the canary beside forged lines
  read_only_write,  ///< a write on a read-only database: refused or failed, never done
  two_statements,   ///< refused (SQLite) or failed (PostgreSQL's extended protocol)
};

struct MixedCall {
  CallKind kind = CallKind::good_rows;
  std::string canary;
  std::string sql;
  /// good_rows / hostile_rows: the exact bytes of the first cell.
  std::string cell;
};

/// The `call`-th call of `client`: kinds rotate so every client mixes them all.
MixedCall make_call(Engine engine, unsigned client, unsigned call);

/// Every way `answer` is not the right reply to `call`, including carrying any
/// canary but its own; empty when it is right.
std::vector<std::string> problems_of(const MixedCall& call, const Answer& answer);

/// A statement name for reports.
const char* kind_name(CallKind kind);

}  // namespace rawtool::reliability
