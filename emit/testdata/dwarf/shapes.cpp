// Test input for emit's debug information rewriting: templates, virtual
// functions, exceptions and inline functions in COMDAT groups.
#include <cstdio>
#include <stdexcept>
#include <vector>

template <typename T> struct Box {
	T v;
	explicit Box(T x) : v(x) {}
	T twice() const { return v + v; }
};

struct Shape {
	virtual ~Shape() {}
	virtual double area() const = 0;
};

struct Rect : Shape {
	double w, h;
	Rect(double a, double b) : w(a), h(b) {}
	double area() const override { return w * h; }
};

struct Sq : Shape {
	double s;
	explicit Sq(double a) : s(a) {}
	double area() const override
	{
		if (s < 0)
			throw std::invalid_argument("negative side");
		return s * s;
	}
};

template <typename T> T sum_all(const std::vector<T> &xs)
{
	T t{};
	for (const T &x : xs)
		t += x; // BREAK-TEMPLATE
	return t;
}

double total_area(const std::vector<Shape *> &shapes)
{
	double t = 0;
	for (Shape *s : shapes) {
		try {
			t += s->area();
		} catch (const std::invalid_argument &e) {
			std::printf("skip: %s\n", e.what());
		}
	}
	return t;
}

int main()
{
	std::vector<Shape *> v;
	for (int i = -2; i < 6; i++) {
		if (i % 2)
			v.push_back(new Rect(i, i + 1));
		else
			v.push_back(new Sq(i));
	}
	std::vector<int> ints;
	for (int i = 0; i < 10; i++)
		ints.push_back(Box<int>(i).twice());
	std::printf("%g %d %g\n", total_area(v), sum_all(ints), sum_all(std::vector<double>{1.5, 2.5}));
	for (Shape *s : v)
		delete s;
	return 0;
}
