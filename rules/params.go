package rules

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Params holds a rule's parameter values, checked against the preset's spec
// and with defaults applied. The zero value has no parameters.
//
// The accessors panic if the preset does not declare the parameter or
// declares it with another kind: that is a bug in the preset, not in the
// user's rules file, and the preset's own tests find it.
type Params struct {
	preset string
	origin string // the rule the values come from, for messages
	specs  []ParamSpec
	vals   map[string]any
	given  map[string]bool
}

// Origin names the rule the parameters belong to, for messages that must
// say which rule asked for what: "rules.yaml:7: rule 2", or "--preset
// vptrace" for a command line; "" for a preset's Defaults.
func (p Params) Origin() string { return p.origin }

func newParams(p PresetSpec) Params {
	ps := Params{preset: p.Name, specs: slices.Clone(p.Params), vals: map[string]any{}, given: map[string]bool{}}
	for _, s := range p.Params {
		ps.vals[s.Name] = s.Default
	}
	return ps
}

func (p Params) get(name string, k Kind) any {
	for _, s := range p.specs {
		if s.Name == name {
			if s.Kind != k {
				panic(fmt.Sprintf("rules: param %s of preset %s is a %v, not a %v", name, p.preset, s.Kind, k))
			}
			return p.vals[name]
		}
	}
	panic(fmt.Sprintf("rules: preset %q has no param %q", p.preset, name))
}

// clone returns a copy that shares no maps with p.
func (p Params) clone() Params {
	c := p
	c.vals = maps.Clone(p.vals)
	c.given = maps.Clone(p.given)
	return c
}

// Float returns the value of a KindFloat parameter.
func (p Params) Float(name string) float64 { return p.get(name, KindFloat).(float64) }

// Int returns the value of a KindInt parameter.
func (p Params) Int(name string) int64 { return p.get(name, KindInt).(int64) }

// Bool returns the value of a KindBool parameter.
func (p Params) Bool(name string) bool { return p.get(name, KindBool).(bool) }

// Size returns the value, in bytes, of a KindSize parameter (also when the
// file gave it through the ExpAlias key). It is a power of two.
func (p Params) Size(name string) int64 { return p.get(name, KindSize).(int64) }

// String returns the value of a KindEnum parameter.
func (p Params) String(name string) string { return p.get(name, KindEnum).(string) }

// IsSet reports whether the parameter was given explicitly rather than
// defaulted (for a size, through either of its keys).
func (p Params) IsSet(name string) bool { return p.given[name] }

// Names returns the parameter names in declaration order.
func (p Params) Names() []string {
	names := make([]string, len(p.specs))
	for i, s := range p.specs {
		names[i] = s.Name
	}
	return names
}

// Canonical returns every parameter as name=value, in declaration order,
// separated by spaces, e.g. "threshold=0 pagesize=4096 usestack=false
// tls=auto exact=false". Sizes are in bytes. Suitable for logs and for
// recording in a trace how an object was instrumented.
func (p Params) Canonical() string {
	var parts []string
	for _, s := range p.specs {
		parts = append(parts, s.Name+"="+formatValue(s, p.vals[s.Name]))
	}
	return strings.Join(parts, " ")
}

func formatValue(s ParamSpec, v any) string {
	switch v := v.(type) {
	case float64:
		return fmtFloat(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case bool:
		return strconv.FormatBool(v)
	case string:
		return v
	}
	return fmt.Sprint(v)
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// FormatSize writes a size in bytes as "512", "1K", "4K", "2M".
func FormatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"G", 30}, {"M", 20}, {"K", 10}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// scalar returns the resolved YAML tag and Go value of a scalar node: tag is
// one of !!str, !!int, !!float, !!bool, !!null; value is string, int64,
// uint64 (ints above MaxInt64), float64, bool or nil. Other tags and
// non-scalars are errors whose text completes "got ...".
func scalar(n *yaml.Node) (string, any, error) {
	if n.Kind != yaml.ScalarNode {
		return "", nil, fmt.Errorf("got %s", describe(n))
	}
	tag := n.ShortTag()
	switch tag {
	case "!!str", "!!int", "!!float", "!!bool", "!!null":
	default:
		if n.Style&yaml.TaggedStyle == 0 { // an implicit !!timestamp
			return "", nil, fmt.Errorf("got %s", clip(n.Value))
		}
		return "", nil, fmt.Errorf("got a value tagged %s", clip(tag))
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return "", nil, fmt.Errorf("got %s, which is not a valid %s", describe(n), tag)
	}
	switch x := v.(type) {
	case int:
		v = int64(x)
	case int64, uint64, float64, bool, string, nil:
	default:
		return "", nil, fmt.Errorf("got %s", describe(n))
	}
	return tag, v, nil
}

// describe names a node's value for "got ..." in error messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "string " + strconv.Quote(clip(n.Value))
		case "!!null":
			return "nothing (null)"
		}
		return clip(n.Value)
	}
	return "nothing"
}

// clip shortens s for an error message and keeps it on one line.
func clip(s string) string {
	const max = 40
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) > max {
		s = string([]rune(s)[:max]) + "..."
	}
	return s
}

// value checks node n against spec s. If exp is set, n is the ExpAlias key's
// value. The error text follows "param NAME of preset P: ".
func value(s ParamSpec, n *yaml.Node, exp bool) (any, error) {
	tag, v, err := scalar(n)
	if err == nil && tag == "!!null" {
		err = fmt.Errorf("got nothing (null)")
	}
	fail := func(want string, err error) (any, error) {
		if err == nil {
			got := describe(n)
			if s.Kind == KindSize && !exp && n.Kind == yaml.ScalarNode {
				got = clip(n.Value) // 3K, not string "3K"
			}
			err = fmt.Errorf("got %s", got)
		}
		return nil, fmt.Errorf("want %s, %v", want, err)
	}
	if exp {
		if err != nil || tag != "!!int" {
			return fail(s.wantExp(), err)
		}
		e, ok := v.(int64)
		if !ok || e < int64(log2(s.IntMin)) || e > int64(log2(s.IntMax)) {
			return fail(s.wantExp(), nil)
		}
		return int64(1) << e, nil
	}
	if err != nil {
		return fail(s.want(), err)
	}
	switch s.Kind {
	case KindBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case KindInt:
		if i, ok := v.(int64); ok && tag == "!!int" && i >= s.IntMin && i <= s.IntMax {
			return i, nil
		}
	case KindFloat:
		var f float64
		switch x := v.(type) {
		case int64:
			f = float64(x)
		case uint64:
			f = float64(x)
		case float64:
			f = x
		default:
			return fail(s.want(), nil)
		}
		if f >= s.FloatMin && f <= s.FloatMax { // false for NaN
			return f, nil
		}
	case KindSize:
		var size int64
		switch x := v.(type) {
		case int64:
			if tag != "!!int" {
				return fail(s.want(), nil)
			}
			size = x
		case string:
			var err error
			if size, err = ParseSize(x); err != nil {
				return fail(s.want(), nil)
			}
		default:
			return fail(s.want(), nil)
		}
		if pow2(size) && size >= s.IntMin && size <= s.IntMax {
			return size, nil
		}
	case KindEnum:
		if str, ok := v.(string); ok && tag == "!!str" {
			for _, allowed := range s.Values {
				if str == allowed {
					return str, nil
				}
			}
		}
	}
	return fail(s.want(), nil)
}

// ParseSize parses a size: "4096", "4K", "4 KiB", "2M", "1G", "64B" (binary
// units, case-insensitive), as the size parameters of rules files take it.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	bad := fmt.Errorf("bad size %q (want e.g. 4096 or 4K)", s)
	if i == 0 || i > 18 {
		return 0, bad
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, bad
	}
	var shift uint
	switch strings.ToLower(strings.TrimSpace(t[i:])) {
	case "", "b":
	case "k", "kb", "kib":
		shift = 10
	case "m", "mb", "mib":
		shift = 20
	case "g", "gb", "gib":
		shift = 30
	default:
		return 0, bad
	}
	if n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("size %q too large", s)
	}
	return n << shift, nil
}
