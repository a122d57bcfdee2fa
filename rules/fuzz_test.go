package rules

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

var fuzzSeeds = []string{
	"",
	"version: 1\nrules:\n  - preset: vptrace\n    functions: [\"*\"]\n    exclude: []\n    params:\n      threshold: 0.0\n      pagesize: 4096\n      usestack: false\n",
	"version: 1\nrules:\n  - preset: vptrace\n    params: {treshold: 0.0}\n",
	"version: 1\nrules:\n  - preset: vptrace\n    functions: [\"hot_*\", \"l?op\", \"[a-c]x\"]\n    exclude: [hot_init]\n    params: {threshold: 0.5, sizeexp: 21, pagesize: 2M, tls: initial-exec, exact: true}\n  - preset: pad\n    params: {seed: -3, maxlen: 0x7}\n  - preset: clobber\n",
	"version: 1\nrules:\n  - preset: pad\n    functions: [null, 1, \"foo[\"]\n",
	"version: 2\n",
	"{version: 1, rules: [{preset: clobber, params: {seed: 99999999999999999999}}]}",
	"version: 1\nrules:\n  - &a {preset: pad}\n  - *a\n",
	"version: 1\n---\nrules: []\n",
	"version: 1\nrules:\n  - preset: vptrace\n    params:\n      <<: {threshold: 1}\n      pagesize: !!str 4K\n      usestack: !fancy yes\n",
	"version: 1\nrules:\n  - preset: vptrace\n    params: {threshold: .nan, pagesize: 3K}\n",
	"version: 1\nrules:\n  - preset: vptrace\n    exclude: [main]\n  - preset: pad\n",
	"? [a]\n: b\n",
	"version: 1\nrules:\n- preset: vptrace\n  params: {threshold: 2024-01-01}\n",
}

// FuzzParse checks that Parse never panics, that every error is one line
// naming the file (and a line within the input when it names one), and that
// every accepted file survives a round trip through YAML unchanged.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	reg := hijackLike()
	f.Fuzz(func(t *testing.T, data []byte) {
		// Go's fuzzer does not time out a single input; a hang would just
		// stall the run. Crash instead, so the input gets reported.
		tm := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("Parse hangs on %q", data)) })
		defer tm.Stop()
		file, err := Parse("rules.yaml", data, reg)
		if err != nil {
			checkErr(t, err, data)
			return
		}
		if len(file.Rules) == 0 {
			t.Fatal("accepted a file without rules")
		}
		for _, fn := range []string{"", "main", "hot_loop", "_ZN3foo3barEv", "f.cold"} {
			if r, ok := file.Match(fn); ok && !r.Matches(fn) {
				t.Fatalf("Match(%q) returned rule %d, which does not match", fn, r.Index)
			}
		}
		again, err := Parse("again.yaml", marshal(t, file, reg), reg)
		if err != nil {
			t.Fatalf("round trip: %v\nfirst:\n%s\nmarshalled:\n%s", err, data, marshal(t, file, reg))
		}
		if len(again.Rules) != len(file.Rules) {
			t.Fatalf("round trip: %d rules, then %d", len(file.Rules), len(again.Rules))
		}
		for i := range file.Rules {
			a, b := file.Rules[i], again.Rules[i]
			if a.Preset != b.Preset || !reflect.DeepEqual(a.Functions, b.Functions) || !reflect.DeepEqual(a.Exclude, b.Exclude) ||
				a.Params.Canonical() != b.Params.Canonical() {
				t.Fatalf("round trip changed rule %d:\n%+v\n%+v", i+1, a, b)
			}
		}
	})
}

func checkErr(t *testing.T, err error, data []byte) {
	t.Helper()
	msg := err.Error()
	if strings.ContainsAny(msg, "\n\r") {
		t.Fatalf("error is not one line: %q", msg)
	}
	if !strings.HasPrefix(msg, "rules.yaml:") {
		t.Fatalf("error does not start with the file name: %q", msg)
	}
	if strings.Contains(msg, "internal error") {
		t.Fatalf("recovered panic: %s\ninput: %q", msg, data)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T is not *Error: %v", err, err)
	}
	if lines := countLines(data) + 1; e.Line < 0 || e.Line > lines {
		t.Fatalf("error names line %d of a %d-line input: %s", e.Line, lines-1, msg)
	}
}

// marshal writes f back as a rules file, every parameter explicit.
func marshal(t *testing.T, f *File, reg Registry) []byte {
	type ruleOut struct {
		Preset    string         `yaml:"preset"`
		Functions []string       `yaml:"functions,omitempty"`
		Exclude   []string       `yaml:"exclude,omitempty"`
		Params    map[string]any `yaml:"params,omitempty"`
	}
	out := struct {
		Version int       `yaml:"version"`
		Rules   []ruleOut `yaml:"rules"`
	}{Version: f.Version}
	for _, r := range f.Rules {
		ro := ruleOut{Preset: r.Preset, Functions: r.Functions, Exclude: r.Exclude, Params: map[string]any{}}
		for _, ps := range reg[r.Preset].Params {
			var v any
			switch ps.Kind {
			case KindBool:
				v = r.Params.Bool(ps.Name)
			case KindInt:
				v = r.Params.Int(ps.Name)
			case KindFloat:
				v = r.Params.Float(ps.Name)
			case KindSize:
				v = r.Params.Size(ps.Name)
			case KindEnum:
				v = r.Params.String(ps.Name)
			}
			ro.Params[ps.Name] = v
		}
		out.Rules = append(out.Rules, ro)
	}
	b, err := yaml.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// countLines counts lines as YAML does: CR, LF, CRLF, NEL, LS and PS all end
// a line.
func countLines(data []byte) int {
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	n := 1
	for _, brk := range []string{"\r", "\n", "\u0085", "\u2028", "\u2029"} {
		n += strings.Count(s, brk)
	}
	return n
}
