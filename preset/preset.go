// Package preset defines what an instrumentation is to hijack, and the set
// of them a build offers.
//
// A preset declares itself once, in its own package: Spec gives its name,
// one-line description and parameters (kinds, defaults, ranges, docs),
// which the rules parser checks files against and from which `hijack help
// presets`, the rules reference and the README table are generated;
// Runtime, optionally, names the library its inserted code calls, which
// `hijack cc` links. Rewriting one object is a Session: Begin sees the
// parameters of every rule of the preset that selects functions of the
// object (for object-wide choices, such as vptrace's TLS model), Apply
// instruments the functions of one rule with that rule's own parameters,
// Finish adds what the object needs once (tables, constructors).
//
// A Preset value holds no per-object state: the same value rewrites many
// objects concurrently, each through its own Session. Adding a preset is a
// package with a type implementing Preset (preset/kit has the pieces
// inserted code needs) and one line in preset/all.
package preset

import (
	"fmt"

	"hijack/ibr"
	"hijack/rules"
)

// Preset is one instrumentation.
type Preset interface {
	// Spec declares the preset's name and parameters.
	Spec() rules.PresetSpec
	// Begin starts rewriting o. params are those of every rule of this
	// preset that selects functions of o, in rule order; an error names
	// the rules that conflict.
	Begin(o *ibr.Object, params []rules.Params) (Session, error)
}

// Session rewrites one object for one preset. Its methods are called from
// one goroutine: Apply once per rule (in rule order), then Finish once.
type Session interface {
	// Apply inserts code into funcs (all in rewritable sections) with the
	// parameters of the rule that selected them. Warnings about functions
	// it leaves alone (function and reason) go to warn.
	Apply(funcs []*ibr.Func, params rules.Params, warn func(string)) error
	// Finish adds what the object needs once, after every rule ran.
	Finish() error
}

// Runtime names the library a preset's inserted code calls, as files in
// the runtime directory (next to the hijack binary, or $HIJACK_RUNTIME).
type Runtime struct {
	Shared string   // linked into dynamic programs and shared libraries, e.g. libvptrace.so
	Static string   // linked into -static programs, e.g. libvptrace.a
	Libs   []string // what Static needs after it, e.g. -lpthread
}

// WithRuntime is implemented by presets whose inserted code calls a
// runtime library.
type WithRuntime interface {
	Runtime() Runtime
}

// Set is the presets of a build, in documentation order.
type Set []Preset

// Lookup returns the preset called name.
func (s Set) Lookup(name string) (Preset, bool) {
	for _, p := range s {
		if p.Spec().Name == name {
			return p, true
		}
	}
	return nil, false
}

// Names returns the presets' names, in the set's order.
func (s Set) Names() []string {
	names := make([]string, len(s))
	for i, p := range s {
		names[i] = p.Spec().Name
	}
	return names
}

// Registry returns the specs of the set, for the rules parser.
func (s Set) Registry() rules.Registry {
	r := make(rules.Registry, len(s))
	for _, p := range s {
		spec := p.Spec()
		r[spec.Name] = spec
	}
	return r
}

// Check reports a set that could not work: two presets of one name, or a
// spec the rules parser would reject.
func (s Set) Check() error {
	seen := make(map[string]bool)
	for _, p := range s {
		n := p.Spec().Name
		if seen[n] {
			return fmt.Errorf("preset %q registered twice", n)
		}
		seen[n] = true
	}
	return s.Registry().Check()
}

// Runtimes returns the runtimes that the presets named (those rules use)
// need, each once, in the order of the names.
func (s Set) Runtimes(names []string) []Runtime {
	var rts []Runtime
	for _, n := range names {
		p, ok := s.Lookup(n)
		if !ok {
			continue
		}
		wr, ok := p.(WithRuntime)
		if !ok {
			continue
		}
		rt := wr.Runtime()
		dup := false
		for _, x := range rts {
			dup = dup || (x.Shared == rt.Shared && x.Static == rt.Static)
		}
		if !dup {
			rts = append(rts, rt)
		}
	}
	return rts
}
