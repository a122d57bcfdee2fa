package tune

import (
	"debug/elf"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"hijack/rules"
	"hijack/vptrace/abi"
)

// Config is one configuration of the vptrace preset under test.
type Config struct {
	// Exact: the reference build (exact mode, T=0): every access of every
	// block, nothing skipped, no last-page filter.
	Exact     bool
	Threshold float64 // T
	PageSize  int64   // H, bytes
}

// Name is a file-name-safe name: "exact", "T0.25-H4096".
func (c Config) Name() string {
	if c.Exact {
		return "exact"
	}
	return fmt.Sprintf("T%s-H%d", fmtFloat(c.Threshold), c.PageSize)
}

// String is "T=0.25 H=4K", or "exact".
func (c Config) String() string {
	if c.Exact {
		return "exact"
	}
	return fmt.Sprintf("T=%s H=%s", fmtFloat(c.Threshold), rules.FormatSize(c.PageSize))
}

// params are the preset settings of the configuration.
func (c Config) params() map[string]string {
	if c.Exact {
		return map[string]string{"threshold": "0", "exact": "true"}
	}
	return map[string]string{"threshold": fmtFloat(c.Threshold), "pagesize": strconv.FormatInt(c.PageSize, 10), "exact": "false"}
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// ParseSizes parses a comma-separated list of sizes.
func ParseSizes(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		n, err := rules.ParseSize(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// ParseFloats parses a comma-separated list of numbers.
func ParseFloats(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("bad number %q", strings.TrimSpace(f))
		}
		out = append(out, x)
	}
	return out, nil
}

// rulesFor returns the rules (presets of reg) of a configuration: the vptrace preset over
// every function with the extra parameters and the configuration's, or,
// with a rules file, that file with them set (rules.File.Override: on
// every rule whose preset has the parameter, the configuration's last so
// that they win).
func rulesFor(reg rules.Registry, c Config, rulesFile string, rulesData []byte, extra []string) (*rules.File, error) {
	settings := append([]string(nil), extra...)
	set := c.params()
	for _, k := range []string{"threshold", "pagesize", "exact"} {
		if v, ok := set[k]; ok {
			settings = append(settings, k+"="+v)
		}
	}
	if rulesFile == "" {
		return rules.Default(reg, "vptrace", settings...)
	}
	rf, err := rules.Parse(rulesFile, rulesData, reg)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(rf.Presets(), "vptrace") {
		return nil, fmt.Errorf("%s: no vptrace rule to tune (the rules use %s)", rulesFile, strings.Join(rf.Presets(), ", "))
	}
	if err := rf.Override(reg, settings...); err != nil {
		return nil, err
	}
	return rf, nil
}

// objectSites counts the sites and the distinct blocks (function, block)
// an instrumented object's .vptrace section describes.
func objectSites(path string) (sites, blocks int, err error) {
	f, err := elf.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	s := f.Section(".vptrace")
	if s == nil {
		return 0, 0, nil
	}
	data, err := s.Data()
	if err != nil {
		return 0, 0, err
	}
	desc, err := abi.UnmarshalObject(data)
	if err != nil || desc.Magic != abi.Magic {
		return 0, 0, fmt.Errorf("%s: bad .vptrace section", path)
	}
	n := int(desc.NSites)
	if abi.ObjectSize+abi.SiteSize*n > len(data) {
		return 0, 0, fmt.Errorf("%s: .vptrace section too short", path)
	}
	type blk struct{ fn, b uint32 }
	seen := map[blk]bool{}
	for k := 0; k < n; k++ {
		s, _ := abi.UnmarshalSite(data[abi.ObjectSize+abi.SiteSize*k:]) // (the length was checked above)
		seen[blk{s.Func, s.Block}] = true
	}
	return n, len(seen), nil
}

// readFile reads path; its errors name the file as the user gave it.
func readFile(path, name string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s: %v", name, pe.Err)
		}
	}
	return data, err
}
