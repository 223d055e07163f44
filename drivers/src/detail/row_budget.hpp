#pragma once

#include <rawtool/driver.hpp>
#include <rawtool/outcome.hpp>

#include <cstdint>
#include <utility>
#include <vector>

namespace rawtool::detail {

/// Applies the row and byte caps of one statement's result, the same way for
/// every engine: a row is kept whole or withheld whole, never shortened, and
/// the first row that would pass a cap ends reading. The caller offers each
/// row's size before building it, so a withheld row costs no copy.
class RowBudget {
public:
  explicit RowBudget(const Limits& limits) noexcept : max_rows_(limits.max_rows), max_bytes_(limits.max_bytes) {}

  /// Sets the columns; their names count against the byte cap.
  void set_columns(std::vector<Column> columns) {
    for (const Column& column : columns) rows_.bytes += column.name.size();
    rows_.columns = std::move(columns);
  }

  /// The columns, for filling in what is learnt while reading (a type name).
  [[nodiscard]] std::vector<Column>& columns() noexcept { return rows_.columns; }

  [[nodiscard]] bool has_columns() const noexcept { return !rows_.columns.empty(); }

  /// Why reading stopped keeping rows, if it did.
  [[nodiscard]] Truncation truncation() const noexcept { return rows_.truncation; }

  /// True while every row offered so far was kept.
  [[nodiscard]] bool open() const noexcept { return rows_.truncation == Truncation::none; }

  /// Offers a row of `data_bytes` bytes of cell data; the row and each of
  /// its cells also cost their overhead (see Limits::max_bytes). Returns true
  /// when it fits (the caller then adds it with keep); false when it is
  /// withheld, which closes the budget: later rows are only counted.
  bool offer(std::uint64_t data_bytes) noexcept {
    if (!open()) {
      ++rows_.rows_withheld;
      return false;
    }
    const std::uint64_t row_bytes = data_bytes + row_overhead_bytes + cell_overhead_bytes * rows_.columns.size();
    if (rows_.rows.size() >= max_rows_) {
      rows_.truncation = Truncation::row_cap;
      rows_.cap = max_rows_;
    } else if (row_bytes > max_bytes_ || rows_.bytes > max_bytes_ - row_bytes) {
      rows_.truncation = Truncation::byte_cap;
      rows_.cap = max_bytes_;
    } else {
      rows_.bytes += row_bytes;
      return true;
    }
    ++rows_.rows_withheld;
    rows_.more_unread = true;
    return false;
  }

  void keep(std::vector<Cell> row) { rows_.rows.push_back(std::move(row)); }

  /// Reading reached the end of the result: nothing is left unread.
  void reached_end() noexcept { rows_.more_unread = false; }

  void set_rows_affected(std::uint64_t count) noexcept { rows_.rows_affected = count; }

  [[nodiscard]] Rows take() && { return std::move(rows_); }

private:
  std::uint64_t max_rows_;
  std::uint64_t max_bytes_;
  Rows rows_;
};

}  // namespace rawtool::detail
