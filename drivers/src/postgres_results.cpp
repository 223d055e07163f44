// Reading a PostgreSQL statement's results as the pipeline brings them: one
// row at a time (single-row mode), under the call's deadline and its caller's
// cancel, converted to rawtool's values (rows under the caps, the database's
// failure, notices) as they come. Kept apart from the pipeline, which decides
// what is sent and in what order: everything here reads, and everything it
// learns goes into the call (postgres_pipeline.cpp says what a call sends).
#include "detail/postgres_driver.hpp"
#include "detail/row_budget.hpp"

#include <libpq-fe.h>

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>
#include <variant>
#include <vector>

#include <rawtool/crypto.hpp>

namespace rawtool::detail {
namespace {

using std::chrono::milliseconds;

constexpr Oid bytea_oid = 17;

Untrusted error_field(const PGresult* result, int field) { return text_of(PQresultErrorField(result, field)); }

std::optional<std::int64_t> position_field(const PGresult* result, int field) {
  const char* text = PQresultErrorField(result, field);
  if (text == nullptr) return std::nullopt;
  std::int64_t value = 0;
  const char* end = text + std::strlen(text);
  const auto [ptr, ec] = std::from_chars(text, end, value);
  if (ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

/// The length a bytea value's text form decodes to, without decoding it: the
/// byte cap is checked before anything is copied. Hex form ("\x" and two
/// digits a byte) or the escape form ("\\" and "\ooo" a byte each).
std::size_t bytea_length(const char* text, std::size_t length) {
  if (length >= 2 && text[0] == '\\' && text[1] == 'x') return (length - 2) / 2;
  std::size_t decoded = 0;
  for (std::size_t i = 0; i < length; ++decoded) {
    if (text[i] != '\\') {
      ++i;
    } else if (i + 1 < length && text[i + 1] == '\\') {
      i += 2;
    } else {
      i += 4;
    }
  }
  return decoded;
}

}  // namespace

void PostgresDriver::receive_notice(void* running, const PGresult* notice) {
  NoticeSink* collecting = running == nullptr ? nullptr : static_cast<Call*>(running)->collecting;
  if (collecting == nullptr) return;
  NoticeSink& sink = *collecting;
  constexpr int fields[] = {PG_DIAG_SEVERITY_NONLOCALIZED, PG_DIAG_SQLSTATE,     PG_DIAG_MESSAGE_PRIMARY,
                            PG_DIAG_MESSAGE_DETAIL,        PG_DIAG_MESSAGE_HINT, PG_DIAG_CONTEXT};
  // Sized before anything is copied, so that a loop of RAISE NOTICE costs a
  // count per notice past the budget, not memory.
  std::uint64_t size = 0;
  for (const int field : fields) {
    const char* text = PQresultErrorField(notice, field);
    if (text != nullptr) size += std::strlen(text);
  }
  if (sink.closed || size > sink.budget) {
    sink.closed = true;
    ++sink.withheld;
    return;
  }
  sink.budget -= size;
  sink.kept.push_back(Notice{error_field(notice, fields[0]), error_field(notice, fields[1]),
                             error_field(notice, fields[2]), error_field(notice, fields[3]),
                             error_field(notice, fields[4]), error_field(notice, fields[5])});
}

void PostgresDriver::send_cancel() noexcept {
  std::shared_ptr<PGcancel> canceller;
  {
    std::lock_guard lock(cancel_mutex_);
    canceller = canceller_;
  }
  if (canceller != nullptr) cancels_->start(std::move(canceller));
}

bool PostgresDriver::wait_for_input(Call& call) {
  for (;;) {
    const auto now = Clock::now();
    if (call.cancel_requested.load() && !call.cancel_sent) {
      // The caller's cancel has been sent (cancel()); a statement that ignores
      // it is given up after the grace, like one past its deadline.
      call.cancel_sent = true;
      call.deadline = std::min(call.deadline, now + client_grace);
    }
    if (now >= call.deadline) {
      if (call.cancel_sent) {
        call.stop = Stop::gave_up;
        return false;
      }
      send_cancel();
      call.cancel_sent = true;
      if (call.stop == Stop::none) call.stop = Stop::deadline_cancel;
      call.deadline = now + client_grace;
      continue;
    }
    // What the socket has not taken yet of the pipeline is pushed on here;
    // the server may need to be read from before it reads more.
    const int unsent = PQflush(conn_);
    if (unsent < 0) {
      call.stop = Stop::broken;
      return false;
    }
    const short events = unsent == 0 ? POLLIN : POLLIN | POLLOUT;
    // Woken at least every quarter second to see a cancel from the caller.
    switch (detail::wait_socket(conn_, events, std::min(call.deadline, now + milliseconds(250)))) {
      case detail::Ready::yes:
        return true;
      case detail::Ready::broken:
        call.stop = Stop::broken;
        return false;
      case detail::Ready::timeout:
        break;
    }
  }
}

Result PostgresDriver::next_result(Call& call) {
  if (call.stop == Stop::gave_up || call.stop == Stop::broken || call.stop == Stop::abandoned) return nullptr;
  while (PQisBusy(conn_) == 1) {
    if (!wait_for_input(call)) break;
  }
  if (call.stop == Stop::gave_up) return nullptr;
  Result result(PQgetResult(conn_));
  if (PQstatus(conn_) == CONNECTION_BAD) call.stop = Stop::broken;
  return result;
}

void PostgresDriver::discard_copy_out(Call& call) {
  send_cancel();
  for (;;) {
    char* buffer = nullptr;
    const int received = PQgetCopyData(conn_, &buffer, 1);
    if (buffer != nullptr) PQfreemem(buffer);
    if (received > 0) continue;
    if (received < 0) return;  // -1: the copy ended; -2: the connection failed (next_result sees it)
    if (!wait_for_input(call)) return;
  }
}

bool PostgresDriver::drain_query(Call& call) {
  bool ok = true;
  while (Result result = next_result(call)) {
    const ExecStatusType status = PQresultStatus(result.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) ok = false;
  }
  return ok && call.stop == Stop::none;
}

bool PostgresDriver::drain_queries(Call& call, int count) {
  bool ok = true;
  for (int i = 0; i < count; ++i) ok = drain_query(call) && ok;
  return ok;
}

bool PostgresDriver::expect_sync(Call& call) {
  Result result = next_result(call);
  return result != nullptr && PQresultStatus(result.get()) == PGRES_PIPELINE_SYNC;
}

Outcome PostgresDriver::error_outcome(Call& call, const PGresult* result) {
  if (sqlstate_is(result, "57014") && call.cancel_requested.load()) {
    return refuse(RefusalReason::cancelled, "The statement was cancelled.");
  }
  if (sqlstate_is(result, "57014") &&
      (call.stop == Stop::deadline_cancel || Clock::now() - call.started >= call.limits.statement_timeout)) {
    return refuse(RefusalReason::timeout,
                  Trusted::format("The statement ran past its time limit, statement_timeout_ms={} "
                                  "(limits.statement_timeout_ms), and was stopped.",
                                  call.limits.statement_timeout.count()));
  }
  std::uint64_t fields_bytes = 0;
  Failure failure = failure_of(result, call.limits, call.rows_seen, fields_bytes);
  call.largest_message = std::max(call.largest_message, fields_bytes);
  return failure;
}

bool PostgresDriver::read_commit(Call& call, Outcome& outcome) {
  // After the error, libpq ends the query with a null result before the Sync.
  for (int ends = 0; ends < 3;) {
    Result result = next_result(call);
    if (result == nullptr) {
      if (call.stop != Stop::none) return false;
      ++ends;
      continue;
    }
    const ExecStatusType status = PQresultStatus(result.get());
    if (status == PGRES_PIPELINE_SYNC) return true;
    if (status != PGRES_FATAL_ERROR) return false;
    if (std::holds_alternative<Rows>(outcome)) outcome = error_outcome(call, result.get());
  }
  return false;
}

namespace {

// libpq gives NULL for a field the server did not send and "" for one it sent
// with no text; the empty ones are named so that they are shown as present.
void note_sent_empty(const PGresult* result, Failure& failure) {
  constexpr std::pair<int, FailureField> prose[] = {
      {PG_DIAG_MESSAGE_PRIMARY, FailureField::message},       {PG_DIAG_MESSAGE_DETAIL, FailureField::detail},
      {PG_DIAG_MESSAGE_HINT, FailureField::hint},             {PG_DIAG_CONTEXT, FailureField::context},
      {PG_DIAG_INTERNAL_QUERY, FailureField::internal_query}, {PG_DIAG_SCHEMA_NAME, FailureField::schema},
      {PG_DIAG_TABLE_NAME, FailureField::table},              {PG_DIAG_COLUMN_NAME, FailureField::column},
      {PG_DIAG_DATATYPE_NAME, FailureField::datatype},        {PG_DIAG_CONSTRAINT_NAME, FailureField::constraint},
  };
  for (const auto& [code, field] : prose) {
    const char* text = PQresultErrorField(result, code);
    if (text != nullptr && *text == '\0') failure.sent_empty.push_back(field);
  }
}

}  // namespace

Failure failure_of(const PGresult* result, const Limits& limits, std::uint64_t rows_before_failure,
                   std::uint64_t& fields_bytes) {
  Failure failure;
  failure.engine = Engine::postgresql;
  failure.rows_before_failure = rows_before_failure;
  failure.position = position_field(result, PG_DIAG_STATEMENT_POSITION);
  failure.internal_position = position_field(result, PG_DIAG_INTERNAL_POSITION);
  // In the order of Failure::Withheld's digest.
  const std::pair<int, Untrusted Failure::*> fields[] = {
      {PG_DIAG_SEVERITY_NONLOCALIZED, &Failure::severity}, {PG_DIAG_SQLSTATE, &Failure::sqlstate},
      {PG_DIAG_MESSAGE_PRIMARY, &Failure::message},        {PG_DIAG_MESSAGE_DETAIL, &Failure::detail},
      {PG_DIAG_MESSAGE_HINT, &Failure::hint},              {PG_DIAG_CONTEXT, &Failure::context},
      {PG_DIAG_INTERNAL_QUERY, &Failure::internal_query},  {PG_DIAG_SCHEMA_NAME, &Failure::schema},
      {PG_DIAG_TABLE_NAME, &Failure::table},               {PG_DIAG_COLUMN_NAME, &Failure::column},
      {PG_DIAG_DATATYPE_NAME, &Failure::datatype},         {PG_DIAG_CONSTRAINT_NAME, &Failure::constraint},
  };
  std::uint64_t total = 0;
  for (const auto& [code, member] : fields) {
    const char* text = PQresultErrorField(result, code);
    if (text != nullptr) total += std::strlen(text);
  }
  fields_bytes = total;
  if (total <= limits.max_bytes) {
    for (const auto& [code, member] : fields) failure.*member = error_field(result, code);
    note_sent_empty(result, failure);
    return failure;
  }
  // Too large to keep: hashed where libpq holds it, and only a prefix of each
  // field copied, for the operator's log. The renderer refuses it.
  crypto::Sha256 digest;  // in the framing of Failure::Withheld
  for (const auto& [code, member] : fields) {
    const char* text = PQresultErrorField(result, code);
    const std::string_view field = text == nullptr ? std::string_view() : std::string_view(text);
    digest.update_field(field);
    failure.*member = Untrusted(field.substr(0, Failure::failure_prefix_bytes));
  }
  digest.update_field({});  // the statement, which the driver does not put in a failure
  failure.withheld = Failure::Withheld{total, digest.hex_digest()};
  return failure;
}

/// Reads the caller's statement's results: rows one at a time under the caps,
/// or its failure. Leaves the pipeline at the Sync that ends its segment.
Outcome PostgresDriver::read_statement(Call& call, bool bounded) {
  const Limits& limits = call.limits;
  PQsetSingleRowMode(conn_);
  detail::RowBudget budget(limits);
  std::vector<Oid>& oids = call.column_types;
  oids.clear();
  std::optional<Outcome> outcome;
  bool truncation_cancelled = false;

  const auto take_columns = [&](const PGresult* result) {
    const int count = PQnfields(result);
    std::vector<Column> columns(static_cast<std::size_t>(count));
    oids.resize(columns.size());
    for (int c = 0; c < count; ++c) {
      const char* name = PQfname(result, c);
      columns[static_cast<std::size_t>(c)].name = text_of(name);
      oids[static_cast<std::size_t>(c)] = PQftype(result, c);
    }
    budget.set_columns(std::move(columns));
  };

  while (Result result = next_result(call)) {
    const PGresult* r = result.get();
    switch (PQresultStatus(r)) {
      case PGRES_SINGLE_TUPLE: {
        if (!budget.has_columns() && budget.open()) take_columns(r);
        if (!budget.open()) {
          budget.offer(0);  // drained after the cap: counted, never kept
          report_rows_read(++call.rows_seen);
          break;
        }
        // The row is built first so the byte cap counts what would be kept
        // (bytea decoded, not its hex text). It is one row: bounded by what
        // libpq already holds.
        // Sized before anything is copied: a row the caps withhold costs no
        // copy, so memory stays at what libpq itself holds for one row.
        const int count = PQnfields(r);
        std::uint64_t row_bytes = 0;
        std::uint64_t message_bytes = 0;
        for (int c = 0; c < count; ++c) {
          if (PQgetisnull(r, 0, c) == 1) continue;
          const auto length = static_cast<std::size_t>(PQgetlength(r, 0, c));
          message_bytes += length;
          row_bytes += PQftype(r, c) == bytea_oid ? bytea_length(PQgetvalue(r, 0, c), length) : length;
        }
        call.largest_message = std::max(call.largest_message, message_bytes);
        report_rows_read(++call.rows_seen);
        if (budget.offer(row_bytes)) {
          std::vector<Cell> row(static_cast<std::size_t>(count));
          for (int c = 0; c < count; ++c) {
            if (PQgetisnull(r, 0, c) == 1) continue;
            const char* value = PQgetvalue(r, 0, c);
            const auto length = static_cast<std::size_t>(PQgetlength(r, 0, c));
            Cell& cell = row[static_cast<std::size_t>(c)];
            if (PQftype(r, c) == bytea_oid) {
              std::size_t decoded_length = 0;
              unsigned char* decoded = PQunescapeBytea(reinterpret_cast<const unsigned char*>(value), &decoded_length);
              if (decoded != nullptr) {
                cell = Untrusted(reinterpret_cast<const char*>(decoded), decoded_length);
                PQfreemem(decoded);
              }
            }
            if (!cell) cell = Untrusted(value, length);
          }
          budget.keep(std::move(row));
        } else if (!bounded || budget.truncation() == Truncation::byte_cap) {
          // The rest is not wanted: stop the server producing it, then drain
          // what is already on its way (counted as withheld, never kept). A
          // bounded FETCH past the row cap has nothing more on its way.
          send_cancel();
          truncation_cancelled = true;
        }
        break;
      }
      case PGRES_TUPLES_OK:
        if (!budget.has_columns()) take_columns(r);
        // A FETCH that filled its max_rows + 1 leaves the cursor open: more may follow.
        if (!bounded || call.rows_seen <= limits.max_rows) budget.reached_end();
        break;
      case PGRES_COMMAND_OK: {
        const char* affected = PQcmdTuples(result.get());
        std::uint64_t count = 0;
        const char* end = affected + std::strlen(affected);
        if (*affected != '\0' && std::from_chars(affected, end, count).ec == std::errc{}) budget.set_rows_affected(count);
        budget.reached_end();
        break;
      }
      case PGRES_EMPTY_QUERY:
        outcome = refuse(RefusalReason::empty_statement, "The statement is empty.");
        break;
      case PGRES_COPY_OUT:
      case PGRES_COPY_IN:
      case PGRES_COPY_BOTH:
        // COPY to or from the client has no place in a reply. A copy out is
        // cancelled and its data dropped. A copy in cannot be ended inside a
        // pipeline (libpq's CopyFail adds a Sync of its own), so the
        // connection is given up: closing it rolls the statement back.
        if (PQresultStatus(r) == PGRES_COPY_OUT) discard_copy_out(call);
        else call.stop = Stop::abandoned;
        outcome = refuse(RefusalReason::not_permitted, "COPY to or from the client is not supported.");
        break;
      case PGRES_FATAL_ERROR:
      case PGRES_NONFATAL_ERROR:
        if (truncation_cancelled && sqlstate_is(r, "57014")) {
          break;  // our own cancel after the cap: the rest stays unread
        }
        if (call.stop == Stop::broken || outcome.has_value()) break;  // the COPY already refused; this is its end
        outcome = error_outcome(call, r);
        // A FETCH is a utility statement: the server puts all its rows in a
        // store before it sends the first, so one that fails sends none of
        // the rows the statement made before it failed. Their number is not
        // known; a count of none would say the statement failed at its
        // first row. An exact count would take a FETCH per row.
        if (auto* failure = std::get_if<Failure>(&*outcome); failure != nullptr && bounded) failure->rows_before_failure.reset();
        break;
      case PGRES_PIPELINE_ABORTED:
        // The preamble failed, so the statement did not run.
        outcome = refuse(RefusalReason::internal, "The read-only transaction could not be started.");
        break;
      default:
        outcome = refuse(RefusalReason::internal, "The server sent a reply this tool does not understand.");
        break;
    }
  }
  if (outcome) return std::move(*outcome);
  return std::move(budget).take();
}

}  // namespace rawtool::detail
