// gdrcopy.library: libgdrapi built from the profile's gdrcopy source (verified against its sha256,
// as for gdrdrv) with gdrcopy's own `make lib` (plain C: cc and make, which DKMS needs anyway; no
// CUDA), in a scratch directory, then placed where the self-test agent opens it
// (gdrcopy/library.hpp) with the source's sha256 beside it. Rebuilt when the profile's source changes.
#include <filesystem>
#include <span>

#include "actions/gdrcopy.hpp"
#include "gdrcopy/library.hpp"
#include "lifecycle/artifact.hpp"
#include "lifecycle/dkms_run.hpp"

namespace p2pnode::actions {
namespace {
using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kScratch = "/var/lib/p2pnode/gdrcopy/build";  // beside the versions, never one of them

std::optional<std::string> work(const GdrcopySpec& g, const sys::SysRoot& root) {
  const auto from = root.read_text(gdrcopy::library_identity_path(g));
  return gdrcopy::library_work(g, root.exists(gdrcopy::library_path(g)), from ? std::optional(*from) : std::nullopt);
}

// A release tarball has one top directory (gdrcopy-2.6/); a source directory is the top itself.
Result<std::string> source_top(const sys::SysRoot& root, const std::string& origin) {
  if (root.exists(sys::join(kScratch, "src/gdrapi.c"))) { return std::string(kScratch); }
  std::string top;
  for (const auto& name : root.list_dir(kScratch)) {
    if (root.exists(sys::join(kScratch, name, "src/gdrapi.c"))) { top = sys::join(kScratch, name); }
  }
  if (top.empty()) {
    return Error{"the gdrcopy source " + origin + " has no src/gdrapi.c: is it gdrcopy's release tarball?"};
  }
  return top;
}

struct BuiltLibrary {
  std::string name;   // libgdrapi.so.2.<minor>
  std::string bytes;  // an ELF shared object
};

// The one libgdrapi.so.2.<minor> that `make lib` wrote in TOP/src, read whole.
Result<BuiltLibrary> take_built(const sys::SysRoot& root, const std::string& top) {
  std::string built;
  for (const auto& name : root.list_dir(sys::join(top, "src"))) {
    const std::string path = sys::join(top, "src", name);
    const auto info = root.lstat(path);
    if (name.rfind("libgdrapi.so.2.", 0) == 0 && info && info->type == sys::FileType::regular) { built = path; }
  }
  if (built.empty()) { return Error{"make lib exited 0 but left no libgdrapi.so.2.<minor> in " + top + "/src"}; }
  BuiltLibrary lib{built.substr(built.rfind('/') + 1), {}};
  if (auto st = root.read_stream(built, 64 << 20, "a built libgdrapi",
                                 [&](std::span<const char> c) { lib.bytes.append(c.data(), c.size()); });
      !st) {
    return st.error();
  }
  if (lib.bytes.size() < 4 || lib.bytes.compare(0, 4,
                                                "\x7f"
                                                "ELF") != 0) {
    return Error{built + " is not an ELF shared object"};
  }
  return lib;
}

class GdrcopyLibrary final : public Action {
 public:
  std::string_view id() const override { return "gdrcopy.library"; }

  std::vector<Step> plan(const Profile& p, const Inventory&, const sys::SysRoot& root) const override {
    if (!p.gdrcopy) { return {}; }
    const auto why = work(*p.gdrcopy, root);
    if (!why) { return {}; }
    return {Step{id().data(),
                 gdrcopy::library_path(*p.gdrcopy),
                 "verify gdrcopy's source sha256, build libgdrapi with its `make lib` in " + std::string(kScratch) +
                     " and place it as " + gdrcopy::library_path(*p.gdrcopy) + " for the self-test's bar_copy case",
                 false,
                 false,
                 {{"why", *why}}}};
  }

  std::vector<StepResult> apply(ApplyContext& ctx, const Inventory&) const override {
    if (!ctx.profile.gdrcopy) { return {}; }
    const GdrcopySpec& g = *ctx.profile.gdrcopy;
    StepResult r{
        std::string(id()), gdrcopy::library_path(g), StepOutcome::unchanged, "", json::object(), json::object(), 0};
    const auto why = work(g, ctx.root);
    if (!why) {
      r.message = "libgdrapi " + g.version + " built from the profile's source is in place";
      return {r};
    }
    r.before["why"] = *why;
    const auto writes0 = ctx.root.write_count();
    std::uint64_t commands = 0;
    auto log = [&](std::string_view line) { ctx.log(id(), r.subject, line); };
    auto fail = [&](std::string msg) {
      r.outcome = StepOutcome::failed;
      r.message = std::move(msg);
      r.writes = ctx.root.write_count() - writes0 + commands;
      log("failed: " + r.message);
      return std::vector<StepResult>{r};
    };
    auto run = [&](std::vector<std::string> argv, std::chrono::seconds limit) {
      sys::Command c;
      c.argv = std::move(argv);
      c.timeout = limit;
      log(c.display());
      ++commands;
      return ctx.runner.run(c);
    };
    auto src = lifecycle::fetch_artifact(ctx.root, ctx.runner, g.source, "gdrcopy.source", log);
    if (!src) { return fail(src.error().message); }
    (void)ctx.root.remove_tree(kScratch);
    if (auto st = ctx.root.make_dirs(kScratch); !st) {
      return fail("making " + std::string(kScratch) + ": " + st.error().message);
    }
    const std::string from = ctx.root.host_path(src->path).string(), into = ctx.root.host_path(kScratch).string();
    const auto unpack = src->is_dir ? run({"cp", "-a", from + "/.", into}, std::chrono::minutes(2))
                                    : run(lifecycle::unpack_argv(from, into), std::chrono::minutes(2));
    if (!unpack.success()) { return fail("unpacking " + src->path + ": " + unpack.describe() + ": " + unpack.err); }
    if (auto st = ctx.root.strip_setid(kScratch); !st) {
      return fail("unpacking " + src->path + ": " + st.error().message);
    }
    const auto top = source_top(ctx.root, src->path);
    if (!top) { return fail(top.error().message); }
    const auto made = run({"make", "-C", ctx.root.host_path(*top).string(), "lib"}, std::chrono::minutes(5));
    if (!made.success()) {
      const std::string out = made.out + made.err;
      return fail("make lib " + made.describe() + " in " + *top + ": " +
                  out.substr(out.size() > 600 ? out.size() - 600 : 0));
    }
    const auto lib = take_built(ctx.root, *top);
    if (!lib) { return fail(lib.error().message); }
    if (auto st = ctx.root.make_dirs(gdrcopy::library_dir(g)); !st) { return fail(st.error().message); }
    // The library first, then the record of its source: an interrupted apply builds again.
    if (auto st = ctx.root.write_file_atomic(gdrcopy::library_path(g), lib->bytes, fs::perms(0755)); !st) {
      return fail(st.error().message);
    }
    if (auto st = ctx.root.write_file_atomic(gdrcopy::library_identity_path(g), src->sha256 + "\n"); !st) {
      return fail(st.error().message);
    }
    (void)ctx.root.remove_tree(kScratch);
    if (const auto left = work(g, ctx.root)) { return fail("after the build, " + *left); }
    r.outcome = StepOutcome::changed;
    r.writes = ctx.root.write_count() - writes0 + commands;
    r.after = {{"library", r.subject}, {"built_from", lib->name}, {"source_sha256", src->sha256}};
    r.message =
        "libgdrapi " + g.version + " built from " + src->path + " (" + lib->name + ") and placed as " + r.subject;
    log(r.message);
    return {r};
  }
};

}  // namespace

std::unique_ptr<Action> make_gdrcopy_library() { return std::make_unique<GdrcopyLibrary>(); }

}  // namespace p2pnode::actions
