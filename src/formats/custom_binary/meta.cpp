#include "formats/custom_binary/meta.hpp"

#include <limits>
#include <unordered_map>

#include "weightloader/error.hpp"

namespace wl::custom_binary {
namespace {

bool is_blank(std::string_view line) {
  return line.find_first_not_of(" \t") == std::string_view::npos;
}

[[noreturn]] void fail(const std::string& file, size_t line_no, std::string_view line, const std::string& what) {
  throw Error(ErrorCode::MetaLineInvalid,
              "line " + std::to_string(line_no) + " '" + std::string(line) + "': " + what +
                  " (expected `name:d0,d1,...`)",
              file);
}

// One dim: decimal digits only, fitting in u64.
uint64_t parse_dim(std::string_view text, size_t index, const std::string& file, size_t line_no,
                   std::string_view line) {
  const std::string where = "dim " + std::to_string(index);
  if (text.empty()) fail(file, line_no, line, where + " is empty");
  if (text.size() > 1 && text[0] == '-' && text.find_first_not_of("0123456789", 1) == std::string_view::npos)
    fail(file, line_no, line, where + " '" + std::string(text) + "' is negative");
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') fail(file, line_no, line, where + " '" + std::string(text) + "' is not a number");
    const uint64_t digit = uint64_t(c - '0');
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10)
      fail(file, line_no, line, where + " '" + std::string(text) + "' overflows u64");
    value = value * 10 + digit;
  }
  return value;
}

MetaEntry parse_line(std::string_view line, size_t line_no, const std::string& file) {
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) fail(file, line_no, line, "missing ':'");
  if (line.find(':', colon + 1) != std::string_view::npos) fail(file, line_no, line, "more than one ':'");
  MetaEntry entry;
  entry.name = std::string(line.substr(0, colon));
  entry.line = line_no;
  if (entry.name.empty()) fail(file, line_no, line, "empty tensor name");
  // `name:` with nothing after the colon is a rank-0 scalar (one value in model.bin).
  std::string_view dims = line.substr(colon + 1);
  if (dims.empty()) return entry;
  size_t index = 0;
  while (true) {
    const size_t comma = dims.find(',');
    entry.shape.push_back(parse_dim(dims.substr(0, comma), index++, file, line_no, line));
    if (comma == std::string_view::npos) break;
    dims.remove_prefix(comma + 1);
  }
  return entry;
}

}  // namespace

std::vector<MetaEntry> parse_meta(std::string_view text, const std::string& file) {
  std::vector<MetaEntry> entries;
  std::unordered_map<std::string, size_t> first_line;  // name -> line it was declared on
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (is_blank(line)) continue;
    MetaEntry entry = parse_line(line, line_no, file);
    auto [it, inserted] = first_line.emplace(entry.name, line_no);
    if (!inserted)
      throw Error(ErrorCode::DuplicateTensorName,
                  "declared on line " + std::to_string(it->second) + " and again on line " + std::to_string(line_no),
                  file, entry.name);
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace wl::custom_binary
