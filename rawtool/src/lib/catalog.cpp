#include <rawtool/catalog.hpp>

#include <rawtool/render/bytes.hpp>
#include <rawtool/config.hpp>

#include "lib/detail/crypto.hpp"
#include "lib/detail/json_fields.hpp"

#include <charconv>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace rawtool {
namespace {

using nlohmann::json;
using detail::fail;
using detail::member_field;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Reads `count` digits at `pos` as a number; false if any is not a digit.
bool digits(std::string_view s, std::size_t pos, std::size_t count, int& out) {
  if (pos + count > s.size()) return false;
  out = 0;
  for (std::size_t i = pos; i < pos + count; ++i) {
    if (!is_digit(s[i])) return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

bool valid_date_at(std::string_view s, std::size_t pos) {
  int year = 0;
  int month = 0;
  int day = 0;
  if (!digits(s, pos, 4, year) || s.size() < pos + 10 || s[pos + 4] != '-' || !digits(s, pos + 5, 2, month) ||
      s[pos + 7] != '-' || !digits(s, pos + 8, 2, day)) {
    return false;
  }
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  static constexpr int month_days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  int last = month_days[month - 1] + ((month == 2 && leap) ? 1 : 0);
  return day <= last;
}

bool valid_date(std::string_view s) { return s.size() == 10 && valid_date_at(s, 0); }

// YYYY-MM-DD[T ]HH:MM:SS[.f{1,6}][Z|+HH:MM|-HH:MM]
bool valid_timestamp(std::string_view s) {
  if (s.size() < 19 || !valid_date_at(s, 0) || (s[10] != 'T' && s[10] != ' ')) return false;
  int hour = 0;
  int minute = 0;
  int second = 0;
  if (!digits(s, 11, 2, hour) || s[13] != ':' || !digits(s, 14, 2, minute) || s[16] != ':' ||
      !digits(s, 17, 2, second) || hour > 23 || minute > 59 || second > 59) {
    return false;
  }
  std::size_t pos = 19;
  if (pos < s.size() && s[pos] == '.') {
    std::size_t start = ++pos;
    while (pos < s.size() && is_digit(s[pos])) ++pos;
    if (pos == start || pos - start > 6) return false;
  }
  if (pos == s.size()) return true;
  if (s[pos] == 'Z') return pos + 1 == s.size();
  if (s[pos] != '+' && s[pos] != '-') return false;
  int zone_hour = 0;
  int zone_minute = 0;
  return s.size() == pos + 6 && digits(s, pos + 1, 2, zone_hour) && s[pos + 3] == ':' &&
         digits(s, pos + 4, 2, zone_minute) && zone_hour <= 15 && zone_minute <= 59;
}


std::optional<std::int64_t> parse_int64(std::string_view s) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return value;
}

std::optional<double> parse_double(std::string_view s) {
  if (s.empty() || s.front() == '+' || s.front() == ' ') return std::nullopt;
  double value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value, std::chars_format::general);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

// One value converted to its declared type, or the rule it breaks and what
// the rule asks, in rawtool's words.
struct Converted {
  std::optional<Parameter> value;
  ArgumentRule rule = ArgumentRule::type;
  Trusted problem;
};

Converted accepted(Parameter value) { return {std::move(value), ArgumentRule::type, {}}; }
Converted type_problem(Trusted problem) { return {std::nullopt, ArgumentRule::type, std::move(problem)}; }
Converted type_problem(Literal problem) { return type_problem(Trusted(problem)); }

Converted convert(const ParameterSpec& spec, const json& value) {
  switch (spec.type) {
    case ParameterType::integer:
      if (value.is_number_integer() && !value.is_number_unsigned()) return accepted(Parameter{value.get<std::int64_t>()});
      if (value.is_number_unsigned()) {
        auto u = value.get<std::uint64_t>();
        if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
          return accepted(Parameter{static_cast<std::int64_t>(u)});
        }
        return type_problem("is outside the 64-bit integer range");
      }
      if (value.is_string()) {
        if (auto v = parse_int64(value.get_ref<const std::string&>())) return accepted(Parameter{*v});
        return type_problem("is not an integer in decimal form");
      }
      return type_problem(Trusted::format("must be an integer, not {}", detail::json_kind_words(value)));
    case ParameterType::number:
      if (value.is_number()) {
        double d = value.get<double>();
        if (!std::isfinite(d)) return type_problem("must be a finite number");
        return accepted(Parameter{d});
      }
      if (value.is_string()) {
        if (auto v = parse_double(value.get_ref<const std::string&>())) return accepted(Parameter{*v});
        return type_problem("is not a finite number in decimal form");
      }
      return type_problem(Trusted::format("must be a number, not {}", detail::json_kind_words(value)));
    case ParameterType::boolean:
      if (value.is_boolean()) return accepted(Parameter{value.get<bool>()});
      if (value.is_string()) {
        const auto& s = value.get_ref<const std::string&>();
        if (s == "true") return accepted(Parameter{true});
        if (s == "false") return accepted(Parameter{false});
        return type_problem("must be true or false");
      }
      return type_problem(Trusted::format("must be true or false, not {}", detail::json_kind_words(value)));
    case ParameterType::text: {
      if (!value.is_string()) return type_problem(Trusted::format("must be a string, not {}", detail::json_kind_words(value)));
      const auto& s = value.get_ref<const std::string&>();
      auto length = render::code_point_count(s);
      if (!length) return type_problem("is not valid UTF-8");
      if (s.find('\0') != std::string::npos) return type_problem("contains a NUL character");
      if (spec.max_length && *length > *spec.max_length) {
        return {std::nullopt, ArgumentRule::max_length, Trusted::format("must be at most {} characters long", *spec.max_length)};
      }
      return accepted(Parameter{s});
    }
    case ParameterType::date:
      if (value.is_string() && valid_date(value.get_ref<const std::string&>())) {
        return accepted(Parameter{value.get<std::string>()});
      }
      return type_problem("must be a date, YYYY-MM-DD");
    case ParameterType::timestamp:
      if (value.is_string() && valid_timestamp(value.get_ref<const std::string&>())) {
        return accepted(Parameter{value.get<std::string>()});
      }
      return type_problem("must be a timestamp, YYYY-MM-DD HH:MM:SS with optional fraction and zone");
  }
  return type_problem("has an unknown type");
}

std::string format_bound(double bound) {
  std::ostringstream out;
  out.precision(17);
  out << bound;
  return out.str();
}

// A declared bound in rawtool's words: whole numbers as integers, others as
// written when that spelling is a plain label ("2.5"), else to three decimals.
Trusted bound_words(double bound) {
  if (bound == std::floor(bound) && std::fabs(bound) < 9.0e15) return Trusted::format("{}", static_cast<std::int64_t>(bound));
  if (auto label = Label::parse(format_bound(bound))) return Trusted(*label);
  return Trusted::format("{}", bound);
}

// "must be one of: open, closed, 3": the catalog author's values, listed
// when each is a number, a boolean or text of label characters (rawtool's
// words hold nothing else); otherwise where describe_catalog lists them.
Trusted allowed_words(const std::vector<Parameter>& allowed) {
  Trusted list;
  for (const Parameter& value : allowed) {
    if (!list.empty()) list += Literal(", ");
    if (const auto* i = std::get_if<std::int64_t>(&value)) {
      list += Trusted::format("{}", *i);
    } else if (const auto* d = std::get_if<double>(&value)) {
      list += bound_words(*d);
    } else if (const auto* b = std::get_if<bool>(&value)) {
      list += *b ? Literal("true") : Literal("false");
    } else if (const auto* text = std::get_if<std::string>(&value); text != nullptr && Label::valid(*text)) {
      list += Label::checked(*text);
    } else {
      return Trusted::format("must be one of the {} allowed values describe_catalog lists for it", allowed.size());
    }
  }
  return Trusted::format("must be one of: {}", list);
}

// Bounds and enumeration; the value already has the declared type.
std::optional<Converted> check_constraints(const ParameterSpec& spec, const Parameter& value) {
  double numeric = 0;
  bool is_numeric = false;
  if (const auto* i = std::get_if<std::int64_t>(&value)) {
    numeric = static_cast<double>(*i);
    is_numeric = true;
  } else if (const auto* d = std::get_if<double>(&value)) {
    numeric = *d;
    is_numeric = true;
  }
  if (is_numeric && spec.minimum && numeric < *spec.minimum)
    return Converted{std::nullopt, ArgumentRule::minimum, Trusted::format("must be at least {}", bound_words(*spec.minimum))};
  if (is_numeric && spec.maximum && numeric > *spec.maximum)
    return Converted{std::nullopt, ArgumentRule::maximum, Trusted::format("must be at most {}", bound_words(*spec.maximum))};
  if (!spec.allowed.empty()) {
    bool found = false;
    for (const Parameter& allowed : spec.allowed) found = found || allowed == value;
    if (!found) return Converted{std::nullopt, ArgumentRule::enum_value, allowed_words(spec.allowed)};
  }
  return std::nullopt;
}

std::optional<ParameterType> parse_type(std::string_view s) {
  for (auto t : {ParameterType::integer, ParameterType::number, ParameterType::text, ParameterType::boolean,
                 ParameterType::date, ParameterType::timestamp}) {
    if (parameter_type_name(t) == s) return t;
  }
  return std::nullopt;
}

double read_number(const json& value, const std::string& field) {
  if (!value.is_number()) fail(field, std::string("must be a number, not ") + detail::json_kind(value));
  double d = value.get<double>();
  if (!std::isfinite(d)) fail(field, "must be a finite number");
  return d;
}

ParameterSpec parse_parameter(const json& value, const std::string& field) {
  detail::require_object(value, field);
  detail::reject_unknown_keys(
      value, {"name", "type", "description", "required", "minimum", "maximum", "enum", "max_length", "from_claim"}, field);
  ParameterSpec spec;
  auto name = value.find("name");
  if (name == value.end()) fail(member_field(field, "name"), "is required");
  spec.name = detail::read_string(*name, member_field(field, "name"));
  if (!valid_catalog_name(spec.name)) fail(member_field(field, "name"), "must match [a-z][a-z0-9_]{0,63}");

  auto type = value.find("type");
  if (type == value.end()) fail(member_field(field, "type"), "is required");
  auto parsed_type = parse_type(detail::read_string(*type, member_field(field, "type")));
  if (!parsed_type) fail(member_field(field, "type"), "must be one of integer, number, text, boolean, date, timestamp");
  spec.type = *parsed_type;
  bool numeric = spec.type == ParameterType::integer || spec.type == ParameterType::number;

  if (auto it = value.find("description"); it != value.end()) {
    spec.description = Untrusted(detail::read_string(*it, member_field(field, "description")));
  }
  if (auto it = value.find("required"); it != value.end()) spec.required = detail::read_bool(*it, member_field(field, "required"));
  if (auto it = value.find("minimum"); it != value.end()) {
    if (!numeric) fail(member_field(field, "minimum"), "applies to integer and number parameters only");
    spec.minimum = read_number(*it, member_field(field, "minimum"));
  }
  if (auto it = value.find("maximum"); it != value.end()) {
    if (!numeric) fail(member_field(field, "maximum"), "applies to integer and number parameters only");
    spec.maximum = read_number(*it, member_field(field, "maximum"));
    if (spec.minimum && *spec.maximum < *spec.minimum) fail(member_field(field, "maximum"), "is below minimum");
  }
  if (auto it = value.find("max_length"); it != value.end()) {
    if (spec.type != ParameterType::text) fail(member_field(field, "max_length"), "applies to text parameters only");
    spec.max_length = static_cast<std::size_t>(
        detail::read_integer(*it, member_field(field, "max_length"), 1, std::numeric_limits<std::int32_t>::max()));
  }
  if (auto it = value.find("from_claim"); it != value.end()) {
    const std::string claim_field = member_field(field, "from_claim");
    std::string claim = detail::read_string(*it, claim_field);
    // A claim's name, as tokens spell them: a word, or a namespaced URL.
    if (claim.empty() || claim.size() > 256 ||
        !std::all_of(claim.begin(), claim.end(), [](char c) { return c > ' ' && c < 0x7f && c != '"' && c != '\\'; }))
      fail(claim_field, "must be a claim's name: 1-256 printable ASCII characters, no spaces or quotes");
    if (value.contains("required") && !spec.required)
      fail(member_field(field, "required"), "cannot be false for a parameter bound to a claim");
    spec.from_claim = std::move(claim);
  }
  if (auto it = value.find("enum"); it != value.end()) {
    std::string enum_field = member_field(field, "enum");
    if (!it->is_array() || it->empty()) fail(enum_field, "must be a non-empty array of allowed values");
    const ParameterSpec bounds_only = spec;  // allowed is still empty: checks the bounds alone
    for (std::size_t i = 0; i < it->size(); ++i) {
      std::string item_field = enum_field + "[" + std::to_string(i) + "]";
      Converted c = convert(spec, (*it)[i]);
      if (!c.value) fail(item_field, c.problem.str());
      if (auto bound = check_constraints(bounds_only, *c.value)) fail(item_field, bound->problem.str());
      spec.allowed.push_back(std::move(*c.value));
    }
  }
  return spec;
}

CatalogQuery parse_query(const json& value, std::size_t index) {
  std::string entry = "catalog: queries[" + std::to_string(index) + "]";
  detail::require_object(value, entry);
  CatalogQuery query;
  auto name = value.find("name");
  if (name == value.end()) fail(entry + ".name", "is required");
  query.name = detail::read_string(*name, entry + ".name");
  if (!valid_catalog_name(query.name)) fail(entry + ".name", "must match [a-z][a-z0-9_]{0,63}");
  entry += " (" + query.name + ")";
  detail::reject_unknown_keys(value, {"name", "description", "sql", "parameters", "access", "database"}, entry);

  auto description = value.find("description");
  if (description == value.end()) fail(entry + ".description", "is required");
  query.description = Untrusted(detail::read_string(*description, entry + ".description"));

  auto sql = value.find("sql");
  if (sql == value.end()) fail(entry + ".sql", "is required");
  query.sql = detail::read_string(*sql, entry + ".sql");
  if (query.sql.find_first_not_of(" \t\r\n") == std::string::npos) fail(entry + ".sql", "must not be empty");

  if (auto it = value.find("parameters"); it != value.end()) {
    if (!it->is_array()) fail(entry + ".parameters", std::string("must be an array, not ") + detail::json_kind(*it));
    std::set<std::string, std::less<>> names;
    for (std::size_t i = 0; i < it->size(); ++i) {
      std::string field = entry + ".parameters[" + std::to_string(i) + "]";
      ParameterSpec spec = parse_parameter((*it)[i], field);
      if (!names.insert(spec.name).second) fail(field + ".name", "repeats the name of an earlier parameter");
      query.parameters.push_back(std::move(spec));
    }
  }
  if (auto it = value.find("access"); it != value.end()) {
    std::string s = detail::read_string(*it, entry + ".access");
    if (s == "read_only") {
      query.access = AccessMode::read_only;
    } else if (s == "read_write") {
      query.access = AccessMode::read_write;
    } else {
      fail(entry + ".access", "must be \"read_only\" or \"read_write\"");
    }
  }
  if (auto it = value.find("database"); it != value.end()) {
    query.database = detail::read_string(*it, entry + ".database");
    if (!valid_database_label(query.database)) fail(entry + ".database", "must be 1 to 64 of A-Z a-z 0-9 _ . -");
  }
  return query;
}

}  // namespace

std::string_view parameter_type_name(ParameterType type) noexcept {
  switch (type) {
    case ParameterType::integer: return "integer";
    case ParameterType::number: return "number";
    case ParameterType::text: return "text";
    case ParameterType::boolean: return "boolean";
    case ParameterType::date: return "date";
    case ParameterType::timestamp: return "timestamp";
  }
  return "unknown";
}

bool valid_catalog_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > 64 || name.front() < 'a' || name.front() > 'z') return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

const CatalogQuery* Catalog::find(std::string_view name) const noexcept {
  for (const CatalogQuery& q : queries) {
    if (q.name == name) return &q;
  }
  return nullptr;
}

Catalog parse_catalog(std::string_view json_text) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::parse_error& e) {
    fail("catalog", "is not valid JSON (at byte " + std::to_string(e.byte) + ")");
  } catch (const json::exception&) {
    // The parser's other complaints (a number too large for a double) quote
    // the input; say what is wrong in rawtool's words instead.
    fail("catalog", "holds a number this reader cannot represent (too large for a double)");
  }
  detail::require_object(root, "catalog");
  detail::reject_unknown_keys(root, {"queries"}, "catalog:");
  Catalog catalog;
  catalog.sha256 = detail::sha256_hex(json_text);
  auto queries = root.find("queries");
  if (queries == root.end()) fail("catalog: queries", "is required");
  if (!queries->is_array()) fail("catalog: queries", std::string("must be an array, not ") + detail::json_kind(*queries));
  std::set<std::string, std::less<>> names;
  // The array, not the iterator, is indexed: through json's operator[] on
  // *queries GCC 14 sees a null path (-Wnull-dereference) that is not there.
  const json::array_t& list = queries->get_ref<const json::array_t&>();
  for (std::size_t i = 0; i < list.size(); ++i) {
    CatalogQuery query = parse_query(list[i], i);
    if (!names.insert(query.name).second) {
      fail("catalog: queries[" + std::to_string(i) + "] (" + query.name + ").name",
           "repeats the name of an earlier query");
    }
    catalog.queries.push_back(std::move(query));
  }
  return catalog;
}

Catalog load_catalog(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("catalog", "the catalog file cannot be opened");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) fail("catalog", "the catalog file cannot be read");
  return parse_catalog(text.str());
}

namespace {

// A parameter's problem for the caller (its name, the rule, rawtool's words)
// and for the log ("parameters.NAME: words").
ArgumentProblem parameter_problem(const ParameterSpec& spec, ArgumentRule rule, Trusted words) {
  ArgumentProblem p;
  p.problem = "parameters." + spec.name + ": " + words.str();
  p.error.argument = Label::checked(spec.name);
  p.error.rule = rule;
  p.error.explanation = std::move(words);
  return p;
}

// "the declared parameters are a, b" (or "this query takes no parameters").
Trusted declared_parameters(const CatalogQuery& query) {
  if (query.parameters.empty()) return Literal("this query takes no parameters");
  Trusted names = Literal("the declared parameters are ");
  for (std::size_t i = 0; i < query.parameters.size(); ++i) {
    if (i != 0) names += Literal(", ");
    names += Label::checked(query.parameters[i].name);
  }
  return names;
}

}  // namespace

BindResult bind_arguments(const CatalogQuery& query, const json& arguments) {
  if (!arguments.is_null() && !arguments.is_object()) {
    ArgumentProblem p;
    p.problem = std::string("the arguments must be a JSON object, not ") + detail::json_kind(arguments);
    p.error.argument = Label("params");
    p.error.rule = ArgumentRule::type;
    p.error.explanation = Trusted::format("must be a JSON object of parameter values, not {}", detail::json_kind_words(arguments));
    return p;
  }
  if (arguments.is_object()) {
    for (const auto& item : arguments.items()) {
      bool declared = false;
      for (const ParameterSpec& spec : query.parameters) declared = declared || spec.name == item.key();
      if (!declared) {
        ArgumentProblem p;
        p.problem = "an argument is not a declared parameter";
        p.unknown_key = Untrusted(item.key());
        p.error.rule = ArgumentRule::unknown_parameter;
        p.error.explanation = Trusted::format("a parameter was given that the query does not declare; {}", declared_parameters(query));
        return p;
      }
    }
  }
  std::vector<Parameter> bound;
  bound.reserve(query.parameters.size());
  for (const ParameterSpec& spec : query.parameters) {
    const json* value = nullptr;
    if (arguments.is_object()) {
      if (auto it = arguments.find(spec.name); it != arguments.end()) value = &*it;
    }
    if (value == nullptr || value->is_null()) {
      if (spec.required) return parameter_problem(spec, ArgumentRule::missing, Literal("is required"));
      bound.emplace_back(std::monostate{});
      continue;
    }
    Converted c = convert(spec, *value);
    if (!c.value) return parameter_problem(spec, c.rule, std::move(c.problem));
    if (auto broken = check_constraints(spec, *c.value)) return parameter_problem(spec, broken->rule, std::move(broken->problem));
    bound.push_back(std::move(*c.value));
  }
  return bound;
}

}  // namespace rawtool
