// The C++ part of hijack cc's build-system tests: templates, std::string,
// an exception thrown through a rewritten frame.
#include <stdexcept>
#include <string>
#include <vector>
#include "tally.h"

std::vector<int> tally_words(const std::string &text)
{
	std::vector<int> out;
	std::string word;
	for (char c : text + " ") {
		if (c != ' ') {
			word += c;
			continue;
		}
		if (word == "!")
			throw std::invalid_argument("bang");
		if (!word.empty())
			out.push_back(tally(word.c_str()));
		word.clear();
	}
	return out;
}
