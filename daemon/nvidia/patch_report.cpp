#include "nvidia/patch_report.hpp"

#include <algorithm>
#include <charconv>

#include "nvidia/core.hpp"

namespace p2pnode::nvidia {
namespace {

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  for (std::size_t pos = 0; pos < text.size();) {
    const auto nl = text.find('\n', pos);
    out.push_back(text.substr(pos, (nl == std::string_view::npos ? text.size() : nl) - pos));
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
  }
  return out;
}

bool starts(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

long number_at(std::string_view s) {
  long n = 0;
  std::from_chars(s.data(), s.data() + s.size(), n);
  return n;
}

// "'a b.c'" -> "a b.c" (patch quotes a name with blanks or odd characters).
std::string unquote(std::string_view s) {
  if (s.size() >= 2 && s.front() == '\'' && s.back() == '\'') { s = s.substr(1, s.size() - 2); }
  return std::string(s);
}

// "x/kernel-open/a.c\t2024-…" -> "kernel-open/a.c" (-p1).
std::string strip1(std::string_view field) {
  field = field.substr(0, field.find('\t'));
  while (!field.empty() && (field.back() == ' ' || field.back() == '\r')) { field.remove_suffix(1); }
  if (field == "/dev/null") { return {}; }
  const auto slash = field.find('/');
  return slash == std::string_view::npos ? std::string(field) : std::string(field.substr(slash + 1));
}

void add(std::vector<std::string>& v, std::string s) {
  if (!s.empty() && std::find(v.begin(), v.end(), s) == v.end()) { v.push_back(std::move(s)); }
}

}  // namespace

PatchOutcome read_patch_output(std::string_view out) {
  PatchOutcome o;
  std::string file;
  for (const auto line : lines_of(out)) {
    if (starts(line, "patching file ")) {
      file = unquote(line.substr(14));
    } else if (starts(line, "Hunk #")) {
      const auto rest = line.substr(6);
      const auto sp = rest.find(' ');
      if (sp == std::string_view::npos) { continue; }
      const auto verdict = rest.substr(sp + 1);
      if (starts(verdict, "FAILED at ")) {
        o.failed.push_back({file, static_cast<int>(number_at(rest)), number_at(verdict.substr(10))});
      } else if (verdict.find(" with fuzz ") != std::string_view::npos) {
        ++o.fuzzed;
      }
    } else if (starts(line, "can't find file to patch")) {
      file.clear();
      o.missing.emplace_back();  // named by the "|+++ " line that follows
    } else if (starts(line, "|+++ ") || starts(line, "|--- ")) {
      if (!o.missing.empty() && o.missing.back().empty()) { o.missing.back() = strip1(line.substr(5)); }
    } else if (starts(line, "Reversed (or previously applied) patch detected")) {
      o.reversed = true;
    } else if (starts(line, "patch: **** ")) {
      o.garbage = std::string(line.substr(12));
    }
  }
  // A "can't find" whose header named /dev/null on one side and nothing usable on the other.
  o.missing.erase(std::remove(o.missing.begin(), o.missing.end(), std::string()), o.missing.end());
  return o;
}

std::vector<std::string> reject_hunks(std::string_view rej) {
  std::vector<std::string> out;
  std::string head;                 // the current file's "---"/"+++" lines
  long old_left = 0, new_left = 0;  // lines of the current hunk still to come
  for (const auto line : lines_of(rej)) {
    if (old_left > 0 || new_left > 0) {  // a hunk's body: its lines may start with "---" too
      out.back() += std::string(line) + "\n";
      const char c = line.empty() ? ' ' : line[0];
      if (c == '\\') {
        continue;  // "\ No newline at end of file"
      }
      if (c != '+') { --old_left; }
      if (c != '-') { --new_left; }
      continue;
    }
    if (starts(line, "--- ")) {
      head = std::string(line) + "\n";
    } else if (starts(line, "+++ ")) {
      head += std::string(line) + "\n";
    } else if (starts(line, "@@ ")) {
      out.push_back(head + std::string(line) + "\n");
      if (!hunk_counts(line, old_left, new_left)) { old_left = new_left = 0; }
    } else if (!out.empty() && starts(line, "\\")) {
      out.back() += std::string(line) + "\n";
    }
  }
  return out;
}

std::vector<std::string> patch_inputs(std::string_view diff) {
  std::vector<std::string> out = patched_paths(diff);  // the "+++" side (or "---" for a deletion)
  const auto lines = lines_of(diff);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto l = lines[i];
    long old_n = 0, new_n = 0;
    if (starts(l, "@@ ") && hunk_counts(l, old_n, new_n)) {  // skip the body, as patched_paths does
      while ((old_n > 0 || new_n > 0) && i + 1 < lines.size()) {
        const auto body = lines[++i];
        const char c = body.empty() ? ' ' : body[0];
        if (c == '\\') { continue; }
        if (c != '+') { --old_n; }
        if (c != '-') { --new_n; }
      }
    } else if (starts(l, "--- ") && i + 1 < lines.size() && starts(lines[i + 1], "+++ ")) {
      add(out, strip1(l.substr(4)));
    } else if (starts(l, "rename from ")) {
      add(out, std::string(l.substr(12)));
    } else if (starts(l, "copy from ")) {
      add(out, std::string(l.substr(10)));
    }
  }
  return out;
}

std::string describe_patch_failure(const std::string& patch, const std::string& tree, const PatchOutcome& o,
                                   const std::vector<std::string>& rejects, std::size_t max_lines) {
  std::string m = "patch " + patch + " does not apply to " + tree + ": ";
  if (!o.garbage.empty()) { return m + "patch says \"" + o.garbage + "\" (is it a unified diff?)"; }
  if (!o.missing.empty()) {
    m += "the tree has no " + o.missing.front();
    if (o.missing.size() > 1) { m += " (nor " + std::to_string(o.missing.size() - 1) + " other file(s) it changes)"; }
    m += ": a patch for another release, or made with another -p level (DKMS applies patches with -p1)";
    return m;
  }
  if (o.reversed && o.failed.empty()) {
    return m + "it is already in the tree (patch detects it as applied or reversed)";
  }
  if (o.failed.empty()) { return m + "patch failed without naming a hunk"; }
  const auto& f = o.failed.front();
  m += "hunk #" + std::to_string(f.hunk) + " of " + f.file + " FAILED at line " + std::to_string(f.line);
  std::vector<std::string> files;
  for (const auto& h : o.failed) { add(files, h.file); }
  m += " (" + std::to_string(o.failed.size()) + " hunk(s) failed in " + std::to_string(files.size()) + " file(s)";
  if (files.size() > 1) { m += ": " + files[0] + ", " + files[1] + (files.size() > 2 ? ", …" : ""); }
  m += "); the tree's code there differs from what the patch expects: use a patch made for this release";
  if (!rejects.empty()) {
    m += "\nthe hunk that failed:\n";
    std::size_t n = 0;
    const auto body = lines_of(rejects.front());
    for (const auto line : body) {
      if (n++ == max_lines) {
        m += "  … (" + std::to_string(body.size() - max_lines) + " more lines)\n";
        break;
      }
      m += "  " + std::string(line) + "\n";
    }
    if (!m.empty() && m.back() == '\n') { m.pop_back(); }
  }
  return m;
}

}  // namespace p2pnode::nvidia
