// Exercises libstdc++ through its virtual calls (streams, locale facets,
// std::function, regex, exceptions) for e2e TestDispatch's libstdcxx
// case: linked against libstdc++.a rewritten by hijack (whose virtual
// tail calls, jmp *0x10(%rax), are unresolved indirect jumps) it must
// print what it prints against the original.
#include <iostream>
#include <sstream>
#include <iomanip>
#include <map>
#include <vector>
#include <string>
#include <algorithm>
#include <stdexcept>
#include <locale>
#include <regex>
#include <functional>
#include <memory>
int main() {
  std::ostringstream os;
  std::map<std::string, int> m;
  for (int i = 0; i < 2000; i++) {
    os.str("");
    os << std::hex << std::setw(6) << std::setfill('0') << i * 7919 << ' ' << std::dec << std::fixed << std::setprecision(3) << i / 7.0;
    m[os.str()] += i;
  }
  long sum = 0;
  for (auto &kv : m) sum += kv.second * (long)kv.first.size();
  std::vector<std::string> v;
  for (int i = 0; i < 500; i++) v.push_back(std::to_string(i * 37 % 1009));
  std::sort(v.begin(), v.end());
  std::string all;
  for (auto &s : v) all += s;
  std::regex re("([0-9]+)7([0-9])");
  std::smatch sm;
  int matches = 0;
  std::string rest = all.substr(0, 400);
  while (std::regex_search(rest, sm, re)) { matches++; rest = sm.suffix(); }
  int caught = 0;
  for (int i = 0; i < 100; i++) {
    try { if (i % 3 == 0) throw std::runtime_error("x" + std::to_string(i)); (void)std::stoi(i % 5 ? "12" : "zz"); }
    catch (const std::invalid_argument &) { caught += 2; }
    catch (const std::exception &e) { caught += e.what()[1] - '0'; }
  }
  std::istringstream is("3.5 7 hello 0x1f");
  double d; int k; std::string w; int h;
  is >> d >> k >> w >> std::hex >> h;
  std::wostringstream wos; wos << L"wide " << 42 << L' ' << 3.25;
  std::function<int(int)> fn = [&](int x) { return x * k; };
  auto sp = std::make_shared<std::vector<int>>(100, 3);
  std::cout << sum << ' ' << all.size() << ' ' << matches << ' ' << caught << ' ' << d << k << w << h << ' ' << wos.str().size() << ' ' << fn(6) << ' ' << sp->size() << std::endl;
  std::cout << std::use_facet<std::numpunct<char>>(std::locale::classic()).decimal_point() << std::endl;
  return 0;
}
