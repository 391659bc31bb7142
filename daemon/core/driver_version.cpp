#include "core/driver_version.hpp"

namespace p2pnode {

std::optional<DriverVersion> DriverVersion::parse(std::string_view s) {
  DriverVersion v;
  v.text = std::string(s);
  std::size_t i = 0;
  while (true) {
    if (i >= s.size() || s[i] < '0' || s[i] > '9') {
      return std::nullopt;  // empty number, or a stray character
    }
    int n = 0;
    std::size_t digits = 0;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++digits) {
      if (digits >= 6) { return std::nullopt; }
      n = n * 10 + (s[i] - '0');
    }
    v.numbers.push_back(n);
    if (i == s.size()) { break; }
    if (s[i] != '.') { return std::nullopt; }
    ++i;
  }
  if (v.numbers.size() < 2 || v.numbers.size() > 4) { return std::nullopt; }
  return v;
}

int driver_branch_of(std::string_view s) {
  const auto v = DriverVersion::parse(s);
  return v ? v->branch() : 0;
}

int compare_driver_versions(std::string_view a, std::string_view b) {
  const auto x = DriverVersion::parse(a), y = DriverVersion::parse(b);
  if (!x || !y) {
    if (x) { return 1; }
    if (y) { return -1; }
    return a == b ? 0 : (a < b ? -1 : 1);
  }
  for (std::size_t i = 0; i < std::max(x->numbers.size(), y->numbers.size()); ++i) {
    const int p = i < x->numbers.size() ? x->numbers[i] : 0, q = i < y->numbers.size() ? y->numbers[i] : 0;
    if (p != q) { return p < q ? -1 : 1; }
  }
  return 0;
}

}  // namespace p2pnode
