#pragma once

#include <rawtool/trusted.hpp>
#include <rawtool/untrusted.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace rawtool {

/// The database engine behind a reply.
enum class Engine { postgresql, sqlite };

/// "postgresql" or "sqlite".
constexpr std::string_view engine_name(Engine engine) noexcept {
  switch (engine) {
    case Engine::postgresql: return "postgresql";
    case Engine::sqlite: return "sqlite";
  }
  return "unknown";
}

/// A NOTICE, WARNING or other non-error message the engine sent while the
/// statement ran, in the order it arrived.
struct Notice {
  Untrusted severity;  ///< non-localized severity as sent (PostgreSQL's 'V' field)
  Untrusted sqlstate;  ///< as sent; the renderer checks its grammar
  Untrusted message;
  Untrusted detail;
  Untrusted hint;
  Untrusted context;
};

/// A failure's prose field, to name one the engine sent with no text.
enum class FailureField : std::uint8_t { message, detail, hint, context, internal_query, schema, table, column, datatype, constraint };

/// The database's complaint about the caller's statement, as structured fields
/// read from the protocol (PQresultErrorField, sqlite3_extended_errcode,
/// sqlite3_error_offset), never parsed out of a formatted message.
///
/// The codes (severity, sqlstate) are kept as the bytes that arrived: a plpgsql
/// RAISE can set them, so they are grammar-checked where they would be shown
/// in a line the renderer writes, and a value that fails its grammar makes the
/// renderer refuse rather than show it. An empty field was not sent, unless
/// `sent_empty` names it: then the engine sent it with no text.
struct Failure {
  Engine engine = Engine::postgresql;
  Untrusted severity;              ///< PostgreSQL: non-localized severity ('V'); SQLite: empty
  Untrusted sqlstate;              ///< PostgreSQL: the 5-character SQLSTATE; SQLite: empty
  std::optional<int> sqlite_code;  ///< SQLite: the extended result code
  Untrusted message;               ///< primary message
  Untrusted detail;
  Untrusted hint;
  Untrusted context;
  /// PostgreSQL: 1-based character position in the statement; SQLite: 0-based
  /// byte offset from sqlite3_error_offset (possibly inside a multi-byte character).
  std::optional<std::int64_t> position;
  Untrusted internal_query;
  std::optional<std::int64_t> internal_position;
  Untrusted schema;
  Untrusted table;
  Untrusted column;
  Untrusted datatype;
  Untrusted constraint;
  /// The prose fields above that the engine sent with no text (PostgreSQL's
  /// `RAISE EXCEPTION '' USING DETAIL = ''`, SQLite's `RAISE(ABORT, '')`),
  /// each at most once: an empty field named here is shown as present and
  /// empty, one not named here was not sent.
  std::vector<FailureField> sent_empty;
  std::vector<Notice> notices;  ///< raised before the failure, in order
  /// Notices the engine sent that were not kept because they would have passed
  /// the byte limit; counted so that nothing is dropped silently.
  std::uint64_t notices_withheld = 0;
  /// The caller's statement, when the surface is asked to show it; empty otherwise.
  Untrusted statement;
  /// Rows the statement sent before it failed (PostgreSQL can send rows and
  /// then an error; a SQLite statement can step rows and then fail). They are
  /// not kept, and they are counted so that none vanishes unmentioned.
  /// Empty when the count is not known: the statement failed inside a batch
  /// of rows that the server makes whole before it sends any (a PostgreSQL
  /// cursor's FETCH), so it may have made rows that nobody received. A count,
  /// when there is one, is exact; 0 means none were made.
  std::optional<std::uint64_t> rows_before_failure = 0;
  /// Set when the failure's text was too large to keep: its fields together
  /// passed the connection's byte limit (Limits::max_bytes). Then each field
  /// above holds at most its first failure_prefix_bytes bytes, for the
  /// operator's log only, and the renderer refuses the failure without showing
  /// any of it. Memory for a failure is bounded this way, whatever the
  /// statement raises.
  struct Withheld {
    std::uint64_t bytes = 0;  ///< the full size of the fields, summed
    /// Lower-case hex SHA-256 of the full fields, as render::withheld_sha256
    /// computes it for the same failure with no statement and no notices:
    /// each field as an 8-byte big-endian length followed by its bytes, in
    /// this order: severity, sqlstate, message, detail, hint, context,
    /// internal_query, schema, table, column, datatype, constraint, and an
    /// empty statement.
    std::string sha256;
  };
  std::optional<Withheld> withheld;
  /// How much of each field a withheld failure keeps.
  static constexpr std::size_t failure_prefix_bytes = 1024;
};

/// One column of a result.
struct Column {
  Untrusted name;
  Untrusted type_name;  ///< the engine's type name where known (it can be user-defined, so untrusted); empty if unknown
};

/// A cell: std::nullopt is SQL NULL, distinct from the empty value. bytea and
/// BLOB cells hold the raw bytes, not a textual encoding of them.
using Cell = std::optional<Untrusted>;

/// Why a result is incomplete.
enum class Truncation {
  none,      ///< every row the statement produced is here
  row_cap,   ///< reading stopped at the row cap
  byte_cap,  ///< reading stopped because the next row would pass the byte cap
};

/// "none", "row_cap" or "byte_cap".
constexpr std::string_view truncation_name(Truncation truncation) noexcept {
  switch (truncation) {
    case Truncation::none: return "none";
    case Truncation::row_cap: return "row_cap";
    case Truncation::byte_cap: return "byte_cap";
  }
  return "unknown";
}

/// A result set and what was left out of it. Nothing is left out silently:
/// when `truncation` is not `none`, `rows_withheld` counts the rows that were
/// read but not kept and `more_unread` says whether the engine may hold more
/// that were never read.
struct Rows {
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;
  Truncation truncation = Truncation::none;
  /// The limit that truncated the rows, as configured: Limits::max_rows for
  /// row_cap, Limits::max_bytes for byte_cap; 0 when not truncated.
  std::uint64_t cap = 0;
  std::uint64_t rows_withheld = 0;
  bool more_unread = false;
  /// Rows affected, for statements that report it (INSERT/UPDATE/DELETE in read-write mode).
  std::optional<std::uint64_t> rows_affected;
  /// What the byte cap counted for what was kept: cell and column-name data
  /// plus each row's and cell's overhead (Limits::max_bytes).
  std::uint64_t bytes = 0;
  /// NOTICEs and WARNINGs the statement raised while it ran and succeeded
  /// (RAISE NOTICE in a function, a server WARNING), in the order they arrived.
  std::vector<Notice> notices;
  /// Notices not kept because they would have passed the byte limit.
  std::uint64_t notices_withheld = 0;
};

/// Why the tool declined. The set is closed; the explanation beside it is text
/// the tool itself wrote.
enum class RefusalReason {
  empty_statement,       ///< nothing to run
  multiple_statements,   ///< more than one statement in one call
  read_only,             ///< the statement would write, or escape read-only mode
  not_permitted,         ///< denied by policy (authorizer, disabled path, ...)
  limit,                 ///< a configured limit (statement size, ...) was exceeded before running
  bad_header_field,      ///< a code that would sit in a trusted line failed its grammar
  render_budget,         ///< the rendering would exceed the render budget
  self_check_failed,     ///< the rendered text failed the renderer's own check
  cancelled,             ///< cancelled by the caller before or while running
  timeout,               ///< the time limit passed (engines without a SQLSTATE for it)
  internal,              ///< a broken invariant inside rawtool
};

/// The reason's stable name, e.g. "render_budget".
constexpr std::string_view refusal_reason_name(RefusalReason reason) noexcept {
  switch (reason) {
    case RefusalReason::empty_statement: return "empty_statement";
    case RefusalReason::multiple_statements: return "multiple_statements";
    case RefusalReason::read_only: return "read_only";
    case RefusalReason::not_permitted: return "not_permitted";
    case RefusalReason::limit: return "limit";
    case RefusalReason::bad_header_field: return "bad_header_field";
    case RefusalReason::render_budget: return "render_budget";
    case RefusalReason::self_check_failed: return "self_check_failed";
    case RefusalReason::cancelled: return "cancelled";
    case RefusalReason::timeout: return "timeout";
    case RefusalReason::internal: return "internal";
  }
  return "unknown";
}

/// The tool declined. `explanation` is rawtool's own words: Trusted, so that
/// no byte from outside can be put in it.
struct Refusal {
  Refusal() = default;
  Refusal(RefusalReason why, Literal words) : reason(why), explanation(words) {}
  Refusal(RefusalReason why, Trusted words) : reason(why), explanation(std::move(words)) {}

  RefusalReason reason = RefusalReason::internal;
  Trusted explanation;
};

/// Why no connection could be had, as rawtool tells it: a closed set, chosen
/// from what libpq and SQLite report as codes and states, never from their
/// words, so that an agent can be told the cause without the complaint.
enum class UnavailableCause {
  unknown,                ///< none of the below could be told apart
  refused,                ///< nothing accepted a connection at the address (refused, unreachable, no such host or socket)
  timed_out,              ///< the server did not answer within the connection's time
  authentication_failed,  ///< the server refused the credentials, or wanted a password none was given
  role_refused,           ///< the server refused the role: no such role, may not log in, or no pg_hba.conf entry
  no_such_database,       ///< the server has no database of that name
  server_unavailable,     ///< the server took no new connection: too many, or starting up or shutting down
  tls_failed,             ///< TLS was required and could not be set up
  connection_lost,        ///< the server closed the connection, during start-up or a call
  password_file,          ///< the password file could not be read
  file_missing,           ///< the SQLite database file does not exist
  file_unreadable,        ///< the SQLite database file could not be opened (permissions, a directory, ...)
  not_a_database,         ///< the SQLite file is not a database
};

/// The cause's stable name, e.g. "authentication_failed".
constexpr std::string_view unavailable_cause_name(UnavailableCause cause) noexcept {
  switch (cause) {
    case UnavailableCause::unknown: return "unknown";
    case UnavailableCause::refused: return "refused";
    case UnavailableCause::timed_out: return "timed_out";
    case UnavailableCause::authentication_failed: return "authentication_failed";
    case UnavailableCause::role_refused: return "role_refused";
    case UnavailableCause::no_such_database: return "no_such_database";
    case UnavailableCause::server_unavailable: return "server_unavailable";
    case UnavailableCause::tls_failed: return "tls_failed";
    case UnavailableCause::connection_lost: return "connection_lost";
    case UnavailableCause::password_file: return "password_file";
    case UnavailableCause::file_missing: return "file_missing";
    case UnavailableCause::file_unreadable: return "file_unreadable";
    case UnavailableCause::not_a_database: return "not_a_database";
  }
  return "unknown";
}

/// The cause in one clause of rawtool's words, what to check included:
/// "the server refused the password or the user name (authentication failed)".
constexpr Literal unavailable_cause_text(UnavailableCause cause) noexcept {
  switch (cause) {
    case UnavailableCause::unknown: return "the cause is not one rawtool tells apart";
    case UnavailableCause::refused:
      return "nothing accepted the connection: the server is down, or the host, port or socket is wrong or unreachable";
    case UnavailableCause::timed_out: return "the server did not answer in time (connect_timeout)";
    case UnavailableCause::authentication_failed:
      return "the server refused the credentials: a wrong password, or none was given where one is needed";
    case UnavailableCause::role_refused:
      return "the server refused the role: it does not exist, may not log in, or pg_hba.conf has no entry for it";
    case UnavailableCause::no_such_database: return "the server has no database of the configured name";
    case UnavailableCause::server_unavailable:
      return "the server took no new connection: it is at its connection limit, or starting up or shutting down";
    case UnavailableCause::tls_failed: return "TLS could not be set up: the server does not offer it, or its certificate did not verify";
    case UnavailableCause::connection_lost: return "the connection to the server broke";
    case UnavailableCause::password_file: return "rawtool could not read the configured password file";
    case UnavailableCause::file_missing: return "the database file does not exist";
    case UnavailableCause::file_unreadable: return "the database file could not be opened: check its permissions and that it is a file";
    case UnavailableCause::not_a_database: return "the file is not a SQLite database";
  }
  return "the database could not be reached";
}

/// The database could not be reached or the connection broke. The complaint
/// names hosts and users and is not the reply to the caller's statement: it is
/// for the operator log only, never for the caller; the cause may be told.
struct Unavailable {
  Untrusted complaint;
  UnavailableCause cause = UnavailableCause::unknown;
};

/// What executing a statement produced.
using Outcome = std::variant<Rows, Failure, Refusal, Unavailable>;

}  // namespace rawtool
