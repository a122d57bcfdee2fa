package rules

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

const known = "known: clobber, pad, vptrace"
const vpKeys = "known: threshold, pagesize, sizeexp, usestack, tls, exact"

// vp wraps params lines (each indented by six spaces) into a one-rule
// vptrace file; the first param is on line 5.
func vp(params ...string) string {
	s := "version: 1\nrules:\n  - preset: vptrace\n    params:\n"
	for _, p := range params {
		s += "      " + p + "\n"
	}
	return s
}

// pad is like vp for the pad preset.
func pad(params ...string) string {
	return strings.Replace(vp(params...), "vptrace", "pad", 1)
}

// rule wraps rule lines (indented by four spaces after the first, which
// follows "  - ") into a file; the rule starts on line 3.
func rule(lines ...string) string {
	s := "version: 1\nrules:\n  - " + lines[0] + "\n"
	for _, l := range lines[1:] {
		s += "    " + l + "\n"
	}
	return s
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, in string
		line     int    // 0: no line in the message
		want     string // the whole message after "rules.yaml:LINE: "
	}{
		// YAML level.
		{"syntax", "version: 1\nrules: [\n", 2, "invalid YAML: did not find expected node content"},
		{"syntax no line", "a: *b\n", 0, "invalid YAML: unknown anchor 'b' referenced"},
		{"empty", "", 1, `empty file: want "version: 1" and "rules:"`},
		{"only comments", "# nothing\n\n", 1, `empty file: want "version: 1" and "rules:"`},
		{"two documents", "version: 1\n---\nversion: 1\n", 2, "more than one YAML document; a rules file has one"},
		{"bad second document", "version: 1\n---\n[\n", 3, "invalid YAML: did not find expected node content"},
		{"top not mapping", "- 1\n- 2\n", 1, "top level: want a mapping, got a list"},
		{"top null", "---\n", 2, "top level: want a mapping, got nothing (null)"},
		{"alias", "version: 1\nrules:\n  - &r {preset: pad}\n  - *r\n", 4, "rule 2: aliases (*r) are not supported"},
		{"alias params", rule("preset: pad", "params: &p {seed: 1}", "functions: [a]") + "  - preset: pad\n    params: *p\n", 7, "rule 2: aliases (*p) are not supported"},
		{"merge key", rule("preset: pad", "params:", "  <<: {seed: 1}"), 5, "rule 1: params of preset pad: merge keys (<<) are not supported"},
		{"non-scalar key", "version: 1\n? [a]\n: 1\n", 2, "top level: keys must be plain names, got a list"},

		// Version.
		{"missing version", "rules:\n  - preset: pad\n", 1, `missing "version" (want version: 1)`},
		{"misspelt version", "versoin: 1\nrules:\n  - preset: pad\n", 1, `unknown key "versoin" at top level (known: version, rules)`},
		{"version string", "version: \"1\"\nrules:\n  - preset: pad\n", 1, `version: want the integer 1, got string "1"`},
		{"version float", "version: 1.0\n", 1, "version: want the integer 1, got 1.0"},
		{"version list", "version: [1]\n", 1, "version: want the integer 1, got a list"},
		{"version 2", "rules: []\nversion: 2\n", 2, "unsupported version 2 (this hijack reads version 1)"},
		{"version 0", "version: 0\n", 1, "unsupported version 0 (this hijack reads version 1)"},

		// Top level.
		{"unknown top key", "version: 1\nrule:\n  - preset: pad\n", 2, `unknown key "rule" at top level (known: version, rules)`},
		{"duplicate top key", "version: 1\nrules: [{preset: pad}]\nversion: 1\n", 3, `duplicate key "version" in top level (first at line 1)`},
		{"missing rules", "version: 1\n", 1, `missing "rules": want a list of rules`},
		{"rules mapping", "version: 1\nrules:\n  preset: pad\n", 3, "rules: want a list of rules, got a mapping"},
		{"rules null", "version: 1\nrules:\n", 2, "rules: want a list of rules, got nothing (null)"},
		{"rules empty", "version: 1\nrules: []\n", 2, "rules: list is empty; want at least one rule"},

		// Rule keys.
		{"rule not mapping", "version: 1\nrules:\n  - pad\n", 3, `rule 1: rule: want a mapping, got string "pad"`},
		{"rule unknown key", rule("preset: pad", "function: [main]"), 4, `rule 1: unknown key "function" (known: preset, functions, exclude, params)`},
		{"rule unknown key before preset", rule("presett: pad"), 3, `rule 1: unknown key "presett" (known: preset, functions, exclude, params)`},
		{"rule duplicate key", rule("preset: pad", "exclude: [a]", "exclude: [b]"), 5, `rule 1: duplicate key "exclude" in rule (first at line 4)`},
		{"missing preset", rule("functions: [main]"), 3, `rule 1: missing "preset" (` + known + ")"},
		{"preset not string", rule("preset: [pad]"), 3, "rule 1: preset: want a preset name (" + known + "), got a list"},
		{"preset null", rule("preset:"), 3, "rule 1: preset: want a preset name (" + known + "), got nothing (null)"},
		{"unknown preset", rule("preset: vptrce"), 3, `rule 1: unknown preset "vptrce" (` + known + ")"},
		{"unknown preset rule 2", rule("preset: pad", "functions: [a]") + "  - preset: nope\n", 5, `rule 2: unknown preset "nope" (` + known + ")"},

		// Globs.
		{"functions scalar", rule("preset: pad", "functions: main"), 4, `rule 1: functions: want a list of glob patterns such as ["main", "foo_*"], got string "main"`},
		{"functions null", rule("preset: pad", "functions:"), 4, `rule 1: functions: want a list of glob patterns such as ["main", "foo_*"], got nothing (null)`},
		{"functions empty", rule("preset: pad", "functions: []"), 4, "rule 1: functions: list is empty, so the rule selects nothing; omit functions to select every function"},
		{"functions bad glob", rule("preset: pad", "functions: [main, \"foo[\"]"), 4, `rule 1: functions: invalid glob pattern "foo[": syntax error in pattern`},
		{"functions bad glob block", rule("preset: pad", "functions:", "  - main", `  - 'a\'`), 6, `rule 1: functions: invalid glob pattern "a\\": syntax error in pattern`},
		{"functions null item", rule("preset: pad", "functions: [null]"), 4, `rule 1: functions: want a glob pattern, got nothing (null) (quote it: "null")`},
		{"functions int item", rule("preset: pad", "functions: [123]"), 4, `rule 1: functions: want a glob pattern, got 123 (quote it: "123")`},
		{"functions nested", rule("preset: pad", "functions: [[a]]"), 4, "rule 1: functions: want a glob pattern, got a list"},
		{"functions empty pattern", rule("preset: pad", `functions: [""]`), 4, "rule 1: functions: empty pattern matches no function"},
		{"exclude bad glob", rule("preset: pad", "exclude:", "  - '[z-'"), 5, `rule 1: exclude: invalid glob pattern "[z-": syntax error in pattern`},
		{"exclude mapping", rule("preset: pad", "exclude: {a: 1}"), 4, `rule 1: exclude: want a list of glob patterns such as ["main", "foo_*"], got a mapping`},

		// Params, structure.
		{"params list", rule("preset: pad", "params: [seed]"), 4, "rule 1: params of preset pad: want a mapping, got a list"},
		{"params string", rule("preset: pad", "params: seed"), 4, `rule 1: params of preset pad: want a mapping, got string "seed"`},
		{"unknown param", "version: 1\nrules:\n  - preset: vptrace\n    functions: [\"*\"]\n    exclude: []\n    params:\n      treshold: 0.0\n", 7,
			`rule 1: unknown key "treshold" in params of preset vptrace (` + vpKeys + ")"},
		{"unknown param pad", pad("threshold: 0"), 5, `rule 1: unknown key "threshold" in params of preset pad (known: seed, maxlen, after)`},
		{"param of other preset", rule("preset: clobber", "params: {maxlen: 3}"), 4, `rule 1: unknown key "maxlen" in params of preset clobber (known: seed)`},
		{"duplicate param", vp("threshold: 0", "usestack: true", "threshold: 1"), 7, `rule 1: duplicate key "threshold" in params of preset vptrace (first at line 5)`},

		// float
		{"float string", vp("threshold: high"), 5, `rule 1: param threshold of preset vptrace: want a number in [0, 1], got string "high"`},
		{"float quoted number", vp(`threshold: "0.5"`), 5, `rule 1: param threshold of preset vptrace: want a number in [0, 1], got string "0.5"`},
		{"float above", vp("threshold: 1.5"), 5, "rule 1: param threshold of preset vptrace: want a number in [0, 1], got 1.5"},
		{"float below", vp("threshold: -0.1"), 5, "rule 1: param threshold of preset vptrace: want a number in [0, 1], got -0.1"},
		{"float int above", vp("threshold: 2"), 5, "rule 1: param threshold of preset vptrace: want a number in [0, 1], got 2"},
		{"float nan", vp("threshold: .nan"), 5, "rule 1: param threshold of preset vptrace: want a number in [0, 1], got .nan"},
		{"float inf", vp("threshold: .inf"), 5, "rule 1: param threshold of preset vptrace: want a number in [0, 1], got .inf"},
		{"float huge", vp("threshold: 1e999"), 5, `rule 1: param threshold of preset vptrace: want a number in [0, 1], got string "1e999"`},
		{"float bool", vp("threshold: true"), 5, "rule 1: param threshold of preset vptrace: want a number in [0, 1], got true"},
		{"float null", vp("threshold:"), 5, "rule 1: param threshold of preset vptrace: want a number in [0, 1], got nothing (null)"},
		{"float mapping", vp("threshold: {a: 1}"), 5, "rule 1: param threshold of preset vptrace: want a number in [0, 1], got a mapping"},
		{"float bad explicit tag", vp("threshold: !!float abc"), 5, "rule 1: param threshold of preset vptrace: want a number in [0, 1], got abc, which is not a valid !!float"},
		{"custom tag", vp("threshold: !fancy 0.5"), 5, "rule 1: param threshold of preset vptrace: want a number in [0, 1], got a value tagged !fancy"},
		{"timestamp", vp("threshold: 2024-01-01"), 5, "rule 1: param threshold of preset vptrace: want a number in [0, 1], got 2024-01-01"},

		// int
		{"int zero", pad("maxlen: 0"), 5, "rule 1: param maxlen of preset pad: want an integer in [1, 15], got 0"},
		{"int above", pad("maxlen: 16"), 5, "rule 1: param maxlen of preset pad: want an integer in [1, 15], got 16"},
		{"int float", pad("maxlen: 1.5"), 5, "rule 1: param maxlen of preset pad: want an integer in [1, 15], got 1.5"},
		{"int integral float", pad("maxlen: 4.0"), 5, "rule 1: param maxlen of preset pad: want an integer in [1, 15], got 4.0"},
		{"int quoted", pad(`maxlen: "15"`), 5, `rule 1: param maxlen of preset pad: want an integer in [1, 15], got string "15"`},
		{"int unbounded huge", pad("seed: 99999999999999999999"), 5, "rule 1: param seed of preset pad: want an integer, got 99999999999999999999"},
		{"int unbounded string", pad("seed: abc"), 5, `rule 1: param seed of preset pad: want an integer, got string "abc"`},

		// size
		{"size not pow2", vp("pagesize: 3000"), 5, "rule 1: param pagesize of preset vptrace: want a power of two in [16, 1G] (e.g. 4096, 4K, 2M), got 3000"},
		{"size too small", vp("pagesize: 8"), 5, "rule 1: param pagesize of preset vptrace: want a power of two in [16, 1G] (e.g. 4096, 4K, 2M), got 8"},
		{"size too large", vp("pagesize: 2G"), 5, "rule 1: param pagesize of preset vptrace: want a power of two in [16, 1G] (e.g. 4096, 4K, 2M), got 2G"},
		{"size suffix not pow2", vp("pagesize: 3K"), 5, "rule 1: param pagesize of preset vptrace: want a power of two in [16, 1G] (e.g. 4096, 4K, 2M), got 3K"},
		{"size bad suffix", vp("pagesize: 4X"), 5, "rule 1: param pagesize of preset vptrace: want a power of two in [16, 1G] (e.g. 4096, 4K, 2M), got 4X"},
		{"size negative", vp("pagesize: -4096"), 5, "rule 1: param pagesize of preset vptrace: want a power of two in [16, 1G] (e.g. 4096, 4K, 2M), got -4096"},
		{"size zero", vp("pagesize: 0"), 5, "rule 1: param pagesize of preset vptrace: want a power of two in [16, 1G] (e.g. 4096, 4K, 2M), got 0"},
		{"size float", vp("pagesize: 4096.0"), 5, "rule 1: param pagesize of preset vptrace: want a power of two in [16, 1G] (e.g. 4096, 4K, 2M), got 4096.0"},
		{"size overflow", vp("pagesize: 99999999999999999G"), 5, "rule 1: param pagesize of preset vptrace: want a power of two in [16, 1G] (e.g. 4096, 4K, 2M), got 99999999999999999G"},
		{"size huge int", vp("pagesize: 18446744073709551616"), 5, "rule 1: param pagesize of preset vptrace: want a power of two in [16, 1G] (e.g. 4096, 4K, 2M), got 18446744073709551616"},
		{"size bool", vp("pagesize: true"), 5, "rule 1: param pagesize of preset vptrace: want a power of two in [16, 1G] (e.g. 4096, 4K, 2M), got true"},
		{"sizeexp above", vp("sizeexp: 31"), 5, "rule 1: param sizeexp of preset vptrace: want an integer in [4, 30] (pagesize = 1<<sizeexp), got 31"},
		{"sizeexp below", vp("sizeexp: 3"), 5, "rule 1: param sizeexp of preset vptrace: want an integer in [4, 30] (pagesize = 1<<sizeexp), got 3"},
		{"sizeexp string", vp(`sizeexp: "12"`), 5, `rule 1: param sizeexp of preset vptrace: want an integer in [4, 30] (pagesize = 1<<sizeexp), got string "12"`},
		{"sizeexp suffix", vp("sizeexp: 4K"), 5, `rule 1: param sizeexp of preset vptrace: want an integer in [4, 30] (pagesize = 1<<sizeexp), got string "4K"`},
		{"size and exp disagree", vp("pagesize: 4K", "usestack: true", "sizeexp: 13"), 7, "rule 1: params pagesize (4K) and sizeexp (13, i.e. 8K) of preset vptrace disagree; give only one"},
		{"exp and size disagree", vp("sizeexp: 12", "pagesize: 2M"), 6, "rule 1: params pagesize (2M) and sizeexp (12, i.e. 4K) of preset vptrace disagree; give only one"},

		// bool
		{"bool yes", vp("usestack: yes"), 5, `rule 1: param usestack of preset vptrace: want true or false, got string "yes"`},
		{"bool int", vp("exact: 1"), 5, "rule 1: param exact of preset vptrace: want true or false, got 1"},
		{"bool quoted", vp(`exact: "true"`), 5, `rule 1: param exact of preset vptrace: want true or false, got string "true"`},

		// enum
		{"enum unknown", vp("tls: remote"), 5, `rule 1: param tls of preset vptrace: want one of local-exec, initial-exec, indirect, auto, got string "remote"`},
		{"enum case", vp("tls: Auto"), 5, `rule 1: param tls of preset vptrace: want one of local-exec, initial-exec, indirect, auto, got string "Auto"`},
		{"enum int", vp("tls: 1"), 5, "rule 1: param tls of preset vptrace: want one of local-exec, initial-exec, indirect, auto, got 1"},
		{"enum list", vp("tls: [auto]"), 5, "rule 1: param tls of preset vptrace: want one of local-exec, initial-exec, indirect, auto, got a list"},

		// Rule order.
		{"unreachable after default", rule("preset: vptrace") + "  - preset: pad\n", 4, "rule 2: unreachable: rule 1 (line 3) already applies to every function; rules are tried in order and the first that selects a function wins"},
		{"unreachable after star", rule("preset: pad", `functions: ["*"]`) + "  - preset: pad\n    functions: [main]\n", 5, "rule 2: unreachable: rule 1 (line 3) already applies to every function; rules are tried in order and the first that selects a function wins"},

		// Long and multi-line values stay on one line, clipped.
		{"clipped", vp("tls: \"" + strings.Repeat("x", 100) + "\\nnext\""), 5, `rule 1: param tls of preset vptrace: want one of local-exec, initial-exec, indirect, auto, got string "` + strings.Repeat("x", 40) + `..."`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("rules.yaml", []byte(tt.in), hijackLike())
			if err == nil {
				t.Fatalf("no error; got %d rules\ninput:\n%s", len(f.Rules), tt.in)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v is not *Error", err, err)
			}
			if e.Line != tt.line || e.Msg != tt.want || e.File != "rules.yaml" {
				t.Errorf("got  %s:%d: %s\nwant %s:%d: %s\ninput:\n%s", e.File, e.Line, e.Msg, "rules.yaml", tt.line, tt.want, tt.in)
			}
			wantText := "rules.yaml:" + strconv.Itoa(tt.line) + ": " + tt.want
			if tt.line == 0 {
				wantText = "rules.yaml: " + tt.want
			}
			if err.Error() != wantText {
				t.Errorf("Error() = %q, want %q", err.Error(), wantText)
			}
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Errorf("error is not one line: %q", err.Error())
			}
		})
	}
}

func TestParseValues(t *testing.T) {
	tests := []struct {
		name, in string
		check    func(t *testing.T, p Params)
	}{
		{"vptrace defaults", "version: 1\nrules:\n  - preset: vptrace\n", func(t *testing.T, p Params) {
			eq(t, p.Float("threshold"), 0.0)
			eq(t, p.Size("pagesize"), int64(4096))
			eq(t, p.Bool("usestack"), false)
			eq(t, p.String("tls"), "auto")
			eq(t, p.Bool("exact"), false)
			eq(t, p.IsSet("threshold"), false)
			eq(t, p.Canonical(), "threshold=0 pagesize=4096 usestack=false tls=auto exact=false")
		}},
		{"null params", vp(), func(t *testing.T, p Params) {
			eq(t, p.Canonical(), "threshold=0 pagesize=4096 usestack=false tls=auto exact=false")
		}},
		{"empty params", rule("preset: vptrace", "params: {}"), func(t *testing.T, p Params) {
			eq(t, p.Size("pagesize"), int64(4096))
		}},
		{"pad defaults", rule("preset: pad"), func(t *testing.T, p Params) {
			eq(t, p.Int("seed"), int64(1))
			eq(t, p.Int("maxlen"), int64(15))
			eq(t, p.Names(), []string{"seed", "maxlen", "after"})
		}},
		{"clobber defaults", rule("preset: clobber"), func(t *testing.T, p Params) {
			eq(t, p.Int("seed"), int64(1))
			eq(t, p.Canonical(), "seed=1")
		}},
		{"int values", pad("seed: -7", "maxlen: 0x0f"), func(t *testing.T, p Params) {
			eq(t, p.Int("seed"), int64(-7))
			eq(t, p.Int("maxlen"), int64(15))
			eq(t, p.IsSet("seed"), true)
		}},
		{"int bounds", pad("seed: 9223372036854775807", "maxlen: 1"), func(t *testing.T, p Params) {
			eq(t, p.Int("seed"), int64(math.MaxInt64))
			eq(t, p.Int("maxlen"), int64(1))
		}},
		{"int min", pad("seed: -9223372036854775808"), func(t *testing.T, p Params) {
			eq(t, p.Int("seed"), int64(math.MinInt64))
		}},
		{"float values", vp("threshold: 0.25"), func(t *testing.T, p Params) {
			eq(t, p.Float("threshold"), 0.25)
		}},
		{"float from int", vp("threshold: 1"), func(t *testing.T, p Params) {
			eq(t, p.Float("threshold"), 1.0)
		}},
		{"float exponent", vp("threshold: 5e-1"), func(t *testing.T, p Params) {
			eq(t, p.Float("threshold"), 0.5)
		}},
		{"float dot", vp("threshold: .75"), func(t *testing.T, p Params) {
			eq(t, p.Float("threshold"), 0.75)
		}},
		{"float explicit tag", vp("threshold: !!float 1"), func(t *testing.T, p Params) {
			eq(t, p.Float("threshold"), 1.0)
		}},
		{"bool values", vp("usestack: true", "exact: False"), func(t *testing.T, p Params) {
			eq(t, p.Bool("usestack"), true)
			eq(t, p.Bool("exact"), false)
			eq(t, p.IsSet("exact"), true)
		}},
		{"enum values", vp("tls: initial-exec"), func(t *testing.T, p Params) {
			eq(t, p.String("tls"), "initial-exec")
		}},
		{"enum quoted", vp(`tls: "local-exec"`), func(t *testing.T, p Params) {
			eq(t, p.String("tls"), "local-exec")
		}},
		{"size int", vp("pagesize: 65536"), func(t *testing.T, p Params) {
			eq(t, p.Size("pagesize"), int64(65536))
			eq(t, p.IsSet("pagesize"), true)
		}},
		{"size hex", vp("pagesize: 0x1000"), func(t *testing.T, p Params) { eq(t, p.Size("pagesize"), int64(4096)) }},
		{"size underscores", vp("pagesize: 1_048_576"), func(t *testing.T, p Params) { eq(t, p.Size("pagesize"), int64(1<<20)) }},
		{"size 1K", vp("pagesize: 1K"), func(t *testing.T, p Params) { eq(t, p.Size("pagesize"), int64(1024)) }},
		{"size 4K", vp("pagesize: 4K"), func(t *testing.T, p Params) { eq(t, p.Size("pagesize"), int64(4096)) }},
		{"size 4k", vp("pagesize: 4k"), func(t *testing.T, p Params) { eq(t, p.Size("pagesize"), int64(4096)) }},
		{"size 2M", vp("pagesize: 2M"), func(t *testing.T, p Params) { eq(t, p.Size("pagesize"), int64(2<<20)) }},
		{"size 1G", vp("pagesize: 1G"), func(t *testing.T, p Params) { eq(t, p.Size("pagesize"), int64(1<<30)) }},
		{"size 64KiB", vp("pagesize: 64KiB"), func(t *testing.T, p Params) { eq(t, p.Size("pagesize"), int64(64<<10)) }},
		{"size 4 KB", vp("pagesize: 4 KB"), func(t *testing.T, p Params) { eq(t, p.Size("pagesize"), int64(4096)) }},
		{"size 16B", vp("pagesize: 16B"), func(t *testing.T, p Params) { eq(t, p.Size("pagesize"), int64(16)) }},
		{"size quoted", vp(`pagesize: "4096"`), func(t *testing.T, p Params) { eq(t, p.Size("pagesize"), int64(4096)) }},
		{"size min", vp("pagesize: 16"), func(t *testing.T, p Params) { eq(t, p.Size("pagesize"), int64(16)) }},
		{"sizeexp", vp("sizeexp: 12"), func(t *testing.T, p Params) {
			eq(t, p.Size("pagesize"), int64(4096))
			eq(t, p.IsSet("pagesize"), true)
		}},
		{"sizeexp bounds", vp("sizeexp: 30"), func(t *testing.T, p Params) { eq(t, p.Size("pagesize"), int64(1<<30)) }},
		{"sizeexp low", vp("sizeexp: 4"), func(t *testing.T, p Params) { eq(t, p.Size("pagesize"), int64(16)) }},
		{"size and exp agree", vp("pagesize: 2M", "sizeexp: 21"), func(t *testing.T, p Params) { eq(t, p.Size("pagesize"), int64(2<<20)) }},
		{"all vptrace", vp("threshold: 0.3", "pagesize: 8K", "usestack: true", "tls: local-exec", "exact: true"), func(t *testing.T, p Params) {
			eq(t, p.Canonical(), "threshold=0.3 pagesize=8192 usestack=true tls=local-exec exact=true")
		}},
		{"flow style", "{version: 1, rules: [{preset: vptrace, params: {threshold: 0.5}}]}", func(t *testing.T, p Params) {
			eq(t, p.Float("threshold"), 0.5)
		}},
		{"explicit document", "---\nversion: 1\nrules:\n- preset: pad\n...\n", func(t *testing.T, p Params) {
			eq(t, p.Int("maxlen"), int64(15))
		}},
		{"unused anchor", "version: 1\nrules:\n  - &r {preset: pad}\n", func(t *testing.T, p Params) {
			eq(t, p.Int("maxlen"), int64(15))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("rules.yaml", []byte(tt.in), hijackLike())
			if err != nil {
				t.Fatalf("%v\ninput:\n%s", err, tt.in)
			}
			if len(f.Rules) != 1 {
				t.Fatalf("got %d rules", len(f.Rules))
			}
			tt.check(t, f.Rules[0].Params)
		})
	}
}

func eq[T any](t *testing.T, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

func TestRuleFields(t *testing.T) {
	in := `# instrument the hot loops, pad the rest
version: 1
rules:
  - preset: vptrace
    functions: ["hot_*", "_ZN3foo*"]
    exclude: [hot_init]
    params:
      threshold: 0.5
  - preset: pad
    exclude: [main]
`
	f, err := Parse("r.yaml", []byte(in), hijackLike())
	if err != nil {
		t.Fatal(err)
	}
	eq(t, f.Name, "r.yaml")
	eq(t, f.Version, 1)
	eq(t, len(f.Rules), 2)
	r := f.Rules[0]
	eq(t, r.Preset, "vptrace")
	eq(t, r.Functions, []string{"hot_*", "_ZN3foo*"})
	eq(t, r.Exclude, []string{"hot_init"})
	eq(t, r.Line, 4)
	eq(t, r.Index, 1)
	r = f.Rules[1]
	eq(t, r.Preset, "pad")
	eq(t, r.Functions, []string(nil))
	eq(t, r.Exclude, []string{"main"})
	eq(t, r.Line, 9)
	eq(t, r.Index, 2)
	eq(t, f.Presets(), []string{"vptrace", "pad"})
}

func TestMatch(t *testing.T) {
	in := `version: 1
rules:
  - preset: vptrace
    functions: ["hot_*", "loop?", "[ab]*_kernel", "_ZN3foo*"]
    exclude: ["hot_init", "*.cold"]
    params: {threshold: 0.5}
  - preset: vptrace
    functions: ["hot_init"]
    params: {threshold: 0}
  - preset: clobber
    functions: ["*.cold", "loop*"]
  - preset: pad
    exclude: [main, "_start"]
`
	f, err := Parse("rules.yaml", []byte(in), hijackLike())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		fn   string
		rule int // 1-based; 0: no rule
	}{
		{"hot_loop", 1},
		{"hot_", 1},
		{"loop1", 1},
		{"a_kernel", 1},
		{"b2_kernel", 1},
		{"_ZN3foo3barEv", 1},
		{"hot_init", 2},          // excluded by rule 1, falls through to rule 2
		{"hot_loop.cold", 3},     // excluded by rule 1, not selected by 2
		{"loop12", 3},            // "loop?" needs exactly one character
		{"c_kernel", 4},          // first three do not select it
		{"_ZN3bar3fooEv", 4},     //
		{"main", 0},              // excluded by the last rule: left alone
		{"_start", 0},            //
		{"HOT_loop", 4},          // case-sensitive
		{"", 4},                  // degenerate but harmless
		{"x/y", 4},               // no '/' in symbols, still well-defined
		{"main.cold", 3},         //
		{"hot_init.cold", 3},     //
		{"loop", 3},              //
		{"a_kernel.cold", 3},     //
		{"ab_kernel_x", 4},       //
		{"hot_\u00e9t\u00e9", 1}, // UTF-8 names
	}
	for _, tt := range tests {
		r, ok := f.Match(tt.fn)
		switch {
		case tt.rule == 0 && ok:
			t.Errorf("Match(%q) = rule %d, want none", tt.fn, r.Index)
		case tt.rule != 0 && !ok:
			t.Errorf("Match(%q) = none, want rule %d", tt.fn, tt.rule)
		case tt.rule != 0 && r != &f.Rules[tt.rule-1]:
			t.Errorf("Match(%q) = rule %d, want rule %d", tt.fn, r.Index, tt.rule)
		}
	}
	r, _ := f.Match("hot_init")
	eq(t, r.Params.Float("threshold"), 0.0)
	r, _ = f.Match("hot_x")
	eq(t, r.Params.Float("threshold"), 0.5)
}

// The first matching rule wins even if a later rule names the function
// more specifically.
func TestFirstMatchWins(t *testing.T) {
	in := `version: 1
rules:
  - preset: pad
    functions: ["f*"]
  - preset: vptrace
    functions: [foo]
`
	f, err := Parse("rules.yaml", []byte(in), hijackLike())
	if err != nil {
		t.Fatal(err)
	}
	r, ok := f.Match("foo")
	if !ok || r.Preset != "pad" || r.Index != 1 {
		t.Errorf("Match(foo) = %+v, %v; want rule 1 (pad)", r, ok)
	}
	r, ok = f.Match("bar")
	if ok {
		t.Errorf("Match(bar) = rule %d, want none", r.Index)
	}
}

func TestDefault(t *testing.T) {
	reg := hijackLike()
	f, err := Default(reg, "pad")
	if err != nil {
		t.Fatal(err)
	}
	eq(t, len(f.Rules), 1)
	r, ok := f.Match("anything")
	if !ok || r.Preset != "pad" {
		t.Fatalf("Match = %+v, %v", r, ok)
	}
	eq(t, r.Params.Canonical(), "seed=1 maxlen=15 after=false")
	eq(t, r.Functions, []string(nil))
	eq(t, f.Version, 1)

	f, err = Default(reg, "vptrace", "threshold=0.5", "sizeexp=21", "tls=initial-exec", " usestack = true", "pagesize=8K")
	if err != nil {
		t.Fatal(err)
	}
	// Later settings override earlier ones, also across a size and its alias.
	eq(t, f.Rules[0].Params.Canonical(), "threshold=0.5 pagesize=8192 usestack=true tls=initial-exec exact=false")

	errs := []struct{ preset, set, want string }{
		{"nope", "", `unknown preset "nope" (` + known + ")"},
		{"vptrace", "threshold=2", "param threshold of preset vptrace: want a number in [0, 1], got 2"},
		{"vptrace", "threshold=", "param threshold of preset vptrace: want a number in [0, 1], got string \"\""},
		{"vptrace", "threshold=a: b", "param threshold of preset vptrace: want a number in [0, 1], got a mapping"},
		{"vptrace", "threshold=*x", `param threshold of preset vptrace: want a number in [0, 1], got string "*x"`},
		{"vptrace", "thr=2", `unknown param "thr" of preset vptrace (` + vpKeys + ")"},
		{"vptrace", "threshold", `preset vptrace: setting "threshold": want name=value`},
		{"vptrace", "=1", `preset vptrace: setting "=1": want name=value`},
		{"vptrace", "pagesize=3K", "param pagesize of preset vptrace: want a power of two in [16, 1G] (e.g. 4096, 4K, 2M), got 3K"},
		{"pad", "maxlen=99", "param maxlen of preset pad: want an integer in [1, 15], got 99"},
	}
	for _, tt := range errs {
		var sets []string
		if tt.set != "" {
			sets = append(sets, tt.set)
		}
		_, err := Default(reg, tt.preset, sets...)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Default(%s, %q) = %v, want %s", tt.preset, tt.set, err, tt.want)
		}
	}
}

func testRegistry() Registry {
	return Registry{
		"demo": {Name: "demo", Doc: "a test preset", Params: []ParamSpec{
			FloatParam("ratio", 0.5, -1, 1, "a ratio"),
			IntParam("count", 3, 0, math.MaxInt64, "a count"),
			IntParam("delta", -1, math.MinInt64, 0, "a delta"),
			SizeParam("chunk", 64, 16, 1<<20, "", "a chunk"),
			EnumParam("mode", "fast", []string{"fast", "slow"}, "a mode"),
			BoolParam("on", true, "a switch"),
		}},
	}
}

// Parse works with a registry of the caller's own.
func TestCustomRegistry(t *testing.T) {
	reg := testRegistry()
	f, err := Parse("x.yaml", []byte("version: 1\nrules:\n  - preset: demo\n    params: {ratio: -1, count: 0, chunk: 1M, mode: slow, on: false}\n"), reg)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, f.Rules[0].Params.Canonical(), "ratio=-1 count=0 delta=-1 chunk=1048576 mode=slow on=false")

	for _, tt := range []struct{ params, want string }{
		{"{count: -1}", "x.yaml:4: rule 1: param count of preset demo: want an integer >= 0, got -1"},
		{"{delta: 1}", "x.yaml:4: rule 1: param delta of preset demo: want an integer <= 0, got 1"},
		{"{chunk: 2M}", "x.yaml:4: rule 1: param chunk of preset demo: want a power of two in [16, 1M] (e.g. 4096, 4K, 2M), got 2M"},
		{"{chunkexp: 5}", `x.yaml:4: rule 1: unknown key "chunkexp" in params of preset demo (known: ratio, count, delta, chunk, mode, on)`},
		{"{ratio: -1.5}", "x.yaml:4: rule 1: param ratio of preset demo: want a number in [-1, 1], got -1.5"},
	} {
		_, err := Parse("x.yaml", []byte("version: 1\nrules:\n  - preset: demo\n    params: "+tt.params+"\n"), reg)
		if err == nil || err.Error() != tt.want {
			t.Errorf("params %s: got %v\nwant %s", tt.params, err, tt.want)
		}
	}
	_, err = Parse("x.yaml", []byte("version: 1\nrules:\n  - preset: vptrace\n"), reg)
	eq(t, errString(err), `x.yaml:3: rule 1: unknown preset "vptrace" (known: demo)`)
	_, err = Parse("x.yaml", []byte("version: 1\nrules:\n  - preset: vptrace\n"), nil)
	eq(t, errString(err), `x.yaml:3: rule 1: unknown preset "vptrace" (known: none)`)
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestRegistryCheck(t *testing.T) {
	if err := hijackLike().Check(); err != nil {
		t.Fatalf("hijackLike: %v", err)
	}
	if err := testRegistry().Check(); err != nil {
		t.Fatalf("testRegistry: %v", err)
	}
	eq(t, hijackLike().Names(), []string{"clobber", "pad", "vptrace"})

	one := func(ps ...ParamSpec) Registry {
		return Registry{"p": {Name: "p", Params: ps}}
	}
	bad := []struct {
		name string
		reg  Registry
		want string
	}{
		{"key mismatch", Registry{"a": {Name: "b"}}, `preset registered as "a" is named "b"`},
		{"bad preset name", Registry{"A b": {Name: "A b"}}, `invalid preset name "A b"`},
		{"empty preset name", Registry{"": {}}, `invalid preset name ""`},
		{"bad param name", one(BoolParam("Bad", false, "")), `preset p: param Bad: invalid name "Bad"`},
		{"duplicate param", one(BoolParam("a", false, ""), BoolParam("a", true, "")), `preset p: param "a" declared twice`},
		{"alias clash", one(BoolParam("aexp", false, ""), SizeParam("a", 16, 16, 16, "aexp", "")), `preset p: param "aexp" declared twice`},
		{"alias on non-size", one(ParamSpec{Name: "a", Kind: KindBool, Default: false, ExpAlias: "b"}), `preset p: param a: invalid ExpAlias "b"`},
		{"bool default", one(ParamSpec{Name: "a", Kind: KindBool, Default: 1}), "preset p: param a: default 1 is not a bool"},
		{"int default type", one(ParamSpec{Name: "a", Kind: KindInt, Default: 1}), "preset p: param a: default 1 is not an int64"},
		{"int default range", one(IntParam("a", 5, 0, 3, "")), "preset p: param a: default 5 outside [0, 3]"},
		{"int bounds", one(IntParam("a", 0, 3, 0, "")), "preset p: param a: default 0 outside [3, 0]"},
		{"float default type", one(ParamSpec{Name: "a", Kind: KindFloat, Default: 1}), "preset p: param a: default 1 is not a float64"},
		{"float default range", one(FloatParam("a", 2, 0, 1, "")), "preset p: param a: default 2 outside [0, 1]"},
		{"float nan bound", one(FloatParam("a", 0, math.NaN(), 1, "")), "preset p: param a: default 0 outside [NaN, 1]"},
		{"float inf bound", one(FloatParam("a", 0, 0, math.Inf(1), "")), "preset p: param a: default 0 outside [0, +Inf]"},
		{"size default type", one(ParamSpec{Name: "a", Kind: KindSize, Default: 16}), "preset p: param a: default 16 is not an int64"},
		{"size bounds", one(SizeParam("a", 16, 10, 32, "", "")), "preset p: param a: bounds [10, 32] are not powers of two"},
		{"size default", one(SizeParam("a", 24, 16, 32, "", "")), "preset p: param a: default 24 is not a power of two in [16, 32]"},
		{"enum default type", one(ParamSpec{Name: "a", Kind: KindEnum, Default: 1, Values: []string{"x"}}), "preset p: param a: default 1 is not a string"},
		{"enum default", one(EnumParam("a", "z", []string{"x"}, "")), `preset p: param a: default "z" not among ["x"]`},
		{"enum empty", one(EnumParam("a", "", nil, "")), `preset p: param a: default "" not among []`},
		{"kind", one(ParamSpec{Name: "a"}), "preset p: param a: unknown kind Kind(0)"},
	}
	for _, tt := range bad {
		err := tt.reg.Check()
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: Check() = %v, want %s", tt.name, err, tt.want)
		}
		_, err = Parse("rules.yaml", []byte("version: 1\nrules: [{preset: p}]\n"), tt.reg)
		if want := "rules.yaml: invalid preset registry: " + tt.want; err == nil || err.Error() != want {
			t.Errorf("%s: Parse = %v, want %s", tt.name, err, want)
		}
		_, err = Default(tt.reg, "p")
		if want := "invalid preset registry: " + tt.want; err == nil || err.Error() != want {
			t.Errorf("%s: Default = %v, want %s", tt.name, err, want)
		}
	}
}

func TestAccessorPanics(t *testing.T) {
	p := hijackLike()["vptrace"].Defaults()
	for name, f := range map[string]func(){
		`rules: preset "vptrace" has no param "nope"`:                    func() { p.Bool("nope") },
		`rules: preset "vptrace" has no param "sizeexp"`:                 func() { p.Int("sizeexp") },
		"rules: param threshold of preset vptrace is a float, not a int": func() { p.Int("threshold") },
		"rules: param pagesize of preset vptrace is a size, not a int":   func() { p.Int("pagesize") },
		"rules: param tls of preset vptrace is a enum, not a bool":       func() { p.Bool("tls") },
		`rules: preset "" has no param "x"`:                              func() { Params{}.Float("x") },
	} {
		func() {
			defer func() {
				if r := recover(); r != name {
					t.Errorf("panic %v, want %s", r, name)
				}
			}()
			f()
		}()
	}
	eq(t, Params{}.Canonical(), "")
	eq(t, Params{}.IsSet("x"), false)
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(path, []byte("version: 1\nrules:\n  - preset: pad\n    params: {seed: 42}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path, hijackLike())
	if err != nil {
		t.Fatal(err)
	}
	eq(t, f.Name, path)
	eq(t, f.Rules[0].Params.Int("seed"), int64(42))

	if err := os.WriteFile(path, []byte("version: 1\nrules:\n  - preset: pad\n    params: {seed: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path, hijackLike())
	eq(t, errString(err), path+`:4: rule 1: param seed of preset pad: want an integer, got string "x"`)

	_, err = Load(filepath.Join(dir, "missing.yaml"), hijackLike())
	if err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("Load(missing) = %v", err)
	}
}

// TestHelp: Help names every preset with its doc and every key (the
// presets' own docs are generated from their specs: `hijack help presets`
// and the README table, which preset/all checks).
func TestHelp(t *testing.T) {
	help := hijackLike().Help()
	for _, p := range hijackLike() {
		if !strings.Contains(help, p.Name+": "+p.Doc) {
			t.Errorf("Help lacks preset %s", p.Name)
		}
		for _, k := range p.keys() {
			if !strings.Contains(help, k) {
				t.Errorf("Help lacks %s.%s", p.Name, k)
			}
		}
	}
	if !strings.Contains(help, "pagesize (or sizeexp): a power of two in [16, 1G] (e.g. 4096, 4K, 2M), default 4096") {
		t.Errorf("Help:\n%s", help)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindBool: "bool", KindInt: "int", KindFloat: "float", KindSize: "size", KindEnum: "enum", 9: "Kind(9)"} {
		eq(t, k.String(), want)
	}
}

func TestParseSize(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"4096", 4096, true}, {"4K", 4096, true}, {"4kb", 4096, true}, {"4KiB", 4096, true},
		{"2M", 2 << 20, true}, {"2 mib", 2 << 20, true}, {"1G", 1 << 30, true}, {"8g", 8 << 30, true},
		{" 16 B ", 16, true},
		{"", 0, false}, {"K", 0, false}, {"4T", 0, false}, {"-4K", 0, false}, {"4.5K", 0, false},
		{"0x10", 0, false}, {"9223372036854775807", 0, false}, {"8589934592G", 0, false}, {"4KK", 0, false},
	} {
		got, err := ParseSize(tt.in)
		if ok := err == nil; got != tt.want || ok != tt.ok {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestOverride(t *testing.T) {
	reg := hijackLike()
	const src = `version: 1
rules:
  - preset: vptrace
    functions: [hot]
    params: {threshold: 0.5, tls: initial-exec}
  - preset: pad
    functions: [cold]
  - preset: vptrace
    params: {exact: true}
`
	for _, tt := range []struct {
		sets []string
		want string // canonical params per rule, or the error's substring
	}{
		{nil, "threshold=0.5 pagesize=4096 usestack=false tls=initial-exec exact=false|seed=1 maxlen=15 after=false|threshold=0 pagesize=4096 usestack=false tls=auto exact=true"},
		{[]string{"threshold=0.25"}, "threshold=0.25 pagesize=4096 usestack=false tls=initial-exec exact=false|seed=1 maxlen=15 after=false|threshold=0.25 pagesize=4096 usestack=false tls=auto exact=true"},
		{[]string{"seed=9", "sizeexp=13"}, "threshold=0.5 pagesize=8192 usestack=false tls=initial-exec exact=false|seed=9 maxlen=15 after=false|threshold=0 pagesize=8192 usestack=false tls=auto exact=true"},
		{[]string{"bogus=1"}, `--param bogus=1: no rule's preset has a parameter "bogus" (the rules use vptrace, pad)`},
		{[]string{"threshold=2"}, "--param threshold: rule 1: param threshold of preset vptrace:"},
		{[]string{"threshold"}, `setting "threshold": want name=value`},
	} {
		f, err := Parse("r.yaml", []byte(src), reg)
		if err != nil {
			t.Fatal(err)
		}
		before := canonicalRules(f)
		err = f.Override(reg, tt.sets...)
		got := canonicalRules(f)
		if err != nil {
			got = err.Error()
			if after := canonicalRules(f); after != before {
				t.Errorf("%v: failed override changed the rules:\n%s\nwas\n%s", tt.sets, after, before)
			}
		}
		if !strings.Contains(got, tt.want) {
			t.Errorf("Override(%q):\n got %s\nwant %s", tt.sets, got, tt.want)
		}
	}
	// The override must not write through to a copy of the file's params.
	f, _ := Parse("r.yaml", []byte(src), reg)
	saved := f.Rules[0].Params
	if err := f.Override(reg, "threshold=1"); err != nil {
		t.Fatal(err)
	}
	if saved.Float("threshold") != 0.5 {
		t.Errorf("Override changed a Params value shared with the caller")
	}
}

func canonicalRules(f *File) string {
	var parts []string
	for _, r := range f.Rules {
		parts = append(parts, r.Params.Canonical())
	}
	return strings.Join(parts, "|")
}

func TestOrigin(t *testing.T) {
	reg := hijackLike()
	f, err := Parse("r.yaml", []byte("version: 1\nrules:\n  - preset: pad\n    functions: [a]\n\n  - preset: vptrace\n"), reg)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Rules[0].Params.Origin() + "|" + f.Rules[1].Params.Origin(); got != "r.yaml:3: rule 1|r.yaml:6: rule 2" {
		t.Errorf("origins %q", got)
	}
	d, _ := Default(reg, "vptrace")
	if o := d.Rules[0].Params.Origin(); o != "--preset vptrace" {
		t.Errorf("Default origin %q", o)
	}
}

// TestMarkdown: the table the README's preset reference is generated from:
// one row per parameter, the preset named on its first, kinds with ranges
// (open sides left empty), defaults as a rules file writes them, and '|'
// escaped inside cells.
func TestMarkdown(t *testing.T) {
	reg := testRegistry()
	reg["bare"] = PresetSpec{Name: "bare", Doc: "no parameters | at all"}
	eq(t, reg.Markdown("demo", "bare", "nosuch"), "| preset | parameter | kind | default | meaning |\n|---|---|---|---|---|\n"+
		"| `demo` | `ratio` | float, -1..1 | `0.5` | a ratio |\n"+
		"| | `count` | int, 0.. | `3` | a count |\n"+
		"| | `delta` | int, ..0 | `-1` | a delta |\n"+
		"| | `chunk` | size, 16..1M | `64` | a chunk |\n"+
		"| | `mode` | fast \\| slow | `fast` | a mode |\n"+
		"| | `on` | bool | `true` | a switch |\n"+
		"| `bare` | | | | no parameters \\| at all |\n")
	if got := hijackLike().Markdown(); !strings.Contains(got, "| `vptrace` | `threshold` | float, 0..1 | `0` |") ||
		!strings.Contains(got, "| | `pagesize` (or `sizeexp`: log2) | size, 16..1G | `4096` |") || strings.Index(got, "`clobber`") > strings.Index(got, "`pad`") {
		t.Errorf("Markdown() of every preset, sorted:\n%s", got)
	}
}
