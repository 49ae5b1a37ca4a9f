// plait-schema-gen <schema.toml> <table> <struct name> <namespace> <out.hpp>
// Writes the typed settings of one schema (config/typed/typed_header.hpp). The output is
// rewritten only when its text changes, so an unchanged schema rebuilds nothing. A schema
// plait would refuse gives an #error header and a warning here (generated_header).
#include <exception>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "config/typed/typed_header.hpp"
#include "plait/sdk/error.hpp"

int main(int argc, char** argv) {
  if (argc != 6) {
    std::cerr << "usage: plait-schema-gen <schema.toml> <table> <struct name> <namespace> <out.hpp>\n";
    return 2;
  }
  const std::string schema_file = argv[1], table = argv[2], out_file = argv[5];
  try {
    std::ifstream in(schema_file);
    if (!in) throw plait::Error("plait-schema-gen: cannot read " + schema_file);
    std::stringstream text;
    text << in.rdbuf();
    std::string refused;
    const std::string header = plait::generated_header(text.str(), table, {argv[3], argv[4], schema_file}, refused);
    if (!refused.empty()) std::cerr << "warning: " << refused << " (" << out_file << " says so if included)\n";
    std::ifstream old(out_file);
    std::stringstream before;
    if (old) before << old.rdbuf();
    if (!old || before.str() != header) {
      std::ofstream out(out_file, std::ios::trunc);
      out << header;
      if (!out) throw plait::Error("plait-schema-gen: cannot write " + out_file);
    }
    return 0;
  } catch (const plait::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    if (!e.hint().empty()) std::cerr << "  hint: " << e.hint() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
  }
  return 1;
}
