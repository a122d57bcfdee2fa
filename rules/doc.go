// Package rules reads rules.yaml, the file that tells hijack which preset
// (instrumentation) to apply to which functions of an object, and with what
// parameters.
//
// # Format (version 1)
//
//	version: 1                 # required; only 1 exists
//	rules:                     # required; a non-empty list
//	  - preset: vptrace        # required; pad, vptrace, clobber, ...
//	    functions: ["hot_*"]   # optional glob patterns; default: every function
//	    exclude: ["hot_init"]  # optional glob patterns; default: none
//	    params:                # optional; preset-specific, see below
//	      threshold: 0.5
//	      pagesize: 4K
//	  - preset: pad            # everything not selected above
//	    params: {seed: 7}
//
// Patterns use the syntax of Go's path.Match: '*' matches any run of
// characters, '?' one character, '[a-z]' a class, and '\' quotes the next
// character (in a YAML double-quoted string, write it "\\"). They are matched
// against the symbol names in the object, so C++ functions are matched by
// their mangled names (e.g. "_ZN3foo*"), and compiler clones such as "f.cold"
// or "f.part.0" by their own names. A
// pattern that is not a string (null, 123) must be quoted.
//
// # Which rule applies
//
// A rule selects a function if the name matches one of its functions
// patterns (every function if functions is omitted) and none of its exclude
// patterns. Each function gets at most one preset: the first rule, in file
// order, that selects it. A function excluded by a rule falls through to the
// later rules; a function no rule selects is left unchanged. A rule after
// one that selects every function (no functions key or a "*" pattern, and
// no exclude) could never apply and is an error.
//
// # Presets and their params
//
// Each preset declares its parameters (see PresetSpec and ParamSpec) in
// its own package; this package knows no preset by name and checks a file
// against the Registry it is given (hijack's presets: package preset/all;
// their parameters: `hijack help presets`). A parameter that is not given
// takes its default. Kinds of values:
//
//   - bool: true or false (yes/no/on/off are not booleans).
//   - int: a YAML integer (15, 0x0f) within the parameter's range.
//   - float: a number (0, 0.25, 1) within the range; never .nan or .inf.
//   - size: a power of two in bytes, as an integer (4096, 0x1000) or with a
//     binary suffix (1K, 4K, 2M, 1G; KB and KiB mean the same as K).
//     A size may offer an exponent alias: sizeexp: 12 is pagesize: 4096.
//     Giving both is allowed only if they agree.
//   - enum: one of a fixed set of words.
//
// # Strictness
//
// Everything unexpected is an error naming the file and line, on one line:
// a missing or unsupported version, unknown keys (at the top level, in a
// rule, in params), unknown presets (the message lists the known ones),
// values of the wrong type or out of range, invalid glob patterns, an empty
// rules or functions list, duplicate keys, more than one YAML document,
// YAML aliases and merge keys. For example:
//
//	rules.yaml:7: rule 1: unknown key "treshold" in params of preset vptrace (known: threshold, pagesize, sizeexp, usestack, tls, exact)
//
// # Use from Go
//
// Parse or Load a file against a Registry (hijack's: all.Presets().Registry()), then
// ask File.Match for each function; Rule.Params gives typed values with the
// defaults applied. Default builds the one-rule file for a command line
// such as "--preset vptrace" with "name=value" overrides.
package rules
