// write_rules_table README.md: rewrites the table of rules between the
// README's marker lines from the embedded catalogue. Run it through
// `cmake --build build --target refresh_rules_readme`, which rebuilds the
// catalogue from rules/<name>.md first.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "catalogue_parse.h"
#include "gpudiag/catalogue.h"
#include "rules_table.h"

int main(int argc, char** argv) {
  using namespace gpudiag;
  if (argc != 2) {
    std::cerr << "usage: write_rules_table README.md\n";
    return 2;
  }
  const std::string path = argv[1];
  // A malformed entry is missing from catalogue(): a table written now would drop its row.
  if (!detail::embedded_catalogue_problems().empty()) {
    std::cerr << "write_rules_table: " << path << " left as it is: "
              << detail::embedded_catalogue_problems().front() << '\n';
    return 1;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "write_rules_table: cannot read " << path << '\n';
    return 1;
  }
  std::ostringstream readme;
  readme << in.rdbuf();
  in.close();
  const rules_readme::Spliced spliced =
      rules_readme::with_table(readme.str(), rules_readme::rules_table(catalogue()));
  if (!spliced.error.empty()) {
    std::cerr << "write_rules_table: " << path << ": " << spliced.error << '\n';
    return 1;
  }
  if (spliced.text == readme.str()) {
    std::cout << path << ": the table of " << catalogue().size() << " rules is up to date\n";
    return 0;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << spliced.text;
  out.close();
  if (!out) {
    std::cerr << "write_rules_table: cannot write " << path << '\n';
    return 1;
  }
  std::cout << path << ": the table now lists the " << catalogue().size() << " rules of the entries\n";
  return 0;
}
