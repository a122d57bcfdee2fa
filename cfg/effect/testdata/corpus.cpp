// corpus.cpp: C++ exceptions, virtual calls, RTTI, templates, lambdas.
#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

struct Base {
	virtual ~Base() = default;
	virtual long f(long) const = 0;
};
struct A : Base { long k; explicit A(long k) : k(k) {} long f(long x) const override { if (x < 0) throw std::runtime_error("neg"); return x * k; } };
struct B : Base { std::string s; explicit B(std::string s) : s(std::move(s)) {} long f(long x) const override { return x + (long)s.size(); } };

long run(const std::vector<std::unique_ptr<Base>> &v, long x) {
	long s = 0;
	for (auto &p : v) {
		try {
			s += p->f(x);
			if (auto *a = dynamic_cast<A *>(p.get())) s += a->k;
		} catch (const std::exception &e) {
			s -= (long)std::strlen(e.what());
		}
	}
	return s;
}

std::vector<int> sorted(std::vector<int> v, int k) {
	std::sort(v.begin(), v.end(), [k](int a, int b) { return (a ^ k) < (b ^ k); });
	v.erase(std::unique(v.begin(), v.end()), v.end());
	return v;
}

std::string join(const std::vector<std::string> &parts, char sep) {
	std::string r;
	for (size_t i = 0; i < parts.size(); i++) { if (i) r += sep; r += parts[i]; }
	return r;
}

int apply(const std::function<int(int)> &f, int n) {
	int s = 0;
	for (int i = 0; i < n; i++) s += f(i);
	return s;
}

int main() {
	std::vector<std::unique_ptr<Base>> v;
	v.push_back(std::make_unique<A>(3));
	v.push_back(std::make_unique<B>("xyz"));
	try {
		return (int)run(v, -1) + apply([](int i) { return i * i; }, 4) + (int)join({"a", "b"}, ',').size() + (int)sorted({3, 1, 2}, 1).size();
	} catch (...) {
		return 1;
	}
}
