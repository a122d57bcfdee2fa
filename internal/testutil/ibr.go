package testutil

import (
	"os"
	"testing"

	"hijack/elfobj"
	"hijack/ibr"
)

// BuildIBR reads the object file obj and decodes it into the intermediate
// binary representation, failing the test on any error.
func BuildIBR(t testing.TB, obj string) *ibr.Object {
	t.Helper()
	data, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elfobj.Read(data)
	if err != nil {
		t.Fatal(err)
	}
	o, err := ibr.Build(f)
	if err != nil {
		t.Fatal(err)
	}
	return o
}
