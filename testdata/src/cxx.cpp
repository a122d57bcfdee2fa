// cxx.cpp: exceptions thrown and caught across frames, RAII, templates
// and inline functions in COMDAT groups, virtual calls.
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>
#include <memory>

struct Guard {
	const char *name;
	explicit Guard(const char *n) : name(n) {}
	~Guard() { std::printf("unwind %s\n", name); }
};

struct Shape {
	virtual ~Shape() = default;
	virtual double area() const = 0;
};
struct Square : Shape {
	double s;
	explicit Square(double s) : s(s) {}
	double area() const override { return s * s; }
};
struct Circle : Shape {
	double r;
	explicit Circle(double r) : r(r) {}
	double area() const override { if (r < 0) throw std::domain_error("negative radius"); return 3.14159 * r * r; }
};

template <typename T> T checked_sum(const std::vector<T> &v) {
	Guard g("checked_sum");
	T s{};
	for (const auto &x : v) {
		if (x < 0) throw std::out_of_range("negative element");
		s += x;
	}
	return s;
}

static int level3(int x) {
	Guard g("level3");
	if (x % 4 == 1) throw std::runtime_error("odd " + std::to_string(x));
	if (x % 4 == 2) throw x;
	return x * 10;
}
static int level2(int x) {
	Guard g("level2");
	try {
		return level3(x) + 1;
	} catch (int e) {
		std::printf("level2 caught int %d, rethrowing\n", e);
		throw;
	}
}

int main() {
	long total = 0;
	for (int i = 0; i < 8; i++) {
		try {
			total += level2(i);
		} catch (const std::exception &e) {
			std::printf("main caught %s\n", e.what());
		} catch (int e) {
			std::printf("main caught int %d\n", e);
		}
	}
	std::vector<std::unique_ptr<Shape>> shapes;
	for (int i = -2; i < 6; i++) {
		if (i % 2) shapes.emplace_back(new Circle(i));
		else shapes.emplace_back(new Square(i));
	}
	double area = 0;
	for (auto &s : shapes) {
		try { area += s->area(); } catch (const std::domain_error &e) { std::printf("skip: %s\n", e.what()); }
	}
	try {
		std::printf("sum %d\n", checked_sum(std::vector<int>{1, 2, 3, -4}));
	} catch (const std::out_of_range &e) {
		std::printf("out of range: %s\n", e.what());
	}
	std::printf("total %ld area %.2f\n", total, area);
}
