// Shapes (virtual calls) and intermediate frames that exceptions unwind through.
#include "cxx.h"
#include <cmath>

Shape::~Shape() {}

void Shape::check(double limit) const
{
	if (area() > limit)
		throw LimitError(name() + " too large: " + std::to_string((long)area()));
}

namespace {
struct Circle : Shape {
	double r;
	explicit Circle(double r) : r(r) {}
	double area() const override { return 3.14159265358979 * r * r; }
	std::string name() const override { return "circle(" + std::to_string((int)r) + ")"; }
};
struct Rect : Shape {
	double w, h;
	Rect(double w, double h) : w(w), h(h) {}
	double area() const override { return w * h; }
	std::string name() const override { return "rect(" + std::to_string((int)w) + "x" + std::to_string((int)h) + ")"; }
};
struct Square : Rect {
	explicit Square(double s) : Rect(s, s) {}
	std::string name() const override { return "square(" + std::to_string((int)w) + ")"; }
	void check(double limit) const override
	{
		Guard g("square-check");
		if (w < 0)
			throw AppError("negative square", 4);
		Rect::check(limit);
	}
};
} // namespace

std::unique_ptr<Shape> make_shape(int kind, double size)
{
	switch (kind % 3) {
	case 0:
		return std::make_unique<Circle>(size);
	case 1:
		return std::make_unique<Rect>(size, size / 2 + 1);
	default:
		return std::make_unique<Square>(size);
	}
}

double visit_all(const std::vector<std::unique_ptr<Shape>> &v, int depth)
{
	Guard g("visit" + std::to_string(depth));
	if (depth > 0)
		return visit_all(v, depth - 1) + 1;
	return total_area(v, 500.0);
}

int rethrow_through(int depth, int which)
{
	Guard g("rethrow" + std::to_string(depth));
	if (depth == 0) {
		throw_std(which);
		return -1;
	}
	try {
		return rethrow_through(depth - 1, which) + 1;
	} catch (const std::logic_error &e) {
		note(std::string("rethrow level ") + std::to_string(depth) + " saw logic_error: " + e.what());
		throw; // rethrow the same object
	} catch (...) {
		if (depth == 2) {
			note("level 2 translates unknown exception");
			try {
				throw;
			} catch (const std::exception &e) {
				throw AppError(std::string("translated: ") + typeid(e).name(), 9);
			}
		}
		throw;
	}
}
