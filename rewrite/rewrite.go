// Package rewrite runs hijack's pipeline on one object: read it, build the
// IBR, let the presets the rules select plan their insertions, lay the code
// out again and write the object.
package rewrite

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"hijack/elfobj"
	"hijack/emit"
	"hijack/ibr"
	"hijack/rules"
)

// Preset plans insertions into the functions one rule selected.
type Preset interface {
	// Apply inserts code into funcs (all in rewritable sections) of o.
	// Warnings about functions it leaves alone go to warn.
	Apply(o *ibr.Object, funcs []*ibr.Func, params rules.Params, warn func(string)) error
}

// Beginner is implemented by presets that make object-wide choices (a
// TLS model, say) which every rule of theirs must agree on. Begin runs
// before any Apply with the parameters of every rule of the preset that
// selects functions of o, in rule order; its error names the rules.
type Beginner interface {
	Begin(o *ibr.Object, params []rules.Params) error
}

// Finisher is implemented by presets that emit object-level data after
// all their functions were instrumented (site tables, constructors).
type Finisher interface {
	Finish(o *ibr.Object) error
}

// Presets maps preset names to implementations.
type Presets map[string]Preset

// Stats tells what a rewrite did.
type Stats struct {
	Funcs, Instrumented, Skipped int // functions: in the object, given to a preset, left alone
	Insertions                   int // instructions with inserted code before them
	// Added counts the bytes the presets added: inserted code, what its
	// relocations may need, new sections and symbols. The output may be
	// this much larger than elfobj.OutputLimit of the input.
	Added uint64
}

// Rewrite rewrites the object in data, named name, according to rf.
// Warnings (functions left uninstrumented and why) go to warn. The returned
// bytes are the new object. Errors and warnings are one line each, with
// names from the object made printable (elfobj.Printable).
func Rewrite(name string, data []byte, rf *rules.File, presets Presets, warn func(string)) ([]byte, Stats, error) {
	if warn == nil {
		warn = func(string) {}
	}
	w := warn
	out, st, err := rewrite(name, data, rf, presets, func(msg string) { w(elfobj.Printable(msg)) })
	return out, st, elfobj.PrintableError(err)
}

func rewrite(name string, data []byte, rf *rules.File, presets Presets, warn func(string)) ([]byte, Stats, error) {
	var st Stats
	f, err := elfobj.Read(data)
	if err != nil {
		return nil, st, err
	}
	if ps, ok := Marker(f); ok {
		return nil, st, &AlreadyRewrittenError{Presets: ps}
	}
	o, err := ibr.Build(f)
	if err != nil {
		return nil, st, err
	}
	o.Name = name
	before := rawSize(f)
	st.Funcs = len(o.Funcs)
	// Group the selected functions by rule, in rule order.
	byRule := make(map[*rules.Rule][]*ibr.Func)
	skipped := make(map[*ibr.Section][]string)
	for _, fn := range o.Funcs {
		r, ok := rf.Match(fn.Name)
		if !ok {
			continue
		}
		if !fn.Section.Rewritable() {
			skipped[fn.Section] = append(skipped[fn.Section], fn.Name)
			st.Skipped++
			continue
		}
		byRule[r] = append(byRule[r], fn)
		st.Instrumented++
	}
	for s, names := range skipped {
		warn(fmt.Sprintf("section %s: %d function(s) not instrumented (%s): %s", s.Elf.Name, len(names), list(names), s.Problem))
	}
	// Presets that settle object-wide choices (Beginner) first see the
	// parameters of all their rules that select functions here.
	paramsOf := make(map[string][]rules.Params)
	var order []string
	for i := range rf.Rules {
		r := &rf.Rules[i]
		if len(byRule[r]) == 0 {
			continue
		}
		if _, ok := paramsOf[r.Preset]; !ok {
			order = append(order, r.Preset)
		}
		paramsOf[r.Preset] = append(paramsOf[r.Preset], r.Params)
	}
	for _, name := range order {
		if b, ok := presets[name].(Beginner); ok {
			if err := b.Begin(o, paramsOf[name]); err != nil {
				return nil, st, fmt.Errorf("preset %s: %w", name, err)
			}
		}
	}
	var used []Preset
	var usedNames []string
	for i := range rf.Rules {
		r := &rf.Rules[i]
		fns := byRule[r]
		if len(fns) == 0 {
			continue
		}
		p := presets[r.Preset]
		if p == nil {
			return nil, st, fmt.Errorf("preset %q is not available in this build", r.Preset)
		}
		if err := p.Apply(o, fns, r.Params, warn); err != nil {
			return nil, st, fmt.Errorf("preset %s: %w", r.Preset, err)
		}
		used = append(used, p)
		if !slices.Contains(usedNames, r.Preset) {
			usedNames = append(usedNames, r.Preset)
		}
	}
	for i, p := range used {
		if fp, ok := p.(Finisher); ok && !slices.Contains(used[:i], p) {
			if err := fp.Finish(o); err != nil {
				return nil, st, err
			}
		}
	}
	for _, s := range o.Code {
		st.Insertions += s.Insertions
	}
	// What the presets added is allowed on top of the input's bound.
	st.Added = inserted(o) + rawSize(f) - min(before, rawSize(f))
	if f.MaxSize != 0 {
		f.MaxSize += st.Added
	}
	if err := emit.Emit(o, warn); err != nil {
		return nil, st, err
	}
	if len(used) > 0 {
		if f.HasLTO() {
			if err := stripLTO(f); err != nil {
				return nil, st, err
			}
			warn("fat LTO object: LTO IR removed, so that the link uses the instrumented code")
		}
		addMarker(f, usedNames)
	}
	out, err := f.Write()
	if err != nil {
		return nil, st, err
	}
	return out, st, nil
}

// rawSize counts the bytes the sections, relocations and symbols of f
// take, however they are laid out.
func rawSize(f *elfobj.File) uint64 {
	n := uint64(len(f.Symbols)) * 24
	for _, s := range f.Sections {
		n += 64 + uint64(len(s.Data)) + uint64(len(s.Relocs))*24
	}
	return n
}

// inserted counts the bytes of the code the presets inserted and of what
// its relocations may add (an entry, a symbol and its name each).
func inserted(o *ibr.Object) uint64 {
	var n uint64
	for _, s := range o.Code {
		for i := range s.Insts {
			for _, sns := range [][]*ibr.Snippet{s.Insts[i].Before, s.Insts[i].After} {
				for _, sn := range sns {
					n += uint64(len(sn.Code)) + uint64(len(sn.Relocs))*(24+24+32)
				}
			}
		}
	}
	return n
}

// list names a few functions for a message.
func list(names []string) string {
	sort.Strings(names)
	if len(names) > 4 {
		return strings.Join(names[:4], ", ") + fmt.Sprintf(" and %d more", len(names)-4)
	}
	return strings.Join(names, ", ")
}

// stripLTO removes the LTO IR of a fat LTO object (gcc -ffat-lto-objects:
// machine code and GIMPLE; clang -ffat-lto-objects: .llvm.lto). A link with
// -flto would compile the IR again and throw the rewritten code away;
// without it, the linker plugin does not claim the object and links the
// code hijack rewrote.
func stripLTO(f *elfobj.File) error {
	err := f.RemoveSections(func(s *elfobj.Section) bool { return elfobj.IsLTOSection(s.Name) },
		func(sym *elfobj.Symbol) bool { return elfobj.IsLTOMarker(sym.Name) })
	if err != nil {
		return fmt.Errorf("fat LTO object: the LTO IR cannot be removed (%v): compile with -fno-lto", err)
	}
	return nil
}

// IsNotRelocatable reports whether err says the input was an executable or
// a shared object.
func IsNotRelocatable(err error) bool { return errors.Is(err, elfobj.ErrNotRelocatable) }
