// Throw sites of the C++ exception test.
#include "cxx.h"
#include <cstdio>
#include <cstdlib>
#include <map>
#include <new>
#include <typeinfo>

Guard::Guard(std::string n) : name(std::move(n)) { note("+" + name); }
Guard::~Guard() { note("-" + name); }

int parse_number(const std::string &s, int line)
{
	Guard g("parse:" + s);
	if (s.empty())
		throw ParseError("empty number", line);
	int v = 0;
	for (char c : s) {
		if (c < '0' || c > '9')
			throw ParseError("bad digit '" + std::string(1, c) + "' in " + s, line);
		v = v * 10 + (c - '0');
		if (v > 100000)
			throw LimitError("number too large: " + s);
	}
	return v;
}

double total_area(const std::vector<std::unique_ptr<Shape>> &v, double limit)
{
	Guard g("total_area");
	double sum = 0;
	for (const auto &s : v) {
		s->check(limit); // virtual; may throw from shapes.cpp
		sum += s->area();
	}
	return sum;
}

static int depth_counter;

void deep_throw(int depth, int throw_at)
{
	Guard g("level" + std::to_string(depth));
	std::vector<std::string> local(depth + 1, "x");
	depth_counter += (int)local.size();
	if (depth == throw_at) {
		if (depth % 2)
			throw ParseError("thrown at depth " + std::to_string(depth), depth);
		throw LimitError("limit at depth " + std::to_string(depth));
	}
	deep_throw(depth + 1, throw_at);
	note("unreachable after depth " + std::to_string(depth));
}

void throw_int(int v)
{
	Guard g("throw_int");
	throw v;
}

void throw_std(int which)
{
	Guard g("throw_std" + std::to_string(which));
	switch (which) {
	case 0: {
		std::vector<int> v(3);
		(void)v.at(10); // std::out_of_range
		break;
	}
	case 1: {
		std::map<std::string, int> m;
		(void)m.at("missing");
		break;
	}
	case 2:
		throw std::bad_alloc();
	case 3: {
		struct B {
			virtual ~B() {}
		};
		struct D : B {};
		B b;
		(void)dynamic_cast<D &>(b); // std::bad_cast
		break;
	}
	default:
		throw std::logic_error("logic " + std::to_string(which));
	}
}

int noexcept_work(int n) noexcept
{
	// exceptions thrown and caught entirely inside a noexcept function
	int caught = 0;
	for (int i = 0; i < n; i++) {
		try {
			if (i % 3 == 0)
				throw i;
			if (i % 3 == 1)
				throw std::runtime_error("r" + std::to_string(i));
		} catch (int) {
			caught++;
		} catch (const std::exception &) {
			caught += 10;
		}
	}
	return caught;
}

std::vector<long> grow(int n, int fail_at)
{
	std::vector<long> v;
	size_t reallocs = 0;
	const long *data = nullptr;
	for (int i = 0; i < n; i++) {
		if (i == fail_at)
			throw LimitError("grow failed at " + std::to_string(i) + " after " + std::to_string(reallocs) + " reallocations");
		v.push_back((long)i * i);
		if (v.data() != data) {
			data = v.data();
			reallocs++;
		}
	}
	v.push_back((long)reallocs);
	return v;
}
