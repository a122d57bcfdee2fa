package rules

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Kind is the type of a preset parameter.
type Kind int

// Parameter kinds. The Go type of ParamSpec.Default and of the value returned
// by the matching Params accessor is given for each.
const (
	KindBool  Kind = iota + 1 // bool; YAML true/false; Params.Bool
	KindInt                   // int64 in [IntMin, IntMax]; Params.Int
	KindFloat                 // float64 in [FloatMin, FloatMax], ints accepted; Params.Float
	KindSize                  // int64 byte count, a power of two in [IntMin, IntMax]; Params.Size
	KindEnum                  // string, one of Values; Params.String
)

func (k Kind) String() string {
	switch k {
	case KindBool:
		return "bool"
	case KindInt:
		return "int"
	case KindFloat:
		return "float"
	case KindSize:
		return "size"
	case KindEnum:
		return "enum"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// ParamSpec declares one parameter of a preset. Use the constructors
// (BoolParam, IntParam, FloatParam, SizeParam, EnumParam) or fill it in
// directly; Registry.Check reports inconsistent specs.
type ParamSpec struct {
	Name string // key under params:, e.g. "threshold"
	Kind Kind
	Doc  string // one line, shown by Registry.Help

	// Default is used when the key is absent. Its Go type follows Kind:
	// bool, int64, float64, int64 (bytes) or string.
	Default any

	IntMin, IntMax     int64    // inclusive bounds for KindInt and KindSize (bytes)
	FloatMin, FloatMax float64  // inclusive bounds for KindFloat
	Values             []string // allowed values for KindEnum

	// ExpAlias, for KindSize only, names an alternative key that gives the
	// size as a base-2 exponent (e.g. sizeexp: 12 for 4096). At most one of
	// the two keys may be given unless they agree.
	ExpAlias string
}

// BoolParam declares a boolean parameter.
func BoolParam(name string, def bool, doc string) ParamSpec {
	return ParamSpec{Name: name, Kind: KindBool, Doc: doc, Default: def}
}

// IntParam declares an integer parameter in [min, max]. Use math.MinInt64
// and math.MaxInt64 for an unbounded side.
func IntParam(name string, def, min, max int64, doc string) ParamSpec {
	return ParamSpec{Name: name, Kind: KindInt, Doc: doc, Default: def, IntMin: min, IntMax: max}
}

// FloatParam declares a floating-point parameter in [min, max]. Integers are
// accepted as values; NaN and infinities never are.
func FloatParam(name string, def, min, max float64, doc string) ParamSpec {
	return ParamSpec{Name: name, Kind: KindFloat, Doc: doc, Default: def, FloatMin: min, FloatMax: max}
}

// SizeParam declares a byte-size parameter that must be a power of two in
// [min, max] (both powers of two). Values are integers (4096, 0x1000) or
// strings with a binary suffix (4K, 2M, 1G; KB/KiB spellings too). If
// expAlias is not empty, that key is accepted as well, giving log2 of the
// size.
func SizeParam(name string, def, min, max int64, expAlias, doc string) ParamSpec {
	return ParamSpec{Name: name, Kind: KindSize, Doc: doc, Default: def, IntMin: min, IntMax: max, ExpAlias: expAlias}
}

// EnumParam declares a string parameter restricted to values.
func EnumParam(name, def string, values []string, doc string) ParamSpec {
	return ParamSpec{Name: name, Kind: KindEnum, Doc: doc, Default: def, Values: slices.Clone(values)}
}

// PresetSpec declares a preset: its name as written after "preset:", a one-line
// description and its parameters in documentation order.
type PresetSpec struct {
	Name   string
	Doc    string
	Params []ParamSpec
}

// Param returns the spec of the parameter called name (not an ExpAlias).
func (p PresetSpec) Param(name string) (ParamSpec, bool) {
	for _, ps := range p.Params {
		if ps.Name == name {
			return ps, true
		}
	}
	return ParamSpec{}, false
}

// keys lists every key accepted under params:, aliases right after the
// parameter they alias.
func (p PresetSpec) keys() []string {
	var ks []string
	for _, ps := range p.Params {
		ks = append(ks, ps.Name)
		if ps.ExpAlias != "" {
			ks = append(ks, ps.ExpAlias)
		}
	}
	return ks
}

// Defaults returns the preset's parameters with every default applied.
func (p PresetSpec) Defaults() Params {
	return newParams(p)
}

// Registry maps preset names to their specs. It is passed to Parse and
// Default; preset.Set.Registry makes one from the presets of a build. The
// key must equal the spec's Name.
type Registry map[string]PresetSpec

// Names returns the preset names, sorted.
func (r Registry) Names() []string {
	names := make([]string, 0, len(r))
	for n := range r {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (r Registry) known() string {
	if len(r) == 0 {
		return "known: none"
	}
	return "known: " + strings.Join(r.Names(), ", ")
}

// Check reports the first inconsistency in the registry: a key that differs
// from the spec's name, an empty or duplicate name, a default of the wrong
// type or out of range, an empty enum, bad bounds.
func (r Registry) Check() error {
	for _, key := range r.Names() {
		p := r[key]
		if key != p.Name {
			return fmt.Errorf("preset registered as %q is named %q", key, p.Name)
		}
		if !validName(p.Name) {
			return fmt.Errorf("invalid preset name %q", p.Name)
		}
		seen := map[string]bool{}
		for _, ps := range p.Params {
			if err := ps.check(); err != nil {
				return fmt.Errorf("preset %s: param %s: %v", p.Name, ps.Name, err)
			}
			for _, k := range []string{ps.Name, ps.ExpAlias} {
				if k == "" {
					continue
				}
				if seen[k] {
					return fmt.Errorf("preset %s: param %q declared twice", p.Name, k)
				}
				seen[k] = true
			}
		}
	}
	return nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c >= 'a' && c <= 'z':
		case i > 0 && (c >= '0' && c <= '9' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

func (ps ParamSpec) check() error {
	if !validName(ps.Name) {
		return fmt.Errorf("invalid name %q", ps.Name)
	}
	if ps.ExpAlias != "" && (ps.Kind != KindSize || !validName(ps.ExpAlias)) {
		return fmt.Errorf("invalid ExpAlias %q", ps.ExpAlias)
	}
	switch ps.Kind {
	case KindBool:
		if _, ok := ps.Default.(bool); !ok {
			return fmt.Errorf("default %#v is not a bool", ps.Default)
		}
	case KindInt:
		d, ok := ps.Default.(int64)
		if !ok {
			return fmt.Errorf("default %#v is not an int64", ps.Default)
		}
		if ps.IntMin > ps.IntMax || d < ps.IntMin || d > ps.IntMax {
			return fmt.Errorf("default %d outside [%d, %d]", d, ps.IntMin, ps.IntMax)
		}
	case KindFloat:
		d, ok := ps.Default.(float64)
		if !ok {
			return fmt.Errorf("default %#v is not a float64", ps.Default)
		}
		if !finite(ps.FloatMin) || !finite(ps.FloatMax) || ps.FloatMin > ps.FloatMax || !(d >= ps.FloatMin && d <= ps.FloatMax) {
			return fmt.Errorf("default %v outside [%v, %v]", d, ps.FloatMin, ps.FloatMax)
		}
	case KindSize:
		d, ok := ps.Default.(int64)
		if !ok {
			return fmt.Errorf("default %#v is not an int64", ps.Default)
		}
		if !pow2(ps.IntMin) || !pow2(ps.IntMax) || ps.IntMin > ps.IntMax {
			return fmt.Errorf("bounds [%d, %d] are not powers of two", ps.IntMin, ps.IntMax)
		}
		if !pow2(d) || d < ps.IntMin || d > ps.IntMax {
			return fmt.Errorf("default %d is not a power of two in [%d, %d]", d, ps.IntMin, ps.IntMax)
		}
	case KindEnum:
		d, ok := ps.Default.(string)
		if !ok {
			return fmt.Errorf("default %#v is not a string", ps.Default)
		}
		if len(ps.Values) == 0 || !slices.Contains(ps.Values, d) {
			return fmt.Errorf("default %q not among %q", d, ps.Values)
		}
	default:
		return fmt.Errorf("unknown kind %v", ps.Kind)
	}
	return nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func pow2(n int64) bool { return n > 0 && n&(n-1) == 0 }

func log2(n int64) int { return bits.TrailingZeros64(uint64(n)) }

// want describes the accepted values of a parameter, for error messages.
func (ps ParamSpec) want() string {
	switch ps.Kind {
	case KindBool:
		return "true or false"
	case KindInt:
		switch {
		case ps.IntMin == math.MinInt64 && ps.IntMax == math.MaxInt64:
			return "an integer"
		case ps.IntMax == math.MaxInt64:
			return fmt.Sprintf("an integer >= %d", ps.IntMin)
		case ps.IntMin == math.MinInt64:
			return fmt.Sprintf("an integer <= %d", ps.IntMax)
		}
		return fmt.Sprintf("an integer in [%d, %d]", ps.IntMin, ps.IntMax)
	case KindFloat:
		return fmt.Sprintf("a number in [%s, %s]", fmtFloat(ps.FloatMin), fmtFloat(ps.FloatMax))
	case KindSize:
		return fmt.Sprintf("a power of two in [%s, %s] (e.g. 4096, 4K, 2M)", FormatSize(ps.IntMin), FormatSize(ps.IntMax))
	case KindEnum:
		return "one of " + strings.Join(ps.Values, ", ")
	}
	return ps.Kind.String()
}

func (ps ParamSpec) wantExp() string {
	return fmt.Sprintf("an integer in [%d, %d] (%s = 1<<%s)", log2(ps.IntMin), log2(ps.IntMax), ps.Name, ps.ExpAlias)
}

// Help renders the presets named (all, sorted, if none are) as plain
// text: each preset, its parameters, their kinds, accepted values,
// defaults and docs.
func (r Registry) Help(names ...string) string {
	if len(names) == 0 {
		names = r.Names()
	}
	var b strings.Builder
	for i, name := range names {
		p, ok := r[name]
		if !ok {
			continue
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s: %s\n", p.Name, p.Doc)
		for _, ps := range p.Params {
			key := ps.Name
			if ps.ExpAlias != "" {
				key += " (or " + ps.ExpAlias + ")"
			}
			fmt.Fprintf(&b, "  %s: %s, default %s\n      %s\n", key, ps.want(), formatValue(ps, ps.Default), ps.Doc)
		}
	}
	return b.String()
}

// Markdown renders the presets named (all, sorted, if none are) as a
// Markdown table: preset, parameter, kind with its accepted values,
// default, meaning. The README's table of presets is this output.
func (r Registry) Markdown(names ...string) string {
	if len(names) == 0 {
		names = r.Names()
	}
	var b strings.Builder
	b.WriteString("| preset | parameter | kind | default | meaning |\n|---|---|---|---|---|\n")
	row := func(cells ...string) {
		b.WriteByte('|')
		for _, c := range cells {
			if c != "" {
				b.WriteString(" " + c)
			}
			b.WriteString(" |")
		}
		b.WriteByte('\n')
	}
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, name := range names {
		p, ok := r[name]
		if !ok {
			continue
		}
		first := "`" + p.Name + "`"
		if len(p.Params) == 0 {
			row(first, "", "", "", cell(p.Doc))
			continue
		}
		for _, ps := range p.Params {
			key := "`" + ps.Name + "`"
			if ps.ExpAlias != "" {
				key += " (or `" + ps.ExpAlias + "`: log2)"
			}
			row(first, key, cell(ps.kindRange()), "`"+formatValue(ps, ps.Default)+"`", cell(ps.Doc))
			first = ""
		}
	}
	return b.String()
}

// kindRange is the kind of a parameter with its range or values, as the
// Markdown table shows it: "int", "int, 1..15", "size, 16..1G", "a | b".
func (ps ParamSpec) kindRange() string {
	switch ps.Kind {
	case KindInt:
		if ps.IntMin == math.MinInt64 && ps.IntMax == math.MaxInt64 {
			return "int"
		}
		lo, hi := "", ""
		if ps.IntMin != math.MinInt64 {
			lo = strconv.FormatInt(ps.IntMin, 10)
		}
		if ps.IntMax != math.MaxInt64 {
			hi = strconv.FormatInt(ps.IntMax, 10)
		}
		return "int, " + lo + ".." + hi
	case KindFloat:
		return "float, " + fmtFloat(ps.FloatMin) + ".." + fmtFloat(ps.FloatMax)
	case KindSize:
		return "size, " + FormatSize(ps.IntMin) + ".." + FormatSize(ps.IntMax)
	case KindEnum:
		return strings.Join(ps.Values, " | ")
	}
	return ps.Kind.String()
}
