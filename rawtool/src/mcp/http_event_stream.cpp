#include "mcp/http_event_stream.hpp"

namespace rawtool::mcp::detail {

namespace {

// Appends one field line per line of `value`: a client ends a line at CRLF,
// CR or LF, and joins a field's lines with LF.
void append_lines(std::string& out, std::string_view field, std::string_view value) {
  for (;;) {
    const auto end = value.find_first_of("\r\n");
    out.append(field).append(": ").append(value.substr(0, end)).push_back('\n');
    if (end == std::string_view::npos) return;
    const bool crlf = value[end] == '\r' && end + 1 < value.size() && value[end + 1] == '\n';
    value.remove_prefix(end + (crlf ? 2 : 1));
  }
}

}  // namespace

std::string frame_event(std::string_view data, std::optional<std::string_view> id) {
  std::string out;
  out.reserve(data.size() + 32);
  if (id) {
    std::string clean;
    for (const char c : *id) {
      if (c != '\r' && c != '\n' && c != '\0') clean.push_back(c);
    }
    out.append("id: ").append(clean).push_back('\n');
  }
  out.append("event: message\n");
  append_lines(out, "data", data);
  out.push_back('\n');
  return out;
}

void EventStream::send(std::string_view message, bool last) {
  if (last_queued_) return;
  if (!begun()) queue_.emplace_back(next_event(""), false);  // priming: an id, empty data
  last_queued_ = last;
  queue_.emplace_back(message.empty() ? std::string() : next_event(message), last);
  flush();
}

std::string EventStream::next_event(std::string_view data) {
  return frame_event(data, id_ + '-' + std::to_string(events_++));
}

void EventStream::flush() {
  if (state_ == State::writing || state_ == State::finished) return;
  if (state_ == State::fresh) {
    state_ = State::writing;
    write_(Piece::head, {}, [this](bool ok) {
      state_ = ok ? State::waiting : State::finished;
      flush();
    });
    return;
  }
  if (queue_.empty()) return;
  auto [text, last] = std::move(queue_.front());
  queue_.pop_front();
  state_ = State::writing;
  if (text.empty()) return after_event(true, last);
  write_(Piece::event, std::move(text), [this, last = last](bool ok) { after_event(ok, last); });
}

void EventStream::after_event(bool ok, bool last) {
  if (!ok) {
    state_ = State::finished;
    return;
  }
  if (!last) {
    state_ = State::waiting;
    return flush();
  }
  write_(Piece::end, {}, [this](bool) { state_ = State::finished; });
}

}  // namespace rawtool::mcp::detail
