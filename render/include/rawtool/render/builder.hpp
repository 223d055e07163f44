#pragma once

#include <rawtool/render/options.hpp>
#include <rawtool/render/surface.hpp>
#include <rawtool/trusted.hpp>
#include <rawtool/untrusted.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rawtool::render {

/// Writes a reply of rawtool's own that is not rows, a failure or a status
/// (the catalog's description, a raw call that reached no database): lines in
/// rawtool's words, untrusted values escaped inside them, untrusted prose
/// quoted in named blocks. Nothing else can be put in the text, and finish()
/// checks it as every reply is checked before it leaves the renderer.
class ReplyBuilder {
public:
  /// Keeps a copy of `options`, so a temporary may be passed.
  explicit ReplyBuilder(RenderOptions options) : options_(std::move(options)) {}

  /// Starts a line in rawtool's words: the own prefix, then `text`.
  ReplyBuilder& begin_line(const Trusted& text);
  /// More of rawtool's words on the line begun.
  ReplyBuilder& add(const Trusted& text);
  /// `value` escaped as a cell, in double quotes, on the line begun.
  ReplyBuilder& add_quoted(const Untrusted& value);
  ReplyBuilder& end_line();
  /// A whole line in rawtool's words.
  ReplyBuilder& line(const Trusted& text) { return begin_line(text).end_line(); }
  /// `prose` quoted per line in a block named `label`, or a line saying it
  /// was omitted, as append_prose writes it. `label` must match
  /// ^[a-z][a-z0-9 _]*$ (std::invalid_argument otherwise).
  ReplyBuilder& prose(std::string_view label, const Untrusted& prose);

  /// The reply, with `structured` as its structured half (whose untrusted
  /// values the caller has made with to_json). Throws std::logic_error when a
  /// line is still open or the renderer's own check of the text fails, which
  /// only a fault in rawtool can cause.
  [[nodiscard]] Rendered finish(nlohmann::json structured) &&;

private:
  RenderOptions options_;
  std::string text_;
  std::vector<std::pair<std::string, std::size_t>> nonces_;
  bool in_line_ = false;
};

}  // namespace rawtool::render
