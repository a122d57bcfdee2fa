// C++ exception test: throws in thrower.cpp/shapes.cpp caught here, several
// frames up, by base class, with RAII destructors logged along the way.
#include "cxx.h"
#include <algorithm>
#include <cstdio>
#include <exception>
#include <numeric>
#include <typeinfo>

static std::vector<std::string> events;
void note(const std::string &what) { events.push_back(what); }

static void flush_events(const char *title)
{
	std::printf("%s:", title);
	for (const auto &e : events)
		std::printf(" %s", e.c_str());
	std::printf("\n");
	events.clear();
}

static int failures;
#define EXPECT(c)                                                                                                      \
	do {                                                                                                           \
		if (!(c)) {                                                                                            \
			std::printf("EXPECT failed line %d: %s\n", __LINE__, #c);                                      \
			failures++;                                                                                    \
		}                                                                                                      \
	} while (0)

static void test_parse()
{
	const char *inputs[] = {"123", "", "12a4", "99999", "1000000", "42"};
	int line = 1;
	for (const char *in : inputs) {
		try {
			Guard g("main-parse");
			int v = parse_number(in, line);
			std::printf("parsed %s = %d\n", in, v);
		} catch (const ParseError &e) {
			std::printf("ParseError line %d code %d: %s\n", e.line, e.code, e.what());
		} catch (const AppError &e) { // by base class
			std::printf("%s code %d: %s\n", e.kind(), e.code, e.what());
		}
		line++;
	}
	flush_events("parse events");
}

static void test_deep()
{
	for (int at = 0; at < 6; at++) {
		try {
			deep_throw(0, at);
		} catch (const std::exception &e) { // catch by std base
			const AppError *ae = dynamic_cast<const AppError *>(&e);
			std::printf("deep %d: %s (%s, code %d)\n", at, e.what(), ae ? ae->kind() : "?", ae ? ae->code : -1);
		}
		flush_events("deep events");
	}
}

static void test_shapes()
{
	std::vector<std::unique_ptr<Shape>> v;
	for (int i = 0; i < 9; i++)
		v.push_back(make_shape(i, 2.0 + i * 1.5));
	std::vector<std::string> names;
	for (const auto &s : v)
		names.push_back(s->name());
	std::printf("shapes: %zu, first %s, last %s\n", v.size(), names.front().c_str(), names.back().c_str());
	try {
		double a = visit_all(v, 3);
		std::printf("visit_all = %.3f\n", a);
	} catch (const LimitError &e) {
		std::printf("visit_all LimitError: %s\n", e.what());
	}
	flush_events("shape events");
	v.resize(4);
	try {
		std::printf("visit_all small = %.3f\n", visit_all(v, 2));
	} catch (...) {
		std::printf("unexpected exception\n");
		failures++;
	}
	flush_events("shape events 2");
	v.push_back(make_shape(2, -1));
	try {
		visit_all(v, 1);
	} catch (const AppError &e) {
		std::printf("%s code %d: %s\n", e.kind(), e.code, e.what());
	}
	flush_events("shape events 3");
}

static void test_rethrow()
{
	for (int which = 0; which < 6; which++) {
		try {
			rethrow_through(4, which);
		} catch (const AppError &e) {
			std::printf("rethrow %d: AppError code %d: %s\n", which, e.code, e.what());
		} catch (const std::logic_error &e) {
			std::printf("rethrow %d: logic_error %s\n", which, e.what());
		} catch (const std::exception &e) {
			std::printf("rethrow %d: exception %s\n", which, typeid(e).name());
		}
		flush_events("rethrow events");
	}
}

static void test_nested()
{
	int outer = 0, inner = 0;
	try {
		Guard a("outer");
		try {
			Guard b("inner");
			throw_int(7);
		} catch (int v) {
			inner = v;
			note("caught int " + std::to_string(v));
			try {
				parse_number("x", 99);
			} catch (const ParseError &e) {
				note(std::string("nested catch: ") + e.what());
				throw LimitError("escalated");
			}
		}
	} catch (const LimitError &e) {
		outer = e.code;
		note(std::string("outer caught: ") + e.what());
	}
	EXPECT(inner == 7 && outer == 3);
	flush_events("nested events");

	// exception_ptr: capture, then rethrow elsewhere
	std::exception_ptr p;
	try {
		deep_throw(0, 2);
	} catch (...) {
		p = std::current_exception();
	}
	flush_events("captured");
	try {
		std::rethrow_exception(p);
	} catch (const AppError &e) {
		std::printf("rethrown exception_ptr: %s code %d\n", e.what(), e.code);
	}
	// nested_exception
	try {
		try {
			throw_std(4);
		} catch (...) {
			std::throw_with_nested(AppError("outer wrapper", 11));
		}
	} catch (const AppError &e) {
		std::printf("with nested: %s\n", e.what());
		try {
			std::rethrow_if_nested(e);
		} catch (const std::logic_error &inner_e) {
			std::printf("  nested inside: %s\n", inner_e.what());
		}
	}
	flush_events("nested_exception events");
}

static void test_noexcept_and_vectors()
{
	std::printf("noexcept_work = %d\n", noexcept_work(30));
	auto v = grow(5000, -1);
	std::printf("grow: size %zu, sum %ld, reallocs %ld\n", v.size(), std::accumulate(v.begin(), v.end() - 1, 0L),
		    v.back());
	try {
		grow(100000, 77777);
	} catch (const LimitError &e) {
		std::printf("grow: %s\n", e.what());
	}
	std::vector<std::vector<std::string>> nested;
	for (int i = 0; i < 200; i++) {
		nested.emplace_back(i % 17, std::to_string(i));
		if (i % 50 == 49)
			nested.shrink_to_fit();
	}
	size_t total = 0;
	for (const auto &inner : nested)
		total += inner.size();
	std::sort(nested.begin(), nested.end(), [](const auto &a, const auto &b) { return a.size() > b.size() || (a.size() == b.size() && !a.empty() && a[0] < b[0]); });
	std::printf("nested vectors: %zu total, biggest %zu first %s\n", total, nested.front().size(),
		    nested.front().empty() ? "-" : nested.front()[0].c_str());
	// exceptions thrown from a constructor inside vector growth
	struct Fragile {
		int v;
		explicit Fragile(int x) : v(x)
		{
			if (x == 37)
				throw AppError("fragile 37", 37);
		}
	};
	std::vector<Fragile> fv;
	try {
		for (int i = 0; i < 100; i++)
			fv.emplace_back(i);
	} catch (const AppError &e) {
		std::printf("fragile: %s, kept %zu\n", e.what(), fv.size());
	}
}

static void terminate_handler()
{
	std::printf("std::terminate called: FAIL\n");
	std::fflush(stdout);
	std::_Exit(3);
}

int main()
{
	std::set_terminate(terminate_handler);
	test_parse();
	test_deep();
	test_shapes();
	test_rethrow();
	test_nested();
	test_noexcept_and_vectors();
	try {
		throw_std(0);
	} catch (const std::out_of_range &) {
		std::printf("out_of_range caught\n");
	}
	flush_events("final events");
	std::printf("%s (%d failures)\n", failures ? "SOME CHECKS FAILED" : "all checks passed", failures);
	return failures != 0;
}
