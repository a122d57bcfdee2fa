package rules

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// Version is the rules file format version this package reads.
const Version = 1

// File is a parsed and validated rules file.
type File struct {
	Name    string // file name as given to Parse; "" for Default
	Version int
	Rules   []Rule // in file order; see Match
}

// Rule is one entry of the rules list, resolved against its preset.
type Rule struct {
	Preset    string
	Functions []string // glob patterns (path.Match syntax); nil means all functions
	Exclude   []string // glob patterns; may be nil
	Params    Params
	Line      int // line of the rule in the file; 0 for Default
	Index     int // 1-based position in the rules list
}

// Matches reports whether the rule selects function fn: fn matches one of
// Functions (or Functions is nil) and none of Exclude.
func (r *Rule) Matches(fn string) bool {
	if r.Functions != nil && !matchAny(r.Functions, fn) {
		return false
	}
	return !matchAny(r.Exclude, fn)
}

func matchAny(patterns []string, fn string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, fn); ok {
			return true
		}
	}
	return false
}

func (r *Rule) matchesAll() bool {
	if len(r.Exclude) > 0 {
		return false
	}
	if r.Functions == nil {
		return true
	}
	for _, p := range r.Functions {
		if p == "*" {
			return true
		}
	}
	return false
}

// Match returns the rule that applies to function fn: the first rule in file
// order that selects it. A function a rule does not select (because no
// pattern in functions matches or a pattern in exclude does) falls through
// to later rules. If no rule selects fn it is left alone and ok is false.
func (f *File) Match(fn string) (r *Rule, ok bool) {
	for i := range f.Rules {
		if f.Rules[i].Matches(fn) {
			return &f.Rules[i], true
		}
	}
	return nil, false
}

// Presets returns the distinct presets the rules use, in order of first use.
func (f *File) Presets() []string {
	var out []string
	for _, r := range f.Rules {
		seen := false
		for _, p := range out {
			seen = seen || p == r.Preset
		}
		if !seen {
			out = append(out, r.Preset)
		}
	}
	return out
}

// Error is a rules error. Its text is one line: "FILE:LINE: MSG", or
// "FILE: MSG" when the line is unknown, or just MSG for Default.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	switch {
	case e.File == "":
		return e.Msg
	case e.Line <= 0:
		return e.File + ": " + e.Msg
	}
	return e.File + ":" + strconv.Itoa(e.Line) + ": " + e.Msg
}

// Load reads and parses the rules file at path; see Parse.
func Load(path string, presets Registry) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data, presets)
}

// Parse parses and validates a rules file against the presets in the
// registry. name is used in error messages. Errors are of type *Error and
// name the line of the offending key or value.
func Parse(name string, data []byte, presets Registry) (f *File, err error) {
	p := &parser{file: name, presets: presets}
	defer func() {
		// The YAML library has panicked on odd inputs before; never let that
		// escape to the user.
		if r := recover(); r != nil {
			f, err = nil, p.errf(0, "internal error: %v", r)
		}
	}()
	if err := presets.Check(); err != nil {
		return nil, p.errf(0, "invalid preset registry: %v", err)
	}
	doc, err := p.decode(data)
	if err != nil {
		return nil, err
	}
	return p.top(doc)
}

// Default returns a rules file equivalent to a single rule applying preset to
// every function, for a command line such as "--preset vptrace". Each
// setting is "name=value" and overrides a parameter default; value is read
// as a YAML scalar and checked like a value in a rules file
// (e.g. "threshold=0.5", "pagesize=2M", "usestack=true"). A later setting
// of the same parameter (or of a size and its exponent alias) overrides an
// earlier one. Errors name the preset and parameter but no file or line.
func Default(presets Registry, preset string, settings ...string) (f *File, err error) {
	p := &parser{presets: presets}
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, p.errf(0, "preset %s: internal error: %v", preset, r)
		}
	}()
	if err := presets.Check(); err != nil {
		return nil, p.errf(0, "invalid preset registry: %v", err)
	}
	spec, ok := presets[preset]
	if !ok {
		return nil, p.errf(0, "unknown preset %q (%s)", preset, presets.known())
	}
	params := newParams(spec)
	for _, set := range settings {
		key, n, err := p.setting(spec.Name, set)
		if err != nil {
			return nil, err
		}
		if err := p.param(&params, spec, key, n, nil); err != nil {
			if errors.Is(err, errUnknownParam) {
				return nil, p.errf(0, "unknown param %q of preset %s (known: %s)", clip(key), spec.Name, strings.Join(spec.keys(), ", "))
			}
			return nil, err
		}
	}
	params.origin = "--preset " + preset
	return &File{Version: Version, Rules: []Rule{{Preset: preset, Params: params, Index: 1}}}, nil
}

// Override sets parameters of the rules of f on top of what the file says,
// for a command line such as "--rules r.yaml --param threshold=0.5": each
// setting "name=value" (read as in Default) applies to every rule whose
// preset declares the parameter. A setting no rule's preset declares is an
// error, as is a value out of range; on error f is unchanged.
func (f *File) Override(presets Registry, settings ...string) (err error) {
	p := &parser{presets: presets}
	defer func() {
		if r := recover(); r != nil {
			err = p.errf(0, "internal error: %v", r)
		}
	}()
	rules := make([]Rule, len(f.Rules))
	for i, r := range f.Rules {
		r.Params = r.Params.clone()
		rules[i] = r
	}
	for _, set := range settings {
		key, n, err := p.setting("", set)
		if err != nil {
			return err
		}
		applied := false
		for i := range rules {
			r := &rules[i]
			spec, ok := presets[r.Preset]
			if !ok {
				return p.errf(0, "rule %d: unknown preset %q", r.Index, r.Preset)
			}
			p.ctx = fmt.Sprintf("--param %s: rule %d: ", clip(key), r.Index)
			err := p.param(&r.Params, spec, key, n, nil)
			p.ctx = ""
			if errors.Is(err, errUnknownParam) {
				continue
			}
			if err != nil {
				return err
			}
			applied = true
		}
		if !applied {
			return p.errf(0, "--param %s: no rule's preset has a parameter %q (the rules use %s)", clip(set), clip(key), strings.Join(f.Presets(), ", "))
		}
	}
	f.Rules = rules
	return nil
}

// setting splits a command-line setting "name=value" and reads the value
// as a YAML scalar (a string if it does not parse as one).
func (p *parser) setting(preset, set string) (string, *yaml.Node, error) {
	key, val, ok := strings.Cut(set, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		if preset != "" {
			return "", nil, p.errf(0, "preset %s: setting %q: want name=value", preset, clip(set))
		}
		return "", nil, p.errf(0, "setting %q: want name=value", clip(set))
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(val), &n); err != nil || len(n.Content) != 1 {
		n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: val}
	} else {
		n = *n.Content[0]
	}
	return key, &n, nil
}

type parser struct {
	file    string
	presets Registry
	ctx     string // "rule N: " while inside a rule
}

func (p *parser) errf(line int, format string, args ...any) error {
	return &Error{File: p.file, Line: line, Msg: p.ctx + fmt.Sprintf(format, args...)}
}

// yamlLineErr matches the YAML decoder's errors that name a line;
// compiled on first use: most runs never see an error.
var yamlLineErr = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

func (p *parser) yamlErr(err error) error {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	if m := yamlLineErr().FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return p.errf(line, "invalid YAML: %s", m[2])
	}
	return p.errf(0, "invalid YAML: %s", strings.TrimPrefix(msg, "yaml: "))
}

// decode parses exactly one YAML document and returns its root node.
func (p *parser) decode(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, p.errf(1, "empty file: want %q and %q", "version: 1", "rules:")
		}
		return nil, p.yamlErr(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, p.errf(next.Line, "more than one YAML document; a rules file has one")
	case !errors.Is(err, io.EOF):
		return nil, p.yamlErr(err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, p.errf(doc.Line, "want a mapping with %q and %q", "version", "rules")
	}
	return doc.Content[0], nil
}

// entry is one key of a mapping.
type entry struct {
	key   string
	k, v  *yaml.Node
	index int
}

// mapping checks that n is a mapping with plain, unique keys and no aliases
// and returns its entries. what names the mapping in errors.
func (p *parser) mapping(n *yaml.Node, what string) ([]entry, error) {
	if err := p.noAlias(n); err != nil {
		return nil, err
	}
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n.Line, "%s: want a mapping, got %s", what, describe(n))
	}
	var es []entry
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if err := p.noAlias(k); err != nil {
			return nil, err
		}
		if k.Kind != yaml.ScalarNode {
			return nil, p.errf(k.Line, "%s: keys must be plain names, got %s", what, describe(k))
		}
		if k.ShortTag() == "!!merge" {
			return nil, p.errf(k.Line, "%s: merge keys (<<) are not supported", what)
		}
		if line, dup := first[k.Value]; dup {
			return nil, p.errf(k.Line, "duplicate key %q in %s (first at line %d)", clip(k.Value), what, line)
		}
		first[k.Value] = k.Line
		if err := p.noAlias(v); err != nil {
			return nil, err
		}
		es = append(es, entry{key: k.Value, k: k, v: v, index: len(es)})
	}
	return es, nil
}

func (p *parser) noAlias(n *yaml.Node) error {
	if n.Kind == yaml.AliasNode {
		return p.errf(n.Line, "aliases (*%s) are not supported", clip(n.Value))
	}
	return nil
}

func find(es []entry, key string) *entry {
	for i := range es {
		if es[i].key == key {
			return &es[i]
		}
	}
	return nil
}

func unknownKey(es []entry, known ...string) *entry {
	for i := range es {
		ok := false
		for _, k := range known {
			ok = ok || es[i].key == k
		}
		if !ok {
			return &es[i]
		}
	}
	return nil
}

var (
	topKeys  = []string{"version", "rules"}
	ruleKeys = []string{"preset", "functions", "exclude", "params"}
)

func (p *parser) top(root *yaml.Node) (*File, error) {
	es, err := p.mapping(root, "top level")
	if err != nil {
		return nil, err
	}
	// The version comes first: other keys may mean something else in
	// another version.
	ve := find(es, "version")
	unknown := unknownKey(es, topKeys...)
	if ve == nil {
		if unknown != nil { // likely a misspelt version
			return nil, p.errf(unknown.k.Line, "unknown key %q at top level (known: %s)", clip(unknown.key), strings.Join(topKeys, ", "))
		}
		return nil, p.errf(root.Line, "missing %q (want version: %d)", "version", Version)
	}
	tag, v, err := scalar(ve.v)
	if err != nil || tag != "!!int" {
		return nil, p.errf(ve.v.Line, "version: want the integer %d, got %s", Version, describe(ve.v))
	}
	if v != int64(Version) {
		return nil, p.errf(ve.v.Line, "unsupported version %s (this hijack reads version %d)", clip(ve.v.Value), Version)
	}
	if unknown != nil {
		return nil, p.errf(unknown.k.Line, "unknown key %q at top level (known: %s)", clip(unknown.key), strings.Join(topKeys, ", "))
	}
	re := find(es, "rules")
	if re == nil {
		return nil, p.errf(root.Line, "missing %q: want a list of rules", "rules")
	}
	if re.v.Kind != yaml.SequenceNode {
		return nil, p.errf(re.v.Line, "rules: want a list of rules, got %s", describe(re.v))
	}
	if len(re.v.Content) == 0 {
		return nil, p.errf(re.v.Line, "rules: list is empty; want at least one rule")
	}
	f := &File{Name: p.file, Version: Version}
	var catchAll *Rule // the first rule that selects every function
	for i, rn := range re.v.Content {
		p.ctx = fmt.Sprintf("rule %d: ", i+1)
		r, err := p.rule(rn)
		if err != nil {
			return nil, err
		}
		r.Index = i + 1
		r.Params.origin = fmt.Sprintf("%s:%d: rule %d", p.file, r.Line, r.Index)
		if catchAll != nil {
			return nil, p.errf(r.Line, "unreachable: rule %d (line %d) already applies to every function; rules are tried in order and the first that selects a function wins",
				catchAll.Index, catchAll.Line)
		}
		if r.matchesAll() {
			catchAll = &r
		}
		f.Rules = append(f.Rules, r)
	}
	p.ctx = ""
	return f, nil
}

func (p *parser) rule(n *yaml.Node) (Rule, error) {
	es, err := p.mapping(n, "rule")
	if err != nil {
		return Rule{}, err
	}
	r := Rule{Line: n.Line}
	if u := unknownKey(es, ruleKeys...); u != nil {
		return r, p.errf(u.k.Line, "unknown key %q (known: %s)", clip(u.key), strings.Join(ruleKeys, ", "))
	}
	pe := find(es, "preset")
	if pe == nil {
		return r, p.errf(n.Line, "missing %q (%s)", "preset", p.presets.known())
	}
	tag, _, err := scalar(pe.v)
	if err != nil || tag != "!!str" {
		return r, p.errf(pe.v.Line, "preset: want a preset name (%s), got %s", p.presets.known(), describe(pe.v))
	}
	spec, ok := p.presets[pe.v.Value]
	if !ok {
		return r, p.errf(pe.v.Line, "unknown preset %q (%s)", clip(pe.v.Value), p.presets.known())
	}
	r.Preset = spec.Name
	if e := find(es, "functions"); e != nil {
		if r.Functions, err = p.globs(e, false); err != nil {
			return r, err
		}
	}
	if e := find(es, "exclude"); e != nil {
		if r.Exclude, err = p.globs(e, true); err != nil {
			return r, err
		}
	}
	r.Params = newParams(spec)
	if e := find(es, "params"); e != nil && !isNull(e.v) {
		pes, err := p.mapping(e.v, "params of preset "+spec.Name)
		if err != nil {
			return r, err
		}
		firstSize := map[string]int64{}
		for _, pe := range pes {
			if err := p.param(&r.Params, spec, pe.key, pe.v, firstSize); err != nil {
				if errors.Is(err, errUnknownParam) {
					return r, p.errf(pe.k.Line, "unknown key %q in params of preset %s (known: %s)",
						clip(pe.key), spec.Name, strings.Join(spec.keys(), ", "))
				}
				return r, err
			}
		}
	}
	return r, nil
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// globs reads a list of glob patterns. exclude may be empty or null;
// functions may not (omit it to select every function).
func (p *parser) globs(e *entry, exclude bool) ([]string, error) {
	if exclude && isNull(e.v) {
		return nil, nil
	}
	if e.v.Kind != yaml.SequenceNode {
		return nil, p.errf(e.v.Line, "%s: want a list of glob patterns such as [\"main\", \"foo_*\"], got %s", e.key, describe(e.v))
	}
	if len(e.v.Content) == 0 {
		if exclude {
			return nil, nil
		}
		return nil, p.errf(e.v.Line, "functions: list is empty, so the rule selects nothing; omit functions to select every function")
	}
	out := make([]string, 0, len(e.v.Content))
	for _, g := range e.v.Content {
		if err := p.noAlias(g); err != nil {
			return nil, err
		}
		tag, _, err := scalar(g)
		if err != nil || tag != "!!str" {
			hint := ""
			if g.Kind == yaml.ScalarNode {
				hint = fmt.Sprintf(" (quote it: %q)", clip(g.Value))
			}
			return nil, p.errf(g.Line, "%s: want a glob pattern, got %s%s", e.key, describe(g), hint)
		}
		if g.Value == "" {
			return nil, p.errf(g.Line, "%s: empty pattern matches no function", e.key)
		}
		if _, err := path.Match(g.Value, ""); err != nil {
			return nil, p.errf(g.Line, "%s: invalid glob pattern %q: %v", e.key, clip(g.Value), err)
		}
		out = append(out, g.Value)
	}
	return out, nil
}

var errUnknownParam = errors.New("unknown param")

// param sets parameter key (a name or an ExpAlias) of params from node v.
// It returns errUnknownParam if the preset has no such key. firstSize, if
// not nil, remembers sizes already given, to check that a size and its
// ExpAlias agree.
func (p *parser) param(params *Params, spec PresetSpec, key string, v *yaml.Node, firstSize map[string]int64) error {
	for _, s := range spec.Params {
		exp := key == s.ExpAlias && s.ExpAlias != ""
		if key != s.Name && !exp {
			continue
		}
		val, err := value(s, v, exp)
		if err != nil {
			return p.errf(v.Line, "param %s of preset %s: %v", clip(key), spec.Name, err)
		}
		if s.Kind == KindSize && firstSize != nil {
			if prev, ok := firstSize[s.Name]; ok && prev != val.(int64) {
				size, fromExp := val.(int64), prev
				if exp {
					size, fromExp = prev, val.(int64)
				}
				return p.errf(v.Line, "params %s (%s) and %s (%d, i.e. %s) of preset %s disagree; give only one",
					s.Name, FormatSize(size), s.ExpAlias, log2(fromExp), FormatSize(fromExp), spec.Name)
			}
			firstSize[s.Name] = val.(int64)
		}
		params.vals[s.Name] = val
		params.given[s.Name] = true
		return nil
	}
	return errUnknownParam
}
