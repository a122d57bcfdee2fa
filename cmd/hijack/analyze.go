package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/spf13/pflag"

	"hijack/cfg"
	"hijack/loops"
)

const analyzeUsage = `Usage: hijack analyze [--json | --dot FUNC] [--func GLOB] [--member GLOB] IN.o|IN.a

Analyses every function of IN.o as the presets see it: basic blocks,
loops (with nesting; irreducible ones included), loop participation
inherited along the call graph, memory operations and block scores (the
threshold T of vptrace selects blocks scoring >= T).

  (default)      a readable summary per function
  --json         per function: name, section, blocks (start, end, loop_depth,
                 cycles, score, mem_ops, insns, succs), calls, the jump-table
                 dispatches ("tables": jump, table, relative, targets) and
                 the indirect jumps not proven to be ("unresolved": offset,
                 tail_call, reason); for an archive also "object":
                 "IN.a(MEMBER)"
  --dot FUNC     the CFG of FUNC for Graphviz, blocks coloured by score:
                 hijack analyze --dot main a.o | dot -Tsvg > main.svg
  --func GLOB    only functions matching GLOB (summary and --json)
  --member GLOB  only archive members matching GLOB (IN.a, thin ones too)
`

// analysed is one object's analysis.
type analysed struct {
	name string // "" for a single object, "IN.a(MEMBER)" in an archive
	p    *cfg.Program
	a    *loops.Analysis
}

func cmdAnalyze(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("analyze", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "JSON output")
	dot := fs.String("dot", "", "Graphviz CFG of one function")
	glob := fs.String("func", "*", "functions to show")
	member := fs.String("member", "*", "archive members to analyse")
	help := fs.BoolP("help", "h", false, "help")
	if err := fs.Parse(fixSingleDash(args)); err != nil {
		return usageError(stderr, "analyze", "%v", err)
	}
	if *help {
		fmt.Fprint(stdout, analyzeUsage)
		return exitOK
	}
	if fs.NArg() != 1 {
		return usageError(stderr, "analyze", "want one IN.o or IN.a, got %d argument(s)", fs.NArg())
	}
	if *asJSON && *dot != "" {
		return usageError(stderr, "analyze", "--json and --dot exclude each other")
	}
	for _, g := range []string{*glob, *member} {
		if _, err := path.Match(g, ""); err != nil {
			return usageError(stderr, "analyze", "bad pattern %q: %v", g, err)
		}
	}
	in := fs.Arg(0)
	objs, inArchive, err := readObjects(in, *member)
	if err != nil {
		fmt.Fprintf(stderr, "hijack: %s\n", oneLine(err.Error()))
		return exitFailure
	}
	status := exitOK
	var all []analysed
	for _, obj := range objs {
		o, err := buildIBR(obj.data)
		if err != nil {
			fmt.Fprintf(stderr, "hijack: %s: %s\n", obj.name, oneLine(err.Error()))
			status = exitFailure
			continue
		}
		p := cfg.Build(o)
		an := analysed{p: p, a: loops.Analyze(p)}
		if inArchive {
			an.name = obj.name
		}
		all = append(all, an)
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	switch {
	case *dot != "":
		var found []string
		var graph func()
		for _, an := range all {
			for _, g := range an.p.Graphs {
				if g.Func.Name == *dot {
					an, g := an, g
					found = append(found, an.name)
					graph = func() { writeDot(w, an.a, g) }
				}
			}
		}
		switch {
		case len(found) == 0:
			fmt.Fprintf(stderr, "hijack: %s: no function %q\n", in, *dot)
			return exitFailure
		case len(found) > 1:
			fmt.Fprintf(stderr, "hijack: %s: function %q is in %d members (%s); pick one with --member\n", in, *dot, len(found), strings.Join(found, ", "))
			return exitFailure
		}
		graph()
	case *asJSON:
		out := []funcJSON{}
		for _, an := range all {
			for _, g := range an.p.Graphs {
				if ok, _ := path.Match(*glob, g.Func.Name); ok {
					fj := toJSON(an.a, g)
					fj.Object = an.name
					out = append(out, fj)
				}
			}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(stderr, "hijack: %v\n", err)
			return exitFailure
		}
	default:
		for _, an := range all {
			if an.name != "" {
				fmt.Fprintf(w, "%s:\n", an.name)
			}
			summary(w, an.a, an.p, *glob)
			if an.name != "" {
				fmt.Fprintln(w)
			}
		}
	}
	return status
}

type blockJSON struct {
	Start    uint32   `json:"start"`
	End      uint32   `json:"end"`
	Loop     int      `json:"loop_depth"`
	Cycles   int      `json:"cycles"`
	Score    float64  `json:"score"`
	MemOps   int      `json:"mem_ops"`
	Insns    int      `json:"insns"`
	Succs    []int    `json:"succs"`
	Exits    []string `json:"exits,omitempty"`
	JumpTbl  bool     `json:"jump_table,omitempty"`
	Incoming int      `json:"preds"`
}

type indirectJSON struct {
	Off      uint32 `json:"offset"`
	TailCall bool   `json:"tail_call"`
	Reason   string `json:"reason"`
}

// tableJSON is a jump-table dispatch cfg proved: the jump, where the
// table is, and the targets of its entries in table order.
type tableJSON struct {
	Jump     uint32   `json:"jump"`
	Table    string   `json:"table"` // SECTION+0xOFF
	Relative bool     `json:"relative"`
	Targets  []uint32 `json:"targets"`
}

type funcJSON struct {
	Object      string `json:"object,omitempty"` // archive member
	Name        string `json:"name"`
	Section     string `json:"section"`
	Rewritable  bool   `json:"rewritable"`
	Problem     string `json:"problem,omitempty"`
	Inherited   int    `json:"inherited"`
	Loops       int    `json:"loops"`
	Irreducible int    `json:"irreducible_loops"`
	Unresolved  int    `json:"unresolved_indirect_jumps"`
	// Indirect lists the unresolved jumps: where, what hijack made of
	// them, why they are not table dispatches.
	Indirect []indirectJSON `json:"unresolved,omitempty"`
	Tables   []tableJSON    `json:"tables,omitempty"`
	Blocks   []blockJSON    `json:"blocks"`
	Calls    []string       `json:"calls"`
}

func exitNames(e cfg.Exit) []string {
	var s []string
	for i, n := range []string{"return", "tailcall", "noreturn", "indirect", "trap", "falloff"} {
		if e&(1<<i) != 0 {
			s = append(s, n)
		}
	}
	return s
}

func toJSON(a *loops.Analysis, g *cfg.Graph) funcJSON {
	fj := funcJSON{Name: g.Func.Name, Section: g.Sec.Elf.Name, Rewritable: g.Sec.Rewritable(), Problem: g.Sec.Problem,
		Inherited: a.Inherited[g], Loops: len(a.Loops[g]), Unresolved: len(g.Unresolved), Calls: []string{}}
	for _, l := range a.Loops[g] {
		if l.Irreducible() {
			fj.Irreducible++
		}
	}
	for _, ij := range g.Indirect {
		fj.Indirect = append(fj.Indirect, indirectJSON{Off: g.Sec.Insts[ij.Inst].Off, TailCall: ij.TailCall, Reason: ij.Reason})
	}
	for _, jt := range g.Tables {
		tj := tableJSON{Jump: g.Sec.Insts[jt.Jump].Off, Relative: jt.Relative, Targets: []uint32{}}
		tj.Table = fmt.Sprintf("%d+0x%x", jt.Sec, jt.Off)
		if f := a.Prog.Obj.File; int(jt.Sec) < len(f.Sections) {
			tj.Table = fmt.Sprintf("%s+0x%x", f.Sections[jt.Sec].Name, jt.Off)
		}
		for _, e := range jt.Entries {
			tj.Targets = append(tj.Targets, g.Sec.Insts[e].Off)
		}
		fj.Tables = append(fj.Tables, tj)
	}
	for _, b := range g.Blocks {
		in := a.Info(b)
		bj := blockJSON{Start: g.Sec.Insts[b.Start].Off, End: g.Sec.Insts[b.End-1].End(), Loop: in.LoopDepth, Cycles: in.Cycles,
			Score: in.Score, MemOps: in.MemOps, Insns: in.Insns, Succs: []int{}, Exits: exitNames(b.Exits), JumpTbl: b.Table, Incoming: len(b.Preds)}
		for _, s := range b.Succs {
			bj.Succs = append(bj.Succs, s.Index)
		}
		fj.Blocks = append(fj.Blocks, bj)
	}
	for _, c := range g.Calls {
		switch {
		case c.Indirect && c.Tail:
			fj.Calls = append(fj.Calls, "*(indirect tail call)")
		case c.Indirect:
			fj.Calls = append(fj.Calls, "*(indirect)")
		case c.Name != "":
			fj.Calls = append(fj.Calls, c.Name)
		}
	}
	return fj
}

func summary(w io.Writer, a *loops.Analysis, p *cfg.Program, glob string) {
	var nb, nl, nirr, nun, ntail, ntab int
	for _, g := range p.Graphs {
		if ok, _ := path.Match(glob, g.Func.Name); !ok {
			continue
		}
		fj := toJSON(a, g)
		maxScore, maxDepth := 0.0, 0
		for _, b := range fj.Blocks {
			maxScore = max(maxScore, b.Score)
			maxDepth = max(maxDepth, b.Loop)
			if b.JumpTbl {
				ntab++
			}
		}
		nb += len(fj.Blocks)
		nl += fj.Loops
		nirr += fj.Irreducible
		nun += fj.Unresolved
		fmt.Fprintf(w, "%s (%s): %d blocks, %d loops (max depth %d", fj.Name, fj.Section, len(fj.Blocks), fj.Loops, maxDepth)
		if fj.Irreducible > 0 {
			fmt.Fprintf(w, ", %d irreducible", fj.Irreducible)
		}
		fmt.Fprintf(w, "), inherited %d, top score %.2f, %d calls", fj.Inherited, maxScore, len(fj.Calls))
		if fj.Unresolved > 0 {
			fmt.Fprintf(w, ", %d unresolved indirect jumps", fj.Unresolved)
		}
		if !fj.Rewritable {
			fmt.Fprintf(w, " [not rewritable: %s]", fj.Problem)
		}
		fmt.Fprintln(w)
		for _, ij := range fj.Indirect {
			as := "unknown target, everything live"
			if ij.TailCall {
				as = "tail call"
				ntail++
			}
			fmt.Fprintf(w, "  unresolved jmp at %x (%s): %s\n", ij.Off, as, ij.Reason)
		}
		for i, b := range fj.Blocks {
			fmt.Fprintf(w, "  b%-3d %6x-%-6x loop %d cycles %d mem %2d/%-3d score %.3f -> %v", i, b.Start, b.End, b.Loop, b.Cycles, b.MemOps, b.Insns, b.Score, b.Succs)
			if len(b.Exits) > 0 {
				fmt.Fprintf(w, " %v", b.Exits)
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintf(w, "total: %d blocks, %d loops (%d irreducible), %d jump-table dispatches, %d unresolved indirect jumps (%d as tail calls)\n", nb, nl, nirr, ntab, nun, ntail)
}

// writeDot writes the CFG of g for Graphviz; fill colour goes from white
// (score 0) to red (score 1).
func writeDot(w io.Writer, a *loops.Analysis, g *cfg.Graph) {
	fmt.Fprintf(w, "digraph %q {\n  node [shape=box, style=filled, fontname=monospace];\n", g.Func.Name)
	for _, b := range g.Blocks {
		in := a.Info(b)
		v := int(255 * (1 - in.Score))
		label := fmt.Sprintf("b%d %x-%x\\nloop %d cycles %d\\nmem %d/%d score %.2f", b.Index, g.Sec.Insts[b.Start].Off, g.Sec.Insts[b.End-1].End(), in.LoopDepth, in.Cycles, in.MemOps, in.Insns, in.Score)
		if b.Exits != 0 {
			label += fmt.Sprintf("\\n%v", exitNames(b.Exits))
		}
		fmt.Fprintf(w, "  b%d [label=\"%s\", fillcolor=\"#ff%02x%02x\"];\n", b.Index, label, v, v)
		for _, s := range b.Succs {
			fmt.Fprintf(w, "  b%d -> b%d;\n", b.Index, s.Index)
		}
	}
	fmt.Fprintln(w, "}")
}
