// Shared declarations of the C++ exception test: errors are thrown in
// thrower.cpp and caught several frames up in main.cpp, through frames in
// shapes.cpp; every file is compiled and rewritten separately.
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

// A log of events (constructions, destructions, catches) that main prints.
void note(const std::string &what);

// Error hierarchy: caught by base class in main.cpp.
struct AppError : std::runtime_error {
	int code;
	AppError(const std::string &m, int c) : std::runtime_error(m), code(c) {}
	virtual const char *kind() const noexcept { return "AppError"; }
};
struct ParseError : AppError {
	int line;
	ParseError(const std::string &m, int l) : AppError(m, 2), line(l) {}
	const char *kind() const noexcept override { return "ParseError"; }
};
struct LimitError : AppError {
	LimitError(const std::string &m) : AppError(m, 3) {}
	const char *kind() const noexcept override { return "LimitError"; }
};

// RAII guard that records its destruction during unwinding.
struct Guard {
	std::string name;
	explicit Guard(std::string n);
	~Guard();
	Guard(const Guard &) = delete;
	Guard &operator=(const Guard &) = delete;
};

// Shapes with virtual calls.
struct Shape {
	virtual ~Shape();
	virtual double area() const = 0;
	virtual std::string name() const = 0;
	virtual void check(double limit) const; // throws LimitError
};
std::unique_ptr<Shape> make_shape(int kind, double size);

// thrower.cpp
int parse_number(const std::string &s, int line);        // throws ParseError
double total_area(const std::vector<std::unique_ptr<Shape>> &v, double limit);
void deep_throw(int depth, int throw_at);                 // throws at a given depth
void throw_int(int v);
void throw_std(int which);
int noexcept_work(int n) noexcept;                        // must not terminate
std::vector<long> grow(int n, int fail_at);              // vector growth, may throw

// shapes.cpp
double visit_all(const std::vector<std::unique_ptr<Shape>> &v, int depth);
int rethrow_through(int depth, int which);
