package rules

import "math"

// hijackLike is the registry the tests parse against: presets shaped
// like hijack's own (pad, vptrace, clobber; the rules package knows none
// of them, preset/all has the real ones).
func hijackLike() Registry {
	r := Registry{}
	for _, p := range []PresetSpec{
		{
			Name: "pad",
			Doc:  "insert NOPs of pseudo-random lengths before instructions, to exercise code moving",
			Params: []ParamSpec{
				IntParam("seed", 1, math.MinInt64, math.MaxInt64,
					"seeds the pseudo-random choice of NOP lengths"),
				IntParam("maxlen", 15, 1, 15,
					"longest NOP to insert, in bytes"),
				BoolParam("after", false,
					"also insert NOPs after every instruction that can fall through, on the fall-through path only (exercises code on edges)"),
			},
		},
		{
			Name: "vptrace",
			Doc:  "virtual-page access tracing: record which pages each thread touches",
			Params: []ParamSpec{
				FloatParam("threshold", 0, 0, 1,
					"T: instrument blocks whose loop score is >= T (0 instruments every block)"),
				SizeParam("pagesize", 4096, 16, 1<<30, "sizeexp",
					"H: estimated page size; an access within H bytes of an already traced one in the same block may be skipped"),
				BoolParam("usestack", false,
					"trace rsp/rbp-based (stack) accesses too"),
				EnumParam("tls", "auto", []string{"local-exec", "initial-exec", "indirect", "auto"},
					"TLS access model of the per-site slots: local-exec links only into executables, initial-exec also into shared libraries loaded at start-up, indirect into any (dlopen'ed too), auto: local-exec where the object shows it is for an executable, else indirect"),
				BoolParam("exact", false,
					"skip no access as same-page: trace every memory access of the selected blocks"),
			},
		},
		{
			Name: "clobber",
			Doc:  "overwrite registers and flags that liveness says are dead, to expose liveness bugs",
			Params: []ParamSpec{
				IntParam("seed", 1, math.MinInt64, math.MaxInt64,
					"seeds the pseudo-random choice of clobbered registers and values"),
			},
		},
	} {
		r[p.Name] = p
	}
	return r
}
