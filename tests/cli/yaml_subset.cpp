#include "yaml_subset.hpp"

#include <string>
#include <vector>

namespace rawtool::test {

namespace {

using nlohmann::json;

struct Line {
  std::size_t number;  // 1-based
  std::size_t indent;
  std::string content;  // without indentation and comment, right-trimmed
};

[[noreturn]] void fail(std::size_t line, const std::string& what) {
  throw YamlError("line " + std::to_string(line) + ": " + what);
}

std::string rtrim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

/// Removes a comment: '#' at the start or after a space, outside quotes.
std::string strip_comment(const std::string& s, std::size_t number) {
  char quote = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote != 0) {
      if (quote == '"' && c == '\\') {
        ++i;
      } else if (c == quote) {
        if (quote == '\'' && i + 1 < s.size() && s[i + 1] == '\'') {
          ++i;
        } else {
          quote = 0;
        }
      }
      continue;
    }
    if ((c == '"' || c == '\'') && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '[' || s[i - 1] == ',')) {
      quote = c;
    } else if (c == '#' && (i == 0 || s[i - 1] == ' ')) {
      return rtrim(s.substr(0, i));
    }
  }
  if (quote != 0) fail(number, "unterminated quoted scalar");
  return rtrim(s);
}

std::vector<Line> split_lines(std::string_view text) {
  std::vector<Line> lines;
  std::size_t number = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string raw(text.substr(start, end - start));
    ++number;
    start = end + 1;
    std::size_t indent = 0;
    while (indent < raw.size() && raw[indent] == ' ') ++indent;
    if (indent < raw.size() && raw[indent] == '\t') fail(number, "tab in indentation");
    std::string content = strip_comment(raw.substr(indent), number);
    if (content.empty()) continue;
    if (content == "---" || content == "...") fail(number, "document markers are outside the subset");
    lines.push_back({number, indent, content});
    if (end == text.size()) break;
  }
  return lines;
}

std::string parse_quoted(std::string_view s, std::size_t& i, std::size_t number) {
  const char quote = s[i++];
  std::string out;
  while (i < s.size()) {
    const char c = s[i++];
    if (quote == '\'' && c == '\'') {
      if (i < s.size() && s[i] == '\'') {
        out.push_back('\'');
        ++i;
        continue;
      }
      return out;
    }
    if (quote == '"' && c == '"') return out;
    if (quote == '"' && c == '\\') {
      if (i >= s.size()) fail(number, "dangling escape");
      const char e = s[i++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case 'n': out.push_back('\n'); break;
        case 't': out.push_back('\t'); break;
        default: fail(number, "escape outside the subset");
      }
      continue;
    }
    out.push_back(c);
  }
  fail(number, "unterminated quoted scalar");
}

void check_plain(const std::string& s, std::size_t number) {
  if (s.empty()) fail(number, "empty scalar");
  const char first = s.front();
  if (first == '&' || first == '*' || first == '!' || first == '|' || first == '>' || first == '%' ||
      first == '@' || first == '`' || first == '{' || first == '}' || first == ']') {
    fail(number, "a scalar may not begin with '" + std::string(1, first) + "' in the subset");
  }
  if (s.find(": ") != std::string::npos || s.back() == ':') fail(number, "\": \" inside a plain scalar");
}

json parse_scalar(const std::string& s, std::size_t number) {
  if (s.front() == '"' || s.front() == '\'') {
    std::size_t i = 0;
    std::string value = parse_quoted(s, i, number);
    if (i != s.size()) fail(number, "characters after a quoted scalar");
    return value;
  }
  if (s == "{}") return json::object();
  if (s.front() == '[') {
    if (s.back() != ']') fail(number, "flow sequence not closed on its line");
    json seq = json::array();
    std::size_t i = 1;
    const std::size_t end = s.size() - 1;
    auto skip_spaces = [&] {
      while (i < end && s[i] == ' ') ++i;
    };
    skip_spaces();
    while (i < end) {
      if (s[i] == '"' || s[i] == '\'') {
        seq.push_back(parse_quoted(s, i, number));
      } else {
        std::size_t stop = s.find(',', i);
        if (stop == std::string::npos || stop > end) stop = end;
        std::string item = rtrim(s.substr(i, stop - i));
        if (item.find_first_of("[]{}") != std::string::npos) fail(number, "nested flow collections are outside the subset");
        check_plain(item, number);
        seq.push_back(item);
        i = stop;
      }
      skip_spaces();
      if (i < end) {
        if (s[i] != ',') fail(number, "expected ',' in a flow sequence");
        ++i;
        skip_spaces();
        if (i >= end) fail(number, "trailing ',' in a flow sequence");
      }
    }
    return seq;
  }
  check_plain(s, number);
  return s;
}

class Parser {
public:
  explicit Parser(std::vector<Line> lines) : lines_(std::move(lines)) {}

  json document() {
    if (lines_.empty()) return nullptr;
    json value = block(lines_.front().indent);
    if (pos_ != lines_.size()) fail(lines_[pos_].number, "unexpected indentation");
    return value;
  }

private:
  bool is_sequence_item(const std::string& content) const { return content == "-" || content.starts_with("- "); }

  json block(std::size_t indent) {
    if (is_sequence_item(lines_[pos_].content)) return sequence(indent);
    return mapping(indent);
  }

  /// Splits "key: rest" / "key:"; returns false when the line is not a mapping entry.
  static bool split_entry(const std::string& content, std::string& key, std::string& rest, std::size_t number) {
    std::size_t i = 0;
    if (content.front() == '"' || content.front() == '\'') {
      key = parse_quoted(content, i, number);
    } else {
      const auto colon = content.find(':');
      if (colon == std::string::npos) return false;
      key = content.substr(0, colon);
      i = colon;
      if (key.empty() || key.front() == '?' || key.find_first_of("[]{}&*!|>") != std::string::npos) {
        fail(number, "a key outside the subset");
      }
    }
    if (i >= content.size() || content[i] != ':') return false;
    ++i;
    if (i < content.size() && content[i] != ' ') return false;
    while (i < content.size() && content[i] == ' ') ++i;
    rest = content.substr(i);
    return true;
  }

  json value_after_key(const std::string& rest, std::size_t indent, std::size_t number) {
    if (!rest.empty()) return parse_scalar(rest, number);
    if (pos_ >= lines_.size()) fail(number, "a key with no value");
    const Line& next = lines_[pos_];
    if (next.indent > indent) return block(next.indent);
    if (next.indent == indent && is_sequence_item(next.content)) return sequence(indent);
    fail(number, "a key with no value");
  }

  json mapping(std::size_t indent) {
    json map = json::object();
    while (pos_ < lines_.size() && lines_[pos_].indent == indent && !is_sequence_item(lines_[pos_].content)) {
      const Line line = lines_[pos_++];
      std::string key;
      std::string rest;
      if (!split_entry(line.content, key, rest, line.number)) fail(line.number, "expected \"key: value\"");
      if (map.contains(key)) fail(line.number, "duplicate key " + key);
      map[key] = value_after_key(rest, indent, line.number);
    }
    if (pos_ < lines_.size() && lines_[pos_].indent > indent) fail(lines_[pos_].number, "unexpected indentation");
    return map;
  }

  json sequence(std::size_t indent) {
    json seq = json::array();
    while (pos_ < lines_.size() && lines_[pos_].indent == indent && is_sequence_item(lines_[pos_].content)) {
      Line line = lines_[pos_];
      if (line.content == "-") {
        ++pos_;
        if (pos_ >= lines_.size() || lines_[pos_].indent <= indent) fail(line.number, "an empty sequence item");
        seq.push_back(block(lines_[pos_].indent));
        continue;
      }
      // "- rest": rest is a scalar, or the first entry of a mapping whose
      // other entries are indented to where rest begins.
      const std::string rest = line.content.substr(2);
      std::string key;
      std::string value;
      if (split_entry(rest, key, value, line.number)) {
        lines_[pos_].indent = indent + 2;
        lines_[pos_].content = rest;
        seq.push_back(mapping(indent + 2));
      } else {
        ++pos_;
        seq.push_back(parse_scalar(rest, line.number));
      }
    }
    return seq;
  }

  std::vector<Line> lines_;
  std::size_t pos_ = 0;
};

}  // namespace

nlohmann::json parse_yaml_subset(std::string_view text) {
  return Parser(split_lines(text)).document();
}

}  // namespace rawtool::test
