// Text as a C / C++ string literal, for the code tilejit writes (the CPU
// backend's units, the exported libraries' wrappers).
#pragma once

#include <string>

namespace tilejit {

/// `text` between double quotes, with quotes and backslashes escaped and
/// every other byte outside printable ASCII as three octal digits (so that a
/// following digit can never extend the escape).
inline std::string c_string_literal(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u >= 0x7f) {
      const char digits[] = {'\\', char('0' + (u >> 6)), char('0' + ((u >> 3) & 7)),
                             char('0' + (u & 7)), '\0'};
      out += digits;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace tilejit
