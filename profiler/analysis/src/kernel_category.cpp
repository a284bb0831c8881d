#include "pipescope/analysis/kernel_category.h"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <regex>

namespace pipescope::analysis {
namespace {

// The part of `text` outside <...> and (...), with the "(anonymous namespace)" components gone.
std::string top_level(std::string_view text, size_t& first_template_open) {
  std::string out;
  int angle = 0, paren = 0;
  first_template_open = std::string_view::npos;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (paren == 0 && text.substr(i).starts_with("(anonymous namespace)")) {
      i += std::string_view("(anonymous namespace)").size() - 1;
      continue;
    }
    if (c == '<' && paren == 0) {
      if (angle == 0 && first_template_open == std::string_view::npos) first_template_open = i;
      ++angle;
    } else if (c == '>' && paren == 0 && angle > 0) {
      --angle;
    } else if (c == '(' && angle == 0) {
      if (paren == 0 && !out.empty()) return out;  // the parameters: the name ended
      ++paren;
    } else if (c == ')' && angle == 0 && paren > 0) {
      --paren;
    } else if (angle == 0 && paren == 0) {
      out += c;
    }
  }
  return out;
}

// The first template argument of the signature's outermost template, as text.
std::string first_argument(std::string_view text, size_t open) {
  int depth = 0;
  for (size_t i = open; i < text.size(); ++i) {
    if (text[i] == '<') ++depth;
    if (text[i] == '>' && --depth == 0) return std::string(text.substr(open + 1, i - open - 1));
    if (text[i] == ',' && depth == 1) return std::string(text.substr(open + 1, i - open - 1));
  }
  return "";
}

std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

bool generic_wrapper(const std::string& qualified, const std::string& base) {
  return base == "Kernel" || base == "Kernel2" || base == "device_kernel" ||
         (base == "kernel" && qualified.find("::") != std::string::npos);
}

std::string base_name(std::string_view signature, int depth) {
  size_t open = std::string_view::npos;
  std::string qualified = trim(top_level(signature, open));
  // A return type ("void ", "static void ") stands before the name.
  if (const size_t space = qualified.rfind(' '); space != std::string::npos)
    qualified = qualified.substr(space + 1);
  const size_t colons = qualified.rfind("::");
  std::string base = colons == std::string::npos ? qualified : qualified.substr(colons + 2);
  if (depth < 3 && open != std::string_view::npos && generic_wrapper(qualified, base)) {
    const std::string argument = trim(first_argument(signature, open));
    if (!argument.empty()) return base_name(argument, depth + 1);
  }
  return base;
}

// Where the name starts after a return type ("void ", "static __global__ void ": past the last
// space outside template arguments) and where its parameter list starts (the first '(' outside
// template arguments; npos when there is none), "(anonymous namespace)" being part of the name.
struct SignatureParts {
  size_t name = 0;
  size_t parameters = std::string_view::npos;
};

SignatureParts signature_parts(std::string_view text) {
  SignatureParts parts;
  int angle = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '(' && text.substr(i).starts_with("(anonymous namespace)")) {
      i += std::string_view("(anonymous namespace)").size() - 1;
    } else if (c == '<') {
      ++angle;
    } else if (c == '>' && angle > 0) {
      --angle;
    } else if (c == ' ' && angle == 0) {
      parts.name = i + 1;
    } else if (c == '(' && angle == 0) {
      parts.parameters = i;
      break;
    }
  }
  return parts;
}

// The outermost template argument list cut to its first argument ("<4, ...>"), or to "<...>"
// when even that is long.
std::string shorten_templates(const std::string& name, size_t limit) {
  const size_t open = name.find('<');
  if (name.size() <= limit || open == std::string::npos) return name;
  int depth = 0;
  size_t first_end = std::string::npos, close = std::string::npos;
  for (size_t i = open; i < name.size() && close == std::string::npos; ++i) {
    if (name[i] == '<') ++depth;
    if (name[i] == '>' && --depth == 0) close = i;
    if (name[i] == ',' && depth == 1 && first_end == std::string::npos) first_end = i;
  }
  if (close == std::string::npos) return name.substr(0, limit) + "...";
  const std::string head = name.substr(0, open + 1), tail = name.substr(close);
  if (first_end != std::string::npos && first_end - open <= limit / 2) {
    const std::string cut = head + name.substr(open + 1, first_end - open - 1) + ", ..." + tail;
    if (cut.size() <= limit) return cut;
  }
  return head + "..." + tail;
}

}  // namespace

std::string demangled_kernel_name(std::string_view name) {
  if (!name.starts_with("_Z")) return std::string(name);
  int status = 0;
  const std::string symbol(name);
  const std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && demangled != nullptr ? std::string(demangled.get()) : symbol;
}

std::string readable_kernel_name(std::string_view name) {
  constexpr size_t kLimit = 96;
  const std::string full = demangled_kernel_name(name);
  const SignatureParts parts = signature_parts(full);
  const size_t end = parts.parameters != std::string_view::npos && parts.parameters > parts.name
                         ? parts.parameters
                         : full.size();
  return shorten_templates(full.substr(parts.name, end - parts.name), kLimit);
}

std::string kernel_base_name(std::string_view signature) { return base_name(signature, 0); }

bool is_nccl_kernel(std::string_view name) {
  return name.starts_with("nccl") || name.find("ncclDevKernel") != std::string_view::npos ||
         name.find("ncclKernel") != std::string_view::npos;
}

const char* kernel_category(std::string_view signature) {
  if (is_nccl_kernel(signature)) return "nccl";
  struct Rule {
    const char* category;
    std::regex pattern;
  };
  static const Rule kRules[] = {
      {"attention",
       std::regex("flash|fmha|attention|attn|sdpa|softmax", std::regex::icase | std::regex::optimize)},
      {"embedding", std::regex("embedding", std::regex::icase | std::regex::optimize)},
      {"gemm", std::regex("gemm|gemv|cutlass|xmma|cublas|matmul|wgmma|^nvjet",
                          std::regex::icase | std::regex::optimize)},
      {"elementwise",
       std::regex("elementwise|vectorized|unrolled|reduce|norm|copy|fill|cat|index|scatter|gather|"
                  "multi_tensor_apply|foreach",
                  std::regex::icase | std::regex::optimize)},
  };
  const std::string base = kernel_base_name(demangled_kernel_name(signature));
  for (const Rule& rule : kRules)
    if (std::regex_search(base, rule.pattern)) return rule.category;
  return "other";
}

}  // namespace pipescope::analysis
