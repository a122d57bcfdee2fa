// The C++ test program of hijack cc's build-system tests.
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

std::vector<int> tally_words(const std::string &text);

int main()
{
	std::vector<int> v = tally_words("rewrite every 42 objects");
	if (v != std::vector<int>{13, 10, 10, 11}) {
		std::printf("tally_words: got %zu words\n", v.size());
		return 1;
	}
	try {
		tally_words("a ! b");
		std::puts("tally_words: no exception");
		return 1;
	} catch (const std::invalid_argument &e) {
		std::puts("tally_words: ok");
	}
	return 0;
}
