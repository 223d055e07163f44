#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace rawtool::mcp::detail {

/// Reads LF-terminated lines from a file descriptor in bounded chunks. A line
/// longer than the limit is consumed up to its LF and reported as oversized;
/// at no point does the reader hold more than the limit plus one chunk.
/// Not thread-safe; one reader per descriptor.
class LineReader {
public:
  enum class Status {
    line,       ///< `line` holds one line without its LF (a final unterminated line counts)
    oversized,  ///< a line longer than the limit was skipped; `line` is empty
    end,        ///< end of input (or a read error)
  };

  LineReader(int fd, std::size_t max_line_bytes, std::size_t chunk_bytes = 64 * 1024);

  /// Blocks until the next line, oversized line or end of input.
  Status next(std::string& line);

private:
  bool fill();

  int fd_;
  std::size_t max_line_bytes_;
  std::vector<char> chunk_;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
  bool eof_ = false;
};

}  // namespace rawtool::mcp::detail
