#include <rawtool/render/schema.hpp>

#include "detail/cells.hpp"
#include "detail/common.hpp"
#include "detail/draft.hpp"
#include "detail/notices.hpp"

#include <rawtool/render/json.hpp>
#include <rawtool/render/status.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace rawtool::render {

namespace {

const SchemaSection* find_section(const SchemaReply& reply, std::string_view name) {
  for (const auto& section : reply.sections)
    if (section.name.view() == name) return &section;
  return nullptr;
}

// The section's rows, the prose cells of each under a label of their own.
void append_section(std::string& t, const SchemaSection& section, const RenderOptions& options) {
  const Rows& rows = section.rows;
  if (options.brief && rows.rows.empty() && rows.truncation == Truncation::none) {
    t += fmt::format("{}section {}: none\n", contract::own_prefix, section.name.view());
    return;
  }
  // The column names are rawtool's own, so they stand in rawtool's line.
  t += fmt::format("{}section {}: {} row{}; each row: ", contract::own_prefix, section.name.view(), rows.rows.size(), rows.rows.size() == 1 ? "" : "s");
  bool first = true;
  for (const auto& column : section.columns) {
    if (column.prose) continue;
    if (!first) t += contract::cell_separator;
    first = false;
    t += column.name.view();
  }
  bool any_prose = false;
  for (const auto& column : section.columns) {
    if (!column.prose) continue;
    t += any_prose ? ", " : options.brief ? "; quoted: " : "; then, where present, quoted under a label: ";
    any_prose = true;
    t += column.name.view();
  }
  t += '\n';
  for (std::size_t i = 0; i < rows.rows.size(); ++i) {
    const auto& row = rows.rows[i];
    t += contract::row_line_prefix(i + 1);
    first = true;
    for (std::size_t c = 0; c < section.columns.size(); ++c) {
      if (section.columns[c].prose) continue;
      if (!first) t += contract::cell_separator;
      first = false;
      detail::append_cell(t, row[c], options.ascii_only);
    }
    t += '\n';
    for (std::size_t c = 0; c < section.columns.size(); ++c) {
      if (!section.columns[c].prose || !row[c] || row[c]->empty()) continue;
      detail::append_field(t, fmt::format("{} of row {}", section.columns[c].name.view(), i + 1), *row[c], options);
    }
  }
  if (rows.truncation != Truncation::none) t += detail::left_out_text(rows);
}

nlohmann::json section_json(const SchemaSection& section) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : section.rows.rows) {
    nlohmann::json object = nlohmann::json::object();
    for (std::size_t c = 0; c < section.columns.size(); ++c)
      object[std::string(section.columns[c].name.view())] = row[c] ? to_json(*row[c]) : nlohmann::json(nullptr);
    rows.push_back(std::move(object));
  }
  const Rows& r = section.rows;
  return {{"complete", r.truncation == Truncation::none},
          {"truncation", detail::truncation_json(r)},
          {"rows", std::move(rows)}};
}

}  // namespace

Rendered render_schema(const SchemaReply& reply, const Provenance& provenance, const RenderOptions& options) {
  for (const auto& section : reply.sections)
    for (const auto& row : section.rows.rows)
      if (row.size() != section.columns.size()) throw std::invalid_argument("render_schema: a row's cells do not match its section's columns");

  const bool table_scope = reply.scope == SchemaReply::Scope::table;
  const SchemaSection* table = find_section(reply, "table");
  const bool found = !table_scope || (table != nullptr && !table->rows.rows.empty());
  const SchemaSection* objects = find_section(reply, "objects");
  const std::size_t returned = objects != nullptr ? objects->rows.rows.size() : 0;
  bool complete = !reply.more;
  for (const auto& section : reply.sections) complete = complete && section.rows.truncation == Truncation::none;
  const bool paged = !table_scope && !complete;
  const std::uint64_t next_offset = reply.offset + returned;

  const std::string nonce = detail::fresh_nonce();
  detail::Draft r;
  std::string& t = r.text;
  if (options.brief && table_scope) {
    t += fmt::format("{}schema: one table of {} ({}){}; ", contract::own_prefix, provenance.database_label.str(), engine_name(provenance.engine),
                     found ? "" : ": no table, view or other relation that this role can use has that name (rule=not_found)");
  } else if (options.brief) {
    t += fmt::format("{}schema: {} ({}); {} object{} from offset {}; {}; ", contract::own_prefix, provenance.database_label.str(),
                     engine_name(provenance.engine), returned, returned == 1 ? "" : "s", reply.offset,
                     paged ? fmt::format("more: call again with offset {}", next_offset) : std::string("no more"));
  } else if (table_scope) {
    t += fmt::format("{}schema: one table of database {} ({}); {}. ", contract::own_prefix, provenance.database_label.str(), engine_name(provenance.engine),
                     found ? "its columns, keys, constraints and indexes" : "table: no table, view or other relation that this role can use has that name (rule=not_found)");
  } else {
    t += fmt::format("{}schema: database {} ({}); {} object{} from offset {}, page size {}; {}. ", contract::own_prefix, provenance.database_label.str(),
                     engine_name(provenance.engine), returned, returned == 1 ? "" : "s", reply.offset, reply.page_size,
                     paged ? fmt::format("more may follow: call again with offset {}", next_offset) : std::string("nothing more to page through"));
  }
  t += options.brief ? contract::schema_boundary_brief : contract::schema_boundary;
  t += '\n';
  t += contract::begin_marker(contract::schema_block, nonce);
  for (const auto& section : reply.sections) append_section(t, section, options);
  t += contract::end_marker(contract::schema_block, nonce);
  if (options.brief)  // the first line said the rest
    t += fmt::format("{}{}; complete={}; elapsed_ms={}\n", contract::schema_trailer_prefix, nonce, complete ? "yes" : "no",
                     detail::elapsed_ms_text(provenance));
  else
    t += fmt::format("{}{}; path={}; engine={}; database={}; objects={}; complete={}; next_offset={}; elapsed_ms={}\n", contract::schema_trailer_prefix, nonce,
                     detail::path_text(provenance), engine_name(provenance.engine), provenance.database_label.str(), table_scope ? (found ? 1U : 0U) : returned,
                     complete ? "yes" : "no", paged ? std::to_string(next_offset) : std::string("none"), detail::elapsed_ms_text(provenance));

  if (auto problem = detail::self_check(t, {{nonce, 3U}}); !problem.empty())
    return render_refusal(Refusal{RefusalReason::self_check_failed,
                                  Trusted::format("the rendered schema failed rawtool's own check ({}); none of it is shown", problem)},
                          provenance);

  nlohmann::json sections = nlohmann::json::object();
  for (const auto& section : reply.sections) sections[std::string(section.name.view())] = section_json(section);
  r.structured = {
      {"kind", "schema"},
      {"scope", table_scope ? "table" : "objects"},
      {"found", found},
      {"complete", complete},
      {"untrusted_notice", contract::schema_boundary_structured},
      {"sections", std::move(sections)},
  };
  if (!table_scope)
    r.structured["page"] = {{"offset", reply.offset},
                            {"page_size", reply.page_size},
                            {"returned", returned},
                            {"more", paged},
                            {"next_offset", paged ? nlohmann::json(next_offset) : nlohmann::json(nullptr)}};
  detail::add_provenance(r.structured, provenance);
  return std::move(r).seal();
}

}  // namespace rawtool::render
