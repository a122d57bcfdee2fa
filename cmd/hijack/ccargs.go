package main

// Compiler command lines as hijack cc reads them: response files, the
// options that decide what a command does, the languages of its inputs.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// langKind is what hijack cc does with an input of some language.
type langKind int

const (
	langInput   langKind = iota // not a source: an object, a library, a linker script
	langRewrite                 // compiled to machine code that hijack rewrites
	langForeign                 // compiled by another front end: not rewritten, said so
	langHeader                  // compiled to a precompiled header, not an object
)

// langs are gcc's -x names (and clang's) by what hijack cc does with them.
// An unknown name counts as foreign: the compiler says whether it exists.
var langs = map[string]langKind{
	"c": langRewrite, "cpp-output": langRewrite, "c++": langRewrite, "c++-cpp-output": langRewrite,
	"objective-c": langRewrite, "objective-c-cpp-output": langRewrite, "objc-cpp-output": langRewrite,
	"objective-c++": langRewrite, "objective-c++-cpp-output": langRewrite, "objc++-cpp-output": langRewrite,
	"assembler": langRewrite, "assembler-with-cpp": langRewrite,
	"c-header": langHeader, "c++-header": langHeader, "c++-system-header": langHeader, "c++-user-header": langHeader,
	"objective-c-header": langHeader, "objective-c++-header": langHeader, "c-header-cpp-output": langHeader,
	"c++-header-cpp-output": langHeader,
}

// sourceExts are gcc's file name suffixes (its default_compilers table)
// by what hijack cc does with them. Anything else is an input for the
// linker, as gcc takes it.
var sourceExts = map[string]langKind{
	".c": langRewrite, ".i": langRewrite, ".ii": langRewrite, ".m": langRewrite, ".mi": langRewrite,
	".mm": langRewrite, ".M": langRewrite, ".mii": langRewrite, ".cc": langRewrite, ".cp": langRewrite,
	".cxx": langRewrite, ".cpp": langRewrite, ".CPP": langRewrite, ".c++": langRewrite, ".C": langRewrite,
	".s": langRewrite, ".S": langRewrite, ".sx": langRewrite,
	".h": langHeader, ".hh": langHeader, ".H": langHeader, ".hp": langHeader, ".hxx": langHeader,
	".hpp": langHeader, ".HPP": langHeader, ".h++": langHeader, ".tcc": langHeader,
	// Fortran, Go, Ada, Modula-2, CUDA, LLVM IR.
	".f": langForeign, ".for": langForeign, ".ftn": langForeign, ".F": langForeign, ".FOR": langForeign,
	".fpp": langForeign, ".FPP": langForeign, ".FTN": langForeign, ".f90": langForeign, ".f95": langForeign,
	".f03": langForeign, ".f08": langForeign, ".F90": langForeign, ".F95": langForeign, ".F03": langForeign,
	".F08": langForeign, ".go": langForeign, ".ads": langForeign, ".adb": langForeign, ".mod": langForeign,
	".cu": langForeign, ".ll": langForeign,
}

// langName names a foreign language for messages.
func langName(x, file string) string {
	if x != "" {
		return x
	}
	switch strings.ToLower(filepath.Ext(file)) {
	case ".go":
		return "Go"
	case ".ads", ".adb":
		return "Ada"
	case ".mod":
		return "Modula-2"
	case ".cu":
		return "CUDA"
	case ".ll":
		return "LLVM IR"
	}
	return "Fortran"
}

// kindOf is what hijack cc does with an input, given the -x language in
// force ("" or "none": the file name decides).
func kindOf(file, x string) langKind {
	if x != "" && x != "none" {
		if k, ok := langs[x]; ok {
			return k
		}
		return langForeign
	}
	if file == "-" { // stdin needs -x
		return langInput
	}
	return sourceExts[filepath.Ext(file)]
}

// ccMode is what a compiler command does.
type ccMode int

const (
	modeOther   ccMode = iota // preprocess, assemble-only, queries, no inputs: pass through
	modeCompile               // -c
	modeLink                  // links (possibly compiling sources first)
)

// parsed is a compiler command line as hijack cc needs to know it.
type parsed struct {
	mode    ccMode
	output  string         // -o value
	outArg  int            // index in args of the argument holding the -o value (-1: none)
	outJoin bool           // that argument is -oFILE
	sources []int          // indices in args of sources compiled to objects hijack rewrites
	foreign []int          // ... of sources in languages hijack does not rewrite
	lang    map[int]string // -x language in force for a source, when there is one
	inputs  []int          // indices in args of inputs of any kind: sources, objects, libraries (-l)

	// What names a compile-and-link command's auxiliary outputs.
	depFile    bool   // -MD or -MMD
	depName    bool   // -MF
	depTarget  bool   // -MT or -MQ
	saveTemps  string // -save-temps: "", "default", "cwd" or "obj"
	auxNamed   bool   // an option that writes or reads files named after the object (gcc's dump names)
	coverage   bool   // --coverage, -ftest-coverage or -fprofile-arcs
	splitDwarf bool   // -gsplit-dwarf
	dumpdir    string // -dumpdir value
	dumpbase   bool   // -dumpbase or -dumpbase-ext given

	// pic: the objects may go into a shared library (-fPIC or -fpic
	// last of the code model options, or -shared); else they are for
	// executables (rewrite.Options.Executable).
	pic    bool
	shared bool // -shared given
}

// forExecutable reports whether the object of source args[i] is for
// executables only: no -fPIC, -fpic or -shared, and the source is C or C++
// (for assembly those options change nothing: its code is what it is).
func (p parsed) forExecutable(args []string, i int) bool {
	if p.pic {
		return false
	}
	switch l := p.lang[i]; {
	case l == "assembler" || l == "assembler-with-cpp":
		return false
	case l != "" && l != "none":
		return true
	}
	switch filepath.Ext(args[i]) {
	case ".s", ".S", ".sx", ".asm":
		return false
	}
	return true
}

// otherOptions make the driver do something else than compiling to
// objects or linking: the command passes through untouched.
var otherOptions = map[string]bool{
	"-E": true, "-S": true, "-M": true, "-MM": true, "-fsyntax-only": true, "-###": true,
	"--version": true, "-dumpversion": true, "-dumpfullversion": true, "-dumpmachine": true, "-dumpspecs": true,
	"--target-help": true, "-help": true, "-emit-llvm": true, "--analyze": true, "--precompile": true,
	"-fdriver-only": true,
}

// parseCC classifies a compiler command line (args without the compiler,
// response files expanded).
func parseCC(args []string) parsed {
	return parseCCFor(args, false)
}

// gxxLangs are the languages g++ gives a file by the last two characters
// of its name, over the -x language in force, unless it is the first
// input after a -x option (gcc's g++spec.cc, lang_specific_driver).
var gxxLangs = map[string]string{".c": "c++", ".i": "c++-cpp-output", ".h": "c++-header"}

// parseCCFor is parseCC for gcc's C++ driver (g++, c++) when gxx is set:
// that driver compiles foo.c as C++ even under -x c, and as C when it is
// the first input after a -x (-x none). A source compiled apart gets the
// -x option that makes g++ compile it as the whole command would.
func parseCCFor(args []string, gxx bool) parsed {
	p := parsed{mode: modeLink, outArg: -1, lang: map[int]string{}}
	other := false
	sawX := false // a -x option since the last input file (g++)
	headers := 0  // inputs that are headers to precompile
	lang := ""    // -x language, applies to later inputs
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-c":
			if p.mode == modeLink {
				p.mode = modeCompile
			}
		case a == "-fPIC" || a == "-fpic":
			p.pic = true
		case a == "-fno-PIC" || a == "-fno-pic" || a == "-fPIE" || a == "-fpie" || a == "-fno-PIE" || a == "-fno-pie":
			p.pic = p.shared
		case a == "-shared":
			p.pic, p.shared = true, true
		case otherOptions[a] || strings.HasPrefix(a, "-print-") || strings.HasPrefix(a, "--print-") ||
			strings.HasPrefix(a, "--help"):
			other = true
		case (a == "-o" || a == "--output") && i+1 < len(args):
			i++
			p.output, p.outArg, p.outJoin = args[i], i, false
		case strings.HasPrefix(a, "--output="):
			p.output, p.outArg, p.outJoin = a[len("--output="):], i, true
		case strings.HasPrefix(a, "-o") && len(a) > 2:
			p.output, p.outArg, p.outJoin = a[2:], i, true
		case a == "-x" && i+1 < len(args):
			i++
			lang, sawX = args[i], true
		case strings.HasPrefix(a, "-x") && len(a) > 2:
			lang, sawX = a[2:], true
		case a == "-MD" || a == "-MMD":
			p.depFile = true
		case a == "-MF" || strings.HasPrefix(a, "-MF"):
			p.depName = true
			if a == "-MF" {
				i++
			}
		case a == "-MT" || a == "-MQ" || strings.HasPrefix(a, "-MT") || strings.HasPrefix(a, "-MQ"):
			p.depTarget = true
			if len(a) == 3 {
				i++
			}
		case a == "-save-temps" || a == "--save-temps":
			p.saveTemps, p.auxNamed = "default", true
		case strings.HasPrefix(a, "-save-temps=") || strings.HasPrefix(a, "--save-temps="):
			p.saveTemps, p.auxNamed = a[strings.IndexByte(a, '=')+1:], true
		case a == "--coverage" || a == "-ftest-coverage" || a == "-fprofile-arcs":
			p.coverage, p.auxNamed = true, true
		case a == "-gsplit-dwarf" || strings.HasPrefix(a, "-gsplit-dwarf="):
			p.splitDwarf, p.auxNamed = true, true
		case a == "-dumpdir" && i+1 < len(args):
			i++
			p.dumpdir = args[i]
		case a == "-dumpbase" || a == "-dumpbase-ext":
			p.dumpbase = true
			i++
		case auxNamedOption(a):
			p.auxNamed = true
		case a == "-l" && i+1 < len(args):
			p.inputs = append(p.inputs, i)
			i++
		case strings.HasPrefix(a, "-l") && len(a) > 2:
			p.inputs = append(p.inputs, i)
		case argTakesValue(a) && i+1 < len(args):
			i++
		case !strings.HasPrefix(a, "-") || a == "-":
			p.inputs = append(p.inputs, i)
			l := lang
			switch afterX := sawX; {
			case !gxx:
			case !afterX && len(a) > 2 && gxxLangs[a[len(a)-2:]] != "":
				l = gxxLangs[a[len(a)-2:]]
			case afterX && (l == "" || l == "none"):
				l = "none" // the name decides: said so (g++ -x none -c foo.c)
			}
			sawX = false
			switch kindOf(a, l) {
			case langRewrite:
				p.sources = append(p.sources, i)
			case langForeign:
				p.foreign = append(p.foreign, i)
			case langHeader:
				headers++
				continue
			default:
				continue
			}
			if l != "" && (l != "none" || gxx) {
				p.lang[i] = l
			}
		}
	}
	// Queries, and commands with no inputs at all (gcc -v,
	// gcc -Wl,--version, gcc -x c), have nothing to rewrite; nor has a
	// command that only precompiles headers, which links nothing (no
	// runtime added to it).
	if other || len(p.inputs) == 0 || p.mode == modeLink && headers == len(p.inputs) {
		p.mode = modeOther
	}
	return p
}

// auxNamedOption reports whether a gcc option writes or reads files named
// after the object (gcc's "auxiliary output" names: -dumpdir, -dumpbase).
func auxNamedOption(a string) bool {
	for _, p := range []string{"-fprofile-generate", "-fprofile-use", "-fauto-profile", "-fstack-usage",
		"-fdump-", "-fcallgraph-info", "-fsave-optimization-record", "-fprofile-note"} {
		if strings.HasPrefix(a, p) {
			return true
		}
	}
	return false
}

// argTakesValue lists driver options whose value is the next argument.
func argTakesValue(a string) bool {
	switch a {
	case "-I", "-L", "-D", "-U", "-A", "-B", "-e", "-include", "-imacros", "-isystem", "-iquote", "-idirafter",
		"-iprefix", "-iwithprefix", "-iwithprefixbefore", "-isysroot", "-imultilib", "-include-pch",
		"-MF", "-MT", "-MQ", "-MJ", "-Xlinker", "-Xassembler", "-Xpreprocessor", "-Xclang", "-mllvm",
		"-T", "-u", "-z", "-arch", "-target", "--param", "-aux-info", "--sysroot", "-wrapper",
		"-dumpdir", "-dumpbase", "-dumpbase-ext", "-serialize-diagnostics", "-cxx-isystem",
		"--include", "--include-directory", "--define-macro", "--undefine-macro", "--library-directory",
		// clang's
		"-gcc-toolchain", "-resource-dir", "-iwithsysroot", "-isystem-after", "-ivfsoverlay", "-iframework",
		"-iframeworkwithsysroot", "-working-directory", "-Xanalyzer", "-Xopenmp-target", "-Xcuda-ptxas",
		"-Xcuda-fatbinary", "--config":
		return true
	}
	return false
}

// isLTOFlag reports whether a compiler option asks for link-time
// optimisation, which would replace the rewritten machine code with code
// generated from the objects' IR at link time.
func isLTOFlag(a string) bool {
	return a == "-flto" || strings.HasPrefix(a, "-flto=") || strings.HasPrefix(a, "-flto-") ||
		a == "-ffat-lto-objects" || a == "-fno-fat-lto-objects"
}

// dropLTO removes the LTO options from a command line.
func dropLTO(args []string) (out []string, dropped []string) {
	for _, a := range args {
		if isLTOFlag(a) {
			dropped = append(dropped, a)
			continue
		}
		out = append(out, a)
	}
	return out, dropped
}

// maxResponseFiles bounds the response files one command may read, as
// gcc's expandargv bounds its iterations: a file that names itself would
// expand forever.
const maxResponseFiles = 2000

// expandResponseFiles replaces each @FILE argument with the arguments
// FILE holds, recursively, as gcc (libiberty's expandargv) and clang do.
// A nested @FILE is looked for relative to the working directory (gcc)
// and then to the directory of the file that names it (clang). An @FILE
// that cannot be read stays as it is: the compiler takes it for an input
// file and says so. expanded tells whether any file was read.
func expandResponseFiles(args []string) (out []string, expanded bool, err error) {
	type arg struct{ text, dir string }
	todo := make([]arg, 0, len(args))
	for _, a := range args {
		todo = append(todo, arg{a, ""})
	}
	read := 0
	for len(todo) > 0 {
		a := todo[0]
		todo = todo[1:]
		if !strings.HasPrefix(a.text, "@") || len(a.text) == 1 {
			out = append(out, a.text)
			continue
		}
		name := a.text[1:]
		data, rerr := os.ReadFile(name)
		if rerr != nil && a.dir != "" && !filepath.IsAbs(name) {
			name = filepath.Join(a.dir, name)
			data, rerr = os.ReadFile(name)
		}
		if rerr != nil {
			out = append(out, a.text)
			continue
		}
		if read++; read > maxResponseFiles {
			return nil, true, fmt.Errorf("%s: more than %d response files: does one name itself?", a.text, maxResponseFiles)
		}
		expanded = true
		var inner []arg
		for _, s := range splitResponseFile(string(data)) {
			inner = append(inner, arg{s, filepath.Dir(name)})
		}
		todo = append(inner, todo...)
	}
	return out, expanded, nil
}

// splitResponseFile splits a response file's text into arguments by
// libiberty's buildargv rules, which clang's GNU tokenizer follows too:
// white space separates arguments; single and double quotes group; a
// backslash takes the next character literally, inside quotes too.
func splitResponseFile(s string) []string {
	var out []string
	var cur strings.Builder
	inArg, squote, dquote, escaped := false, false, false, false
	for _, c := range s {
		switch {
		case escaped:
			escaped = false
			cur.WriteRune(c)
		case c == '\\':
			escaped = true
		case squote:
			if c == '\'' {
				squote = false
			} else {
				cur.WriteRune(c)
			}
		case dquote:
			if c == '"' {
				dquote = false
			} else {
				cur.WriteRune(c)
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			if inArg {
				out = append(out, cur.String())
				cur.Reset()
				inArg = false
			}
			continue
		case c == '\'':
			squote = true
		case c == '"':
			dquote = true
		default:
			cur.WriteRune(c)
		}
		inArg = true
	}
	if inArg {
		out = append(out, cur.String())
	}
	return out
}

// quoteResponseArg quotes an argument for a response file, so that
// splitResponseFile (gcc, clang) reads it back as it was.
func quoteResponseArg(a string) string {
	if a != "" && !strings.ContainsAny(a, " \t\n\r\v\f'\"\\") {
		return a
	}
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	return "'" + r.Replace(a) + "'"
}

// writeResponseFile writes args into a response file in dir and returns
// the argument that names it.
func writeResponseFile(dir string, args []string) (string, error) {
	var b strings.Builder
	for _, a := range args {
		b.WriteString(quoteResponseArg(a))
		b.WriteByte('\n')
	}
	f, err := os.CreateTemp(dir, "args-*.rsp")
	if err != nil {
		return "", errors.Unwrap(err)
	}
	_, err = f.WriteString(b.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", errors.Unwrap(err)
	}
	return "@" + f.Name(), nil
}
