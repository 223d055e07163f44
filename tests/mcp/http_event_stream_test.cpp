// The event-stream writer on its own, with no socket: how a message is framed
// as one server-sent event whatever it holds, the events' ids, and the order
// of the writes.

#include "mcp/http_event_stream.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using rawtool::mcp::detail::EventStream;
using rawtool::mcp::detail::frame_event;
using Piece = EventStream::Piece;

struct Event {
  std::string type;
  std::string data;
  std::string id;
};

// A client's reading of a stream (the HTML standard's event-stream
// interpretation): lines end at CRLF, CR or LF; an empty line dispatches.
std::vector<Event> read_events(std::string_view stream) {
  std::vector<Event> events;
  std::string type;
  std::string data;
  std::string id;
  while (!stream.empty()) {
    const auto end = stream.find_first_of("\r\n");
    const std::string_view line = stream.substr(0, end);
    if (end == std::string_view::npos) break;  // an unterminated line is never dispatched
    stream.remove_prefix(end + (stream[end] == '\r' && end + 1 < stream.size() && stream[end + 1] == '\n' ? 2 : 1));
    if (line.empty()) {
      if (!data.empty()) {
        data.pop_back();
        events.push_back({type.empty() ? "message" : type, data, id});
      }
      type.clear();
      data.clear();
      continue;
    }
    if (line.front() == ':') continue;
    const auto colon = line.find(':');
    const std::string_view field = line.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (field == "event") type = value;
    if (field == "data") data.append(value).push_back('\n');
    if (field == "id" && value.find('\0') == std::string_view::npos) id = value;
  }
  return events;
}

// What a client's data is for `text`: each line break read as LF.
std::string with_lf_breaks(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

// A writer that records each piece and completes it only when told.
struct Recorder {
  std::vector<std::pair<Piece, std::string>> pieces;
  std::vector<EventStream::Written> pending;
  std::size_t most_pending = 0;

  EventStream::Write write() {
    return [this](Piece piece, std::string bytes, EventStream::Written written) {
      pieces.emplace_back(piece, std::move(bytes));
      pending.push_back(std::move(written));
      most_pending = std::max(most_pending, pending.size());
    };
  }
  void complete(bool ok = true) {
    REQUIRE(!pending.empty());
    auto written = std::move(pending.front());
    pending.erase(pending.begin());
    written(ok);
  }
};

}  // namespace

TEST_CASE("a message is read by a client as exactly one event whatever line breaks it holds", "[http][event-stream]") {
  using namespace std::string_literals;
  const std::vector<std::string> messages{
      R"({"jsonrpc":"2.0","id":1,"result":{}})",
      "a\nb",
      "a\rb",
      "a\r\nb",
      "a\n\nb",  // an empty line inside would end the event
      "a\r\rb",
      "a\n\r\nb",
      "\n",
      "\r",
      "trailing\n",
      "\nleading",
      "data: forged\n\nevent: other\ndata: second",
      ": a comment\nid: 7\nretry: 1",
      "nul\0inside"s,
  };
  for (const auto& message : messages) {
    CAPTURE(message);
    const auto events = read_events(frame_event(message));
    REQUIRE(events.size() == 1);
    CHECK(events.front().type == "message");
    CHECK(events.front().data == with_lf_breaks(message));
    CHECK(events.front().id.empty());
  }
}

TEST_CASE("an event's id cannot end its line or add a field", "[http][event-stream]") {
  using namespace std::string_literals;
  for (const std::string& id : {"7"s, "7\ndata: forged"s, "7\r\n\r\n"s, "7\r"s, "7\0"s}) {
    CAPTURE(id);
    const auto events = read_events(frame_event("x", id));
    REQUIRE(events.size() == 1);
    CHECK(events.front().data == "x");
    CHECK(events.front().id.find_first_of("\r\n"s + '\0') == std::string::npos);
    CHECK(events.front().id.front() == '7');
  }
}

TEST_CASE("an event stream writes its head first, then each event in order, one write at a time, then its end",
          "[http][event-stream]") {
  Recorder recorder;
  EventStream stream(recorder.write(), "s");
  CHECK_FALSE(stream.begun());
  stream.send("one", false);
  CHECK(stream.begun());
  stream.send("two", false);
  REQUIRE(recorder.pieces.size() == 1);  // only the head until it is written
  for (int i = 0; i < 4; ++i) recorder.complete();
  CHECK(recorder.pending.empty());  // waiting for the next message
  stream.send("three", true);
  recorder.complete();
  recorder.complete();
  stream.send("after the last", false);

  const std::vector<std::pair<Piece, std::string>> expected{
      {Piece::head, ""},
      {Piece::event, frame_event("", "s-0")},
      {Piece::event, frame_event("one", "s-1")},
      {Piece::event, frame_event("two", "s-2")},
      {Piece::event, frame_event("three", "s-3")},
      {Piece::end, ""},
  };
  CHECK(recorder.pieces == expected);
  CHECK(recorder.pending.empty());
  CHECK(recorder.most_pending == 1);
}

TEST_CASE("an event stream whose last message is empty ends without an event", "[http][event-stream]") {
  Recorder recorder;
  EventStream stream(recorder.write(), "s");
  stream.send("progress", false);
  for (int i = 0; i < 3; ++i) recorder.complete();
  stream.send("", true);
  recorder.complete();
  const std::vector<std::pair<Piece, std::string>> expected{{Piece::head, ""},
                                                            {Piece::event, frame_event("", "s-0")},
                                                            {Piece::event, frame_event("progress", "s-1")},
                                                            {Piece::end, ""}};
  CHECK(recorder.pieces == expected);
}

TEST_CASE("a client reads a priming event first, then every message with an id no other stream's event has",
          "[http][event-stream]") {
  std::string bytes;
  std::vector<std::string> ids;
  for (const char* id : {"a", "b"}) {
    EventStream stream(
        [&bytes](Piece, std::string piece, EventStream::Written written) {
          bytes += piece;
          written(true);
        },
        id);
    stream.send("one", false);
    stream.send("two", true);
    const auto events = read_events(bytes);
    REQUIRE(events.size() == 3);
    CHECK(events[0].data.empty());  // the priming event: an id and empty data
    CHECK(events[1].data == "one");
    CHECK(events[2].data == "two");
    for (const auto& event : events) {
      CHECK_FALSE(event.id.empty());
      ids.push_back(event.id);
    }
    bytes.clear();
  }
  std::sort(ids.begin(), ids.end());
  CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());
  CHECK(ids.size() == 6);
}

TEST_CASE("an event stream writes nothing more once a write failed", "[http][event-stream]") {
  for (const std::size_t failing : {std::size_t{0}, std::size_t{1}}) {  // the head, an event
    CAPTURE(failing);
    Recorder recorder;
    EventStream stream(recorder.write(), "s");
    stream.send("one", false);
    stream.send("two", false);
    for (std::size_t i = 0; i < failing; ++i) recorder.complete();
    recorder.complete(false);
    stream.send("three", true);
    CHECK(recorder.pieces.size() == failing + 1);
    CHECK(recorder.pending.empty());
  }
}

TEST_CASE("an event stream whose writes complete at once writes everything in order", "[http][event-stream]") {
  std::vector<Piece> pieces;
  EventStream stream(
      [&pieces](Piece piece, std::string, EventStream::Written written) {
        pieces.push_back(piece);
        written(true);
      },
      "s");
  stream.send("one", false);
  stream.send("two", true);
  CHECK(pieces == (std::vector<Piece>{Piece::head, Piece::event, Piece::event, Piece::event, Piece::end}));
}
