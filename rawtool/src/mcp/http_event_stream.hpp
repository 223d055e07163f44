#pragma once

// The body of one text/event-stream answer (Streamable HTTP): each message is
// framed as one event, and the pieces — the response's head, the events, the
// end — are written in order, one write pending at a time. The writing itself
// is the caller's (a socket in the server, a recording in the tests).
//
// Every event carries an id, `<stream>-<n>`: the stream's own id and the
// event's place in it, so ids never repeat across streams (MCP 2025-11-25,
// "Resumability and Redelivery"). The first event, right after the head, is
// the priming event MCP asks for: an id and empty data. rawtool replays
// nothing: a client that comes back with Last-Event-ID is told by GET's 405
// that there is no stream to resume.

#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace rawtool::mcp::detail {

/// `data` as one server-sent event of type "message": one "data:" line per
/// line of `data` (split at CRLF, CR or LF, as a client splits them), then an
/// empty line; an `id` line first when `id` is given. Whatever `data` holds,
/// a client reads exactly one event whose data is `data` with each line break
/// as LF. An id is written without the characters that would end its line
/// (CR, LF) or make a client ignore it (NUL).
std::string frame_event(std::string_view data, std::optional<std::string_view> id = std::nullopt);

/// Not thread-safe: used on one strand. The `write` function outlives the
/// stream's last write.
class EventStream {
public:
  enum class Piece {
    head,   ///< the response's status line and headers
    event,  ///< one framed event
    end,    ///< the body's end
  };
  /// Called with true once the piece is written, false if it could not be.
  using Written = std::function<void(bool)>;
  /// Starts writing one piece (`bytes` is empty but for an event) and calls
  /// `written` once when it is done, from within or later.
  using Write = std::function<void(Piece piece, std::string bytes, Written written)>;

  /// `id` names this stream in its events' ids: unique among the streams a
  /// client may see, and without CR, LF or NUL.
  EventStream(Write write, std::string id) : write_(std::move(write)), id_(std::move(id)) {}
  EventStream(const EventStream&) = delete;
  EventStream& operator=(const EventStream&) = delete;

  /// Queues `message` as an event (none for an empty message) and writes what
  /// is queued. The head and the priming event go first; `last` ends the
  /// stream after this message. Nothing is written after the last message or
  /// a failed write.
  void send(std::string_view message, bool last);
  /// Whether anything was queued or written yet.
  [[nodiscard]] bool begun() const noexcept { return state_ != State::fresh || !queue_.empty(); }

private:
  enum class State {
    fresh,     ///< nothing written yet
    writing,   ///< one write pending
    waiting,   ///< the head and every queued event written; waiting for a message
    finished,  ///< the end written, or a write failed: nothing more is written
  };
  void flush();
  void after_event(bool ok, bool last);
  /// `data` framed as this stream's next event.
  std::string next_event(std::string_view data);

  Write write_;
  std::string id_;
  std::size_t events_ = 0;  // framed so far: the next event's number
  State state_ = State::fresh;
  bool last_queued_ = false;                        // nothing more is queued
  std::deque<std::pair<std::string, bool>> queue_;  // framed event ("" for none), last
};

}  // namespace rawtool::mcp::detail
