#pragma once
// Result<T>: a value or an error message that gains "while …" context as it climbs.
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace p2pnode {

struct Error {
  std::string message;
  int code = 0;  // errno or an exit status where one applies, else 0

  // Prefixes context: "binding 0000:0b:00.0: while …: <message>".
  Error with_context(const std::string& context) const { return {context + ": " + message, code}; }
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit on purpose
  Result(Error error) : v_(std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  const Error& error() const { return std::get<1>(v_); }
  T value_or(T fallback) const { return ok() ? value() : std::move(fallback); }
  Result context(const std::string& c) const { return ok() ? *this : Result(error().with_context(c)); }

 private:
  std::variant<T, Error> v_;
};

// Status: success or an Error (Result<void>).
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : e_(std::move(e)) {}  // NOLINT
  static Status success() { return {}; }
  bool ok() const { return !e_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *e_; }
  Status context(const std::string& c) const { return ok() ? *this : Status(e_->with_context(c)); }

 private:
  std::optional<Error> e_;
};

}  // namespace p2pnode
