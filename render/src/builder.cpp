#include <rawtool/render/builder.hpp>

#include "detail/common.hpp"
#include "detail/draft.hpp"
#include "detail/prose.hpp"

#include <rawtool/render/escape.hpp>

#include <stdexcept>

namespace rawtool::render {

namespace {

void require(bool condition, const char* what) {
  if (!condition) throw std::logic_error(what);
}

}  // namespace

ReplyBuilder& ReplyBuilder::begin_line(const Trusted& text) {
  require(!in_line_, "ReplyBuilder: a line is already open");
  in_line_ = true;
  text_ += contract::own_prefix;
  return add(text);
}

ReplyBuilder& ReplyBuilder::add(const Trusted& text) {
  require(in_line_, "ReplyBuilder: no line is open");
  text_ += text.view();
  return *this;
}

ReplyBuilder& ReplyBuilder::add_quoted(const Untrusted& value) {
  require(in_line_, "ReplyBuilder: no line is open");
  text_ += '"';
  append_escaped(text_, value, EscapeContext::cell, options_);
  text_ += '"';
  return *this;
}

ReplyBuilder& ReplyBuilder::end_line() {
  require(in_line_, "ReplyBuilder: no line is open");
  in_line_ = false;
  text_ += '\n';
  return *this;
}

ReplyBuilder& ReplyBuilder::prose(std::string_view label, const Untrusted& prose) {
  require(!in_line_, "ReplyBuilder: prose inside an open line");
  std::string nonce = detail::append_prose_block(text_, label, prose, options_);
  if (!nonce.empty()) nonces_.emplace_back(std::move(nonce), 2);
  return *this;
}

Rendered ReplyBuilder::finish(nlohmann::json structured) && {
  require(!in_line_, "ReplyBuilder: finished with a line open");
  if (const Trusted problem = detail::self_check(text_, nonces_); !problem.empty())
    throw std::logic_error("ReplyBuilder: the reply failed rawtool's own check (" + problem.str() + ")");
  return detail::Draft{std::move(text_), std::move(structured), false}.seal();
}

}  // namespace rawtool::render
