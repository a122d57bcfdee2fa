//go:build duckdb

package query

import (
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/duckdb/duckdb-go/v2"
)

// Text writes the result as an aligned table: a header, a rule, a line
// per row (numbers right-aligned, NULL as NULL), and the row count.
func (r *Result) Text(w io.Writer) error {
	cells := make([][]string, len(r.Rows))
	width := make([]int, len(r.Columns))
	for j, c := range r.Columns {
		width[j] = utf8.RuneCountInString(c)
	}
	for i, row := range r.Rows {
		cells[i] = make([]string, len(row))
		for j, v := range row {
			s := "NULL"
			if v != nil {
				s = oneLine(text(v))
			}
			cells[i][j] = s
			width[j] = max(width[j], utf8.RuneCountInString(s))
		}
	}
	right := make([]bool, len(r.Columns))
	for j, t := range r.Types {
		right[j] = numeric(t)
	}
	var b strings.Builder
	line := func(vals []string) error {
		b.Reset()
		for j, s := range vals {
			if j > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[j]-utf8.RuneCountInString(s))
			if right[j] {
				b.WriteString(pad + s)
			} else if j < len(vals)-1 {
				b.WriteString(s + pad)
			} else {
				b.WriteString(s)
			}
		}
		b.WriteByte('\n')
		_, err := io.WriteString(w, b.String())
		return err
	}
	if err := line(r.Columns); err != nil {
		return err
	}
	rule := make([]string, len(r.Columns))
	for j := range rule {
		rule[j] = strings.Repeat("-", width[j])
	}
	if err := line(rule); err != nil {
		return err
	}
	for _, row := range cells {
		if err := line(row); err != nil {
			return err
		}
	}
	n := "rows"
	if len(r.Rows) == 1 {
		n = "row"
	}
	_, err := fmt.Fprintf(w, "(%d %s)\n", len(r.Rows), n)
	return err
}

// CSV writes the result as CSV with a header line; NULL is empty.
func (r *Result) CSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(r.Columns); err != nil {
		return err
	}
	rec := make([]string, len(r.Columns))
	for _, row := range r.Rows {
		for j, v := range row {
			rec[j] = ""
			if v != nil {
				rec[j] = text(v)
			}
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// JSON writes the result as a JSON array of objects, one per row, keyed
// by column name; numbers stay numbers (64-bit and wider integers exactly),
// NULL is null, lists are arrays, structs and maps objects.
func (r *Result) JSON(w io.Writer) error {
	if _, err := io.WriteString(w, "["); err != nil {
		return err
	}
	for i, row := range r.Rows {
		var b strings.Builder
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  {")
		for j, v := range row {
			if j > 0 {
				b.WriteString(", ")
			}
			k, _ := json.Marshal(r.Columns[j])
			b.Write(k)
			b.WriteString(": ")
			val, err := json.Marshal(jsonValue(v))
			if err != nil {
				return fmt.Errorf("column %s: %w", r.Columns[j], err)
			}
			b.Write(val)
		}
		b.WriteString("}")
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
	}
	end := "]\n"
	if len(r.Rows) > 0 {
		end = "\n]\n"
	}
	_, err := io.WriteString(w, end)
	return err
}

// numeric reports whether a DuckDB type name is a number's.
func numeric(t string) bool {
	switch {
	case strings.HasPrefix(t, "DECIMAL"):
		return true
	}
	switch t {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
		"UHUGEINT", "FLOAT", "DOUBLE":
		return true
	}
	return false
}

func oneLine(s string) string {
	if !strings.ContainsAny(s, "\n\r\t") {
		return s
	}
	return strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(s)
}

// text is a value as the text and CSV outputs show it.
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case *big.Int:
		return x.String()
	case duckdb.Decimal:
		return x.String()
	case duckdb.UUID:
		return fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16])
	case duckdb.Interval:
		return fmt.Sprintf("%d months %d days %dus", x.Months, x.Days, x.Micros)
	case []any, map[string]any, duckdb.Map, duckdb.Union:
		b, err := json.Marshal(jsonValue(x))
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
	return fmt.Sprint(v)
}

// jsonValue is a value as encoding/json should write it.
func jsonValue(v any) any {
	switch x := v.(type) {
	case nil, string, bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, int, uint:
		return x
	case float32, float64:
		f := toFloat(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return text(x) // JSON has no NaN, Inf
		}
		return x
	case []byte:
		return base64.StdEncoding.EncodeToString(x)
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case *big.Int:
		return json.Number(x.String())
	case duckdb.Decimal:
		return json.Number(x.String())
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonValue(e)
		}
		return out
	case duckdb.Map:
		vals := make(map[string]any, len(x)) // encoding/json sorts the keys
		for k, e := range x {
			vals[text(k)] = jsonValue(e)
		}
		return vals
	case duckdb.Union:
		return map[string]any{x.Tag: jsonValue(x.Value)}
	}
	return text(v)
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float32:
		return float64(x)
	case float64:
		return x
	}
	return 0
}
