// Errors as values: functions that can fail on input return Expected<T> or Status with a
// message a user can act on. The CLI turns an error into one line and exit code 2.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace pipescope {

struct Error {
  Error() = default;
  // Implicit, so that `return Error("...")` and `return Error{"..."}` both read naturally.
  Error(std::string text) : message(std::move(text)) {}  // NOLINT(google-explicit-constructor)
  std::string message;
};

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : storage_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Expected(Error error) : storage_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return storage_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(storage_); }
  const T& value() const& { return std::get<0>(storage_); }
  T&& value() && { return std::get<0>(std::move(storage_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { return std::get<1>(storage_); }

 private:
  std::variant<T, Error> storage_;
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : failed_(true), error_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  static Status Ok() { return {}; }
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return error_; }

 private:
  bool failed_ = false;
  Error error_;
};

}  // namespace pipescope
