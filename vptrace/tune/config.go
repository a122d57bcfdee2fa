package tune

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

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

// rulesFor returns the rules of a configuration: the vptrace preset over
// every function with the configuration's parameters and the extra ones,
// or, with a rules file, that file with the configuration's parameters set
// in every vptrace rule.
func rulesFor(c Config, rulesFile string, rulesData []byte, extra []string) (*rules.File, error) {
	reg := rules.DefaultRegistry()
	set := c.params()
	if rulesFile == "" {
		settings := append([]string(nil), extra...)
		for _, k := range []string{"threshold", "pagesize", "exact"} {
			if v, ok := set[k]; ok {
				settings = append(settings, k+"="+v)
			}
		}
		return rules.Default(reg, "vptrace", settings...)
	}
	for _, e := range extra {
		k, v, ok := strings.Cut(e, "=")
		if !ok {
			return nil, fmt.Errorf("--param %q: want name=value", e)
		}
		if _, dup := set[strings.TrimSpace(k)]; !dup {
			set[strings.TrimSpace(k)] = v
		}
	}
	data, err := overrideParams(rulesData, set)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rulesFile, err)
	}
	return rules.Parse(rulesFile, data, reg)
}

// overrideParams sets params in every vptrace rule of a rules file (YAML),
// replacing sizeexp by pagesize when pagesize is set.
func overrideParams(data []byte, set map[string]string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("not a rules file (want a mapping with version and rules)")
	}
	top := doc.Content[0]
	var rs *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "rules" {
			rs = top.Content[i+1]
		}
	}
	if rs == nil || rs.Kind != yaml.SequenceNode {
		return nil, errors.New("no rules list")
	}
	found := false
	for _, r := range rs.Content {
		if r.Kind != yaml.MappingNode {
			continue
		}
		var preset string
		var params *yaml.Node
		for i := 0; i+1 < len(r.Content); i += 2 {
			switch r.Content[i].Value {
			case "preset":
				preset = r.Content[i+1].Value
			case "params":
				params = r.Content[i+1]
			}
		}
		if preset != "vptrace" {
			continue
		}
		found = true
		if params == nil || params.Kind != yaml.MappingNode {
			params = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			r.Content = append(r.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "params"}, params)
		}
		for k, v := range set {
			drop := k
			if k == "pagesize" {
				drop = "sizeexp"
			}
			var kept []*yaml.Node
			for i := 0; i+1 < len(params.Content); i += 2 {
				if n := params.Content[i].Value; n != k && n != drop {
					kept = append(kept, params.Content[i], params.Content[i+1])
				}
			}
			var val yaml.Node
			if err := yaml.Unmarshal([]byte(v), &val); err != nil || len(val.Content) != 1 {
				val = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
			} else {
				val = *val.Content[0]
			}
			params.Content = append(kept, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, &val)
		}
	}
	if !found {
		return nil, errors.New("no vptrace rule to tune")
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
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
