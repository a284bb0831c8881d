#include "text_format.h"

#include <cstdio>

namespace pipescope::cli {

std::string printf_string(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

std::string percent(double fraction) { return printf_string("%.1f%%", fraction * 100); }

std::string signed_percent(double fraction) { return printf_string("%+.1f%%", fraction * 100); }

std::string thousands(double value) {
  const std::string digits = printf_string("%.0f", value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && digits[i - 1] != '-' && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string right(const std::string& text, size_t width) {
  return text.size() >= width ? text : std::string(width - text.size(), ' ') + text;
}

std::string left(const std::string& text, size_t width) {
  return text.size() >= width ? text : text + std::string(width - text.size(), ' ');
}

std::string column(const std::string& text, size_t width) {
  return " " + right(text, width > 0 ? width - 1 : 0);
}

}  // namespace pipescope::cli
