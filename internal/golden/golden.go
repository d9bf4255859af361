// Package golden keeps a generated file equal to its committed copy, for
// the tests that lock docs and samples to the code (make update-golden).
package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Check fails t when the file at path is not want; with update it writes
// want there instead. rerun says how to regenerate the file, for the
// failure's message.
func Check(t testing.TB, path string, want []byte, update bool, rerun string) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (%s writes it)", err, rerun)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what the code generates now: %s, review the diff and commit it", path, rerun)
	}
}
