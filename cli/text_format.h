// Number and column formatting shared by the commands' terminal tables.
#pragma once

#include <cstddef>
#include <string>

namespace pipescope::cli {

// printf-style formatting of one number, e.g. printf_string("%.1f", x).
std::string printf_string(const char* format, double value);
// A fraction as a percentage with one decimal: 0.1234 -> "12.3%", signed: "+12.3%" / "-4.0%".
std::string percent(double fraction);
std::string signed_percent(double fraction);
// A whole number with thousands separators: 1234567 -> "1,234,567".
std::string thousands(double value);
// `text` padded with spaces to `width`: right-aligned, or left-aligned.
std::string right(const std::string& text, size_t width);
std::string left(const std::string& text, size_t width);
// A table cell: `text` right-aligned in `width` characters after a separating space, so that
// neighbouring cells never run together however wide a value is.
std::string column(const std::string& text, size_t width);

}  // namespace pipescope::cli
