package elfobj

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable returns s with every character that is not printable (control
// characters such as newlines and escapes, invalid UTF-8) written as in a
// Go string literal. Names in an object are arbitrary bytes; messages that
// quote them must stay one line and must not drive a terminal.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := fmt.Sprintf("%+q", string(r)) // "\n", "\x1b", "\u2028"
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// printableError is an error whose message was made Printable; errors.Is
// and errors.As see the original.
type printableError struct {
	err error
	msg string
}

func (e *printableError) Error() string { return e.msg }
func (e *printableError) Unwrap() error { return e.err }

// PrintableError returns err with a Printable message (nil for nil, err
// itself when its message is printable already).
func PrintableError(err error) error {
	if err == nil {
		return nil
	}
	msg := Printable(err.Error())
	if msg == err.Error() {
		return err
	}
	return &printableError{err, msg}
}
