#include "chopsim/config/detail/yaml.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>

namespace chopsim::config_detail {

std::string flow_text(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

std::vector<std::string> keys_of(const YAML::Node& node) {
  std::vector<std::string> keys;
  for (const auto& entry : node) keys.push_back(entry.first.Scalar());
  return keys;
}

namespace fs = std::filesystem;

SourceLocation Locator::operator()(std::string_view key) const {
  if (keys_ != nullptr) {
    std::string path(key);
    while (!path.empty()) {
      if (auto it = keys_->find(path); it != keys_->end()) return it->second;
      const auto dot = path.rfind('.');
      if (dot == std::string::npos) break;
      path.resize(dot);
    }
  }
  return fallback_;
}

std::string display_path(const fs::path& path) {
  if (path.is_relative()) return path.lexically_normal().string();
  std::error_code error;
  const fs::path cwd = fs::current_path(error);
  if (error) return path.lexically_normal().string();
  const fs::path relative = path.lexically_proximate(cwd);
  if (relative.empty() || *relative.begin() == "..") return path.lexically_normal().string();
  return relative.string();
}

SourceLocation location_of(const YAML::Node& node, const std::string& file) {
  SourceLocation where{file, 0, 0};
  if (!node.IsDefined()) return where;
  const YAML::Mark mark = node.Mark();
  if (mark.is_null()) return where;
  where.line = mark.line + 1;
  where.column = mark.column + 1;
  return where;
}

std::string describe_value(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "an empty value";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  std::string text = node.Scalar();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return "'" + text + "'";
}

namespace {

/// Configs larger than this are not configs (16 MiB; the largest shipped one is under 10 KB).
constexpr std::uintmax_t kLargestConfigBytes = 16u << 20;

/// Length of the UTF-8 sequence starting at text[i] (1-4), or 0 if it is not valid UTF-8 (RFC 3629: no overlong
/// forms, no surrogates, nothing above U+10FFFF).
std::size_t utf8_sequence_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return length;
}

/// A config must be valid UTF-8 (with or without a BOM) without control characters other than tab, line feed and
/// carriage return: a NUL or invalid byte in a name would reach summary.json and make it unreadable.
void check_config_text(std::string_view text, const std::string& shown, std::string_view what) {
  const auto starts = [&](std::string_view bom) { return text.substr(0, bom.size()) == bom; };
  // UTF-16 and UTF-32 are refused: yaml-cpp would decode them, but the checks below (and those of
  // check_document_roots, which keep yaml-cpp out of an endless loop) read UTF-8.
  if (starts("\xFF\xFE") || starts("\xFE\xFF") || starts(std::string_view("\0\0\xFE\xFF", 4)))
    throw InputError({shown}, "",
                     "the " + std::string(what) + " is UTF-16 or UTF-32 (it starts with a byte order mark)",
                     "save the file as UTF-8");
  int line = 1, column = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t length = utf8_sequence_length(text, i);
    if (length == 0)
      throw InputError({shown, line, column}, "",
                       "the " + std::string(what) + " is not valid UTF-8 (byte " + std::to_string(c) + ")",
                       "save the file as UTF-8");
    if (length == 1 && ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F))
      throw InputError({shown, line, column}, "",
                       "the " + std::string(what) + " holds a control character (" +
                           (c == 0 ? std::string("NUL") : "byte " + std::to_string(c)) + ")",
                       "remove it: configs are text");
    if (c == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    i += length;
  }
}

/// True when `line` (without its indentation) opens a block mapping entry ("key: ...", "key:", "'key': ...") or a
/// block sequence item ("- ...", refused later with its own message).
bool opens_block_node(std::string_view line) {
  if (line == "-" || line.starts_with("- ")) return true;
  std::size_t i = 0;
  if (line.front() == '"' || line.front() == '\'') {
    const std::size_t close = line.find(line.front(), 1);
    if (close == std::string_view::npos) return false;
    i = close + 1;
    while (i < line.size() && line[i] == ' ') ++i;
    return i < line.size() && line[i] == ':' && (i + 1 == line.size() || line[i + 1] == ' ');
  }
  if (std::string_view(",[]{}#&*!|>%@`?:-").find(line.front()) != std::string_view::npos) return false;
  for (; i < line.size(); ++i) {
    if (line[i] == '#' && i > 0 && line[i - 1] == ' ') return false;
    if (line[i] == ':' && (i + 1 == line.size() || line[i + 1] == ' ' || line[i + 1] == '\t')) return true;
  }
  return false;
}

/// True when a node can begin right after `before` (the line up to a bracket, outside a flow collection): at the
/// start of the line, after a block indicator ("key: ", "- ", "? ") or after a node property ("&anchor ", "!tag ").
/// A bracket glued to the text before it ("t{", "key:{") is part of a plain scalar.
bool begins_node(std::string_view before) {
  while (true) {
    const std::size_t last = before.find_last_not_of(" \t");
    if (last == std::string_view::npos) return true;
    if (last + 1 == before.size()) return false;
    const std::size_t space = before.find_last_of(" \t", last);
    const std::size_t word_start = space == std::string_view::npos ? 0 : space + 1;
    const std::string_view word = before.substr(word_start, last + 1 - word_start);
    if (word.back() == ':' || word == "-" || word == "?") return true;
    if (word.front() != '&' && word.front() != '!') return false;
    before = before.substr(0, word_start);
  }
}

/// The position after the blanks and node properties ("&anchor", "!tag") that start at `token` in `line`.
std::size_t skip_blanks_and_properties(std::string_view line, std::size_t token) {
  while (token < line.size() && (line[token] == ' ' || line[token] == '\t')) ++token;
  while (token < line.size() && (line[token] == '&' || line[token] == '!')) {
    while (token < line.size() && line[token] != ' ' && line[token] != '\t' && line[token] != ',') ++token;
    while (token < line.size() && (line[token] == ' ' || line[token] == '\t')) ++token;
  }
  return token;
}

/// True when a quote after `before` (the line up to it) opens a quoted scalar: where a node begins, or inside a
/// flow collection after '[', '{', ',' or ':'.
bool opens_quoted_scalar(std::string_view before, bool in_flow) {
  if (!in_flow) return begins_node(before);
  const std::size_t last = before.find_last_not_of(" \t");
  return last == std::string_view::npos || std::string_view("[{,:").find(before[last]) != std::string_view::npos;
}

/// yaml-cpp 0.7 loops forever, allocating until memory runs out, on a document whose root is not a block node and
/// is followed by a ',' (",", "[a],", "\"x\",", "&a ,": found by fuzz_run_config; tests/bad_inputs has them). A
/// chopsim file is 'key: value' lines, so every document must open with such a line: checked here, before yaml-cpp.
void check_document_roots(std::string_view text, const std::string& shown, std::string_view what) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // UTF-8 byte order mark
  bool expecting_root = true;
  int line_number = 0;
  int flow_depth = 0;            // [ and { open, ] and } close (outside quotes and comments)
  int block_scalar_indent = -1;  // >= 0: inside a block scalar opened on a line of this indentation
  char open_quote = 0;           // the quote of a quoted scalar that continues on the next line
  // A ',' after a closing quote (blanks and node properties between), outside a flow collection: yaml-cpp 0.7 loops on
  // it as on a ',' opening a line. `after_quote` is the position after the quote in `line`.
  const auto refuse_comma_after_quote = [&](std::string_view line, std::size_t after_quote) {
    const std::size_t token = skip_blanks_and_properties(line, after_quote);
    if (flow_depth <= 0 && token < line.size() && line[token] == ',')
      throw InputError({shown, line_number, static_cast<int>(token) + 1}, "",
                       "a ',' after a quoted value of the " + std::string(what) + ", outside a [list] or {mapping}",
                       "remove the ',' or put the list in brackets");
  };
  const auto track = [&](std::string_view line, std::size_t indent) {
    char quote = open_quote;
    for (std::size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quote != 0) {
        if (quote == '"' && c == '\\') {
          ++i;  // an escape inside double quotes ("\"" does not close them)
        } else if (c == quote) {
          quote = 0;
          // After a quoted scalar outside a flow collection, a ',' (after node properties or not) is the same
          // endless loop of yaml-cpp 0.7 as at the start of a line: "'a'  &x, 2" (fuzz_run_config, 2026-11-27,
          // the quoted scalar spanning two lines).
          refuse_comma_after_quote(line, i + 1);
        }
      } else if ((c == '"' || c == '\'') && opens_quoted_scalar(line.substr(0, i), flow_depth > 0)) {
        // (An apostrophe inside a plain scalar, "Bob's", opens nothing.)
        quote = c;
      } else if (c == '#' && (i == 0 || line[i - 1] == ' ')) {
        line = line.substr(0, i);
        break;
      } else if (c == '[' || c == '{') {
        // Inside a flow collection every bracket is structure; outside one, a bracket opens a collection only
        // where a node begins ("key: {", "- [", "&anchor {"): in "t{: false" it is part of a plain scalar, and
        // counting it let a later ',' line through to yaml-cpp's endless loop (fuzz_run_config in CI, 2026-11-27).
        if (flow_depth > 0 || begins_node(line.substr(0, i))) ++flow_depth;
      } else if ((c == ']' || c == '}') && flow_depth > 0) {
        --flow_depth;
      }
    }
    open_quote = quote;
    const std::size_t last = line.find_last_not_of(" \t");
    if (last != std::string_view::npos && flow_depth <= 0) {
      // "key: |", "key: >-", "- |2": the lines below, more indented, are a block scalar.
      std::size_t k = last;
      while (k > 0 && (line[k] == '-' || line[k] == '+' || std::isdigit(static_cast<unsigned char>(line[k])))) --k;
      if ((line[k] == '|' || line[k] == '>') && k > 0 && line[k - 1] == ' ')
        block_scalar_indent = static_cast<int>(indent);
    }
  };
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    // Block scalar content ("key: |" and its more-indented lines) is text, not YAML structure.
    const std::size_t indent = line.find_first_not_of(" \t");
    if (block_scalar_indent >= 0) {
      if (indent == std::string_view::npos || static_cast<int>(indent) > block_scalar_indent) continue;
      block_scalar_indent = -1;
    }
    if (line.starts_with("---") || line.starts_with("...")) {
      expecting_root = true;
      line.remove_prefix(3);
    } else if (!expecting_root) {
      // A ',' opening a line outside a flow collection, alone or after node properties ("&a,", "!t ,"): yaml-cpp
      // 0.7 can loop forever on it (fuzz_run_config; the properties' case in a 1-hour run, 2026-11-27). A line that
      // continues a quoted scalar is text (track() checks what follows its closing quote).
      // Whatever the quote state: a line that opens with a quote, then blanks, node properties and a ','
      // ("'  &a, 1"), is refused. It closes a quoted scalar that started lines above, and the scan of quotes cannot
      // always tell where yaml-cpp saw one start ('"' inside a plain scalar continued over lines: fuzz_run_config,
      // 2026-11-27).
      if (indent != std::string_view::npos && (line[indent] == '\'' || line[indent] == '"'))
        refuse_comma_after_quote(line, indent + 1);
      if (indent != std::string_view::npos && flow_depth <= 0 && open_quote == 0) {
        const std::size_t token = skip_blanks_and_properties(line, indent);
        if (token < line.size() && line[token] == ',')
          throw InputError({shown, line_number, static_cast<int>(indent) + 1}, "",
                           "a line of the " + std::string(what) + " starts with '" +
                               std::string(line.substr(indent, token + 1 - indent)) +
                               "': a ',' outside a [list] or {mapping}",
                           "remove the ',' or put the list in brackets");
      }
      // A '%' opening a line inside a document (a directive belongs before '---'; no plain value starts with '%'):
      // yaml-cpp 0.7 loops forever, allocating, on it (fuzz_study, 2026-11-26). Its scanner reads a '%' in column 1
      // as a directive even inside an unclosed [ or { (fuzz_study in CI, 2026-11-26), so there the flow depth does
      // not matter.
      if (indent != std::string_view::npos && line[indent] == '%' && (flow_depth <= 0 || indent == 0))
        throw InputError({shown, line_number, static_cast<int>(indent) + 1}, "",
                         "a line of the " + std::string(what) + " starts with '%' inside the document",
                         "quote the value ('%...') or remove the line (YAML directives go before '---')");
      track(line, indent);
      continue;
    } else if (line.starts_with("%")) {
      continue;  // a directive (%YAML 1.2) before '---'
    }
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') continue;
    if (!opens_block_node(line.substr(first)))
      throw InputError({shown, line_number, static_cast<int>(first) + 1}, "",
                       "the " + std::string(what) + " must start with 'key: value' lines; this line starts with '" +
                           std::string(line.substr(first, std::min<std::size_t>(20, line.size() - first))) + "'",
                       "write the file as 'key: value' lines (see docs/configs.md)");
    expecting_root = false;
    track(line, first);
  }
}

/// Where the second document of a YAML stream starts, if it has one. YAML::LoadAll is not used: yaml-cpp 0.7's parser,
/// on a token that no node starts with (a ',' outside a flow collection, ...), reports one more empty document without
/// consuming the token, so LoadAll collects empty documents until memory runs out (jbeder/yaml-cpp#1040; fixed after
/// 0.7 by jbeder/yaml-cpp#1319). Asking for two documents at most bounds the parse whatever the input: the variants
/// that fuzz_run_config found one by one (check_document_roots gives them clearer messages) all end here. The caller
/// then parses the text again with YAML::Load: the node builder LoadAll uses is not part of yaml-cpp's public API, and
/// a config is a few KB.
std::optional<YAML::Mark> second_document_start(const std::string& text) {
  class DocumentStarts final : public YAML::EventHandler {
   public:
    std::vector<YAML::Mark> starts;
    void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
  };
  std::istringstream stream(text);
  YAML::Parser parser(stream);
  DocumentStarts documents;
  while (documents.starts.size() < 2 && parser.HandleNextDocument(documents)) {
  }
  if (documents.starts.size() < 2) return std::nullopt;
  return documents.starts[1];
}

}  // namespace

YAML::Node load_data_file(const fs::path& path, std::string_view fix) {
  try {
    return YAML::LoadFile(path.string());
  } catch (const YAML::Exception& error) {
    throw InputError(SourceLocation{path.string(), error.mark.line + 1, error.mark.column + 1}, "", error.msg,
                     std::string(fix));
  }
}

YAML::Node load_yaml_file(const fs::path& path, std::string_view what) {
  const std::string shown = display_path(path);
  std::error_code error;
  if (!fs::exists(path, error)) {
    const fs::path absolute = fs::absolute(path, error);
    throw InputError({shown}, "", std::string(what) + " not found: looked at " + absolute.lexically_normal().string(),
                     "check the path and the file name (configs are '.yaml' files)");
  }
  if (fs::is_directory(path, error))
    throw InputError({shown}, "", std::string(what) + " is a directory, not a file", "give the path of a .yaml file");
  // A device or a pipe (`chopsim run /dev/zero`) would be read until memory runs out.
  if (!fs::is_regular_file(path, error))
    throw InputError({shown}, "", std::string(what) + " is not a regular file (a device, a pipe or a socket)",
                     "give the path of a .yaml file");
  if (const auto size = fs::file_size(path, error); !error && size > kLargestConfigBytes)
    throw InputError({shown}, "",
                     std::string(what) + " is " + std::to_string(size) + " bytes; configs are a few KB (at most " +
                         std::to_string(kLargestConfigBytes) + " bytes are read)",
                     "give the path of a chopsim YAML config");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError({shown}, "", "cannot open the " + std::string(what) + " for reading",
                     "check the file's permissions");
  std::ostringstream text;
  text << in.rdbuf();
  check_config_text(text.view(), shown, what);
  check_document_roots(text.view(), shown, what);

  YAML::Node document;
  std::optional<YAML::Mark> second_document;
  try {
    const std::string content = text.str();
    second_document = second_document_start(content);
    document = YAML::Load(content);  // the first document only
  } catch (const YAML::Exception& e) {
    SourceLocation where{shown, 0, 0};
    if (!e.mark.is_null()) where = {shown, e.mark.line + 1, e.mark.column + 1};
    throw InputError(where, "", "YAML syntax error: " + e.msg,
                     "correct the YAML at this position (indentation, a ':' after each key, matching quotes and "
                     "brackets)");
  }
  if (second_document)
    throw InputError(SourceLocation{shown, second_document->line + 1, second_document->column + 1}, "",
                     "the " + std::string(what) +
                         " holds more than one YAML document: a second one starts here ('---', or text that is not "
                         "part of the first document's 'key: value' lines)",
                     "keep one document per file");
  if (document.IsNull())
    throw InputError({shown}, "", "the " + std::string(what) + " is empty",
                     "write 'key: value' lines (see docs/configs.md)");
  return document;
}

YAML::Node apply_overrides(const YAML::Node& root, const std::vector<ConfigOverride>& overrides,
                           const std::string& shown) {
  YAML::Node copy = YAML::Clone(root);
  for (const ConfigOverride& o : overrides) {
    YAML::Node value;
    try {
      // One line of UTF-8, parsed as the value of a key: a bare document root is where yaml-cpp can loop forever
      // (check_document_roots).
      if (o.value.find_first_of("\n\r") != std::string::npos)
        throw InputError({o.origin}, o.key, "the value spans several lines", "give the value on one line");
      check_config_text(o.value, o.origin, "value");
      value = YAML::Load("v: " + o.value)["v"];
    } catch (const YAML::Exception& e) {
      throw InputError({o.origin}, o.key, "the value '" + o.value + "' is not YAML: " + e.msg,
                       "quote text, write lists as [1, 2] and mappings as {key: value}");
    }
    std::vector<std::string> parts;
    for (std::size_t start = 0;;) {
      const std::size_t dot = o.key.find('.', start);
      parts.push_back(o.key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    // Walk with nodes that alias the copy (YAML::Node assignment rebinds; operator[] on a mapping aliases).
    std::vector<YAML::Node> path{copy};
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      YAML::Node next = path.back()[parts[i]];
      if (next.IsDefined() && !next.IsNull() && !next.IsMap()) {
        std::string where;
        for (std::size_t k = 0; k <= i; ++k) where += (k ? "." : "") + parts[k];
        throw InputError({o.origin}, o.key,
                         "'" + where + "' in " + shown + " is " +
                             (next.IsScalar() ? "'" + next.Scalar() + "' (a name or a value)" : "a list") +
                             ", not a mapping whose '" + parts[i + 1] + "' could be set",
                         "override '" + where + "' itself, or write it as a mapping in the run file");
      }
      if (!next.IsDefined() || next.IsNull()) {
        path.back()[parts[i]] = YAML::Node(YAML::NodeType::Map);
        next = path.back()[parts[i]];
      }
      path.push_back(next);
    }
    path.back()[parts.back()] = value;
  }
  return copy;
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  auto distance = [](std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
      std::size_t diagonal = row[0];
      row[0] = i;
      for (std::size_t j = 1; j <= b.size(); ++j) {
        const std::size_t above = row[j];
        const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + cost});
        diagonal = above;
      }
    }
    return row[b.size()];
  };
  std::string best;
  std::size_t best_distance = 3;  // at most two edits
  for (const auto& candidate : candidates) {
    const std::size_t d = distance(word, candidate);
    if (d < best_distance && d < std::max<std::size_t>(word.size(), 2)) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace chopsim::config_detail
