// Round trips under a deadline, and the bounded cancel requests. See
// detail/postgres_round_trip.hpp.
#include "detail/postgres_round_trip.hpp"

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <thread>

namespace rawtool::detail {
namespace {

/// Cancel requests the process has in flight, every owner's: counted and
/// checked in one step (see CancelRequests::start).
std::atomic<int> process_cancels{0};

/// A cancel for a round trip given up: its connection is never read again,
/// so nothing waits for the request to land.
void request_cancel(PGconn* conn) {
  static const std::shared_ptr<CancelRequests> requests = std::make_shared<CancelRequests>();
  requests->start(std::shared_ptr<PGcancel>(PQgetCancel(conn), &PQfreeCancel));
}

}  // namespace

Ready wait_socket(PGconn* conn, short events, SteadyClock::time_point until) {
  const int fd = PQsocket(conn);
  if (fd < 0) return Ready::broken;
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - SteadyClock::now()).count();
    if (left <= 0) return Ready::timeout;
    pollfd socket{fd, events, 0};
    const int ready = poll(&socket, 1, static_cast<int>(std::min<long long>(left, INT_MAX)));
    if (ready < 0 && errno != EINTR) return Ready::broken;
    if (ready <= 0) continue;
    if ((events & POLLIN) == 0) return Ready::yes;
    return PQconsumeInput(conn) == 1 ? Ready::yes : Ready::broken;
  }
}

Result round_trip(PGconn* conn, const Command& command, SteadyClock::time_point deadline) {
  if (conn == nullptr || PQstatus(conn) != CONNECTION_OK || PQpipelineStatus(conn) != PQ_PIPELINE_OFF ||
      PQtransactionStatus(conn) == PQTRANS_ACTIVE) {
    return nullptr;
  }
  // Non-blocking, so that a send the server does not take waits here, under
  // the deadline, rather than inside libpq.
  if (PQsetnonblocking(conn, 1) != 0) return nullptr;

  const int types = static_cast<int>(command.types.size());
  const Oid* type_data = command.types.empty() ? nullptr : command.types.data();
  int sent = 0;
  if (command.describe != nullptr) {
    sent = PQsendDescribePrepared(conn, command.describe);
  } else if (command.prepare != nullptr) {
    sent = PQsendPrepare(conn, command.prepare, command.text, types, type_data);
  } else if (!command.values.empty() || command.one_statement) {
    sent = PQsendQueryParams(conn, command.text, static_cast<int>(command.values.size()), type_data,
                             command.values.data(), nullptr, nullptr, 0);
  } else {
    sent = PQsendQuery(conn, command.text);
  }
  if (sent != 1) return nullptr;

  const auto give_up = [conn] {
    request_cancel(conn);
    return nullptr;
  };
  // While the query is being sent the server may answer (a notice, an early
  // error): what arrives is read, so that neither side waits on the other.
  for (int left = PQflush(conn); left != 0; left = PQflush(conn)) {
    if (left < 0) return nullptr;
    const Ready ready = wait_socket(conn, POLLIN | POLLOUT, deadline);
    if (ready == Ready::timeout) return give_up();
    if (ready == Ready::broken) return nullptr;
  }
  Result kept;
  for (;;) {
    while (PQisBusy(conn) == 1) {
      const Ready ready = wait_socket(conn, POLLIN, deadline);
      if (ready == Ready::timeout) return give_up();
      if (ready == Ready::broken) return nullptr;
    }
    Result next(PQgetResult(conn));
    if (next == nullptr) return kept;
    // As PQexec: the first failure stands; otherwise the last result.
    if (kept == nullptr || PQresultStatus(kept.get()) != PGRES_FATAL_ERROR) kept = std::move(next);
    if (PQstatus(conn) == CONNECTION_BAD) return kept;
  }
}

bool gave_up(PGconn* conn) {
  return conn != nullptr && PQstatus(conn) == CONNECTION_OK && PQpipelineStatus(conn) == PQ_PIPELINE_OFF &&
         PQtransactionStatus(conn) == PQTRANS_ACTIVE;
}

bool CancelRequests::start(std::shared_ptr<PGcancel> canceller) noexcept {
  if (canceller == nullptr) return false;
  // Counted and checked in one step, so that a burst cannot pass the bound.
  for (int running = process_cancels.load(); ;) {
    if (running >= max_cancel_threads) return false;
    if (process_cancels.compare_exchange_weak(running, running + 1)) break;
  }
  {
    std::lock_guard lock(mutex_);
    ++in_flight_;
  }
  try {
    std::thread([self = shared_from_this(), canceller = std::move(canceller)] {
      char complaint[256];
      PQcancel(canceller.get(), complaint, sizeof complaint);
      {
        std::lock_guard lock(self->mutex_);
        --self->in_flight_;
        self->landed_.notify_all();
      }
      process_cancels.fetch_sub(1);
    }).detach();
    return true;
  } catch (...) {
    // No thread to be had: the deadline still ends the call.
    {
      std::lock_guard lock(mutex_);
      --in_flight_;
    }
    process_cancels.fetch_sub(1);
    return false;
  }
}

bool CancelRequests::settle(std::chrono::milliseconds patience) {
  std::unique_lock lock(mutex_);
  return landed_.wait_for(lock, patience, [this] { return in_flight_ == 0; });
}

}  // namespace rawtool::detail
