#pragma once

#include <algorithm>
#include <charconv>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <string_view>
#include <type_traits>

namespace rawtool {

/// A string written into rawtool's source: the constructor is consteval, so
/// only a string literal (or another constant expression) can make one; text
/// read at run time cannot.
class Literal {
public:
  consteval Literal(const char* text) : text_(text) {}  // NOLINT: implicit on purpose, for literals
  [[nodiscard]] constexpr std::string_view view() const noexcept { return text_; }

private:
  std::string_view text_;
};

/// A name rawtool validated before it trusts it: 1 to 64 of [A-Za-z0-9_.-]
/// (database labels, catalog query names, hex digests). A line rawtool writes
/// can hold it as it is, since it cannot break a line, quote or escape.
class Label {
public:
  /// The label, or std::nullopt when `text` does not match the grammar.
  static std::optional<Label> parse(std::string_view text) {
    if (!valid(text)) return std::nullopt;
    return Label(std::string(text));
  }
  /// A name rawtool validated earlier (a configured label, a catalog name):
  /// throws std::logic_error when it breaks the grammar after all, a bug.
  static Label checked(std::string_view text) {
    if (!valid(text)) throw std::logic_error("rawtool::Label: a name that was validated earlier breaks the grammar");
    return Label(std::string(text));
  }
  /// True when `text` matches ^[A-Za-z0-9_.-]{1,64}$.
  static bool valid(std::string_view text) noexcept {
    return !text.empty() && text.size() <= 64 && std::all_of(text.begin(), text.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    });
  }

  Label() = default;  ///< empty: no label (a provenance field that does not apply)
  /// A label written in rawtool's source or a test; checked like any other.
  /// Throws std::invalid_argument when it breaks the grammar (a bug, not input).
  template <std::size_t N>
  Label(const char (&text)[N]) : text_(text, N - 1) {  // NOLINT: implicit, for literals
    if (!valid(text_)) throw std::invalid_argument("rawtool::Label: not 1 to 64 of [A-Za-z0-9_.-]");
  }
  [[nodiscard]] const std::string& str() const noexcept { return text_; }
  [[nodiscard]] std::string_view view() const noexcept { return text_; }
  [[nodiscard]] bool empty() const noexcept { return text_.empty(); }
  friend bool operator==(const Label&, const Label&) = default;

private:
  explicit Label(std::string text) : text_(std::move(text)) {}
  std::string text_;
};

class Trusted;

/// A number for Trusted::format shown as the shortest decimal that reads back
/// as the same double ("0.5", "1e+20"), where a plain double shows three
/// decimals.
struct Shortest {
  double value;
};

namespace detail {

/// What Trusted::format takes: rawtool's literals, validated labels, trusted
/// text and numbers. A std::string or std::string_view is not among them, so
/// text from outside cannot be formatted into rawtool's words.
template <class T>
concept TrustedPiece = std::same_as<T, Literal> || std::same_as<T, Label> || std::same_as<T, Trusted> || std::same_as<T, Shortest> ||
                       (std::is_arithmetic_v<T> && !std::same_as<T, char> && !std::same_as<T, bool>);

}  // namespace detail

/// Text rawtool itself wrote, shown under its own "rawtool: " prefix: made only
/// from literals, validated labels, numbers and other trusted text. A driver
/// or any other layer that wants to say something in rawtool's words builds
/// one of these; bytes that came from outside (Untrusted, or any std::string)
/// cannot become one. Value type; copies are independent.
class Trusted {
public:
  Trusted() = default;
  Trusted(Literal literal) : text_(literal.view()) {}  // NOLINT: implicit, so a literal reads as one
  Trusted(const Label& label) : text_(label.str()) {}  // NOLINT: a validated label is trusted text

  /// `pattern` with each "{}" replaced by the next argument, in order: a
  /// literal, a label, trusted text, or a number (integers in decimal,
  /// floating point with three decimals). "{{" and "}}" stand for braces. A
  /// "{}" without an argument stays as it is; arguments without a "{}" are
  /// ignored: the pattern is rawtool's own, so a mismatch is a bug that shows.
  template <detail::TrustedPiece... Args>
  static Trusted format(Literal pattern, const Args&... args) {
    Trusted out;
    const std::string_view p = pattern.view();
    std::size_t next = 0;
    std::size_t index = 0;
    const auto append_argument = [&](std::size_t wanted) {
      std::size_t position = 0;
      ((position++ == wanted ? out.append_piece(args) : void()), ...);
      return wanted < sizeof...(Args);
    };
    while (next < p.size()) {
      if (p.compare(next, 2, "{{") == 0 || p.compare(next, 2, "}}") == 0) {
        out.text_ += p[next];
        next += 2;
      } else if (p.compare(next, 2, "{}") == 0) {
        if (!append_argument(index++)) out.text_ += "{}";
        next += 2;
      } else {
        out.text_ += p[next++];
      }
    }
    return out;
  }

  Trusted& operator+=(const Trusted& more) {
    text_ += more.text_;
    return *this;
  }
  Trusted& operator+=(Literal more) {
    text_ += more.view();
    return *this;
  }
  friend Trusted operator+(Trusted a, const Trusted& b) { return a += b; }

  [[nodiscard]] const std::string& str() const noexcept { return text_; }
  [[nodiscard]] std::string_view view() const noexcept { return text_; }
  [[nodiscard]] bool empty() const noexcept { return text_.empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return text_.size(); }
  /// Trusted text may go anywhere a string goes; only the other way is closed.
  operator const std::string&() const noexcept { return text_; }  // NOLINT: implicit on purpose
  friend bool operator==(const Trusted&, const Trusted&) = default;
  template <class Stream>
  friend Stream& operator<<(Stream& out, const Trusted& text) {
    out << text.text_;
    return out;
  }

private:
  void append_piece(const Literal& literal) { text_ += literal.view(); }
  void append_piece(const Label& label) { text_ += label.str(); }
  void append_piece(const Trusted& trusted) { text_ += trusted.text_; }
  void append_piece(Shortest number) {
    char buffer[64];
    const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, number.value);
    if (error == std::errc()) text_.append(buffer, end);
  }
  template <class Number>
    requires std::is_arithmetic_v<Number>
  void append_piece(Number number) {
    if constexpr (std::is_floating_point_v<Number>) {
      char buffer[64];
      const int written = std::snprintf(buffer, sizeof buffer, "%.3f", static_cast<double>(number));
      if (written > 0) text_.append(buffer, static_cast<std::size_t>(std::min(written, 63)));
    } else {
      text_ += std::to_string(number);
    }
  }

  std::string text_;
};

}  // namespace rawtool
