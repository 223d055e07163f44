#include "mcp/line_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <unistd.h>

namespace rawtool::mcp::detail {

LineReader::LineReader(int fd, std::size_t max_line_bytes, std::size_t chunk_bytes)
    : fd_(fd), max_line_bytes_(max_line_bytes), chunk_(std::max<std::size_t>(chunk_bytes, 1)) {}

bool LineReader::fill() {
  while (!eof_) {
    const ssize_t got = ::read(fd_, chunk_.data(), chunk_.size());
    if (got > 0) {
      begin_ = 0;
      end_ = static_cast<std::size_t>(got);
      return true;
    }
    if (got < 0 && errno == EINTR) continue;
    eof_ = true;  // end of input, or a descriptor that can no longer be read: both end the session
  }
  return false;
}

LineReader::Status LineReader::next(std::string& line) {
  line.clear();
  bool overflow = false;
  bool any = false;
  for (;;) {
    if (begin_ == end_ && !fill()) {
      if (overflow) return Status::oversized;
      return any ? Status::line : Status::end;
    }
    any = true;
    const char* start = chunk_.data() + begin_;
    const std::size_t available = end_ - begin_;
    const auto* newline = static_cast<const char*>(std::memchr(start, '\n', available));
    const std::size_t length = newline != nullptr ? static_cast<std::size_t>(newline - start) : available;
    if (!overflow) {
      if (line.size() + length > max_line_bytes_) {
        overflow = true;
        line.clear();
        line.shrink_to_fit();
      } else {
        // Grow by doubling, but never past the limit, so the line's buffer
        // stays within max_line_bytes whatever the input. A fresh string is
        // reserved because growing one in place may round up past the request.
        if (line.size() + length > line.capacity()) {
          std::string bigger;
          bigger.reserve(std::min(std::max(line.capacity() * 2, line.size() + length), max_line_bytes_));
          bigger.append(line);
          line.swap(bigger);
        }
        line.append(start, length);
      }
    }
    begin_ += length;
    if (newline != nullptr) {
      ++begin_;
      return overflow ? Status::oversized : Status::line;
    }
  }
}

}  // namespace rawtool::mcp::detail
