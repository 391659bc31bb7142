#pragma once
// What a string from input (a profile, the config, a client) may look like before it reaches a
// file a shell or modprobe reads, a path, or a program's argument; and the one way p2pnode quotes a
// value for a shell. Pure: no I/O.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace p2pnode::grammar {

// The offset of the first control character: a byte below 0x20, 0x7f (DEL), or a C1 control
// (U+0080-U+009F, UTF-8 C2 80-9F); nullopt when none. `allow` lists control bytes let through (a
// description may hold "\n\t").
std::optional<std::size_t> find_control_char(std::string_view s, std::string_view allow = {});
// "U+000A (a newline)", "U+0085 (a C1 next-line)" for the control character at `at` of `s`.
std::string describe_control_char(std::string_view s, std::size_t at);

// A DKMS package or kernel module name: [a-z0-9][a-z0-9._+-]*, at most 64 bytes (no '/', no "..").
bool is_dkms_name(std::string_view s);
// An NVIDIA module option name: NVreg_[A-Za-z0-9_]+.
bool is_nvreg_key(std::string_view s);
// An NVreg_* value as modprobe reads it: [A-Za-z0-9_.,;:=+/@"-]+, at most 1024 bytes (no blanks,
// ', '#', '\' or control characters: modprobe.d splits on blanks and has no escapes for them; the
// renderer drops " and quotes the value itself).
bool is_nvreg_value(std::string_view s);
// A systemd unit name: [A-Za-z0-9_:@\\][A-Za-z0-9_:@\\.-]* ending in a unit type (.service, …),
// at most 255 bytes: never starting with '-' (systemctl would read an option).
bool is_unit_name(std::string_view s);
// A Debian package name: [a-z0-9][a-z0-9+.-]+.
bool is_debian_package(std::string_view s);
// An http:// or https:// URL with a host, of RFC 3986's characters less ' " ` \ $ and blanks
// (percent-encode those): it reaches curl's argv and, as a patch's file name, dkms.conf.
bool is_http_url(std::string_view s);
// A git repository: an https/http/ssh/git/file URL, user@host:path, or an absolute path, of the
// same characters as a URL; never starting with '-' (git would read an option), never git's
// <transport>::<address> form (ext:: runs the program it names, fd:: talks over a descriptor).
bool is_git_source(std::string_view s);
// A git branch or tag: [A-Za-z0-9][A-Za-z0-9._/+-]*, no "..", "//", "@{", trailing '/', '.' or ".lock".
bool is_git_ref(std::string_view s);
// An absolute path of [A-Za-z0-9._+@:/-], no "." or ".." component, at most 4096 bytes: safe to
// write inside single quotes and to pass as one argument.
bool is_safe_absolute_path(std::string_view s);
// A file name (one path component) of [A-Za-z0-9._+-], not "." or "..", not starting with '-'.
bool is_safe_file_name(std::string_view s);

// Whether `path`, normalised lexically, is `dir` itself's child (or deeper): a path built from a
// name must not climb out of the directory it was built in.
bool stays_under(const std::filesystem::path& dir, const std::filesystem::path& path);

// A URL as messages and logs may show it: user info, query and fragment dropped ("?…" marks the
// cut), so a signed URL's signature never reaches the API, the journal or a finding.
std::string redact_url(std::string_view url);
// Free text (a program's error, which may repeat the URL it was given) with the user info of every
// scheme://user:password@host in it dropped.
std::string redact_userinfo(std::string_view text);

// An option of NVIDIA's .run installer that driver.userspace.flags may add to
// `--silent --no-kernel-modules`: one of kInstallerFlags, none of which names a file or a path or
// touches DKMS (p2pnode owns the kernel module).
bool is_installer_flag(std::string_view s);
inline constexpr std::string_view kInstallerFlags[] = {"--no-drm",
                                                       "--no-x-check",
                                                       "--no-nouveau-check",
                                                       "--no-systemd",
                                                       "--no-opengl-files",
                                                       "--no-install-libglvnd",
                                                       "--install-libglvnd",
                                                       "--no-peermem",
                                                       "--no-nvidia-modprobe",
                                                       "--no-backup",
                                                       "--no-check-for-alternate-installs",
                                                       "--no-distro-scripts",
                                                       "--no-rpms",
                                                       "--no-wine-files",
                                                       "--install-compat32-libs",
                                                       "--no-install-compat32-libs",
                                                       "--no-libglx-indirect",
                                                       "--force-libglx-indirect",
                                                       "--no-glvnd-egl-client",
                                                       "--no-glvnd-glx-client",
                                                       "--no-kernel-module-source"};

// The value in single quotes, each embedded ' written '\'' : bash reads back exactly `v`.
// The one quoting function for every file a shell reads (dkms.conf, DKMS's framework.conf.d,
// GRUB's drop-in).
std::string shell_quote(std::string_view v);
// A comment line's text for a shell-read file: control characters become spaces, so a value can
// never end the comment and start a command.
std::string shell_comment_text(std::string_view v);
// Whether `v` survives DKMS's safe_source, which echoes every variable back inside "…" and sources
// that again: no control character, ` or ", a $ only before ) or | or at the end (a regex's anchor),
// a \ never before $ ` " \ or at the end.
bool survives_dkms_resource(std::string_view v);

}  // namespace p2pnode::grammar
