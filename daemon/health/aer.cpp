#include "health/aer.hpp"

#include <charconv>

namespace p2pnode::health {

const char* to_string(AerSeverity s) {
  switch (s) {
    case AerSeverity::correctable: return "correctable";
    case AerSeverity::nonfatal: return "nonfatal";
    case AerSeverity::fatal: break;
  }
  return "fatal";
}

const char* aer_file_name(AerSeverity s) {
  switch (s) {
    case AerSeverity::correctable: return "aer_dev_correctable";
    case AerSeverity::nonfatal: return "aer_dev_nonfatal";
    case AerSeverity::fatal: break;
  }
  return "aer_dev_fatal";
}

Result<AerCounts> decode_aer_stats(std::string_view text) {
  AerCounts out;
  std::optional<std::uint64_t> total;
  std::uint64_t sum = 0;
  int line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t eol = std::min(text.find('\n', pos), text.size());
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
      line.remove_suffix(1);
    }
    if (line.empty()) { continue; }
    const std::size_t sp = line.find(' ');
    auto bad = [&](const std::string& why) {
      return Error{"line " + std::to_string(line_no) + " '" + std::string(line) + "': " + why +
                   "; expected 'NAME COUNT' (e.g. 'RxErr 0')"};
    };
    if (sp == std::string_view::npos || sp == 0) { return bad("no count"); }
    const std::string_view name = line.substr(0, sp);
    std::string_view num = line.substr(sp + 1);
    while (!num.empty() && num.front() == ' ') { num.remove_prefix(1); }
    std::uint64_t v = 0;
    const auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
    if (num.empty() || ec != std::errc() || ptr != num.data() + num.size()) { return bad("the count is not a number"); }
    if (name.rfind("TOTAL_", 0) == 0) {
      total = v;
      continue;
    }
    out.by_name[std::string(name)] = v;
    sum += v;
  }
  if (out.by_name.empty() && !total) { return Error{"empty: expected 'NAME COUNT' lines and a TOTAL_ERR_* line"}; }
  out.total = total.value_or(sum);
  return out;
}

}  // namespace p2pnode::health
